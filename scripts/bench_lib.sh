# Sourced by the benchmark scripts (bench_zero_memory.sh, bench_zero_step.sh, bench_recompute.sh): the pieces
# each of them had a copy of. Not a benchmark itself.

# A scratch folder in $work, removed however the script ends (the runs' outputs are read, then dropped).
bench_scratch() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

# json_field FILE KEY [DIGITS]: the number KEY of the JSON object in FILE, printed with DIGITS decimals (1).
json_field() {
  python3 -c "import json,sys; print('%.*f' % (int(sys.argv[3]), json.load(open(sys.argv[1]))[sys.argv[2]]))" \
    "$1" "$2" "${3:-1}"
}

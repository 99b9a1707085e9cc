# Sourced by the benchmark scripts (bench_zero_memory.sh, bench_zero_step.sh, bench_recompute.sh): the pieces
# each of them had a copy of. Not a benchmark itself.

# A scratch folder in $work, removed however the script ends (the runs' outputs are read, then dropped), and one
# thread per rank unless the caller's environment says otherwise (the figures are per-core figures).
bench_setup() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
}

# json_field FILE KEY [DIGITS]: the number KEY of the JSON object in FILE, printed with DIGITS decimals (1).
json_field() {
  python3 -c "import json,sys; print('%.*f' % (int(sys.argv[3]), json.load(open(sys.argv[1]))[sys.argv[2]]))" \
    "$1" "$2" "${3:-1}"
}

# table_head TITLE COLUMN...: a Markdown table's title line ("# TITLE"), header row and separator, on stdout and in
# $out (started anew). table_row CELL...: one row of it, on stdout and appended to $out.
table_head() {
  local title=$1 cols sep; shift
  printf -v cols ' %s |' "$@"
  printf -v sep '%.0s---|' "$@"
  printf '# %s\n|%s\n|%s\n' "$title" "$cols" "$sep" | tee "$out"
}
table_row() {
  local cells
  printf -v cells ' %s |' "$@"
  echo "|$cells" | tee -a "$out"
}

# ratio A B: A / B with two decimals.
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }

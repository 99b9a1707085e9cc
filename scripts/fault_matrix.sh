#!/usr/bin/env bash
# Reruns the faults of issue 14 that this branch fixed and prints one table row each: the faulty run's wall time
# (the fault is present from its start, or strikes at its second save), its exit code and what was kept.
#   scripts/fault_matrix.sh [GRIDTRAIN] [OUT.md]
set -u
bin=${1:-build/src/cli/gridtrain} out=${2:-runs/fault_matrix.md}
w=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_faults_XXXXXX"); trap 'rm -rf "$w"' EXIT
mkdir -p "$(dirname "$out")"
c=(train --config tiny model.d_model=32 model.seq_len=16 model.vocab_size=64 train.micro_batch_size=2
   output.log_every=1000 output.peak_gflops=1)
row() {  # name ranks kept-check -- args...
  local name=$1 n=$2 keep=$3; shift 4
  local t0=$(date +%s.%N)
  if [ "$n" -gt 1 ]; then timeout -k 5 300 mpiexec -n "$n" "$bin" "$@" >"$w/log" 2>&1; else timeout -k 5 300 "$bin" "$@" >"$w/log" 2>&1; fi
  local code=$? t1=$(date +%s.%N)
  local line=$(grep -m1 "^gridtrain: error" "$w/log" || grep -m1 "^gridtrain: warning" "$w/log")
  line=$(echo "$line" | sed "s|$w|W|g" | cut -c1-120)
  printf '| %s | %d | %.1f | %d | %s | %s |\n' "$name" "$n" "$(echo "$t1 - $t0" | bc)" $code "$(eval "$keep")" "${line//|/\\|}" | tee -a "$out"
}
echo "| fault | ranks | s to exit | exit | kept | first line |" | tee "$out"
echo "|---|---|---|---|---|---|" | tee -a "$out"
d=$w/r; "$bin" "${c[@]}" output.dir="$d" train.steps=4 checkpoint.every=2 >/dev/null 2>&1
echo garbage >"$d/checkpoints/latest"
row "garbage latest" 1 'ls $d/checkpoints | tr "\n" " "' -- "${c[@]}" output.dir="$d" train.steps=5 checkpoint.resume=auto
for f in "$d"/checkpoints/step_*.h5; do printf 'XXXX' | dd of="$f" bs=1 seek=2000 conv=notrunc 2>/dev/null; done
row "all checkpoints invalid (resume=auto)" 2 'ls $d/checkpoints | tr "\n" " "' -- "${c[@]}" output.dir="$d" train.steps=6 checkpoint.resume=auto
printf '[train]\nsteps = 2\nsteps = 3\n' >"$w/dup.toml"
row "duplicate key in deck" 2 'echo -' -- train --config "$w/dup.toml" output.dir="$w/x"
: >"$w/file"
row "checkpoint dir is a file" 2 'echo no metrics: $(test -s $w/y/metrics.jsonl && echo NO || echo yes)' -- "${c[@]}" output.dir="$w/y" checkpoint.dir="$w/file/c"
t0=$(date +%s.%N)
timeout -k 5 300 mpiexec -n 1 "$bin" "${c[@]}" output.dir="$w/m" : -n 1 "$bin" "${c[@]}" output.dir="$w/m" train.seed=9 >"$w/log" 2>&1; code=$?
printf '| ranks disagree (MPMD, train.seed) | 2 | %.1f | %d | - | %s |\n' "$(echo "$(date +%s.%N) - $t0" | bc)" $code "$(grep -m1 '^gridtrain: error' "$w/log" | cut -c1-110)" | tee -a "$out"
if unshare -m true 2>/dev/null; then
  for n in 1 2 4; do
    t0=$(date +%s.%N)
    unshare -m bash -c 'dir=$1; shift; mkdir -p "$dir/checkpoints" && mount -t tmpfs -o size=8m tmpfs "$dir/checkpoints" &&
      timeout -k 5 300 mpiexec -n "$@" >"$0/log" 2>&1; echo $? >"$0/code"; ls -A "$dir/checkpoints" | tr "\n" " " >"$0/kept"' \
      "$w" "$w/d$n" "$n" "$bin" train --config tiny train.steps=6 checkpoint.every=2 output.peak_gflops=1 output.log_every=1000 output.dir="$w/d$n"
    printf '| disk full at 2nd save (tmpfs 8 MiB) | %d | %.1f | %s | %s | %s |\n' $n "$(echo "$(date +%s.%N) - $t0" | bc)" "$(cat "$w/code")" "$(cat "$w/kept")" "$(grep -m1 '^gridtrain: error' "$w/log" | cut -c1-110)" | tee -a "$out"
  done
fi

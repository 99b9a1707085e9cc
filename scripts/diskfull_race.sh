#!/usr/bin/env bash
# The disk fills in the middle of a save: a run of `tiny` writes its checkpoints into a small tmpfs of its own (a
# private mount namespace: root or user namespaces), and a filler takes every free byte of it as soon as the
# step-4 .tmp file appears. The outcome is a race, so each rank count is tried many times and every try is
# classified:
#   saved     exit 0, `latest` names step 4, step 2 and step 4 kept (the save had taken its room first)
#   refused   exit 1, one error line "no room for the checkpoint", `latest` and step 2 untouched
#   hang      no exit within the limit (killed; 124/137)
#   crash     exit by a signal other than the limit's, or a segfault/backtrace in the output
#   other     any other exit, or a .tmp, latest.tmp or lock left behind, or a rank process left running
# Before the reservation (issue 26) 2 ranks hung in 3 of 5 tries and 1 rank crashed in 1 of 3.
#   scripts/diskfull_race.sh [GRIDTRAIN] [TRIES] [RANKS...]     (defaults: build/src/cli/gridtrain 20 1 2 4)
#   RACE_OUT=FILE      the table is also appended there (default runs/diskfull_race.md)
#   RACE_LIMIT_S=S     the limit of one try (default 30: every rank must have exited by then)
# Exit status: 0 when every try was saved or refused, 1 otherwise, 77 when no private mount namespace exists.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$here/build/src/cli/gridtrain}; tries=${2:-20}
shift $(( $# >= 2 ? 2 : $# ))
ranks=("$@"); [ ${#ranks[@]} -gt 0 ] || ranks=(1 2 4)
out=${RACE_OUT:-$here/runs/diskfull_race.md}; limit=${RACE_LIMIT_S:-30}
mpiexec=${MPIEXEC:-mpiexec}
unshare -m true 2>/dev/null || { echo "diskfull_race: no private mount namespace here (needs root or user namespaces)"; exit 77; }
bin=$(readlink -f "$bin")
w=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_race_XXXXXX"); trap 'rm -rf "$w"' EXIT
mkdir -p "$(dirname "$out")"

# One try, inside its own mount namespace: tmpfs, filler, run, then what was left. Writes $try.{code,files,latest,fill_t,end_t}.
cat >"$w/try.sh" <<'TRY'
set -u
bin=$1 mpiexec=$2 n=$3 limit=$4 run=$5
ck=$run/checkpoints
mkdir -p "$ck" && mount -t tmpfs -o size=16m tmpfs "$ck" || exit 77
python3 - "$ck" "$run.fill_t" <<'FILL' &
import errno, os, sys, time
ck, stamp = sys.argv[1], sys.argv[2]
target = os.path.join(ck, "step_00000004.h5.tmp")
while not os.path.exists(target):
    time.sleep(0.0002)
t = time.time()
fd = os.open(os.path.join(ck, "fill"), os.O_WRONLY | os.O_CREAT, 0o644)
st = os.statvfs(ck)
free = st.f_bavail * st.f_frsize
while free > 0:  # take all of it at once, then whatever pages are left one by one
    try:
        os.posix_fallocate(fd, 0, free)
        break
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        free -= 4096
off = os.fstat(fd).st_size
while True:
    try:
        os.pwrite(fd, b"\0" * 4096, off)
        off += 4096
    except OSError:
        break
os.close(fd)
open(stamp, "w").write("%.6f\n" % t)
FILL
filler=$!
args=(train --config tiny train.steps=4 checkpoint.every=2 checkpoint.keep=3 output.peak_gflops=1
      output.log_every=1000 output.dir="$run")
if [ "$n" -gt 1 ]; then timeout -k 5 "$limit" "$mpiexec" -n "$n" "$bin" "${args[@]}" >"$run.log" 2>&1
else timeout -k 5 "$limit" "$bin" "${args[@]}" >"$run.log" 2>&1; fi
echo $? >"$run.code"
date +%s.%N >"$run.end_t"
kill "$filler" 2>/dev/null; wait "$filler" 2>/dev/null
ls -A "$ck" | grep -v '^fill$' | tr '\n' ' ' >"$run.files"
cat "$ck/latest" >"$run.latest" 2>/dev/null
exit 0
TRY

ranks_left() {  # rank processes of this run still alive (gridtrain-bin, whose command line names the run)
  local p
  for p in $(pgrep -f "output.dir=$1\$" 2>/dev/null); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$bin-bin" ] && echo "$p"
  done
}

bad=0
{
  echo
  echo "diskfull_race: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores," \
       "load $(cut -d' ' -f1-3 /proc/loadavg); $bin; $tries tries per rank count, limit $limit s"
  echo
  echo "| ranks | tries | saved | refused (one line) | hang | crash | other | s from fill to exit (max) |"
  echo "|---|---|---|---|---|---|---|---|"
} | tee -a "$out"
for n in "${ranks[@]}"; do
  declare -A count=([saved]=0 [refused]=0 [hang]=0 [crash]=0 [other]=0)
  worst=0
  for i in $(seq 1 "$tries"); do
    run=$w/r$n-$i
    unshare -m bash "$w/try.sh" "$bin" "$mpiexec" "$n" "$limit" "$run"
    [ $? -eq 77 ] && { echo "diskfull_race: cannot mount a tmpfs"; exit 77; }
    code=$(cat "$run.code"); files=$(cat "$run.files"); latest=$(cat "$run.latest" 2>/dev/null)
    left=$(ranks_left "$run")
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    errors=$(grep -c '^gridtrain: error: ' "$run.log")
    if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then kind=hang
    elif [ "$code" -gt 128 ] || grep -qi "segmentation\|backtrace\|signal 11" "$run.log"; then kind=crash
    elif [ -n "$left" ]; then kind=other
    elif [ "$code" -eq 0 ] && [ "$latest" = step_00000004.h5 ] && [ "$files" = "latest step_00000002.h5 step_00000004.h5 " ]; then kind=saved
    elif [ "$code" -eq 1 ] && [ "$errors" -eq 1 ] && grep -q '^gridtrain: error: .*no room for the checkpoint' "$run.log" &&
         [ "$latest" = step_00000002.h5 ] && [ "$files" = "latest step_00000002.h5 " ]; then kind=refused
    else kind=other
    fi
    if [ -s "$run.fill_t" ]; then
      s=$(echo "$(cat "$run.end_t") - $(cat "$run.fill_t")" | bc)
      worst=$(echo "if ($s > $worst) $s else $worst" | bc)
    fi
    count[$kind]=$((count[$kind] + 1))
    if [ "$kind" != saved ] && [ "$kind" != refused ]; then
      bad=1
      echo "  try $i at $n ranks: $kind (exit $code, left: $files, latest: $latest): $(grep -m1 'gridtrain: error' "$run.log" | cut -c1-160)" >&2
    fi
  done
  printf '| %d | %d | %d | %d | %d | %d | %d | %.1f |\n' "$n" "$tries" "${count[saved]}" "${count[refused]}" \
    "${count[hang]}" "${count[crash]}" "${count[other]}" "$worst" | tee -a "$out"
  unset count
done
exit $bad

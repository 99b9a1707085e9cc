#!/usr/bin/env bash
# Chaos run (issue 26): 4-rank runs (tp2 dp2 and pp2 dp2, fp32 and bf16, ZeRO 0 and 3) under scripts/launch.sh,
# restarted after every fault, into which a seeded schedule injects faults at random steps:
#   kill      a random rank SIGKILLed (the launcher takes the job down)
#   stop      a random rank SIGSTOPped: the watchdog (train.watchdog_s) names it and aborts the job
#   term      SIGTERM to the job's batch script (as Slurm does): checkpoint and exit 75
#   damage    the job killed (SIGKILL to every rank) and the newest checkpoint damaged (bytes flipped in its data):
#             the restart must skip it and resume from the one before
#   diskfull  the checkpoint file system (a tmpfs of the run's own) filled as soon as the next save's .tmp
#             appears: the save is refused with one line (or, if it had taken its room first, the next one is);
#             the space is given back before the restart
#   slow      a random rank SIGSTOPped for 4 s, then continued: the run goes on
# Every attempt after a fault resumes with checkpoint.resume=auto. At the end each configuration's final weights
# (params/, adam_m/, adam_v/ of the last checkpoint) must equal bit for bit those of the same run without faults
# (h5diff, no tolerance: resume is bitwise), no rank process and no lock may be left, and every fault is listed
# with the seconds from the fault to the exit of every rank and what was kept.
#   scripts/chaos.sh [GRIDTRAIN] [FAULTS] [SEED]     (defaults: build/src/cli/gridtrain 50 1)
#   CHAOS_CONFIGS="tp2dp2-fp32-z0 pp2dp2-bf16-z3 ..."   configurations (default: all 8)
#   CHAOS_KINDS="kill stop term damage diskfull slow"    fault kinds drawn from (default: all)
#   CHAOS_STEPS=60 CHAOS_EVERY=3                         steps of each run, checkpoint interval
#   CHAOS_OUT=FILE                                       the tables are also appended there (default runs/chaos.md)
# Needs root or user namespaces for the tmpfs (without: the diskfull kind is left out). Exit 0 when every
# configuration ended bitwise equal with nothing left behind, 1 otherwise.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(readlink -f "${1:-$here/build/src/cli/gridtrain}")
faults=${2:-50} seed=${3:-1}
if [ -z "${CHAOS_IN_NS:-}" ] && unshare -m true 2>/dev/null; then  # a private mount namespace for the tmpfs
  CHAOS_IN_NS=1 exec unshare -m bash "$0" "$bin" "$faults" "$seed"
fi
configs=(${CHAOS_CONFIGS:-tp2dp2-fp32-z0 tp2dp2-fp32-z3 tp2dp2-bf16-z0 tp2dp2-bf16-z3 pp2dp2-fp32-z0 pp2dp2-fp32-z3 pp2dp2-bf16-z0 pp2dp2-bf16-z3})
kinds=(${CHAOS_KINDS:-kill stop term damage diskfull slow})
[ -n "${CHAOS_IN_NS:-}" ] || kinds=($(printf '%s\n' "${kinds[@]}" | grep -vx diskfull))
steps=${CHAOS_STEPS:-60} every=${CHAOS_EVERY:-3}
out=${CHAOS_OUT:-$here/runs/chaos.md}
mkdir -p "$(dirname "$out")"
w=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_chaos_XXXXXX")
cleanup() { umount "$w"/*/ckpt 2>/dev/null; [ -n "${CHAOS_KEEP:-}" ] || rm -rf "$w"; }
trap cleanup EXIT
RANDOM=$seed
model=(model.n_layer=2 model.d_model=32 model.n_head=4 model.seq_len=16 model.vocab_size=64 train.micro_batch_size=2
       output.log_every=1000 output.peak_gflops=1 train.watchdog_s=15 checkpoint.keep=3)

now() { date +%s.%N; }
last_step() {  # the last step in the run's metrics, 0 before the first
  local s
  s=$(tail -1 "$1/metrics.jsonl" 2>/dev/null | sed -n 's/.*"step": *\([0-9]*\).*/\1/p')
  echo "${s:-0}"
}
rank_pids() {  # rank_pids RUN [RANK]: the gridtrain-bin processes of this run (of world rank RANK)
  local p
  for p in $(pgrep -f "output.dir=$1( |\$)"); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$bin-bin" ] || continue
    [ -z "${2:-}" ] || tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMI_RANK=$2" || continue
    echo "$p"
  done
}
kept() {  # "latest -> step_X; files"
  local ck=$1
  echo "latest $(cat "$ck/latest" 2>/dev/null | sed 's/step_0*\([0-9]*\).h5/\1/' || echo -); $(ls "$ck" 2>/dev/null |
    sed -n 's/^step_0*\([0-9]*\)\.h5$/\1/p' | sort -n | tr '\n' ' ')$(ls "$ck" 2>/dev/null | grep -q 'tmp$' && echo '+tmp')"
}
# launch CONFIG RUN CKPT LOG: one attempt under scripts/launch.sh, in the background ($! is launch.sh)
launch() {
  local c=$1 run=$2 ck=$3 log=$4 grid prec zero
  IFS=- read -r grid prec zero <<<"$c"
  local tp=1 pp=1
  case $grid in tp2dp2) tp=2 ;; pp2dp2) pp=2 ;; esac
  GT_ARGS="${model[*]} train.precision=$prec parallel.zero=${zero#z} checkpoint.dir=$ck" \
    "$here/scripts/launch.sh" -n 4 --tp $tp --pp $pp --dp 2 --steps "$steps" --every "$every" --run-dir "$run" \
    --bin "$bin" >"$log" 2>&1 &
}
flip_newest() {  # damage the data of the newest checkpoint (not its metadata): a checksum mismatch on resume
  local f
  f=$(ls "$1"/step_*.h5 2>/dev/null | sort | tail -1)
  [ -n "$f" ] && python3 - "$f" <<'PY'
import sys
f = open(sys.argv[1], "r+b"); f.seek(0, 2); n = f.tell()
for at in (n // 3, n // 2, 2 * n // 3):
    f.seek(at); b = f.read(16); f.seek(at); f.write(bytes(x ^ 0x5A for x in b))
PY
  echo "${f##*/}"
}
arm_filler() {  # fills $1 as soon as a step_*.h5.tmp newer than now appears there; the time into $2; pid: $filler
  python3 - "$1" "$2" >/dev/null 2>&1 <<'PY' &
import errno, os, sys, time
ck, stamp = sys.argv[1], sys.argv[2]
seen = {n for n in os.listdir(ck) if n.endswith(".h5.tmp")}
while True:
    if any(n.endswith(".h5.tmp") and n not in seen for n in os.listdir(ck)):
        break
    time.sleep(0.0005)
open(stamp, "w").write("%.6f\n" % time.time())
fd = os.open(os.path.join(ck, "fill"), os.O_WRONLY | os.O_CREAT, 0o644)
free = os.statvfs(ck).f_bavail * os.statvfs(ck).f_frsize
while free > 0:
    try:
        os.posix_fallocate(fd, 0, free); break
    except OSError:
        free -= 4096
off = os.fstat(fd).st_size
while True:
    try:
        os.pwrite(fd, b"\0" * 4096, off); off += 4096
    except OSError:
        break
PY
  filler=$!
}

{
  echo
  echo "chaos: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, load" \
       "$(cut -d' ' -f1-3 /proc/loadavg); $bin; seed $seed, $faults faults over ${#configs[@]} configurations," \
       "$steps steps, a checkpoint every $every, 4 ranks each"
  echo
  echo "| # | configuration | fault | at step | s from fault to every rank's exit | exit | kept after (latest; steps on disk) | left behind |"
  echo "|---|---|---|---|---|---|---|---|"
} | tee -a "$out"
summary=() bad=0 n=0
per=$(( (faults + ${#configs[@]} - 1) / ${#configs[@]} ))
for c in "${configs[@]}"; do
  # the undisturbed run
  launch "$c" "$w/$c-ref" "$w/$c-ref/ckpt" "$w/$c-ref.log"
  wait $!; rc=$?
  ref=$w/$c-ref/ckpt/$(printf 'step_%08d.h5' "$steps")
  [ $rc -eq 0 ] && [ -f "$ref" ] || { echo "chaos: $c: the undisturbed run failed (exit $rc): $(tail -3 "$w/$c-ref.log")"; bad=1; continue; }
  run=$w/$c ck=$w/$c/ckpt
  mkdir -p "$ck"
  [ -n "${CHAOS_IN_NS:-}" ] && mount -t tmpfs -o size=32m tmpfs "$ck"
  left_here=$(( faults - n < per ? faults - n : per ))
  attempts=0 done_ok=0
  while [ $attempts -lt $((left_here + 10)) ]; do
    attempts=$((attempts + 1))
    from=$(sed -n 's/^step_0*\([0-9][0-9]*\)\.h5$/\1/p' "$ck/latest" 2>/dev/null); from=${from:-0}
    lines=$(cat "$run/metrics.jsonl" 2>/dev/null | wc -l)
    launch "$c" "$run" "$ck" "$w/$c-$attempts.log"
    job=$!
    kind="" filler=""
    # faults into this attempt until one ends it (a slow rank does not: the next fault follows in the same run)
    while [ $left_here -gt 0 ] && [ $((steps - from)) -ge 3 ] && kill -0 $job 2>/dev/null; do
      kind=${kinds[$((RANDOM % ${#kinds[@]}))]}
      span=$(( steps - from - 2 < 2 * every ? steps - from - 2 : 2 * every ))
      at=$(( from + 1 + RANDOM % span ))  # within two checkpoints of the resume: many faults fit in one run
      # wait until this attempt has logged that step (metrics.jsonl keeps the earlier attempts' lines)
      while kill -0 $job 2>/dev/null && { [ "$(cat "$run/metrics.jsonl" 2>/dev/null | wc -l)" -le "$lines" ] ||
                                          [ "$(last_step "$run")" -lt "$at" ]; }; do sleep 0.05; done
      if ! kill -0 $job 2>/dev/null || [ -z "$(rank_pids "$run")" ]; then kind=""; break; fi
      at=$(last_step "$run")
      victim=$(( RANDOM % 4 ))
      # damaging the only checkpoint leaves nothing to resume from (the run then refuses, by design): a kill instead
      [ $kind = damage ] && [ "$(ls "$ck"/step_*.h5 2>/dev/null | wc -l)" -lt 2 ] && kind=kill
      t_fault=$(now)
      left_here=$((left_here - 1))
      case $kind in
        kill) kill -KILL $(rank_pids "$run" $victim) 2>/dev/null ;;
        stop) kill -STOP $(rank_pids "$run" $victim) 2>/dev/null ;;
        term) kill -TERM $(pgrep -f "slurm/train.sbatch" -P $job) 2>/dev/null || kill -TERM $(rank_pids "$run") ;;
        damage) kill -KILL $(rank_pids "$run") 2>/dev/null ;;
        diskfull)
          rm -f "$w/fill_t"; arm_filler "$ck" "$w/fill_t"
          # the save that meets the full disk is refused (the attempt ends), or it had taken its room first: then
          # the disk is given back once that save is over and the run goes on, with the next fault to come
          while kill -0 $job 2>/dev/null && [ ! -s "$w/fill_t" ]; do sleep 0.05; done
          while kill -0 $job 2>/dev/null && ls "$ck"/*.h5.tmp >/dev/null 2>&1; do sleep 0.05; done
          sleep 1
          if kill -0 $job 2>/dev/null && [ -s "$w/fill_t" ]; then
            wait $filler 2>/dev/null; rm -f "$ck/fill"; filler=""
            n=$((n + 1))
            printf '| %d | %s | diskfull (the save had its room; disk given back) | %s | ran on | - | %s | - |\n' $n "$c" "$at" \
              "$(kept "$ck")" | tee -a "$out"
            from=$(last_step "$run") lines=$(cat "$run/metrics.jsonl" 2>/dev/null | wc -l) kind=""
            continue
          fi ;;
        slow)
          p=$(rank_pids "$run" $victim); kill -STOP $p; sleep 4; kill -CONT $p
          n=$((n + 1))
          printf '| %d | %s | slow (rank %d stopped 4 s) | %s | ran on | - | %s | - |\n' $n "$c" $victim "$at" "$(kept "$ck")" | tee -a "$out"
          from=$at lines=$(cat "$run/metrics.jsonl" 2>/dev/null | wc -l) kind=""
          continue ;;
      esac
      break
    done
    wait $job; rc=$?
    t_end=$(now)
    if [ -n "$kind" ]; then
      n=$((n + 1))
      damaged=""
      [ $kind = damage ] && damaged=" (damaged $(flip_newest "$ck"))"
      left=""
      pids=$(rank_pids "$run")
      if [ -n "$pids" ]; then left="ranks $pids"; kill -CONT $pids 2>/dev/null; kill -KILL $pids 2>/dev/null; bad=1; fi
      # a lock is expected only when rank 0 was killed (the restart takes it over, with a warning)
      [ -e "$ck/lock" ] && left="${left:+$left, }lock (taken over by the restart)"
      if [ -n "$filler" ]; then
        kill $filler 2>/dev/null; wait $filler 2>/dev/null
        if [ -s "$w/fill_t" ]; then t_fault=$(cat "$w/fill_t"); else kind="diskfull (no save came)"; fi
      fi
      rm -f "$ck/fill"
      printf '| %d | %s | %s | %s | %.1f | %d | %s%s | %s |\n' $n "$c" "$kind" "$at" "$(echo "$t_end - $t_fault" | bc)" $rc \
        "$(kept "$ck")" "$damaged" "${left:-nothing}" | tee -a "$out"
    fi
    if [ $rc -eq 0 ] && [ "$(last_step "$run")" = "$steps" ]; then done_ok=1; break; fi
    [ -n "$kind" ] || [ $rc -eq 75 ] || echo "chaos: $c: attempt $attempts ended without a fault (exit $rc): $(grep -m1 'error' "$w/$c-$attempts.log")"
  done
  final=$ck/$(printf 'step_%08d.h5' "$steps")
  equal=no
  if [ $done_ok = 1 ] && [ -f "$final" ] && h5diff -q "$ref" "$final" /params /params && h5diff -q "$ref" "$final" /adam_m /adam_m &&
     h5diff -q "$ref" "$final" /adam_v /adam_v; then equal=yes; fi
  lock=$([ -e "$ck/lock" ] && echo "lock left" || echo "no lock")
  procs=$([ -n "$(rank_pids "$run")" ] && echo "ranks left" || echo "no rank left")
  [ $equal = yes ] && [ "$lock" = "no lock" ] && [ "$procs" = "no rank left" ] || bad=1
  summary+=("| $c | $attempts | $equal | $lock, $procs |")
  [ -n "${CHAOS_IN_NS:-}" ] && umount "$ck" 2>/dev/null
done
{
  echo
  echo "| configuration | attempts | final weights bitwise equal to the undisturbed run | left at the end |"
  echo "|---|---|---|---|"
  printf '%s\n' "${summary[@]}"
  echo
  echo "faults injected: $n"
} | tee -a "$out"
exit $bad

#!/usr/bin/env bash
# The watchdog's report names the straggler (issue 25, docs/adaptive.md): dp = 2 under parallel.adapt = monitor,
# world rank 1 made 3x slower by the test hook until the straggler monitor flags it, then SIGSTOPped (the slowing
# node that then hangs). Rank 0's watchdog fires in the all-reduce that waits for it, and its report in
# output.dir/watchdog.log must carry the monitor's last verdict: "before the wait, stragglers: rank 1 at N.NNx its
# peers' median compute ...". The same with the hook on rank 0 must name rank 0 (so the text follows the
# detector, it is not a constant; a run with nothing slow is not checked: on 2 loaded cores either rank can
# measure 2x for a few steps and be flagged). The job's hard limit (watchdog + 30 s) makes a hang fail instead of blocking CI.
#   test_watchdog_straggler.sh GRIDTRAIN MPIEXEC
set -u
bin=$1 mpiexec=$2
TAG=wdstraggler
source "$(dirname "$0")/../common/scratch.sh"
stopped=
trap '[ -n "$stopped" ] && kill -CONT $stopped 2>/dev/null; rm -rf "$work"' EXIT
wd=4

# hang NAME: starts the job, waits until step 8 is in metrics.jsonl (the monitor's 4-of-5 rule has flagged a
# slowed rank by step 5), stops rank 1, and waits for the watchdog to end the job.
hang() {
  local d=$work/$1
  timeout -k 5 240 "$mpiexec" -n 2 "$bin" train --config tiny parallel.dp=2 parallel.allreduce=mpi \
    parallel.adapt=monitor output.log_every=1000 output.peak_gflops=1 output.dir="$d" train.steps=100000000 \
    checkpoint.save_final=false train.watchdog_s=$wd >"$d.log" 2>&1 &
  local job=$! t=0
  until [ -s "$d/metrics.jsonl" ] && [ "$(wc -l <"$d/metrics.jsonl")" -ge 8 ] && [ -s "$d/heartbeat/rank_1" ]; do
    sleep 0.2; t=$((t + 1))
    kill -0 $job 2>/dev/null || fail "$1: the job ended before step 8: $(tail -3 "$d.log")"
    [ $t -lt 1000 ] || { kill -9 $job; fail "$1: no step 8 in 200 s"; }
  done
  local pid
  pid=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$d/heartbeat/rank_1")
  [ -n "$pid" ] || fail "$1: no pid in rank 1's heartbeat"
  kill -STOP "$pid"; stopped=$pid
  ( sleep $((wd + 30)) & s=$!; trap 'kill $s 2>/dev/null; exit 0' TERM; wait $s
    kill -9 $job 2>/dev/null ) >/dev/null 2>&1 & local guard=$!
  wait $job; local code=$?
  kill $guard 2>/dev/null
  kill -CONT "$pid" 2>/dev/null; kill -9 "$pid" 2>/dev/null; stopped=
  [ $code -ne 0 ] || fail "$1: exit 0 with a stopped rank"
  [ $code -ne 137 ] || fail "$1: the job did not end within watchdog + 30 s"
  [ -s "$d/watchdog.log" ] || fail "$1: no watchdog.log: $(tail -3 "$d.log")"
}

# names_straggler NAME RANK [REST]: rank 0's watchdog report of the job NAME names RANK as the straggler, the text
# after "median compute" matching REST.
names_straggler() {
  local name=$1 rank=$2 rest=${3:-} line
  line=$(grep -m1 '^gridtrain: error: watchdog: rank 0 ' "$work/$name/watchdog.log") ||
    fail "$name: rank 0 did not report: $(cat "$work/$name/watchdog.log")"
  echo "$line" | grep -q "; before the wait, stragglers: rank $rank at [0-9.]*x its peers' median compute$rest" ||
    fail "$name: the report does not name rank $rank as the straggler: $line"
  echo "ok: $name: $line"
}

GRIDTRAIN_TEST_SLOW_RANK=1:3 hang slow
names_straggler slow 1 " at the last step (flagged for the last [0-9]* steps); aborting"

GRIDTRAIN_TEST_SLOW_RANK=0:3 hang slow0
names_straggler slow0 0

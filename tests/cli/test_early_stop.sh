#!/usr/bin/env bash
# A stop signal (SIGTERM, SIGUSR1) in the first milliseconds of a run, down to the moment of exec, is honoured as
# documented: a checkpoint and exit 75, never death by the signal's default action (exit 143 / 138). Before the
# launcher (src/cli/launcher.cpp) every delay up to ~200 ms on a loaded machine died by the signal: the real
# program spends that long loading its shared libraries before main() can install a handler. (The BLAS re-exec
# is not exercised here: it happens only where OpenBLAS picks slow kernels; restart_stop covers the request
# carried across it.)
#   test_early_stop.sh GRIDTRAIN
set -u
bin=$1
TAG=early source "$(dirname "$0")/../common/scratch.sh"
real=$(readlink -f "$bin")  # the launcher; the program it executes is its name + "-bin"
# Delays from the exec of the launcher to well inside gridtrain-bin's library loading (~100 ms and more on a loaded
# machine, docs/reliability.md case 8): 6 runs of about a second each on an idle machine.
for case in TERM:0 TERM:0.005 TERM:0.02 TERM:0.1 USR1:0 USR1:0.05; do
  sig=${case%%:*} d=${case#*:}
  out=$work/$sig-$d
  # the delay is counted from the fork: 0 signals the process while it is still execing the program
  timeout -k 10 240 "$bin" train --config tiny train.steps=50 output.peak_gflops=1 output.log_every=1000 \
    output.dir="$out" >"$out.log" 2>&1 &
  pid=$!
  # signal the program, not `timeout`: its child once it exists (as soon as possible for delay 0)
  # (and only once it executes gridtrain: between fork and exec it is still a copy of `timeout`)
  child=
  until [ -n "$child" ] && case $(readlink "/proc/$child/exe") in "$real"*) true ;; *) false ;; esac; do
    child=$(pgrep -P $pid)
  done
  sleep "$d"
  kill -$sig "$child"
  wait $pid; code=$?
  [ $code -eq 75 ] || fail "SIG$sig after ${d}s: exit $code, expected 75 (143/138: killed by the signal): $(tail -2 "$out.log")"
  grep -q "^gridtrain: stopped on request" "$out.log" || fail "SIG$sig after ${d}s: no stop line"
done
echo "ok: SIGTERM and SIGUSR1 from the first milliseconds on: checkpoint and exit 75"

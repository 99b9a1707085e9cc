#!/usr/bin/env bash
# netem_cluster: scripts/emulate_cluster.sh on 2 namespaces at 1 Gbit/s.
#  1. an all-reduce benchmark crosses the emulated links: each node's link sent at least the payload of one
#     1 MiB all-reduce (a run over shared memory would leave the links idle);
#  2. the trainer with dp=2 and parallel.allreduce=auto treats the namespaces as two nodes (start line says
#     mpi/library, not mpi/shm) and finishes its steps;
#  3. nothing is left behind: no namespace after a normal run, after a failing command, and after SIGTERM
#     during a run.
# Exits 77 (ctest SKIP) with the script's reason where namespaces cannot be made.
set -uo pipefail
emu="$1" bench="$2" trainer="$3"
work=$(mktemp -d /tmp/netem_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
name="gtt$$"
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$work/out" 2>/dev/null; exit 1; }
left() { ip netns list 2>/dev/null | grep -c "^$name-" || true; }

# 1. bench_allreduce across the links
"$emu" --name "$name" --nodes 2 --rate 1gbit --keep-stats -- \
  "$bench" --max-mib 1 --iters 1 --out "$work/ar.json" >"$work/out" 2>&1
rc=$?
if [[ $rc -eq 77 ]]; then grep SKIP "$work/out"; exit 77; fi
[[ $rc -eq 0 ]] || fail "bench_allreduce under emulation exited $rc"
[[ $(left) -eq 0 ]] || fail "namespaces left behind after a normal run"
for n in 0 1; do
  tx=$(awk -v n="$n" '$0 ~ "node " n " tx_bytes" {print $NF}' "$work/out")
  [[ -n "$tx" ]] || fail "no link counters for node $n"
  # a 2-rank all-reduce of 1 MiB sends at least 512 KiB from each rank; the benchmark runs several
  (( tx >= 524288 )) || fail "node $n link sent only $tx bytes: the all-reduce did not cross the emulated link"
done
echo "ok: all-reduce crossed the links ($(grep tx_bytes "$work/out" | tr '\n' ' '))"

# 2. the trainer resolves parallel.allreduce=auto to the MPI library across namespaces
"$emu" --name "$name" --nodes 2 --rate 1gbit -- "$trainer" --config tiny parallel.dp=2 train.steps=2 \
  output.log_every=1 output.dir="$work/run" >"$work/out" 2>&1 || fail "tiny dp=2 run under emulation failed"
grep -q "comm mpi/library" "$work/out" || fail "start line does not say comm mpi/library"
grep -q "step     2/2" "$work/out" || fail "the run did not reach step 2"
[[ $(left) -eq 0 ]] || fail "namespaces left behind after the trainer run"
echo "ok: trainer start line says mpi/library"

# 3a. a failing command: its exit status comes back, nothing is left
"$emu" --name "$name" --nodes 2 --rate 1gbit -- sh -c 'exit 3' >"$work/out" 2>&1
rc=$?
[[ $rc -ne 0 ]] || fail "a failing command under emulation returned 0"
[[ $(left) -eq 0 ]] || fail "namespaces left behind after a failing command"
# 3b. SIGTERM while the ranks run
marker="61.$$"  # a unique sleep argument, to find the ranks afterwards
"$emu" --name "$name" --nodes 2 --rate 1gbit -- sleep "$marker" >"$work/out" 2>&1 &
pid=$!
for _ in $(seq 1 60); do [[ $(left) -ge 3 ]] && break; sleep 0.5; done
[[ $(left) -ge 3 ]] || fail "namespaces never appeared"
sleep 2
kill -TERM "$pid"
wait "$pid"
[[ $(left) -eq 0 ]] || fail "namespaces left behind after SIGTERM"
sleep 1
if pgrep -f "sleep $marker" >/dev/null; then fail "ranks still run after SIGTERM: $(pgrep -af "sleep $marker")"; fi
echo "ok: torn down after failure and SIGTERM"

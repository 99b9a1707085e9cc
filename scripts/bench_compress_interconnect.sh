#!/usr/bin/env bash
# Experiment 1 of issue 11, the full matrix: dp=2 training across emulated interconnect rates
# (scripts/emulate_cluster.sh, one rank per emulated node, MPI over TCP) for dense fp32, dense bf16 and top-k at
# several densities with each transport. Within one rate every method runs back to back, so the ratios between
# them share the machine's load of that minute (the machine is shared: absolute times drift).
#   scripts/bench_compress_interconnect.sh OUT [STEPS] [RATES...]
#   defaults: STEPS 20, RATES pcie4 100gbit 25gbit 1gbit 200mbit 50mbit; PRESET (tiny); METHODS: names from the
#   list below (default all)
# Writes OUT/<rate>/<method>/{summary.json,metrics.jsonl,train.log,load}; a failed run leaves OUT/<rate>/<method>/FAILED
# and the matrix goes on (emulate_cluster.sh tears its namespaces down on every exit). Each run is ended after
# RUN_TIMEOUT seconds (default 240): MPICH/UCX over the shaped TCP link now and then hangs in MPI_Finalize after
# the run is complete (seen once at 50 Mbit/s: rank 0 polling UCX's tcp transport, rank 1 gone); a run whose
# summary.json was written is kept and its directory gets a file FINALIZE_HANG; a killed run's namespaces and
# the processes in them are removed by pid (cleanup_run). Then
#   /usr/bin/python3 scripts/plot_compress_interconnect.py OUT docs/experiments/compress_interconnect.png
# Needs root (network namespaces; exit 77 with a message where they cannot be made) and a built gridtrain.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: bench_compress_interconnect.sh OUT [STEPS] [RATES...]}" steps="${2:-20}"
shift $(( $# < 2 ? $# : 2 ))
rates=("$@")
[[ ${#rates[@]} -gt 0 ]] || rates=(pcie4 100gbit 25gbit 1gbit 200mbit 50mbit)
bin="${GT_BUILD:-$here/build}/src/cli/gridtrain"
[[ -x "$bin" ]] || { echo "bench_compress_interconnect: $bin not built" >&2; exit 2; }
declare -A cfg=(
  [fp32]="compress.method=none"
  [bf16]="compress.method=bf16"
  [topk4_ag]="compress.method=topk compress.density=0.04 compress.transport=allgather"
  [topk4_sh]="compress.method=topk compress.density=0.04 compress.transport=shared_index"
  [topk4_ag_bf16v]="compress.method=topk compress.density=0.04 compress.transport=allgather compress.values=bf16"
  [topk1_ag]="compress.method=topk compress.density=0.01 compress.transport=allgather"
  [topk1_sh]="compress.method=topk compress.density=0.01 compress.transport=shared_index"
  [topk0.1_ag]="compress.method=topk compress.density=0.001 compress.transport=allgather"
  [topk0.1_sh]="compress.method=topk compress.density=0.001 compress.transport=shared_index"
)
order=(fp32 bf16 topk4_ag topk4_sh topk4_ag_bf16v topk1_ag topk1_sh topk0.1_ag topk0.1_sh)
read -r -a methods <<<"${METHODS:-${order[*]}}"
cleanup_run() {
  local ns pids
  for ns in $(ip netns list 2>/dev/null | awk -v p="$1-" 'index($1, p) == 1 {print $1}'); do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [[ -n "$pids" ]] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  # the mpiexec of the run lives in the hub namespace: killed above; nothing of the run is left
  return 0
}
runs=0
mkdir -p "$out"
for r in "${rates[@]}"; do
  for m in "${methods[@]}"; do
    [[ -n "${cfg[$m]:-}" ]] || { echo "bench_compress_interconnect: unknown method '$m'" >&2; exit 2; }
    d="$out/$r/$m"
    rm -rf "$d" && mkdir -p "$d"
    cut -d' ' -f1-3 /proc/loadavg >"$d/load"
    # shellcheck disable=SC2086  # cfg holds several overrides
    name="gtc$(( $$ % 100000 ))n$((++runs))"  # at most 12 characters (emulate_cluster.sh --name); this run's namespaces: $name-hub, $name-n0, $name-n1
    timeout -k 10 "${RUN_TIMEOUT:-240}" "$here/scripts/emulate_cluster.sh" --rate "$r" --name "$name" -- \
      "$bin" train --config "${PRESET:-tiny}" parallel.dp=2 train.steps="$steps" output.log_every="$steps" \
      output.peak_gflops=1 checkpoint.save_final=false output.dir="$d/run" ${cfg[$m]} >"$d/train.log" 2>&1
    rc=$?
    # a run ended by the timeout may leave its namespaces and the processes in them (mpiexec waiting on a rank
    # stuck in MPI_Finalize) when the kill cut emulate_cluster.sh's own teardown short: end those processes by
    # pid and remove this run's namespaces
    [[ $rc == 124 || $rc == 137 ]] && cleanup_run "$name"
    [[ $rc == 77 ]] && { tail -1 "$d/train.log" >&2; exit 77; }
    [[ $rc == 124 && -f "$d/run/summary.json" ]] && { touch "$d/FINALIZE_HANG"; rc=0; }
    if [[ $rc != 0 || ! -f "$d/run/summary.json" ]]; then
      touch "$d/FAILED"; echo "== $r $m: FAILED (rc $rc): $(tail -1 "$d/train.log")" >&2; continue
    fi
    mv "$d/run/summary.json" "$d/run/metrics.jsonl" "$d/" 2>/dev/null; rm -rf "$d/run"
    /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("== %s %s: %.0f tok/s, %.1f ms/step, comm share %.1f%%, %.0f B/step" % (sys.argv[2], sys.argv[3], s["tokens_per_s"], s["ms_per_step"], 100*s["exposed_comm_share"], s.get("wire_bytes_per_step", 0)))' \
      "$d/summary.json" "$r" "$m" >&2
  done
done

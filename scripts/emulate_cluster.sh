#!/usr/bin/env bash
# Emulated slow interconnect on one machine: N "nodes", each its own Linux network namespace, joined through a
# bridge in a hub namespace by veth pairs whose egress is rate-limited (tbf) and delayed (netem). One MPI rank
# runs per node namespace, MPICH over TCP (UCX's tcp transport only: no shared memory, no CMA), so every byte
# of a collective crosses an emulated link. Everything is torn down at the end, also on failure or a signal.
#
#   scripts/emulate_cluster.sh [--nodes N] [--rate PRESET|RATE] [--delay D] [--ppn 1] -- COMMAND [ARGS...]
#     --nodes N     node namespaces (default 2; 2..8)
#     --rate        pcie4 | 100gbit | 25gbit | 1gbit | none (no shaping), or a tc rate such as 10gbit
#     --delay D     one-way delay added on each node's egress (tc time, e.g. 5us); default from the preset
#     --keep-stats  print each node link's tc counters after the run (bytes that crossed the emulated links)
#     --name NAME   prefix of the namespaces and links (default gtemu<pid>; lowercase letters and digits, at most 12)
#   Exit status: COMMAND's; 77 when namespaces cannot be made here (not root, no iproute2/tc, no veth/bridge).
#
# How MPI reaches the namespaces: mpiexec (hydra) runs in the hub namespace with the nodes' addresses as its
# hosts and this script (mode --exec-in-ns) as its rsh launcher, which runs hydra's proxy with `ip netns exec`
# in the namespace that owns the address. Hydra gives each host its own node id, so MPICH sees N nodes:
# MPI_COMM_TYPE_SHARED splits them apart and gridtrain's parallel.allreduce=auto resolves to the MPI library
# (its start line says mpi/library), never to the shared-memory path, even though /dev/shm is shared.
#
# What it can and cannot represent: see docs/experiments/interconnect.md. In short, the link rate and latency
# of a NIC per node, full duplex (both ends of each link are shaped); not PCIe/NVLink peer-to-peer copies
# (the kernel's veth and TCP stack on the loaded cores cap the rate well below 25 GB/s: pcie4 then means
# "as fast as this machine's veth goes"), not GPUDirect/RDMA, not a switch with oversubscription.
set -euo pipefail

# ---- launcher mode: hydra calls "THIS HOST COMMAND..." as it would call rsh (GT_EMU_LAUNCH names the run) --
if [[ -n "${GT_EMU_LAUNCH:-}" ]]; then
  while [[ "${1:-}" == -* ]]; do shift; done  # options meant for rsh/ssh, if any
  host="$1"; shift
  ns="$GT_EMU_LAUNCH-n$(( ${host##*.} - 1 ))"
  exec env -u GT_EMU_LAUNCH ip netns exec "$ns" sh -c "$*"
fi

die() { echo "emulate_cluster: $*" >&2; exit 2; }
skip() { echo "emulate_cluster: SKIP: $*" >&2; exit 77; }

nodes=2 rate=1gbit delay="" keep_stats=0 ppn=1 name="gtemu$$"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --delay) delay="$2"; shift 2 ;;
    --ppn) ppn="$2"; shift 2 ;;
    --keep-stats) keep_stats=1; shift ;;
    --name) name="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $# -gt 0 ]] || die "no command given after --"
[[ "$nodes" =~ ^[0-9]+$ && "$nodes" -ge 2 && "$nodes" -le 8 ]] || die "--nodes must be 2..8, got '$nodes'"
[[ "$ppn" =~ ^[0-9]+$ && "$ppn" -ge 1 ]] || die "--ppn must be a positive integer, got '$ppn'"
# veth names are at most 15 characters: NAME + a|b + node digit
[[ "$name" =~ ^[a-z][a-z0-9]{0,11}$ ]] || die "--name must be a lowercase letter then up to 11 letters/digits, got '$name'"

# Presets: the per-direction rate of one node's link and a one-way latency of that class of link.
# pcie4: PCIe 4.0 x16 carries ~25 GB/s per direction (200 Gbit/s); a veth on two loaded cores cannot, so the
# shaper is then not the bottleneck (the docs give the measured veth ceiling).
case "$rate" in
  pcie4) rate=200gbit; : "${delay:=1us}" ;;
  100gbit) : "${delay:=5us}" ;;
  25gbit) : "${delay:=10us}" ;;
  1gbit) : "${delay:=50us}" ;;
  none) : "${delay:=0us}" ;;
  *[0-9]bit|*[0-9][kmgt]bit) : "${delay:=10us}" ;;
  *) die "--rate must be pcie4|100gbit|25gbit|1gbit|none or a tc rate like 10gbit, got '$rate'" ;;
esac

[[ $(id -u) -eq 0 ]] || skip "network namespaces need root (uid $(id -u))"
command -v ip >/dev/null && command -v tc >/dev/null || skip "ip/tc not found (install iproute2)"
command -v mpiexec >/dev/null || die "mpiexec not found"

prefix="$name"
hub="$prefix-hub"
self="$(readlink -f "$0")"
created=()

launcher_pid=""
teardown() {
  local ns
  # a signal interrupted the wait below: end mpiexec (it ends its proxies and ranks) before the links go
  if [[ -n "$launcher_pid" ]] && kill -0 "$launcher_pid" 2>/dev/null; then
    kill -TERM "$launcher_pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$launcher_pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$launcher_pid" 2>/dev/null || true
  fi
  for ns in "${created[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  # veths die with their namespace; a half-made pair left in the root namespace (failure between add and
  # move) is removed by name
  ip -o link show 2>/dev/null | awk -F': ' -v p="$prefix" '$2 ~ "^"p {sub(/@.*/, "", $2); print $2}' |
    while read -r l; do ip link del "$l" 2>/dev/null || true; done
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkns() {
  ip netns add "$1" 2>/dev/null || skip "cannot create network namespace $1 (ip netns add failed)"
  created+=("$1")
  ip -n "$1" link set lo up
}

# Shapes egress of DEV in namespace NS: tbf limits the rate (burst: 1 ms of traffic at the rate, at least one
# 64 KiB GSO packet; limit: 50 ms of queue, at least 4 MiB: a short queue drops TCP segments and the 200 ms
# retransmission timeouts, not the rate, then set the pace); where the kernel has netem, a netem root adds the delay D first.
shape() {
  local ns="$1" dev="$2" d="$3"
  [[ "$rate" == none ]] && return 0
  local bps
  bps=$(awk -v r="$rate" 'BEGIN{ n = r + 0; u = r; sub(/^[0-9.]+/, "", u);
        m = (u ~ /^k/) ? 1e3 : (u ~ /^m/) ? 1e6 : (u ~ /^g/) ? 1e9 : (u ~ /^t/) ? 1e12 : 1; printf "%.0f", n * m / 8 }')
  local burst=$(( bps / 1000 > 65536 ? bps / 1000 : 65536 ))
  local qlimit=$(( bps / 20 > 4194304 ? bps / 20 : 4194304 ))
  if [[ $have_netem -eq 1 && "$d" != 0us ]]; then
    tc -n "$ns" qdisc add dev "$dev" root handle 1: netem delay "$d" limit 100000
    tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: tbf rate "$rate" burst "$burst" limit "$qlimit"
  else
    tc -n "$ns" qdisc add dev "$dev" root handle 10: tbf rate "$rate" burst "$burst" limit "$qlimit"
  fi
}

mkns "$hub"
# netem (delay) is optional: some kernels (this project's VM) have tbf but no sch_netem; the rate still holds
ip -n "$hub" link add gtprobe type veth peer name gtprobe2 2>/dev/null || true
have_netem=0
tc -n "$hub" qdisc add dev gtprobe root netem delay 1us 2>/dev/null && have_netem=1
ip -n "$hub" link del gtprobe 2>/dev/null || true
if [[ "$rate" != none ]]; then
  tc -n "$hub" qdisc add dev lo root tbf rate 1gbit burst 65536 limit 131072 2>/dev/null ||
    skip "tc cannot add a tbf qdisc here (kernel without sch_tbf?)"
  tc -n "$hub" qdisc del dev lo root
fi
[[ $have_netem -eq 1 ]] || { echo "emulate_cluster: kernel has no sch_netem: no added delay (rate limit only)" >&2; delay=0us; }
ip -n "$hub" link add gtbr type bridge || skip "cannot create a bridge (no bridge support in this kernel)"
ip -n "$hub" addr add 10.213.0.254/24 dev gtbr
ip -n "$hub" link set gtbr up
hosts=()
for ((i = 0; i < nodes; i++)); do
  ns="$prefix-n$i"
  mkns "$ns"
  a="${prefix}a$i" b="${prefix}b$i"
  ip link add "$a" type veth peer name "$b" || skip "cannot create a veth pair"
  ip link set "$a" netns "$ns"
  ip link set "$b" netns "$hub"
  ip -n "$ns" link set "$a" name gtnet
  ip -n "$hub" link set "$b" name "p$i"
  ip -n "$ns" addr add "10.213.0.$((i + 1))/24" dev gtnet
  ip -n "$ns" link set gtnet up
  ip -n "$hub" link set "p$i" master gtbr up
  # node -> switch: rate and latency; switch -> node: rate only (the link is full duplex at the rate)
  shape "$ns" gtnet "$delay"
  shape "$hub" "p$i" 0us
  hosts+=("10.213.0.$((i + 1))")
done
echo "emulate_cluster: $nodes nodes, rate $rate, delay $delay per direction, $ppn rank(s) per node" >&2

hostlist=$(IFS=,; echo "${hosts[*]}")
set +e
# UCX_TLS=tcp,self: no shared-memory or CMA transport between ranks (they share one kernel and /dev/shm);
# UCX_NET_DEVICES: the emulated link, never lo.
ip netns exec "$hub" env GT_EMU_LAUNCH="$prefix" UCX_TLS=tcp,self UCX_NET_DEVICES=gtnet \
  mpiexec -launcher rsh -launcher-exec "$self" -hosts "$hostlist" -localhost 10.213.0.254 \
  -ppn "$ppn" -n $(( nodes * ppn )) -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES gtnet "$@" &
# in the background and waited for, so that a signal runs the trap now, not after mpiexec ends by itself
launcher_pid=$!
wait "$launcher_pid"
rc=$?
launcher_pid=""
set -e
if [[ $keep_stats -eq 1 ]]; then
  for ((i = 0; i < nodes; i++)); do
    ip -n "$prefix-n$i" -s link show gtnet | awk -v n="$i" '/TX:/{getline; print "emulate_cluster: node " n " tx_bytes " $1}' >&2
  done
fi
exit $rc

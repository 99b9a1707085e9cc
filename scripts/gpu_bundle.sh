#!/usr/bin/env bash
# Prepares .gpu-bundle/ (ignored by git) with what scripts/gpu_check.sh needs on a device machine that reaches
# nothing outside itself; name it in the device run's `carry` (64 MiB in all):
#   third_party/         the Kokkos 4.6.01 tarball, the CUDA 13 patch and SHA256SUMS (from --third-party)
#   debs/                the Debian packages of MPICH, parallel HDF5, OpenBLAS and GoogleTest that the CPU build
#                        here links against: the packages owning every shared library of its programs (ldd), plus
#                        the -dev packages for headers, minus the base system (priority required/important)
#   ref_<preset>.losses  each step's loss of `gridtrain train --config <preset> train.steps=20` on this CPU build
#
#   scripts/gpu_bundle.sh [--third-party DIR] [--ref-presets small[,gpt2-124m]]
# Needs the CPU build in build/ (scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
third_party=$here/../shared/third_party
ref_presets=small
while [ $# -gt 0 ]; do
  case "$1" in
    --third-party) third_party=$2; shift 2 ;;
    --ref-presets) ref_presets=$2; shift 2 ;;
    *) echo "gpu_bundle.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
bundle=$here/.gpu-bundle
gridtrain=$here/build/src/cli/gridtrain
[ -x "$gridtrain" ] || { echo "gpu_bundle.sh: build the CPU version first (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$bundle/third_party" "$bundle/debs"
cp "$third_party"/kokkos-4.6.01.tar.gz "$third_party"/kokkos-4.6.01-cuda13.patch "$third_party"/SHA256SUMS "$bundle/third_party/"

# Packages: the owners of the libraries the CPU programs load (gridtrain-bin: `gridtrain` is its static launcher),
# the headers' packages, MPICH's launcher.
bins=("$gridtrain-bin" "$here"/build/tests/*/*test* "$here"/build/bench/bench_step /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy)
pkgs=$( { for b in "${bins[@]}"; do [ -x "$b" ] && [ -f "$b" ] && ldd "$b" 2>/dev/null; done | awk '/=> \//{print $3}' | sort -u |
          xargs -r readlink -f | xargs -r dpkg -S 2>/dev/null | cut -d: -f1;
          echo mpich libmpich-dev libhdf5-mpich-dev libopenblas-dev libopenblas-pthread-dev libgtest-dev; } | sort -u)
keep=()
for p in $pkgs; do
  prio=$(dpkg-query -W -f='${Priority}' "$p" 2>/dev/null || echo optional)
  case "$prio" in required|important) continue ;; esac
  case "$p" in libc6*|libstdc++*|libgcc*|libgomp1|libcuda*|libnvidia*) continue ;; esac
  keep+=("$p")
done
(cd "$bundle/debs" && rm -f ./*.deb && apt-get download "${keep[@]}" >/dev/null)
echo "gpu_bundle.sh: ${#keep[@]} packages, $(du -sh "$bundle/debs" | cut -f1)"

IFS=, read -ra presets <<<"$ref_presets"
for p in "${presets[@]}"; do
  run=$(mktemp -d)
  "$gridtrain" train --config "$p" train.steps=20 checkpoint.every=0 checkpoint.save_final=false \
    output.dir="$run" output.log_every=1 >/dev/null
  python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; print("\n".join(repr(d["loss"]) for d in r if "loss" in d))' \
    "$run/metrics.jsonl" >"$bundle/ref_$p.losses"
  rm -rf "$run"
  echo "gpu_bundle.sh: reference losses of $p: $(wc -l <"$bundle/ref_$p.losses") steps"
done
du -sh "$bundle"

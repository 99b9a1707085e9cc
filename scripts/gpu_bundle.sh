#!/usr/bin/env bash
# Prepares .gpu-bundle/ (ignored by git) with what scripts/gpu_check.sh needs on a device machine that reaches
# nothing outside itself; name it in the device run's `carry` (64 MiB in all, the checkout included):
#   prebuilt.tar.xz      the CUDA build of every target (build-gpu/, scripts/check_gpu_build.sh, compiled here for
#                        sm_90): programs and CTest files only, with .origin naming the paths to rewrite there. Saves
#                        the 3-5 minutes of device time a build there costs (--no-prebuilt leaves it out)
#   kokkos/              the CUDA Kokkos install of the cache (for a build there when no prebuilt tree is carried)
#   deps.tar.xz          the Debian packages of MPICH, parallel HDF5, OpenBLAS and GoogleTest that the CPU build
#                        here links against (the packages owning every shared library of its programs (ldd), plus
#                        the -dev packages for headers, minus the base system), unpacked, without docs or .a files
#   ref_<deck>_<p>.losses each step's loss of `gridtrain train --config <deck> train.steps=20 train.precision=<p>` on
#                        this CPU build, p = fp32 and bf16
#
#   scripts/gpu_bundle.sh [--third-party DIR] [--no-prebuilt]
# Needs the CPU build in build/ (scripts/setup.sh) and, for prebuilt.tar.xz, build-gpu/.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
third_party=$here/../shared/third_party
prebuilt=1
while [ $# -gt 0 ]; do
  case "$1" in
    --third-party) third_party=$2; shift 2 ;;
    --no-prebuilt) prebuilt=0; shift ;;
    *) echo "gpu_bundle.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
bundle=$here/.gpu-bundle
gridtrain=$here/build/src/cli/gridtrain
[ -x "$gridtrain" ] || { echo "gpu_bundle.sh: build the CPU version first (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$bundle/debs"
rm -rf "$bundle/third_party"  # the Kokkos install travels instead of its source (below)

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
(cd "$bundle/debs" && rm -f ./*.deb && apt-get download "${keep[@]}" >/dev/null 2>&1)
# Unpacked here into one prefix without documentation and static libraries, then xz: a third of the .debs' size
# (the carry limit is 64 MiB with the checkout).
prefix=$(mktemp -d)
for f in "$bundle"/debs/*.deb; do dpkg -x "$f" "$prefix"; done
rm -rf "$prefix"/usr/share/{doc,man,locale,info,lintian} "$bundle/debs"
find "$prefix" -name '*.a' -not -name 'libgtest*' -not -name 'libgmock*' -delete  # GoogleTest links static
tar -cf - -C "$prefix" . | xz -T0 -6 >"$bundle/deps.tar.xz"
rm -rf "$prefix"
echo "gpu_bundle.sh: ${#keep[@]} packages, deps.tar.xz $(du -sh "$bundle/deps.tar.xz" | cut -f1)"

# the GPT deck in both precisions, and the ResNet (resnet-tiny: synthetic images) in fp32, the one precision a device
# build runs it in so far
for run_of in small:fp32 small:bf16 resnet-tiny:fp32; do
  deck=${run_of%%:*} prec=${run_of##*:}
  run=$(mktemp -d)
  "$gridtrain" train --config "$deck" train.steps=20 train.precision=$prec checkpoint.every=0 \
    checkpoint.save_final=false output.dir="$run" output.log_every=1 >/dev/null
  python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; print("\n".join(repr(d["loss"]) for d in r if "loss" in d))' \
    "$run/metrics.jsonl" >"$bundle/ref_${deck}_$prec.losses"
  rm -rf "$run"
  echo "gpu_bundle.sh: reference losses of $deck $prec: $(wc -l <"$bundle/ref_${deck}_$prec.losses") steps"
done
rm -f "$bundle"/ref_small.losses

# nccl.h: the device image may carry NCCL as a Python wheel without its header (gpu_check.sh's nccl_prefix)
mkdir -p "$bundle/nccl" && cp /usr/local/cuda/include/nccl.h "$bundle/nccl/" 2>/dev/null || true

# The Kokkos install the CUDA build used (its CMake cache names it).
gpu=$here/build-gpu
kk=$(sed -n 's/^Kokkos_DIR:[A-Z]*=//p' "$gpu/CMakeCache.txt" 2>/dev/null | sed 's|/lib[^/]*/cmake/Kokkos$||')
[ -n "$kk" ] || kk=$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/gridtrain/kokkos-*/ 2>/dev/null | head -1 | sed 's|/$||')
rm -rf "$bundle/kokkos"
# its CMake files name their own prefix: gpu_check.sh puts it back at that path (.origin)
[ -n "$kk" ] && [ -d "$kk" ] && cp -a "$kk" "$bundle/kokkos" && echo "$kk" >"$bundle/kokkos/.origin" \
  && echo "gpu_bundle.sh: Kokkos install from $kk"
if [ "$prebuilt" = 1 ]; then
  [ -x "$gpu/src/cli/gridtrain" ] || { echo "gpu_bundle.sh: no CUDA build in $gpu (scripts/check_gpu_build.sh)" >&2; exit 1; }
  echo "$here $gpu" >"$gpu/.origin"
  # programs (not the CMake scratch) and the CTest files; stripped copies keep the bundle under the carry limit
  stage=$(mktemp -d)
  (cd "$gpu" && { echo .origin; find . -name CTestTestfile.cmake; find . -type f -executable -not -path '*/CMakeFiles/*'; } \
     | tar -cf - -T -) | tar -xf - -C "$stage"
  find "$stage" -type f -executable -exec strip --strip-unneeded {} + 2>/dev/null
  tar -cf - -C "$stage" . | xz -T0 -6 >"$bundle/prebuilt.tar.xz"
  rm -rf "$stage"
  echo "gpu_bundle.sh: prebuilt.tar.xz $(du -h "$bundle/prebuilt.tar.xz" | cut -f1) ($(tar -tJf "$bundle/prebuilt.tar.xz" | wc -l) files)"
fi
du -sh "$bundle"

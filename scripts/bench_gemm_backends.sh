#!/usr/bin/env bash
# issue 9 side-by-side: small fp32 step with oneDNN vs OpenBLAS (env's Haswell) vs PyTorch 1.13, one thread each, interleaved
cd "$(dirname "$0")/.."
out=${OUT:-runs/bench/gemm_backends}; rm -rf $out; mkdir -p $out
for r in 1 2; do
  for g in onednn openblas; do
    build/src/cli/gridtrain train --config small train.steps=6 checkpoint.save_final=false kernels.gemm=$g output.dir=$out/$g$r > $out/$g$r.log 2>&1
    python3 -c "import json;d=json.load(open('$out/$g$r/summary.json'));print('$g r$r ms/step %.1f tok/s %.0f mfu %.3f mfu_sgemm %.3f peak %.0f sgemm %.0f rss %.0f'%(d['ms_per_step'],d['tokens_per_s'],d['mfu'],d['mfu_sgemm'],d['peak_gflops_per_rank'],d['sgemm_gflops_per_rank'],d['peak_rss_mb']))"
  done
  /usr/bin/python3 scripts/bench_pytorch.py --preset small --threads 1 --steps 4 --out $out/pt$r.json 2>&1 | tail -2
done
cat /proc/loadavg

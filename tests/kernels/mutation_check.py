#!/usr/bin/env python3
"""Mutation check of the kernel tests: applies one small bug at a time to a copy of kernels/ (never to the
tree), rebuilds the test that should catch it against the copy, and reports CAUGHT / NOT CAUGHT.
Usage: tests/kernels/mutation_check.py [BUILD_DIR] [mutation indices...]   (BUILD_DIR default build-kernels;
the kernels library and test main must be built there). Takes ~10 s of compile per mutation."""
import subprocess, shutil, os, sys, tempfile
root = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
args = sys.argv[1:]
build = os.path.join(root, args.pop(0)) if args and not args[0].isdigit() else os.path.join(root, 'build-kernels')
work = tempfile.mkdtemp(prefix='gt_mut_')
muts=[
 ('embedding.hpp','for (int c = c0; c < c1; ++c) d[c] += g[c];','for (int c = c0; c < c1; ++c) d[c] = g[c];','reference'),
 ('layernorm.hpp','dx[j] += s *','dx[j] = s *','reference'),
 ('attention.hpp','    for (int j = n; j < T_; ++j) row[j] = T(0);\n','','reference'),
 ('attention.hpp','gemm(Op::T, Op::N, c1 - c0, hd, T_ - c0, scale','gemm(Op::T, Op::N, c1 - c0, hd, c1 - c0, scale','gradcheck'),
 ('crossentropy.hpp','tlogit[i] = (t >= 0 && t < Vl)','tlogit[i] = (t >= 0 && t < Vl + 1)','reference'),
 ('gelu.hpp','T(3 * 0.044715)','T(2 * 0.044715)','gradcheck'),
 ('fastmath.hpp','p = p * r + 1.0f / 720.0f;','p = p * r + 1.0f / 700.0f;','fastmath'),
 ('layernorm.hpp','T(1e-5)','T(1e-6)','reference'),
 ('adamw.hpp','const T mhat = mi / bc1;','const T mhat = mi;','reference'),
 ('crossentropy.hpp','inv - T(1));','inv - T(0.5));','gradcheck'),
 ('embedding.hpp','const long t = item / nblk;','const long t = item % nblk;','reference'),
 ('lanes.hpp','for (int k = 0; j + k < n; ++k) acc[k] += x[j + k];\n  return','for (int k = 0; j + k < n - 1; ++k) acc[k] += x[j + k];\n  return','reference'),
]
only = [int(a) for a in args]
for i,(f,a,b,test) in enumerate(muts):
    if only and i not in only: continue
    d=f'{work}/m{i}'
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(root+'/kernels', d+'/kernels')
    s=open(f'{d}/kernels/{f}').read()
    assert a in s, (i,a)
    s=s.replace(a,b,1)
    open(f'{d}/kernels/{f}','w').write(s)
    exe=f'{d}/t'
    cmd=f'g++ -O2 -march=native -fno-math-errno -std=c++17 -I{d} -I{root} -isystem /usr/include/trilinos {root}/tests/kernels/test_{test}.cpp {build}/tests/kernels/libgridtrain_kernels_testmain.a {build}/kernels/libgridtrain_kernels.a /usr/lib/x86_64-linux-gnu/libgtest.a -lpthread /usr/lib/x86_64-linux-gnu/libtrilinos_kokkoscore.so.13.2 -ldl -lopenblas -o {exe}'
    r=subprocess.run(cmd,shell=True,capture_output=True,text=True)
    if r.returncode: print(i,'COMPILE FAIL',r.stderr[:500]); continue
    r=subprocess.run(exe,capture_output=True,text=True)
    failed=[l for l in r.stdout.splitlines() if l.startswith('[  FAILED  ]') and 'listed' not in l]
    print(i,f,test,'CAUGHT' if r.returncode else 'NOT CAUGHT', failed[:4], flush=True)
shutil.rmtree(work, ignore_errors=True)

#!/usr/bin/env bash
# Training on a prepared HDF5 dataset through the real command (issue #4):
#   - `gridtrain inspect` prints a dataset and a checkpoint (and fails on a file that is neither);
#   - the background prefetch (data.prefetch=2) gives the same losses and validation losses bit for bit as
#     synchronous reads (data.prefetch=0), also across a checkpoint write and a validation pass;
#   - dp=2 and one rank with the same global batch see the same training and validation sequences: losses
#     and validation losses within fp32 tolerance; so do pp=3 (a middle stage that reads no tokens) and one rank.
#   test_data_run.sh GRIDTRAIN MPIEXEC
set -u
bin=$1 mpiexec=$2
TAG=data_run source "$(dirname "$0")/../common/scratch.sh"

# A small corpus: a few documents of English-like text, different lengths.
mkdir -p "$work/texts"
python3 - "$work/texts" <<'PY'
import random, sys
random.seed(5)
words = "the grid maps tensor pipeline and data parallel groups onto communicators while each rank drives one device".split()
for i in range(6):
    n = 400 + 300 * i
    open(f"{sys.argv[1]}/doc{i}.txt", "w").write(" ".join(random.choice(words) for _ in range(n)) + ".\n")
PY
"$bin" prepare --tokenizer byte --out "$work/corpus.h5" --quiet "$work/texts" >"$work/prepare.log" 2>&1 \
  || fail "prepare failed: $(tail -3 "$work/prepare.log")"

"$bin" inspect "$work/corpus.h5" >"$work/inspect.txt" 2>&1 || fail "inspect of the dataset failed: $(tail -3 "$work/inspect.txt")"
grep -q "tokenizer byte" "$work/inspect.txt" || fail "inspect does not show the tokenizer: $(head -3 "$work/inspect.txt")"
"$bin" inspect "$work/texts/doc0.txt" >"$work/inspect_bad.txt" 2>&1 && fail "inspect accepted a text file"
grep -q "doc0.txt" "$work/inspect_bad.txt" || fail "inspect's error does not name the file"

common=(train --config tiny model.n_layer=2 model.d_model=32 model.n_head=4 model.seq_len=32 model.vocab_size=256
        data.source=hdf5 data.path="$work/corpus.h5" data.val_every=3 data.val_batches=2 train.steps=7
        train.warmup_steps=2 output.log_every=1000 output.peak_gflops=1 checkpoint.every=4)
# losses DIR -> "step loss val_loss" lines (exact decimal round-trip of the doubles)
losses() { python3 -c 'import json,sys
for l in open(sys.argv[1]+"/metrics.jsonl"):
    r=json.loads(l); print(r["step"], repr(r["loss"]), repr(r.get("val_loss")))' "$1"; }

timeout 300 "$bin" "${common[@]}" train.micro_batch_size=4 train.micro_batches=2 data.prefetch=0 \
  output.dir="$work/sync" >"$work/sync.log" 2>&1 || fail "run without prefetch failed: $(tail -3 "$work/sync.log")"
timeout 300 "$bin" "${common[@]}" train.micro_batch_size=4 train.micro_batches=2 data.prefetch=2 \
  output.dir="$work/pre" >"$work/pre.log" 2>&1 || fail "run with prefetch failed: $(tail -3 "$work/pre.log")"
losses "$work/sync" >"$work/a"; losses "$work/pre" >"$work/b"
[ "$(wc -l <"$work/a")" -eq 7 ] || fail "expected 7 metric lines"
grep -q "None" <(sed -n 3p "$work/a") && fail "no validation loss at step 3"
cmp -s "$work/a" "$work/b" || { diff "$work/a" "$work/b"; fail "prefetch changed the losses"; }
echo "ok: prefetch=2 gives the losses and validation losses of synchronous reads bit for bit"

timeout 300 "$mpiexec" -n 2 "$bin" "${common[@]}" train.micro_batch_size=4 train.micro_batches=1 parallel.dp=2 \
  output.dir="$work/dp2" >"$work/dp2.log" 2>&1 || fail "dp=2 run failed: $(tail -3 "$work/dp2.log")"
losses "$work/dp2" >"$work/c"
python3 - "$work/a" "$work/c" <<'PY' || fail "dp=2 does not reproduce the one-rank losses"
import sys
a = [l.split() for l in open(sys.argv[1])]; c = [l.split() for l in open(sys.argv[2])]
assert len(a) == len(c) == 7, (len(a), len(c))
worst = 0.0
for x, y in zip(a, c):
    for i in (1, 2):
        if x[i] == "None" or y[i] == "None":
            assert x[i] == y[i], (x, y)
            continue
        worst = max(worst, abs(float(x[i]) - float(y[i])) / abs(float(x[i])))
print("worst relative difference, loss and val loss, dp=2 vs 1 rank:", worst)
sys.exit(0 if worst < 1e-5 else 1)
PY
echo "ok: dp=2 and one rank with the same global batch: same training and validation losses"

# pp=3: only the first and last stages read tokens (the middle one reads none), with prefetch on
deep=(model.n_layer=3 train.micro_batch_size=4 train.micro_batches=3 data.prefetch=2)
timeout 300 "$bin" "${common[@]}" "${deep[@]}" output.dir="$work/pp1" >"$work/pp1.log" 2>&1 \
  || fail "3-layer one-rank run failed: $(tail -3 "$work/pp1.log")"
timeout 300 "$mpiexec" -n 3 "$bin" "${common[@]}" "${deep[@]}" parallel.pp=3 output.dir="$work/pp3" >"$work/pp3.log" 2>&1 \
  || fail "pp=3 run failed: $(tail -3 "$work/pp3.log")"
losses "$work/pp1" >"$work/d"; losses "$work/pp3" >"$work/e"
python3 - "$work/d" "$work/e" <<'PY' || fail "pp=3 does not reproduce the one-rank losses"
import sys
a = [l.split() for l in open(sys.argv[1])]; c = [l.split() for l in open(sys.argv[2])]
assert len(a) == len(c) == 7, (len(a), len(c))
worst = max(abs(float(x[i]) - float(y[i])) / abs(float(x[i])) for x, y in zip(a, c) for i in (1, 2) if x[i] != "None")
assert all((x[2] == "None") == (y[2] == "None") for x, y in zip(a, c))
print("worst relative difference, loss and val loss, pp=3 vs 1 rank:", worst)
sys.exit(0 if worst < 1e-5 else 1)
PY
echo "ok: pp=3 with prefetch and one rank: same training and validation losses"

ckpt=$(ls "$work/pre/checkpoints/"step_*.h5 | tail -1)
"$bin" inspect "$ckpt" >"$work/inspect_ckpt.txt" 2>&1 || fail "inspect of the checkpoint failed: $(tail -3 "$work/inspect_ckpt.txt")"
grep -q "params/wte" "$work/inspect_ckpt.txt" || fail "inspect does not list params/wte"
echo "ok: inspect prints the dataset and the checkpoint and rejects a text file"

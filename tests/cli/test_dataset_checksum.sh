#!/usr/bin/env bash
# Per-chunk token checksums (src/data/dataset_writer.cpp writes /<split>/token_checksums, src/data/dataset_file.cpp
# checks each chunk of 65536 tokens the first time a read touches it). Token bytes flipped inside a prepared dataset
# (the checksums and the HDF5 metadata left intact, ids kept below vocab_size) must stop training with one line
# naming the file and the chunk; before the checksums the run trained on the damaged tokens with exit 0.
#   test_dataset_checksum.sh GRIDTRAIN
set -u
bin=$1
TAG=ck source "$(dirname "$0")/../common/scratch.sh"
mkdir -p "$work/texts"
# ~240 KB of text (4 chunks of byte tokens), a marker in every file so that every chunk holds damage later
python3 - "$work/texts" <<'PY'
import sys, random
random.seed(7)
words = ["alpha", "beta", "gamma", "delta", "river", "stone", "light", "north"]
for i in range(24):
    body = " ".join(random.choice(words) for _ in range(1600))
    open(f"{sys.argv[1]}/t{i:02d}.txt", "w").write(f"MARKERQZXJ {body}\n")
PY
"$bin" prepare --tokenizer byte --out "$work/corpus.h5" --quiet "$work/texts" >"$work/prepare.log" 2>&1 \
  || fail "prepare failed: $(tail -3 "$work/prepare.log")"
args=(train --config tiny data.source=hdf5 data.path="$work/corpus.h5" train.steps=6 output.peak_gflops=1
      checkpoint.save_final=false)
"$bin" "${args[@]}" output.dir="$work/ok" >"$work/ok.log" 2>&1 || fail "clean dataset: $(tail -3 "$work/ok.log")"
! grep -q "checksum" "$work/ok.log" || fail "clean dataset: $(grep checksum "$work/ok.log")"
# flip the marker's token bytes in place (stored as uint8 or uint16 little-endian): Q<->q keeps ids valid
python3 - "$work/corpus.h5" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
n = 0
for pat in (b"QZXJ", b"Q\0Z\0X\0J\0"):
    i = data.find(pat)
    while i >= 0:
        data[i] ^= 0x20; n += 1
        i = data.find(pat, i + 1)
assert n >= 4, n
open(sys.argv[1], "wb").write(data)
PY
"$bin" "${args[@]}" output.dir="$work/bad" >"$work/bad.log" 2>&1; code=$?
[ $code -eq 1 ] || fail "damaged dataset: exit $code (0: trained on damaged tokens): $(tail -3 "$work/bad.log")"
[ "$(grep -c '^gridtrain: error: ' "$work/bad.log")" -eq 1 ] || fail "expected one error line: $(tail -5 "$work/bad.log")"
grep -q "^gridtrain: error: .*corpus.h5: /\(train\|val\)/tokens chunk [0-9]* (tokens [0-9]*-[0-9]*) does not match its checksum" \
  "$work/bad.log" || fail "unclear error: $(grep -i error "$work/bad.log")"
echo "ok: flipped token bytes are named by file and chunk"

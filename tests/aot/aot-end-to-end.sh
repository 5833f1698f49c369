#!/usr/bin/env bash
# lowbit aot writes a bundle with data (expected outputs checked here
# against the reference quantizer), the runner validates it without a GPU
# (--check: launch expressions, packing, file sizes), and on a machine
# without a driver or device the runner exits 3 with a clear message.
set -euo pipefail
lowbit=$1 runner=$2 out=$3
rm -rf "$out"
"$lowbit" aot 'quantize mxfp4' 'quantize fp8_e4m3' 'dequantize nvfp4' \
  'quantize int4_g128' 'quantize mxfp8 scale=static' \
  --target sm_90a --out "$out" --with-data 64x160 --bench 256x512
test -s "$out/manifest.json"
test -s "$out/quantize-mxfp4-f32.cubin"
grep -q '"entry": "kernel_kernel"' "$out/manifest.json"
"$runner" "$out" --check | tee "$out.check"
grep -q 'quantize-fp8_e4m3-f32 *ok' "$out.check"
if [[ -e /dev/nvidia0 ]]; then
  echo "a GPU is present: skipping the no-device check"
  exit 0
fi
set +e
"$runner" "$out" 2>"$out.err"
rc=$?
set -e
cat "$out.err"
[[ $rc == 3 ]]
grep -Eq 'no CUDA device|libcuda not found' "$out.err"
# Errors: no bundle, a spec the verifier refuses.
! "$runner" "$out/missing" --check 2>/dev/null
! "$lowbit" aot 'quantize nosuchscheme' --out "$out/bad" 2>/dev/null
# The GPU check's Python (no torch/triton here: syntax only) and the
# results-to-Markdown step on a synthetic result.
root=$(cd "$(dirname "$0")/../.." && pwd)
python3 -m py_compile "$root/bench/torch_peers.py" "$root/bench/triton/quant_kernels.py"
cat > "$out.lowbit.json" <<'JSON'
{"device": "NVIDIA H200", "chip": "sm_90", "driver_version": 13000,
 "entries": [{"name": "quantize-mxfp4-f32", "correctness": {"correct": true},
   "bench": {"rows": 8192, "cols": 8192, "gbps": 3000.0, "copy_gbps": 4000.0}}]}
JSON
echo '{"torch_version": "2.x", "rows": 8192, "cols": 8192, "peers": [{"name": "copy (d2d)", "gbps": 4000.0}]}' > "$out.peers.json"
python3 "$root/tools/gpu-results-to-md" --merge "$out.lowbit.json" "$out.peers.json" \
  --commit abc --out-json "$out.results.json" | tee "$out.md"
grep -q '| lowbit quantize-mxfp4-f32 | 8192x8192 | yes | 3000 | 4000 | 75% |' "$out.md"
python3 "$root/tools/gpu-results-to-md" "$out.results.json" | grep -q 'commit abc'
echo PASS

#!/usr/bin/env bash
# lowbit aot with KV-cache and decode-attention specs: a tiny bundle with
# data, the runner's --check of it (launches evaluated on the ranked
# shapes, every file's size and shape, the recomputations: an append's
# cache unchanged outside the appended rows, attention's output near its
# float64 reference), the check failing on a corrupted expected file, and
# bad specs refused with nothing written. With STUB (tests/jit's libcuda
# stand-in, which runs no kernel), the runner's device path: every entry
# loads, uploads (an append's cache before it too), launches both stages
# and downloads, with no error; the outputs then differ, as nothing ran.
# (kivi_dequantize's kernel takes 65 parameters, past the stand-in's 64.)
set -euo pipefail
lowbit=$1 runner=$2 out=$3 stub=${4:-}
rm -rf "$out" && mkdir -p "$out"
bundle=$out/bundle
"$lowbit" aot 'kv_append kv_int8_g64 heads=2 head_dim=64' \
  'kv_append kv_fp8_e4m3 scale=per_head layout=paged heads=2 head_dim=64' \
  'kv_dequantize kv_int8_g64 to=f16 layout=paged heads=2 head_dim=64' \
  'kv_attend kv_fp8_e4m3 scale=per_head q=bf16 q_heads=4 kv_heads=2 head_dim=64' \
  'kv_attend kv_int8_g64 layout=paged q_heads=4 kv_heads=2 head_dim=64 split=64' \
  'kivi_append kv_kivi_int4 group=8 residual=16 per_channel heads=2 head_dim=40' \
  'kivi_dequantize kv_kivi_int2 group=8 residual=16 per_token to=f16 layout=paged heads=2 head_dim=40' \
  --target sm_90a --out "$bundle" --with-data 1x1 --kv-data 2x20 \
  --attention-data 2x150 --kv-bench 1x512 --no-cubin
grep -q '"version": 3' "$bundle/manifest.json"
grep -q '"kind": "attention"' "$bundle/manifest.json"
grep -q '"float64_reference"' "$bundle/manifest.json"
"$runner" "$bundle" --check | tee "$out/check.txt"
[[ $(grep -c ' ok ' "$out/check.txt") == 7 ]]
# Attention: stage 1 then stage 2 on both sizes.
grep -q 'kv_attend-kv_int8_g64-f32-paged ok ptx kernel_kernel<<<.*kernel_kernel_0<<<' "$out/check.txt"

if [[ -n $stub ]]; then
  set +e
  LOWBIT_LIBCUDA=$stub "$runner" "$bundle" --out "$out/stub.json" --iterations 2 \
    > "$out/stub.txt"
  rc=$?
  set -e
  cat "$out/stub.txt"
  [[ $rc == 1 ]]
  python3 - "$out/stub.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
assert results["complete"] and len(results["entries"]) == 7, results
for entry in results["entries"]:
    if entry["op"] == "kivi_dequantize":
        continue
    correctness, bench = entry["correctness"], entry["bench"]
    assert "error" not in entry and "error" not in correctness, entry
    assert "error" not in bench and correctness["bytes_compared"] > 0, entry
    assert correctness["mismatched_bytes"] > 0, entry  # nothing ran
    if entry["op"] == "kv_attend":
        assert "max_relative_error_vs_float64" in correctness, entry
PY
  # The KV peers (every one skipped by name where torch or CUDA is
  # missing) and the Markdown rows of both.
  root=$(cd "$(dirname "$0")/../.." && pwd)
  python3 "$root/bench/torch_kv_peers.py" --kv-bench 1x512 --out "$out/kv-peers.json"
  python3 "$root/tools/gpu-results-to-md" --merge "$out/stub.json" \
    "$out/kv-peers.json" --kv-peers "$out/kv-peers.json" | tee "$out/results.md"
  grep -q '^| lowbit kv_attend-kv_int8_g64-f32-paged | 1x512 | NO (.*max rel err vs float64' "$out/results.md"
  grep -q '^| torch fp8 dequant + sdpa (decode) | 1x512 |' "$out/results.md"
fi

# A corrupted expected file fails the check: one code byte of sequence 0
# at token 20 (outside its append [0, 20)), and one attention output.
cp -r "$bundle" "$out/broken"
python3 - "$out/broken" <<'PY'
import struct, sys
def flip(path, byte_offset):
    data = bytearray(open(path, 'rb').read())
    header = 10 + struct.unpack('<H', data[8:10])[0]
    data[header + byte_offset] ^= 0x40
    open(path, 'wb').write(bytes(data))
root = sys.argv[1]
# codes [2, 2, 26, 64]: sequence 0, head 0, token 20.
flip(root + '/kv_append-kv_int8_g64-f16-contiguous.1.codes.expected.npy', 20 * 64)
# output [8, 64] f32: the exponent byte of one element per row.
for row in range(8):
    flip(root + '/kv_attend-kv_fp8_e4m3-per_head-bf16-contiguous.6.output.expected.npy', (row * 64 + 3) * 4 + 3)
PY
set +e
"$runner" "$out/broken" --check > "$out/broken.txt"
rc=$?
set -e
cat "$out/broken.txt"
[[ $rc == 1 ]]
grep -q 'kv_append-kv_int8_g64-f16-contiguous FAIL .*outside the append' "$out/broken.txt"
grep -q 'kv_attend-kv_fp8_e4m3-per_head-bf16-contiguous FAIL .*float64 reference' "$out/broken.txt"

# Bad specs: a clear message, a non-zero exit, nothing written.
for spec in 'kv_append kv_int8_g64 heads=2' \
            'kv_attend kv_fp8_e4m3 q_heads=3 kv_heads=2 head_dim=64' \
            'kv_dequantize kv_int9_g64 heads=2 head_dim=64' \
            'kivi_append kv_kivi_int4 group=0 heads=2 head_dim=64' \
            'kivi_dequantize kv_kivi_int4 to=f16 from=f32 heads=2 head_dim=64'; do
  if "$lowbit" aot "$spec" --out "$out/bad" 2>"$out/bad.err"; then
    echo "kv-bundle.sh: '$spec' was accepted" >&2
    exit 1
  fi
  grep -q "spec '$spec'" "$out/bad.err"
  [[ ! -e $out/bad/manifest.json ]]
done
echo PASS

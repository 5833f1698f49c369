#!/usr/bin/env bash
# `lowbit report` end to end on real kernels (needs the CUDA toolkit's
# nvJitLink and NVRTC, as the GPU tail tests do):
#   - the format model's minimum for mxfp4 from f16 is 2 + 1/2 + 1/32 =
#     2.53 B/elem, and a single-pass kernel moves exactly that;
#   - the load count it reports equals the ld.global lines of the PTX that
#     `lowbit compile --emit ptx` prints for the same spec;
#   - --with-nvrtc adds the NVRTC reference kernels, --markdown the table,
#     sm_100a works;
#   - a bad spec, target or size fails with a message and no output.
# usage: report-cli.sh LOWBIT
set -euo pipefail
lowbit=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$lowbit" report 'quantize mxfp4 from=f16' --size 256x4096 > "$work/mxfp4.txt"
cat "$work/mxfp4.txt"
grep -Eq '^quantize mxfp4 f16 on sm_90a: [0-9]+ launch\(es\), [0-9.]+ B/elem moved \(minimum 2\.53\), estimated [0-9]+% of HBM bandwidth, limited by ' "$work/mxfp4.txt"
grep -Eq '^    resources [0-9]+ registers, spills [0-9]+/[0-9]+ B, shared [0-9]+ B; occupancy [0-9]+%' "$work/mxfp4.txt"

# Loads in the report == ld.global lines in the PTX, kernel by kernel summed.
"$lowbit" compile 'quantize mxfp4 from=f16' --target sm_90a --emit ptx > "$work/mxfp4.ptx"
ptx_loads=$(grep -Ec '^\s*(@!?%p[0-9]+\s+)?(ld|ldu)\.global' "$work/mxfp4.ptx" || true)
report_loads=$(grep -E '^    global    loads' "$work/mxfp4.txt" |
  sed -E 's/.*loads (.*), stores.*/\1/' | grep -Eo 'x[0-9]+' | tr -d x |
  paste -sd+ | bc)
echo "loads: PTX $ptx_loads, report $report_loads"
[[ $ptx_loads -gt 0 && $ptx_loads == "$report_loads" ]]

"$lowbit" report 'quantize fp8_e4m3' --with-nvrtc --size 256x512 > "$work/nvrtc.txt"
grep -q '^nvrtc quantize fp8_e4m3 f32 on sm_90a: 2 launch(es)' "$work/nvrtc.txt"
grep -q '^  lowbit_ref_amax$' "$work/nvrtc.txt"
grep -q 'policy    grid-stride, min(ceil(n/256), 1024) x 256' "$work/nvrtc.txt"

"$lowbit" report 'dequantize nvfp4' --target sm_90a,sm_100a --markdown --size 256x512 > "$work/table.md"
cat "$work/table.md"
[[ $(wc -l < "$work/table.md") == 4 ]]
grep -q '^| kernel | chip | launches |' "$work/table.md"
grep -q '^| dequantize nvfp4 f32 | sm_100a | ' "$work/table.md"

# A fused spec: the report names the prologue, the side tensors' bytes in
# the fused minimum (bf16 into NVFP4 at 256x4096: 2 + 1/2 + 1/16 + the
# weight row and global scale = 2.57) and the unfused sequence.
"$lowbit" report 'rmsnorm | quantize nvfp4 from=bf16' --size 256x4096 \
    > "$work/fused.txt"
cat "$work/fused.txt"
grep -Eq '^rmsnorm\(eps=1e-06\) \| quantize nvfp4 bf16 on sm_90a: [0-9]+ launch\(es\), [0-9.]+ B/elem moved \(minimum 2\.57\)' "$work/fused.txt"
grep -Eq '^  fused     [0-9]+ launch\(es\), minimum 2\.57 B/elem; unfused 1 prologue kernel\(s\) \+ [0-9]+ launch\(es\), minimum 6\.57 B/elem \(2\.56x\)$' "$work/fused.txt"
# Its table row escapes the spec's `|`, so the row keeps its 13 cells.
"$lowbit" report 'rmsnorm | quantize nvfp4 from=bf16' --size 256x4096 \
    --markdown > "$work/fused.md"
grep -q '^| rmsnorm(eps=1e-06) \\| quantize nvfp4 bf16 | sm_90a | ' "$work/fused.md"
[[ $(tail -1 "$work/fused.md" | sed 's/\\|//g' | tr -cd '|' | wc -c) == 14 ]]
# A fused kernel the GPU lowering does not cover (Hadamard rows wider than
# its 48 KiB of shared memory): the compiler's reason, and no output.
if "$lowbit" report 'hadamard(64) | quantize mxfp4 rows=4 cols=16384' \
    > "$work/fused-refused.txt" 2> "$work/fused-refused.err"; then
  echo "hadamard(64) at 16384 columns was reported"; exit 1
fi
[[ ! -s $work/fused-refused.txt ]] || { echo "output on failure: fused"; exit 1; }
grep -qi 'hadamard' "$work/fused-refused.err" || { cat "$work/fused-refused.err"; exit 1; }

"$lowbit" report --help | grep -q '^usage: lowbit report (SPEC... | --all)'

# A matmul spec: the GEMV at M = 1 and 16, its bytes (x 8 KiB, codes 8 MiB,
# f16 scales 256 KiB, zeros 128 KiB, y 8 KiB at M = 1) and the loop of
# each M's row bucket, read off the SASS.
"$lowbit" report 'matmul int4_g128 from=bf16' --m 1,16 > "$work/matmul.txt"
cat "$work/matmul.txt"
grep -q '^  model inputs (M=1 N=4096 K=4096): HBM bytes x=8192 codes=8388608 scales=262144 zeros=131072 y=8192 (total 8798208' "$work/matmul.txt"
grep -Eq '^  GEMV: bucket 1 rows, 2 columns a warp, SASS loop at [0-9]+ of [0-9]+ instr for 64 weights' "$work/matmul.txt"
grep -Eq '^  GEMV: bucket 16 rows, 1 columns a warp, SASS loop at [0-9]+ of [0-9]+ instr for 32 weights' "$work/matmul.txt"
grep -q '^matmul int4_g128 from=bf16 to=bf16 dynamic at M=16 N=4096 K=4096 on sm_90a: 1 launch(es)' "$work/matmul.txt"

# Quantized-activation matmuls with a workspace (NVFP4's global, a
# per-tensor X scale): the report binds the workspace the JIT appends and
# reads all three launches.
for spec in 'matmul w=nvfp4 a=nvfp4 from=bf16' 'matmul w=fp8_e4m3 a=fp8_e4m3 from=bf16'; do
  "$lowbit" report "$spec" --size 256x256 --m 64 > "$work/act.txt"
  grep -q 'on sm_90a: 3 launch(es)' "$work/act.txt"
  grep -q "^X's quantize: .*through the workspace" "$work/act.txt"
done
# Behind a prologue: the front quantize kernel, then the GEMM, both named.
"$lowbit" report 'rmsnorm | matmul w=scheme(format=e4m3,scale=per_token) a=scheme(format=e4m3,scale=per_token) from=bf16' --size 256x256 --m 64 > "$work/front.txt"
grep -q 'on sm_90a: 2 launch(es)' "$work/front.txt"
grep -q "^X's quantize: a front kernel, then the GEMM" "$work/front.txt"
grep -Eq '^launches: [A-Za-z0-9_]+, [A-Za-z0-9_]+ \(the front quantize kernel' "$work/front.txt"

expect_failure() {
  local pattern=$1; shift
  if "$lowbit" report "$@" > "$work/out" 2> "$work/err"; then
    echo "expected failure: $*"; exit 1
  fi
  [[ ! -s $work/out ]] || { echo "output on failure: $*"; exit 1; }
  grep -q -- "$pattern" "$work/err" || { cat "$work/err"; exit 1; }
}
expect_failure "spec 'quantize nosuchscheme'" 'quantize nosuchscheme'
expect_failure 'no SM and memory model for sm_86' 'quantize mxfp4' --target sm_86
expect_failure 'must be an NVIDIA chip' 'quantize mxfp4' --target cpu
expect_failure 'sm_999' 'quantize mxfp4' --target sm_999
expect_failure 'give SPECs or --all' --all 'quantize mxfp4'
expect_failure 'expected ROWSxCOLS' 'quantize mxfp4' --size 12
expect_failure "'0' is not a positive row count" 'matmul int4_g128 from=bf16' --m 1,0
expect_failure "spec 'matmul nosuchscheme'" 'matmul nosuchscheme'
expect_failure 'not the --size 64x256' 'matmul int4_g128 from=bf16 n=128 k=256' --size 64x256
expect_failure 'cover the named schemes' 'quantize mxfp4 scale=static' --with-nvrtc
echo PASS

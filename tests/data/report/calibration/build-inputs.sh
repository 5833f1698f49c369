#!/usr/bin/env bash
# Regenerates the calibration inputs (docs/gpu-report.md, "Calibration"):
# for each kernel source and chip below, the PTX nvcc emits, the cubin's
# nvdisasm text and ptxas's -v log (its timing lines dropped, they change
# from run to run). Not run by the tests, which read the committed files;
# needs nvcc (the project's CUDA 13 toolkit) and nvdisasm (the pyenv's,
# tools/python-requirements.txt).
# usage: build-inputs.sh NVDISASM
set -euo pipefail
nvdisasm=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The flags the projects build these files with (vLLM and TensorRT-LLM
# both pass --expt-relaxed-constexpr and --extended-lambda), -O3 as theirs.
flags=(-O3 --expt-relaxed-constexpr --extended-lambda -std=c++17)
while read -r source chip; do
  name=${source%.cu}.$chip
  nvcc "${flags[@]}" -arch="$chip" -ptx "$here/$source" -o "$here/$name.ptx"
  nvcc "${flags[@]}" -arch="$chip" -cubin -Xptxas -v "$here/$source" \
    -o "$work/$name.cubin" 2> "$work/$name.log"
  grep -v 'Compile time' "$work/$name.log" > "$here/$name.ptxas.txt"
  "$nvdisasm" -c "$work/$name.cubin" > "$here/$name.sass"
  echo "$name: $(grep -c . "$here/$name.sass") SASS lines"
done <<'LIST'
vllm_scaled_fp8_quant.cu sm_90a
trtllm_fp8_quantize_1x128.cu sm_100a
vllm_per_token_group_quant.cu sm_100a
copy_unrolled_float4.cu sm_90a
LIST

#!/usr/bin/env bash
# The per-tensor schemes' amax launch (lowering/GpuTensorReduce.cpp) folds
# each block's maximum into the workspace from thread 0 only: a max and a
# ticket, and, in the block that draws the last ticket, two exchanges. The
# report counts atomics as executed (docs/gpu-report.md, "Executed
# atomics"): 4 per block (the last block's test reads the ticket, data the
# analysis cannot see, so every block's thread 0 is counted for it), not 4
# per thread. Checked for each per-tensor scheme on sm_90a and sm_100a:
#   - the ops line: executed 4 per block, 4 x the grid's blocks in all;
#   - the SASS line: the atomics ptxas emitted (a max, an add, two
#     exchanges, ATOMG each);
#   - the spec is not "limited by contended atomics";
#   - with LOWBIT_NVDISASM empty or not a file, the report says it reads
#     PTX only, and the executed count stays the same.
# usage: executed-atomics.sh LOWBIT   (LOWBIT_NVDISASM: the disassembler)
set -euo pipefail
lowbit=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ ! -x ${LOWBIT_NVDISASM:-} ]]; then
  echo "no nvdisasm at '${LOWBIT_NVDISASM:-}': run tools/bootstrap.sh (it" \
       "installs tools/python-requirements.txt into the build's pyenv)"
  exit 1
fi

# The launch that holds atomics: its grid's block count, its ops line and
# its SASS line, one launch per line of output.
atomic_launch() {
  awk '
    /^    launch    grid / {
      split($3, g, "x"); gsub(",", "", g[3]); blocks = g[1] * g[2] * g[3]
    }
    /^    sass      / { sass = $0 }
    /^    ops       / && !/ 0 atomics/ { print blocks "|" $0 "|" sass }
  ' "$1"
}

for target in sm_90a sm_100a; do
  for spec in 'quantize fp8_e4m3 from=bf16' 'quantize fp8_e5m2 from=bf16' \
              'quantize int8 from=bf16' 'quantize nvfp4 from=bf16'; do
    out="$work/report.txt"
    "$lowbit" report "$spec" --target "$target" > "$out"
    head -1 "$out"
    if head -1 "$out" | grep -q 'contended atomics'; then
      echo "$spec on $target: still limited by contended atomics"; exit 1
    fi
    mapfile -t launches < <(atomic_launch "$out")
    if [[ ${#launches[@]} != 1 ]]; then
      echo "$spec on $target: ${#launches[@]} launches with atomics"; cat "$out"
      exit 1
    fi
    IFS='|' read -r blocks ops sass <<< "${launches[0]}"
    expected="executed 4 per block, $((4 * blocks)) in all"
    if [[ $ops != *"4 atomics (0 cas, 0 .sys; $expected)"* ]]; then
      echo "$spec on $target: want '$expected' ($blocks blocks), got:"
      echo "$ops"; exit 1
    fi
    if [[ $sass != *"atomics ATOMG.ADD x1 ATOMG.EXCH x2 ATOMG.MAX x1;"* ]]; then
      echo "$spec on $target: SASS atomics differ:"; echo "$sass"; exit 1
    fi
    echo "  $target: $blocks blocks, $expected; SASS ATOMG.ADD x1 ATOMG.EXCH x2 ATOMG.MAX x1"
  done
done

# Without a disassembler: PTX only, said so, the same executed count.
for missing in "" "$work/no-such-nvdisasm"; do
  LOWBIT_NVDISASM=$missing "$lowbit" report 'quantize nvfp4 from=bf16' \
    > "$work/ptx-only.txt"
  grep -q '^    sass      unavailable (LOWBIT_NVDISASM.*); the counts are PTX$' \
    "$work/ptx-only.txt" || { cat "$work/ptx-only.txt"; exit 1; }
  mapfile -t launches < <(atomic_launch "$work/ptx-only.txt")
  IFS='|' read -r blocks ops sass <<< "${launches[0]}"
  [[ $ops == *"executed 4 per block, $((4 * blocks)) in all"* ]] ||
    { echo "PTX-only: $ops"; exit 1; }
done
echo PASS

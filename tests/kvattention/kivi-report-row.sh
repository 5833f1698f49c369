#!/usr/bin/env bash
# `lowbit report` on KIVI decode-attention specs (docs/decode-attention.md,
# KIVI), at the kv_attend row's shape: one sequence of 32768 tokens, Hq 32,
# Hkv 8, head_dim 128.
#   - the row names the spec and its two launches (splits, merge), each
#     with an estimate, and a fraction of HBM bandwidth;
#   - stage 1 is the generic mapping (one thread per kv head and split:
#     8 x 128 = 1024 threads) and the merge one launch more;
#   - a bad kivi_attend spec fails with its message and prints nothing.
# No timing is asserted: the fraction is the model's estimate from the PTX.
# usage: kivi-report-row.sh LOWBIT
set -euo pipefail
lowbit=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shape='q=bf16 q_heads=32 kv_heads=8 head_dim=128'
"$lowbit" report "kivi_attend kv_kivi_int4 $shape" \
  "kivi_attend kv_kivi_int2 layout=paged $shape" > "$work/report.txt"
cat "$work/report.txt"

mapfile -t heads < <(grep -E '^kivi_attend ' "$work/report.txt")
[[ ${#heads[@]} == 2 ]]
for head in "${heads[@]}"; do
  grep -Eq "^kivi_attend kv_kivi_int[24] .* at 32768 tokens on sm_90a: 2 launch\(es\), [0-9.]+ B/elem moved \(minimum [0-9.]+\), estimated [0-9]+% of HBM bandwidth, limited by " <<< "$head"
done
[[ $(grep -cE '^    estimate  [0-9.]+ us' "$work/report.txt") == 4 ]]
[[ $(grep -c '^    policy    grid (8, 1, 1) x block (128, 1, 1) at 32768 tokens$' \
  "$work/report.txt") == 2 ]]


if "$lowbit" report 'kivi_attend kv_kivi_int4 q_heads=6 kv_heads=4 head_dim=128' \
    > "$work/out" 2> "$work/err"; then
  echo "expected failure"; exit 1
fi
[[ ! -s $work/out ]]
grep -q "q_heads=6 is not a multiple of kv_heads=4" "$work/err"
echo PASS

#!/usr/bin/env bash
# `lowbit report` on KV-cache append specs (docs/kv-kernels.md, "Report"):
# batch 64, 8 kv heads, head_dim 128, bf16 in, kv_int8_g64 and kv_fp8_e4m3
# out, at 1 and 256 new tokens per sequence.
#   - each row names the spec and the size and has one launch of
#     (rows * 32) / 256 blocks of 256 threads (one warp per row);
#   - the minimum is recomputed here: the bf16 values, one code byte per
#     value, the int8 scales (one f32 per 64 values) or the one FP8 scale,
#     and the positions;
#   - the estimate's fraction is minimum / peak / the launch's estimate;
#   - int8 groups reduce by shuffles, FP8 has none;
#   - a bad spec fails with its message and prints nothing.
# No timing is asserted: the fraction is whatever the PTX gives.
# usage: report-row.sh LOWBIT
set -euo pipefail
lowbit=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

batch=64 heads=8 dim=128
check() { # SCHEME_TEXT SCALE_BYTES_PER_ROW TOKENS SHUFFLES(yes|no)
  local scheme=$1 scale_row=$2 tokens=$3 shuffles=$4
  local rows=$(( batch * heads * tokens ))
  local elements=$(( rows * dim ))
  local scales=$(( scale_row < 0 ? -scale_row : rows * scale_row ))
  local minimum=$(( elements * 2 + elements + scales + batch * 4 ))
  local expected
  expected=$(awk -v m="$minimum" -v e="$elements" 'BEGIN { printf "%.2f", m / e }')
  local blocks=$(( (rows * 32 + 255) / 256 ))
  echo "$scheme at $tokens token(s): minimum $minimum B over $elements values = $expected B/elem, $blocks blocks"
  local row
  row=$(awk -v t=" x $tokens token(s) on" 'index($0, t) { p = 1 } p && /^$/ { exit } p' "$work/report.txt")
  local head
  head=$(head -1 <<< "$row")
  grep -Eq "^kv_append $scheme from=bf16 layout=contiguous heads=8 head_dim=128 at batch 64 x $tokens token\(s\) on sm_90a: 1 launch\(es\), [0-9.]+ B/elem moved \(minimum $expected\), estimated [0-9]+% of HBM bandwidth, limited by " <<< "$head"
  grep -Eq "^    policy    grid \($blocks, 1, 1\) x block \(256, 1, 1\): one warp per" <<< "$row"
  if [[ $shuffles == yes ]]; then
    grep -Eq "^    ops .* [1-9][0-9]* shuffles" <<< "$row"
  else
    grep -Eq "^    ops .* 0 shuffles" <<< "$row"
  fi
  local estimate printed
  estimate=$(grep -E '^    estimate  ' <<< "$row" | sed -E 's/^    estimate  ([0-9.]+) us.*/\1/')
  printed=$(sed -E 's/.*estimated ([0-9]+)% of HBM.*/\1/' <<< "$head")
  awk -v m="$minimum" -v t="$estimate" -v p="$printed" 'BEGIN {
    fraction = 100 * (m / 4.8e12 * 1e6) / t
    printf "  estimate %.2f us, %.2f%% (printed %d%%)\n", t, fraction, p
    exit !(t > 0 && (fraction - p) < 1 && (p - fraction) < 1)
  }'
}

for spec in "kv_int8_g64 convention=multiplier eps=9.99999994e-09:$(( 2 * 4 )):yes" \
            "kv_fp8_e4m3 scale=per_tensor:-4:no"; do
  IFS=: read -r scheme scale_row shuffles <<< "$spec"
  "$lowbit" report "kv_append $scheme from=bf16 heads=8 head_dim=128" > "$work/report.txt"
  cat "$work/report.txt"
  for tokens in 1 256; do
    check "$scheme" "$scale_row" "$tokens" "$shuffles"
  done
done

if "$lowbit" report 'kv_append kv_int8_g64 heads=8' > "$work/out" 2> "$work/err"; then
  echo "expected failure"; exit 1
fi
[[ ! -s $work/out ]]
cat "$work/err"
grep -q "head_dim=" "$work/err"
echo PASS

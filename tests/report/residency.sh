#!/usr/bin/env bash
# The grid-stride kernels ask for 3 resident blocks of 256 threads per SM
# (kit::requireBlocksPerSm; docs/kernel-kit.md, "Residency"): their PTX
# carries `.minnctapersm 3` after `.maxntid 256, 1, 1`, and the registers
# nvJitLink's ptxas gives them, as `lowbit report` reads them, fit 3 blocks
# (at most 80: 65536 / 768 in steps of 8), so occupancy is at least 38%.
# Without the directive the dequantize kernels took 84-162 registers.
# Kernels with tensor cores, shared tiles or row reductions (a matmul, the
# amax pass) carry no directive.
# usage: residency.sh LOWBIT
set -euo pipefail
lowbit=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LOWBIT_CACHE=off

# The PTX entries that carry `.minnctapersm N`, as "name N" lines.
marked_entries() {
  awk '
    /^\.visible \.entry / { name = $3; sub(/\(.*/, "", name) }
    /^\.minnctapersm / { print name, $2 }
  ' "$1"
}

# "name registers occupancy" per kernel of a long-form report.
report_resources() {
  awk '
    /^  [A-Za-z_][A-Za-z0-9_]*$/ { name = $1 }
    /^    resources / {
      occupancy = $0; sub(/.*occupancy /, "", occupancy); sub(/%.*/, "", occupancy)
      print name, $2, occupancy
    }
  ' "$1"
}

checked=0
for target in sm_90a sm_100a; do
  for spec in 'dequantize nvfp4' 'dequantize mxfp4' 'dequantize int4_g128' \
              'dequantize int8' 'dequantize mxfp8' 'dequantize nvfp4 to=bf16' \
              'quantize mxfp4' 'quantize int8_g64' 'quantize nvfp4 from=bf16' \
              'quantize fp8_e4m3'; do
    "$lowbit" compile "$spec" --target "$target" --emit ptx > "$work/k.ptx"
    mapfile -t marked < <(marked_entries "$work/k.ptx")
    if [[ ${#marked[@]} == 0 ]]; then
      echo "$spec on $target: no kernel carries .minnctapersm"; exit 1
    fi
    "$lowbit" report "$spec" --target "$target" --size 1024x1024 > "$work/r.txt"
    for line in "${marked[@]}"; do
      read -r name blocks <<< "$line"
      [[ $blocks == 3 ]] || { echo "$spec $name: .minnctapersm $blocks"; exit 1; }
      # The directive follows the entry's .maxntid.
      awk -v n="$name" '
        /^\.visible \.entry / { e = $3; sub(/\(.*/, "", e) }
        e == n && /^\.maxntid/ { m = $0 }
        e == n && /^\.minnctapersm/ { print m; exit }
      ' "$work/k.ptx" | grep -q '^\.maxntid 256, 1, 1$' ||
        { echo "$spec $name: .minnctapersm without .maxntid 256"; exit 1; }
      read -r _ registers occupancy < <(report_resources "$work/r.txt" |
                                        awk -v n="$name" '$1 == n')
      echo "$spec on $target: $name $registers registers, occupancy $occupancy%"
      if [[ -z $registers || $registers -gt 80 || $occupancy -lt 37 ]]; then
        echo "$spec on $target: $name does not fit 3 blocks per SM"
        cat "$work/r.txt"; exit 1
      fi
      checked=$((checked + 1))
    done
  done
done

# Not marked: the matmul's kernels (mma fragments and accumulators) and the
# per-tensor amax pass.
"$lowbit" compile 'matmul int4_g128 from=bf16' --target sm_90a --emit ptx > "$work/m.ptx"
if grep -q '^\.minnctapersm' "$work/m.ptx"; then
  echo "matmul: a kernel carries .minnctapersm"; exit 1
fi
"$lowbit" compile 'quantize fp8_e4m3' --target sm_90a --emit ptx > "$work/q.ptx"
[[ $(grep -c '^\.visible \.entry' "$work/q.ptx") == 2 &&
   $(grep -c '^\.minnctapersm' "$work/q.ptx") == 1 ]] ||
  { echo "quantize fp8_e4m3: want the quantize pass alone marked"; exit 1; }
echo "$checked marked kernels fit 3 blocks per SM"

#!/usr/bin/env python3
"""Writes lowbit's independent conversion test vectors into tests/data/.

The values come from the PyPI package `ml_dtypes` (the float8/6/4 and e8m0
formats, bfloat16) and from numpy (float16; integer formats as
rint + clip, NaN -> 0). Nothing here uses lowbit's code, so the vectors are
an independent check of lowbit's format model. The C++ tests apply the
documented differences between ml_dtypes and lowbit's (PTX) conventions;
see tests/data/README.md.

Usage: tools/gen_test_vectors.py [--out tests/data]
The output is deterministic (fixed seeds): rerunning it must give
byte-identical files.

File layout (all little-endian): a 16-byte header
    char magic[4] = "LBV1"; uint32 elementBytes; uint64 count
followed by `count` elements of `elementBytes` bytes each (unsigned ints:
f32 values are stored as their uint32 bit patterns).
"""

import argparse
import hashlib
import os
import struct
import sys

import ml_dtypes
import numpy as np

SEED = 20241129
RANDOM_COUNT = 1000000

# lowbit name -> ml_dtypes type. ml_dtypes' float32 -> fp8 casts round once
# (no double rounding through another type).
ML_FORMATS = {
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "e2m3": ml_dtypes.float6_e2m3fn,
    "e3m2": ml_dtypes.float6_e3m2fn,
    "e2m1": ml_dtypes.float4_e2m1fn,
    "e8m0": ml_dtypes.float8_e8m0fnu,
}
# Wider float targets (16-bit codes): numpy's float16, ml_dtypes' bfloat16.
WIDE_FORMATS = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
# Integer targets: (bits, signed). RNE to integer, saturate, NaN -> 0.
INT_FORMATS = {"int8": (8, True), "int4": (4, True), "uint4": (4, False),
               "uint8": (8, False)}


def int_range(name):
    bits, signed = INT_FORMATS[name]
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def write_array(out_dir, name, array, manifest):
    array = np.ascontiguousarray(array)
    assert array.dtype.kind == "u", (name, array.dtype)
    data = array.astype(array.dtype.newbyteorder("<")).tobytes()
    header = b"LBV1" + struct.pack("<IQ", array.dtype.itemsize, array.size)
    path = os.path.join(out_dir, name)
    with open(path, "wb") as f:
        f.write(header + data)
    manifest.append((name, array.dtype.itemsize, array.size,
                     hashlib.sha256(header + data).hexdigest()[:16]))


def f32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def encode(name, x):
    """Reference codes of float32 array x in format `name` (ml_dtypes or
    numpy conventions, before lowbit's documented adjustments)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        if name in ML_FORMATS:
            return x.astype(ML_FORMATS[name]).view(np.uint8)
        if name in WIDE_FORMATS:
            return x.astype(WIDE_FORMATS[name]).view(np.uint16)
        lo, hi = int_range(name)
        bits, _ = INT_FORMATS[name]
        rounded = np.clip(np.rint(x.astype(np.float64)), lo, hi)
        rounded = np.where(np.isnan(x), 0, rounded).astype(np.int64)
        return (rounded & ((1 << bits) - 1)).astype(np.uint8)


def all_codes_decoded(name):
    if name in ML_FORMATS:
        bits = {"e2m3": 6, "e3m2": 6, "e2m1": 4}.get(name, 8)
        codes = np.arange(1 << bits, dtype=np.uint8)
        return codes.view(ML_FORMATS[name]).astype(np.float32)
    codes = np.arange(1 << 16, dtype=np.uint16)
    return codes.view(WIDE_FORMATS[name]).astype(np.float32)


def finite_positive_values(name):
    """Sorted distinct finite values >= 0 of a format (ints: 0..max)."""
    if name in INT_FORMATS:
        lo, hi = int_range(name)
        return np.arange(0, hi + 1, dtype=np.float64)
    values = all_codes_decoded(name).astype(np.float64)
    values = values[np.isfinite(values) & (values >= 0)]
    return np.unique(values)


def next_up(x, steps=1):
    x = np.asarray(x, dtype=np.float32)
    for _ in range(steps):
        x = np.nextafter(x, np.float32(np.inf))
    return x


def next_down(x, steps=1):
    x = np.asarray(x, dtype=np.float32)
    for _ in range(steps):
        x = np.nextafter(x, np.float32(-np.inf))
    return x


def around(values):
    """values, and each one f32 ulp below and above (as float32)."""
    v = np.asarray(values, dtype=np.float32)
    return [v, next_down(v), next_up(v)]


def edge_inputs():
    """Edge cases for every format, as one sorted-unique float32 array."""
    parts = []
    specials = np.array([0.0, np.inf, np.finfo(np.float32).max,
                         np.finfo(np.float32).tiny,
                         np.float32(2.0 ** -149)], dtype=np.float32)
    parts += around(specials)
    for name in list(ML_FORMATS) + list(WIDE_FORMATS) + list(INT_FORMATS):
        v = finite_positive_values(name)
        mids = (v[:-1] + v[1:]) / 2  # exact ties (f64, exact in f32 too)
        if name in WIDE_FORMATS:
            # 16-bit formats have too many pairs; keep the subnormal range
            # and first normal binade, [1, 2] and the top binade.
            keep = ((v < v[1] * 2.0 ** 11) | (v >= v[-1] / 2) |
                    ((v >= 1) & (v <= 2)))
            mids = mids[keep[:-1] & keep[1:]]
            v = v[keep]
        assert np.all(mids.astype(np.float32).astype(np.float64) == mids)
        parts += around(v)
        parts += around(mids)
        top = v[-1]
        if name in INT_FORMATS:
            lo, hi = int_range(name)
            parts += around([hi + 0.5, hi + 1, lo - 0.5, lo - 1, lo, 0.5])
            continue
        # The virtual next value above max and the overflow midpoint.
        # e8m0 (no mantissa): the next power of two; else 2^(emax - M).
        ulp_top = top
        if name != "e8m0":
            exponent = np.floor(np.log2(top))
            man_bits = {"e4m3": 3, "e5m2": 2, "e2m3": 3, "e3m2": 2,
                        "e2m1": 1, "f16": 10, "bf16": 7}[name]
            ulp_top = 2.0 ** (exponent - man_bits)
        parts += around([top + ulp_top / 2, top + ulp_top, top * 2,
                         top + ulp_top * 1.5])
        positive = v[v > 0]
        min_value = positive[0]
        parts += around([min_value / 2, min_value / 4, min_value * 0.75])
        # Min normal and the ties below it are among the midpoints above.
    x = np.concatenate([np.asarray(p, dtype=np.float32).ravel() for p in parts])
    x = x[np.isfinite(x) | np.isinf(x)]
    x = np.unique(np.concatenate([x, -x]))
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001,
                     0x7FFFFFFF, 0x7FA00000], dtype=np.uint32)
    return np.concatenate([x.view(np.uint32), nans]).astype(np.uint32)


def random_inputs(rng):
    n = RANDOM_COUNT
    quarter = n // 4
    # A: uniform random bit patterns (every exponent, NaNs, infs).
    uniform = rng.integers(0, 1 << 32, size=quarter, dtype=np.uint64)
    uniform = uniform.astype(np.uint32)
    # B: exponents spread over each format's range (a few binades beyond).
    ranges = [(-12, 10), (-19, 17), (-6, 4), (-7, 6), (-4, 4), (-149, 127),
              (-3, 9), (-27, 17), (-149, 127)]
    count_b = n // 2
    which = rng.integers(0, len(ranges), size=count_b)
    lows = np.array([r[0] for r in ranges])[which]
    highs = np.array([r[1] for r in ranges])[which]
    exponents = rng.integers(lows, highs + 1)
    mantissas = rng.integers(0, 1 << 23, size=count_b)
    spread = np.ldexp(1.0 + mantissas / float(1 << 23), exponents)
    spread = spread.astype(np.float32)
    spread *= np.where(rng.integers(0, 2, size=count_b) == 1, -1, 1).astype(
        np.float32)
    # C: near representable points and ties of a random format: the value or
    # midpoint, moved by -3..+3 f32 ulps.
    count_c = n - quarter - count_b
    pools = []
    for name in list(ML_FORMATS) + ["int8"]:
        v = finite_positive_values(name)
        pools.append(np.concatenate([v, (v[:-1] + v[1:]) / 2]))
    pool = np.concatenate(pools).astype(np.float32)
    pool = pool[pool > 0]
    picked = pool[rng.integers(0, pool.size, size=count_c)].view(np.uint32)
    offsets = rng.integers(-3, 4, size=count_c)
    near = (picked.astype(np.int64) + offsets).astype(np.uint32)
    near |= (rng.integers(0, 2, size=count_c).astype(np.uint32) << 31)
    x = np.concatenate([uniform, spread.view(np.uint32), near])
    assert x.size == n
    return x.astype(np.uint32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "..", "tests",
                                                      "data"))
    args = parser.parse_args()
    np.seterr(all="ignore")  # overflow to inf and NaN casts are intended
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    manifest = []

    # 1. Every code of every format, decoded to f32 bits.
    for name in list(ML_FORMATS) + list(WIDE_FORMATS):
        write_array(out, f"decode_{name}.bin", f32_bits(all_codes_decoded(name)),
                    manifest)

    # 2. Every f16 and every bf16 input, widened exactly to f32 first.
    all16 = np.arange(1 << 16, dtype=np.uint16)
    sources = {"f16": all16.view(np.float16).astype(np.float32),
               "bf16": all16.view(ml_dtypes.bfloat16).astype(np.float32)}
    for source, x in sources.items():
        targets = list(ML_FORMATS) + list(INT_FORMATS)
        targets.append("bf16" if source == "f16" else "f16")
        for name in targets:
            write_array(out, f"{source}_all_to_{name}.bin", encode(name, x),
                        manifest)

    # 3. Random f32 inputs.
    rng = np.random.default_rng(SEED)
    random_bits = random_inputs(rng)
    write_array(out, "random_f32.bin", random_bits, manifest)
    for name in list(ML_FORMATS) + ["int8"]:
        write_array(out, f"random_to_{name}.bin",
                    encode(name, random_bits.view(np.float32)), manifest)

    # 4. Edge cases.
    edge_bits = edge_inputs()
    write_array(out, "edges_f32.bin", edge_bits, manifest)
    for name in list(ML_FORMATS) + list(WIDE_FORMATS) + list(INT_FORMATS):
        write_array(out, f"edges_to_{name}.bin",
                    encode(name, edge_bits.view(np.float32)), manifest)

    with open(os.path.join(out, "MANIFEST.txt"), "w") as f:
        f.write("# file element_bytes count sha256[:16]  "
                "(written by tools/gen_test_vectors.py, ml_dtypes "
                f"{ml_dtypes.__version__}, numpy {np.__version__})\n")
        for row in manifest:
            f.write("%s %d %d %s\n" % row)
    total = sum(os.path.getsize(os.path.join(out, row[0])) for row in manifest)
    print(f"wrote {len(manifest)} files, {total} bytes, to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

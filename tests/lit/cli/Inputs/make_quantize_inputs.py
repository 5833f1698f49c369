"""Writes the .npy inputs of the quantize/dequantize lit tests into a folder.

Usage: make_quantize_inputs.py DIR

Good inputs (deterministic, numpy only) and one malformed file per error
path that lowbit must refuse.
"""

import os
import sys

import numpy as np


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1234)
    x = (rng.standard_normal((3, 37)) * np.array([[1.0], [0.01], [50.0]])).astype(np.float32)
    x[1, 5] = 0.0
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "x16.npy"), x.astype(np.float16))
    # bf16 as uint16 bit patterns: round to nearest even from f32.
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    np.save(os.path.join(out, "xbf16.npy"), rounded.astype(np.uint16))
    np.save(os.path.join(out, "zeros.npy"), np.zeros((4, 64), np.float32))
    np.save(os.path.join(out, "int32.npy"), np.ones((2, 2), np.int32))
    np.save(os.path.join(out, "f64.npy"), np.ones((2, 2), np.float64))
    np.save(os.path.join(out, "3d.npy"), np.ones((2, 2, 2), np.float32))
    np.save(os.path.join(out, "1d.npy"), np.ones((4,), np.float32))
    np.save(os.path.join(out, "empty.npy"), np.ones((0, 4), np.float32))
    np.save(os.path.join(out, "fortran.npy"), np.asfortranarray(np.ones((2, 3), np.float32)))
    with open(os.path.join(out, "badmagic.npy"), "wb") as f:
        f.write(b"not an npy file at all")
    whole = open(os.path.join(out, "x.npy"), "rb").read()
    with open(os.path.join(out, "truncated.npy"), "wb") as f:
        f.write(whole[:-3])
    # A scale file of the wrong shape for fp8_e4m3 (which needs (1, 1)).
    np.save(os.path.join(out, "scale2x1.npy"), np.ones((2, 1), np.float32))
    np.save(os.path.join(out, "scale1x1.npy"), np.full((1, 1), 0.5, np.float32))


if __name__ == "__main__":
    main()

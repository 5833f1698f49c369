"""Checks `lowbit matmul`'s Y against the float64 matmul of the same w and
x (docs/matmul.md, "The float64 bound"): Y must be [M, N] of Y's dtype and
within a relative error of the bound's order, which catches a transposed
W, a lost bias or a wrong dtype. (Bit-exactness to the ordered reference
is tests/matmul's.)

Usage: matmul_check.py Y.npy YDTYPE X.npy W.npy [BIAS.npy]
W is `lowbit dequantize --to` X's dtype of the weight set: the w the order
uses. uint16 arrays hold bf16 bits; YDTYPE is f32, f16 or bf16.
Prints "ok M x N" or a line starting "BAD".
"""

import sys

import numpy as np


def widen(array):
    if array.dtype == np.uint16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def main(y_path, y_dtype, x_path, w_path, bias_path=None):
    y = np.load(y_path)
    expected = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}
    if y.dtype != expected[y_dtype]:
        print(f"BAD dtype {y.dtype}, expected {np.dtype(expected[y_dtype])}")
        return
    x = widen(np.load(x_path)).astype(np.float64)
    w = widen(np.load(w_path)).astype(np.float64)
    exact = x @ w.T
    scale = np.abs(x) @ np.abs(w).T
    if bias_path:
        bias = np.load(bias_path).astype(np.float64)
        exact = exact + bias
        scale = scale + np.abs(bias)
    if y.shape != exact.shape:
        print(f"BAD shape {y.shape}, expected {exact.shape}")
        return
    relative = np.max(np.abs(widen(y).astype(np.float64) - exact) / scale)
    limit = {"f32": 1e-5, "f16": 1e-3, "bf16": 8e-3}[y_dtype]
    if not relative <= limit:
        print(f"BAD max relative error {relative:.3g} > {limit}")
        return
    print(f"ok {y.shape[0]} x {y.shape[1]}")


if __name__ == "__main__":
    main(*sys.argv[1:])

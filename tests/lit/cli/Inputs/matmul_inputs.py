"""Writes the inputs of tests/lit/cli/matmul.test into DIR: a weight-like
[N, K] = [13, 200] W.npy (row magnitudes differ, channel 5 of every 37 is
an outlier), X [M, K] as f32, f16 and bf16 bits (uint16), a bias [N], and
the bad inputs the command refuses.

Usage: matmul_inputs.py DIR
"""

import os
import sys

import numpy as np

N, K, M = 13, 200, 3


def main(directory):
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(27)
    w = rng.standard_normal((N, K)) * (0.02 * (0.5 + rng.random((N, 1))))
    w[:, 5::37] *= 30
    np.save(os.path.join(directory, "w.npy"), w.astype(np.float32))
    x = rng.standard_normal((M, K)).astype(np.float32)
    np.save(os.path.join(directory, "x32.npy"), x)
    np.save(os.path.join(directory, "x16.npy"), x.astype(np.float16))
    # bf16 bits, rounded to nearest even.
    bits = x.view(np.uint32).astype(np.uint64)
    bf16 = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    np.save(os.path.join(directory, "xbf16.npy"), bf16)
    np.save(os.path.join(directory, "bias.npy"),
            (rng.standard_normal(N) * 0.1).astype(np.float32))
    # Bad inputs.
    np.save(os.path.join(directory, "x_k199.npy"), x[:, :199].copy())
    np.save(os.path.join(directory, "x_rank1.npy"), x[0].copy())
    np.save(os.path.join(directory, "x_f64.npy"), x.astype(np.float64))
    np.save(os.path.join(directory, "bias_short.npy"),
            np.zeros(N - 1, np.float32))
    np.save(os.path.join(directory, "w3d.npy"),
            w.astype(np.float32).reshape(1, N, K))


if __name__ == "__main__":
    main(sys.argv[1])

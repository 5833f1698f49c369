"""The matmul's CPU kernel against numpy's f32 matmul, same run.

Usage: matmul_bench.py BIN_DIR [M N K REPS]
Runs BIN_DIR/lowbit-bench-matmul (the CPU kernel of `matmul SCHEME
from=f32`, docs/matmul.md, median of REPS) and times numpy's float32
X @ W.T on a dequantized-weight-sized f32 matrix (median of REPS), then
prints each scheme's ms and ratio (lowbit / numpy; lower is better).
"""

import subprocess
import sys
import time

import numpy as np


def main(bin_dir, m=16, n=4096, k=4096, reps=5):
    m, n, k, reps = int(m), int(n), int(k), int(reps)
    out = subprocess.run([f"{bin_dir}/lowbit-bench-matmul", str(m), str(n),
                          str(k), str(reps)], check=True, capture_output=True,
                         text=True).stdout
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        x @ w.T
        times.append((time.perf_counter() - start) * 1e3)
    numpy_ms = sorted(times)[len(times) // 2]
    print(f"M={m} N={n} K={k}, median of {reps}; numpy f32 matmul "
          f"{numpy_ms:.3f} ms")
    print(f"{'scheme':<12} {'lowbit ms':>10} {'lowbit/numpy':>13}")
    for line in out.splitlines():
        scheme, ms = line.split()
        print(f"{scheme:<12} {float(ms):>10.3f} {float(ms) / numpy_ms:>12.2f}x")


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Compares the NaN bits of two dequantized f16/bf16 outputs.

Usage: nan_outputs.py CPU.npy REFERENCE.npy bf16|f16

Prints how many outputs are NaN, the set of their bit patterns, and whether
the two backends wrote the same bytes.
"""

import sys

import numpy as np


def main():
    cpu, reference = np.load(sys.argv[1]), np.load(sys.argv[2])
    kind = sys.argv[3]
    bits = cpu.view(np.uint16)
    if kind == "bf16":
        nan = ((bits & 0x7F80) == 0x7F80) & ((bits & 0x007F) != 0)
    else:
        nan = ((bits & 0x7C00) == 0x7C00) & ((bits & 0x03FF) != 0)
    patterns = sorted({f"0x{b:04x}" for b in bits[nan].tolist()})
    print(f"{kind} NaN outputs: {int(nan.sum())}, bits {' '.join(patterns)}")
    print(f"backends agree: {cpu.tobytes() == reference.tobytes()}")


if __name__ == "__main__":
    main()

"""Checks a directory written by `lowbit quantize` and its dequantization.

Usage: check_quantized.py DIR INPUT.npy OUTPUT.npy MAX_REL_ERROR [tensor]

Prints the facts a lit test checks with FileCheck: the meta.json fields,
each array's dtype and shape, and whether every |x - x'| is within
MAX_REL_ERROR of its row's amax (of the tensor's amax with "tensor", for
per-tensor integer schemes, whose small rows may round to zero).
"""

import json
import os
import sys

import numpy as np


def widen(array):
    """float64 values of an array; uint16 holds bf16 bit patterns."""
    if array.dtype == np.uint16:
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float64)


def main():
    directory, input_path, output_path, bound = sys.argv[1:5]
    per_tensor = sys.argv[5:] == ["tensor"]
    meta = json.load(open(os.path.join(directory, "meta.json")))
    for key in sorted(meta):
        print(f"meta {key}={meta[key]}")
    for name in ["q.npy", "scales.npy", "zeros.npy", "global_scale.npy"]:
        path = os.path.join(directory, name)
        if os.path.exists(path):
            array = np.load(path)
            print(f"{name} {array.dtype} {array.shape}")
    parent = os.path.dirname(os.path.abspath(directory))
    leftovers = [n for n in os.listdir(directory) if ".tmp." in n]
    leftovers += [n for n in os.listdir(parent) if ".lowbit-tmp." in n]
    print(f"temporary files: {len(leftovers)}")
    x = widen(np.load(input_path))
    y = np.load(output_path)
    print(f"output {y.dtype} {y.shape}")
    y = widen(y)
    row_amax = np.max(np.abs(x), axis=None if per_tensor else 1, keepdims=True)
    relative = np.abs(x - y) / np.where(row_amax > 0, row_amax, 1)
    worst = float(np.max(relative))
    verdict = "ok" if worst <= float(bound) else "too large"
    scope = "tensor" if per_tensor else "row"
    print(f"error vs {scope} amax: {verdict} ({worst:.4g} <= {bound})")


if __name__ == "__main__":
    main()

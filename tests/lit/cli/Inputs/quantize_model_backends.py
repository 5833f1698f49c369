"""Runs `lowbit quantize-model` with --backend cpu and --backend reference
for several schemes and both output forms, and prints whether each pair of
output trees is the same bytes.

Usage: quantize_model_backends.py LOWBIT HF_DIR WORK
"""
import os
import subprocess
import sys

CASES = [
    ("fp8_e4m3", "compressed-tensors"),
    ("int8_g64", "compressed-tensors"),
    ("nvfp4", "compressed-tensors"),
    ("mxfp4", "compressed-tensors"),
    ("mxfp8", "lowbit"),
    ("fp8_e5m2", "lowbit"),
    ("mxfp6_e2m3", "lowbit"),
    ("nvfp4", "lowbit"),
]


def tree(directory):
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, directory)] = f.read()
    return files


def main():
    lowbit, model, work = sys.argv[1:4]
    differing = 0
    for scheme, form in CASES:
        trees = []
        for backend in ("cpu", "reference"):
            out = os.path.join(work, f"{scheme}-{form}-{backend}")
            subprocess.run([lowbit, "quantize-model", "--scheme", scheme,
                            "--format", form, "--in", model, "--out", out,
                            "--backend", backend],
                           check=True, stdout=subprocess.DEVNULL)
            trees.append(tree(out))
        same = trees[0] == trees[1] and len(trees[0]) > 0
        differing += not same
        print(f"{scheme} {form}: {'same bytes' if same else 'DIFFERENT'}")
    print(f"compared {len(CASES)}, differing {differing}")


if __name__ == "__main__":
    main()

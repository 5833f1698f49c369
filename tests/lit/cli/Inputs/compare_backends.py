"""Runs `lowbit quantize` and `lowbit dequantize` with --backend reference
and --backend cpu (or the backend given) for every named scheme and compares the files byte for
byte: q.npy, scales.npy, zeros.npy, global_scale.npy, meta.json, and the
dequantized tensor. Static mode too, with the scales of the dynamic run.

Usage: compare_backends.py DIR [--backend NAME [--target ARCH]] SCHEME...
Prints one line per comparison; "DIFFERENT" lines name the first file that
differs. Dequantized tensors whose only difference is in NaN payloads are
reported as identical with a note saying so.
"""

import filecmp
import os
import subprocess
import sys

import numpy as np

FILES = ["q.npy", "scales.npy", "zeros.npy", "global_scale.npy", "meta.json"]


def lowbit(*args):
    subprocess.run(["lowbit", *args], check=True)


def make_input(path):
    # Ragged: 19 rows, 301 columns (short last groups for every group size),
    # with a zero stretch, NaN, inf, subnormals, huge and tiny rows.
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((19, 301)) * np.exp2(rng.integers(-5, 6, (19, 1)))).astype(np.float32)
    x[0, :40] = 0.0
    x[1, 3] = np.nan
    x[2, 7] = np.inf
    x[3, 11] = -np.inf
    x[4, 13] = 1e-40
    x[5, :] *= np.float32(1e-30)
    x[6, 17] = -1e30
    x[7, 19] = -0.0
    np.save(path, x)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    np.save(path.replace(".npy", "_bf16.npy"), rounded.astype(np.uint16))


def same_dirs(a, b):
    for name in FILES:
        pa, pb = os.path.join(a, name), os.path.join(b, name)
        if os.path.exists(pa) != os.path.exists(pb):
            return name + " (present in one only)"
        if os.path.exists(pa) and not filecmp.cmp(pa, pb, shallow=False):
            return name
    return None


def same_but_nan_payloads(a, b):
    """Equal bits everywhere except NaNs, which are NaN in both: NaN
    payloads (and NaN signs) are not part of the dequantize contract
    (docs/quantization.md), only NaN-ness is."""
    x, y = np.load(a), np.load(b)
    if x.dtype == np.uint16:  # bf16 bits
        fx = (x.astype(np.uint32) << 16).view(np.float32)
        fy = (y.astype(np.uint32) << 16).view(np.float32)
    else:
        fx, fy = x.astype(np.float32), y.astype(np.float32)
    nx, ny = np.isnan(fx), np.isnan(fy)
    return np.array_equal(nx, ny) and np.array_equal(x[~nx], y[~ny])


BACKEND = ["--backend", "cpu"]


def compare(label, out, extra):
    ref, cpu = os.path.join(out, label + ".ref"), os.path.join(out, label + ".cpu")
    lowbit("quantize", *extra, "--backend", "reference", "--out", ref)
    lowbit("quantize", *extra, *BACKEND, "--out", cpu)
    different = same_dirs(ref, cpu)
    nan_notes = []
    for to in ("f32", "bf16"):
        yr, yc = ref + "." + to + ".npy", cpu + "." + to + ".npy"
        lowbit("dequantize", "--in", ref, "--backend", "reference", "--to", to, "--out", yr)
        lowbit("dequantize", "--in", ref, *BACKEND, "--to", to, "--out", yc)
        if different is None and not filecmp.cmp(yr, yc, shallow=False):
            if same_but_nan_payloads(yr, yc):
                nan_notes.append("NaN payloads differ in dequantize --to " + to)
            else:
                different = "dequantize --to " + to
    if different:
        print(label, "DIFFERENT: " + different)
    else:
        print(label, "identical" + "".join(" (" + note + ")" for note in nan_notes))
    return ref


def main():
    global BACKEND
    out, schemes = sys.argv[1], sys.argv[2:]
    if schemes[:1] == ["--backend"]:
        count = 4 if schemes[2:3] == ["--target"] else 2
        BACKEND, schemes = schemes[:count], schemes[count:]
    os.makedirs(out, exist_ok=True)
    x = os.path.join(out, "ragged.npy")
    make_input(x)
    for scheme in schemes:
        ref = compare(scheme + ".f32", out, ["--scheme", scheme, "--input", x])
        compare(scheme + ".bf16", out,
                ["--scheme", scheme, "--input", x.replace(".npy", "_bf16.npy"), "--from", "bf16"])
        static = ["--scheme", scheme, "--input", x, "--scale", "static",
                  "--scale-file", os.path.join(ref, "scales.npy")]
        if os.path.exists(os.path.join(ref, "zeros.npy")):
            static += ["--zero-file", os.path.join(ref, "zeros.npy")]
        if os.path.exists(os.path.join(ref, "global_scale.npy")):
            static += ["--global-scale-file", os.path.join(ref, "global_scale.npy")]
        compare(scheme + ".static", out, static)


if __name__ == "__main__":
    main()

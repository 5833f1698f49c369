"""Runs `lowbit quantize` and `lowbit dequantize` over fixed inputs and prints
the SHA-256 of every file they write, one "HASH PATH" line per file, sorted.

Usage: golden_files.py DIR

golden-files.test compares the lines with golden-files.sha256, taken with
the CLI before its quantized-file code and CPU backend moved into the
runtime library: the move must not change a byte. Covers every named
scheme with the CPU backend (f32 and bf16 input, dynamic and static
scales, dequantize to f32, f16 and bf16), the reference backend, the GPU
emulator on two schemes, and the scheme-changing options.
"""

import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_backends import make_input  # noqa: E402

SCHEMES = ["fp8_e4m3", "fp8_e5m2", "mxfp8", "mxfp6_e2m3", "mxfp6_e3m2",
           "mxfp4", "nvfp4", "int4_g128", "int8", "int8_g64"]


def lowbit(*args):
    subprocess.run(["lowbit", *args], check=True)


def quantize(out, name, backend, args):
    directory = os.path.join(out, name)
    lowbit("quantize", *args, *backend, "--out", directory)
    for to in ("f32", "f16", "bf16"):
        lowbit("dequantize", "--in", directory, *backend, "--to", to,
               "--out", directory + "." + to + ".npy")
    return directory


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    inputs = os.path.join(out, "inputs")
    os.makedirs(inputs, exist_ok=True)
    x = os.path.join(inputs, "ragged.npy")
    make_input(x)
    xbf16 = x.replace(".npy", "_bf16.npy")
    results = os.path.join(out, "results")
    cpu = ["--backend", "cpu"]
    for scheme in SCHEMES:
        dynamic = quantize(results, scheme + ".cpu.f32", cpu,
                           ["--scheme", scheme, "--input", x])
        quantize(results, scheme + ".cpu.bf16", cpu,
                 ["--scheme", scheme, "--input", xbf16, "--from", "bf16"])
        static = ["--scheme", scheme, "--input", x, "--scale", "static",
                  "--scale-file", os.path.join(dynamic, "scales.npy")]
        for option, name in (("--zero-file", "zeros.npy"),
                             ("--global-scale-file", "global_scale.npy")):
            if os.path.exists(os.path.join(dynamic, name)):
                static += [option, os.path.join(dynamic, name)]
        quantize(results, scheme + ".cpu.static", cpu, static)
        quantize(results, scheme + ".ref.f32", ["--backend", "reference"],
                 ["--scheme", scheme, "--input", x])
    emulator = ["--backend", "gpu-emulator", "--target", "sm_90a"]
    for scheme in ("mxfp4", "nvfp4"):
        quantize(results, scheme + ".emu.f32", emulator,
                 ["--scheme", scheme, "--input", x])
    quantize(results, "mxfp4.rceil", cpu,
             ["--scheme", "mxfp4", "--rule", "rceil", "--input", x])
    quantize(results, "nvfp4.encode", cpu,
             ["--scheme", "nvfp4", "--global", "encode", "--input", x])
    lines = []
    for root, _, files in os.walk(results):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            lines.append(digest + " " + os.path.relpath(path, results))
    print("\n".join(sorted(lines, key=lambda line: line.split(" ", 1)[1])))


if __name__ == "__main__":
    main()

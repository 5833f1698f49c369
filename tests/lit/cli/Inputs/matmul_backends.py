"""Runs `lowbit matmul` with --backend cpu and --backend gpu-emulator for
the weight schemes of issue 27 and checks the two outputs are
byte-identical (.npy files compared whole). X is f32, f16 or bf16, with and
without a bias, at M in {1, 3, 17, 40}: M <= 16 and an f32 X run the GEMV,
an f16/bf16 X with M > 16 the mma.sync GEMM (docs/matmul-gpu.md). By
default three of those twelve inputs per scheme: M = 1 and M = 3 (the
GEMV, the dtype rotating with the scheme) and one GEMM input (M = 17 or
40, f16 or bf16, alternating over the schemes); --full runs all twelve
(the sweep). Prints one line per scheme; exits 1 on the first difference.

Usage: matmul_backends.py DIR TARGET [--full] [--schemes A,B,...]
(DIR holds matmul_inputs.py's files)
"""

import argparse
import filecmp
import os
import subprocess
import sys

import numpy as np

# Each scheme as `lowbit quantize` arguments.
SCHEMES = {
    "int4_asym": ["--scheme", "int4_g128"],
    "int4_sym": ["--spec", "quantize scheme(format=int4,scale=group(128;"
                 "axis=1),tail=true,type=f16,rule=absmax,packing=nibble)"],
    "int8_channel": ["--spec",
                     "quantize scheme(format=int8,scale=per_channel(axis=0))"],
    "int8_g64": ["--scheme", "int8_g64"],
    "fp8_tensor": ["--scheme", "fp8_e4m3"],
    "fp8_channel": ["--spec", "quantize scheme(format=e4m3,scale=per_token)"],
    "mxfp8": ["--scheme", "mxfp8"],
    "mxfp6_e2m3": ["--scheme", "mxfp6_e2m3"],
    "mxfp6_e3m2": ["--scheme", "mxfp6_e3m2"],
    "mxfp4": ["--scheme", "mxfp4"],
    "nvfp4_decode": ["--scheme", "nvfp4"],
    "nvfp4_encode": ["--scheme", "nvfp4", "--global", "encode"],
    "user_e3m2_g48": ["--spec", "quantize scheme(format=e3m2,scale=group(48;"
                      "axis=1),tail=true,type=bf16,rule=absmax)"],
}


ROWS = (1, 3, 17, 40)
DTYPES = ("f32", "f16", "bf16")


def picked_by_default(index, number):
    """Whether the default run takes input `index` (ordered (M, dtype)) for
    scheme `number`: the GEMV at M = 1 and 3 with the dtype rotating, and
    one GEMM input."""
    rows, dtype = ROWS[index // len(DTYPES)], index % len(DTYPES)
    if rows <= 3:
        return dtype == (index // len(DTYPES) + number) % len(DTYPES)
    gemm_rows = ROWS[2 + number % 2]
    return rows == gemm_rows and dtype == 1 + (number // 2) % 2


def run(args):
    subprocess.run(["lowbit"] + args, check=True, stdout=subprocess.DEVNULL)


def main(directory, target, full, only):
    x32 = np.load(os.path.join(directory, "x32.npy"))
    xbf16 = np.load(os.path.join(directory, "xbf16.npy"))
    inputs = []
    for rows in ROWS:
        picked = np.resize(np.arange(x32.shape[0]), rows)
        for name, x in (("f32", x32[picked]), ("f16", x32[picked].astype(
                np.float16)), ("bf16", xbf16[picked])):
            path = os.path.join(directory, f"x_{name}_m{rows}.npy")
            np.save(path, x)
            inputs.append(path)
    bias = os.path.join(directory, "bias.npy")
    for number, (label, scheme) in enumerate(SCHEMES.items()):
        if only and label not in only:
            continue
        weights = os.path.join(directory, label)
        run(["quantize"] + scheme + ["--input",
             os.path.join(directory, "w.npy"), "--out", weights])
        compared = 0
        for index, x in enumerate(inputs):
            if not full and not picked_by_default(index, number):
                continue
            extra = ["--bias", bias] if index % 2 == 0 else []
            outputs = []
            for backend in ("cpu", "gpu-emulator"):
                out = os.path.join(directory, f"y_{label}_{backend}.npy")
                chip = ["--target", target] if backend != "cpu" else []
                run(["matmul", "--weights", weights, "--input", x, "--out",
                     out, "--backend", backend] + chip + extra)
                outputs.append(out)
            if not filecmp.cmp(outputs[0], outputs[1], shallow=False):
                print(f"{label}: {os.path.basename(x)}: cpu and gpu-emulator "
                      "differ")
                return 1
            compared += 1
        print(f"{label}: {compared} outputs byte-identical")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("target")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--schemes", default="")
    arguments = parser.parse_args()
    only = [name for name in arguments.schemes.split(",") if name]
    unknown = [name for name in only if name not in SCHEMES]
    if unknown:
        parser.error(f"unknown scheme labels {unknown}")
    sys.exit(main(arguments.directory, arguments.target, arguments.full,
                  only))

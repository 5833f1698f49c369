"""`lowbit quantize-model` on a synthetic model of >= 2 GB: throughput as a
ratio against the same RTN written in numpy in the same run, and peak
memory (max RSS from /usr/bin/time -v).

Usage: quantize_model_bench.py LOWBIT WORK [--gib 2.1] [--jobs 1,2]
                                [--reference-jobs 1]

lowbit runs with its default backend (the JIT-compiled CPU kernels) at
each --jobs, then with --backend reference at each --reference-jobs (none
with an empty list), so the kernels' gain over the reference quantizer is
in the same run.

The model: bf16 Llama-like layers, each four [4096, 4096] linear weights
and a norm, plus an embedding (ignored by the default --ignore), in one
model.safetensors, made here with a fixed seed. The scheme is int4_g128
(uint4, MinMax, f16 scales and zero points per 128 columns). The numpy
peer does the same arithmetic (docs/quantization.md: scale =
f16((max(max, 0) - min(min, 0)) / 15), zero = rne(-min / scale), q =
clamp(rne(x / scale) + zero, 0, 15), two codes a byte), reads the weights
from a memory map and writes its codes, scales and zeros to one file: the
same bytes in and about the same bytes out, one thread (numpy's
elementwise ops do not use more).
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

SIDE = 4096


def make_model(directory, gib):
    os.makedirs(directory, exist_ok=True)
    tensors = [("model.embed_tokens.weight", [1024, SIDE])]
    layers = 0
    total = 1024 * SIDE * 2
    while total < gib * 2**30:
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            tensors.append((f"model.layers.{layers}.self_attn.{proj}.weight", [SIDE, SIDE]))
            total += SIDE * SIDE * 2
        tensors.append((f"model.layers.{layers}.input_layernorm.weight", [SIDE]))
        total += SIDE * 2
        layers += 1
    header, offset = {}, 0
    for name, shape in tensors:
        size = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": shape,
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    rng = np.random.default_rng(0)
    with open(os.path.join(directory, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in tensors:
            values = rng.standard_normal(shape, dtype=np.float32) * 0.02
            f.write((values.view(np.uint32) >> 16).astype(np.uint16).tobytes())
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"model_type": "llama", "hidden_size": SIDE}, f)
    return offset, sum(1 for name, shape in tensors if len(shape) == 2) - 1


def numpy_rtn(directory, out_path):
    """int4_g128 on every linear weight, as lowbit computes it."""
    data = open(os.path.join(directory, "model.safetensors"), "rb")
    (length,) = struct.unpack("<Q", data.read(8))
    header = json.loads(data.read(length))
    mapped = np.memmap(os.path.join(directory, "model.safetensors"), np.uint8, "r",
                       offset=8 + length)
    with open(out_path, "wb") as out:
        for name, info in sorted(header.items()):
            if "_proj." not in name:
                continue
            begin, end = info["data_offsets"]
            rows, cols = info["shape"]
            bits = mapped[begin:end].view(np.uint16).astype(np.uint32) << 16
            x = bits.view(np.float32).reshape(rows, cols // 128, 128)
            low = np.minimum(x.min(axis=2), 0)
            high = np.maximum(x.max(axis=2), 0)
            scale = ((high - low) / np.float32(15)).astype(np.float16)
            scale[scale == 0] = 1
            s = scale.astype(np.float32)
            zero = np.clip(np.rint(-low / s), 0, 15)
            q = np.clip(np.rint(x / s[..., None]) + zero[..., None], 0, 15).astype(np.uint8)
            q = q.reshape(rows, cols)
            packed = q[:, 0::2] | (q[:, 1::2] << 4)
            out.write(packed.tobytes())
            out.write(scale.tobytes())
            out.write(zero.astype(np.uint8).tobytes())


def run_lowbit(lowbit, model, out, jobs, backend):
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    result = subprocess.run(
        ["/usr/bin/time", "-v", lowbit, "quantize-model", "--scheme", "int4_g128",
         "--in", model, "--out", out, "--jobs", str(jobs), "--backend", backend],
        capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(result.stderr)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)[1])
    return seconds, rss / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lowbit")
    parser.add_argument("work")
    parser.add_argument("--gib", type=float, default=2.1)
    parser.add_argument("--jobs", default="1,2")
    parser.add_argument("--reference-jobs", default="1")
    args = parser.parse_args()
    model = os.path.join(args.work, "model")
    input_bytes, weights = make_model(model, args.gib)
    print(f"model: {input_bytes / 2**30:.2f} GiB bf16, {weights} linear "
          f"weights [{SIDE}, {SIDE}] quantized, scheme int4_g128")
    rows = []
    runs = [(int(j), "auto") for j in args.jobs.split(",") if j]
    runs += [(int(j), "reference") for j in args.reference_jobs.split(",") if j]
    for jobs, backend in runs:
        seconds, rss = run_lowbit(args.lowbit, model, os.path.join(args.work, "out"),
                                  jobs, backend)
        label = f"lowbit --jobs {jobs}" + ("" if backend == "auto" else " --backend reference")
        rows.append((label, seconds, rss))
    start = time.perf_counter()
    numpy_rtn(model, os.path.join(args.work, "numpy.bin"))
    numpy_seconds = time.perf_counter() - start
    print(f"{'run':<40} {'s':>8} {'GB/s in':>8} {'max RSS MiB':>12} {'vs numpy':>9}")
    for label, seconds, rss in rows:
        print(f"{label:<40} {seconds:8.1f} {input_bytes / seconds / 1e9:8.3f} "
              f"{rss:12.0f} {numpy_seconds / seconds:8.2f}x")
    print(f"{'numpy RTN (same run)':<40} {numpy_seconds:8.1f} "
          f"{input_bytes / numpy_seconds / 1e9:8.3f} {'-':>12} {1:8.2f}x")
    shutil.rmtree(args.work)


if __name__ == "__main__":
    main()

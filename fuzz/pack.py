#!/usr/bin/env python3
"""Packs a `lowbit quantize` directory into one quantized-dir fuzz input.

The files meta.json, q.npy, scales.npy, zeros.npy and global_scale.npy,
in that order, joined by the separator QuantizedDirFuzzer.cpp splits on;
trailing missing files are left out, a missing file in the middle is an
empty part. Usage: pack.py DIRECTORY OUTPUT
"""
import pathlib
import sys

SEPARATOR = b"\n--lowbit-fuzz-file--\n"
FILES = ["meta.json", "q.npy", "scales.npy", "zeros.npy", "global_scale.npy"]

directory, output = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
parts = [(directory / name).read_bytes() if (directory / name).exists() else None
         for name in FILES]
while parts and parts[-1] is None:
    parts.pop()
output.write_bytes(SEPARATOR.join(part or b"" for part in parts))

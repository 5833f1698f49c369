#!/usr/bin/env python3
"""Packs a directory into one fuzz input of a directory fuzz target.

quantized-dir: a `lowbit quantize` directory without its manifest.json
(QuantizedDirFuzzer.cpp writes one for the files it gets); quantized-set:
the same with the manifest; kv-cache: a `lowbit kv` cache directory
(KvCacheDirFuzzer.cpp). The files, in the target's order, joined by the
separator that fuzz/PackedDirectory.h splits on; trailing missing files
are left out, a missing file in the middle is an empty part.
Usage: pack.py quantized-dir|quantized-set|kv-cache DIRECTORY OUTPUT
"""
import pathlib
import sys

SEPARATOR = b"\n--lowbit-fuzz-file--\n"
FILES = {
    "quantized-dir": ["meta.json", "q.npy", "scales.npy", "zeros.npy",
                      "global_scale.npy"],
    "quantized-set": ["meta.json", "q.npy", "scales.npy", "zeros.npy",
                      "global_scale.npy", "manifest.json"],
    "kv-cache": ["meta.json", "k_codes.npy", "v_codes.npy", "k_scales.npy",
                 "v_scales.npy", "k_zeros.npy", "v_zeros.npy",
                 "k_residual.npy", "v_residual.npy", "block_table.npy"],
}

if len(sys.argv) != 4 or sys.argv[1] not in FILES:
    sys.exit(__doc__)
files = FILES[sys.argv[1]]
directory, output = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
parts = [(directory / name).read_bytes() if (directory / name).exists() else None
         for name in files]
while parts and parts[-1] is None:
    parts.pop()
output.write_bytes(SEPARATOR.join(part or b"" for part in parts))

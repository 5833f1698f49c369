#!/usr/bin/env python3
"""Writes the safetensors fuzzer's seeds (fuzz/corpus/safetensors/) with the
standard library only, in the reference writer's layout: every dtype the
format names, metadata, an empty tensor, a scalar, sub-byte dtypes, an
unpadded header, and a GPTQ-like set of int32-packed tensors.
Usage: fuzz/make-safetensors-seeds.py OUT_DIR (fuzz/make-corpus runs it)."""
import json
import pathlib
import struct
import sys


def write(path, tensors, metadata=None, pad=True):
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset, data = 0, b""
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(payload)]}
        offset += len(payload)
        data += payload
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


out = pathlib.Path(sys.argv[1])
write(out / "f32-bf16-meta.safetensors",
      [("w", "F32", [2, 2], struct.pack("<4f", 1, -2, 0.5, 3)),
       ("b", "BF16", [3], b"\x80\x3f\x00\x40\x00\xc0")], {"format": "pt"})
write(out / "gptq-like.safetensors",
      [("qweight", "I32", [1, 4], bytes(range(16))),
       ("qzeros", "I32", [1, 1], b"\x77\x77\x77\x77"),
       ("scales", "F16", [1, 4], b"\x00\x3c" * 4),
       ("g_idx", "I32", [8], bytes(32))])
write(out / "subbyte-fp8.safetensors",
      [("a", "F4", [4], b"\x12\x34"), ("b", "F6_E3M2", [4], b"\x01\x02\x03"),
       ("c", "F8_E4M3", [2], b"\x38\xb8"), ("d", "F8_E8M0", [1], b"\x7f"),
       ("e", "U8", [0, 5], b""), ("f", "BOOL", [], b"\x01")], pad=False)
write(out / "ints-64.safetensors",
      [("x", "I64", [1], struct.pack("<q", -5)),
       ("y", "U64", [1], struct.pack("<Q", 5)),
       ("z", "F64", [1], struct.pack("<d", 0.25)),
       ("c", "C64", [1], struct.pack("<2f", 1, 2)),
       ("s", "I16", [2], b"\x01\x00\xff\xff"), ("u", "U16", [1], b"\x02\x00"),
       ("h", "F16", [1], b"\x00\x3c"), ("v", "U32", [1], b"\x01\x00\x00\x00"),
       ("i", "I8", [1], b"\xff"), ("m", "F8_E5M2", [1], b"\x3c"),
       ("n", "F6_E2M3", [4], b"\x00\x01\x02")])
write(out / "empty-header.safetensors", [])

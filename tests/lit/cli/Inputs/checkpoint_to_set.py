"""Puts a ModelOpt NVFP4 layer into a set written by `lowbit quantize
--scheme nvfp4` from a weight of the same shape, decoding the layout here,
apart from lowbit's importer, for `matmul --weights CKPT::LAYER`'s test.
Also writes X.

Usage: checkpoint_to_set.py CKPT_DIR LAYER SET_DIR X.npy

ModelOpt's `weight` U8 [N, K/2] holds element 2i in the low nibble, as
lowbit's q.npy does; `weight_scale` F8_E4M3 [N, K/16] is scales.npy's
ue4m3 codes byte for byte; `weight_scale_2` F32 [] is the decode
multiplier, lowbit's nvfp4 global_scale.npy.
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from edit_set import rewrite_manifest  # noqa: E402


def read_safetensors(path):
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    dtypes = {"U8": np.uint8, "F8_E4M3": np.uint8, "F32": np.float32}
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[8 + length + begin:8 + length + end]
        tensors[name] = np.frombuffer(raw, dtypes[info["dtype"]]).reshape(info["shape"])
    return tensors


def main():
    checkpoint, layer, set_dir, x_path = sys.argv[1:]
    tensors = read_safetensors(os.path.join(checkpoint, "model.safetensors"))
    arrays = {"q.npy": tensors[layer + ".weight"],
              "scales.npy": tensors[layer + ".weight_scale"],
              "global_scale.npy": tensors[layer + ".weight_scale_2"].reshape(1)}
    for name, array in arrays.items():
        template = np.load(os.path.join(set_dir, name))
        assert template.shape == array.shape and template.dtype == array.dtype, name
        np.save(os.path.join(set_dir, name), np.ascontiguousarray(array))
    rewrite_manifest(set_dir)
    k = arrays["q.npy"].shape[1] * 2
    x = np.random.default_rng(7).standard_normal((3, k)).astype(np.float32)
    np.save(x_path, x)


if __name__ == "__main__":
    main()

"""The ecosystem's own readers on lowbit's output (tools/run-interop).

Usage: interop_check.py LOWBIT WORK

1. compressed-tensors: a synthetic Hugging Face directory
   (tests/lit/cli/Inputs/make_hf_model.py) goes through `lowbit
   quantize-model` with each scheme below. compressed-tensors parses the
   written config.json (QuantizationConfig), picks its compressor from the
   config's format, and decompresses every quantized layer from the written
   tensors. lowbit's dequantization of the same layer comes from `lowbit
   matmul --weights OUT::LAYER` with X = the identity (Y = W^T exactly: one
   product by 1.0 per output, the rest +0). The two must be equal bit for
   bit once lowbit's f32 is rounded to the decompressor's dtype (as the
   fixture test compares, docs/checkpoints.md).
2. gguf: `lowbit checkpoint gguf` writes the same directory as Q8_0 and
   Q4_0; gguf's GGUFReader reads the file, and every quantized tensor's
   blocks equal gguf.quants.quantize of the same f32 values, every other
   tensor its values.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SCHEMES = [
    "int4_g128",
    "scheme(format=int4,scale=group(32;axis=1),type=bf16,packing=nibble)",
    "scheme(format=int8,scale=per_channel(axis=0),type=f16)",
    "fp8_e4m3",
    "scheme(format=e4m3,scale=block(16x32),tail=true,type=bf16)",
]


def run(*command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}: {result.stderr}")
    return result.stdout


def source_tensors(model):
    """The input's tensors as f32 numpy arrays (bf16 widened)."""
    import safetensors
    out = {}
    with safetensors.safe_open(os.path.join(model, "model.safetensors"), "pt") as f:
        for name in f.keys():
            out[name] = f.get_tensor(name).float().numpy()
    return out


def lowbit_dequantized(lowbit, out, layer, k, work):
    x = os.path.join(work, "identity.npy")
    y = os.path.join(work, "y.npy")
    np.save(x, np.eye(k, dtype=np.float32))
    run(lowbit, "matmul", "--weights", f"{out}::{layer}", "--input", x, "--out", y)
    return np.load(y).T


def check_compressed_tensors(lowbit, model, work):
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.quantization import QuantizationConfig
    failures = 0
    for index, scheme_text in enumerate(SCHEMES):
        out = os.path.join(work, f"ct-{index}")
        run(lowbit, "quantize-model", "--scheme", scheme_text, "--in", model,
            "--out", out)
        config = json.load(open(os.path.join(out, "config.json")))
        qconfig = QuantizationConfig.model_validate(config["quantization_config"])
        scheme = qconfig.config_groups["group_0"]
        compressor = BaseCompressor.load_from_registry(qconfig.format)
        index_path = os.path.join(out, "model.safetensors.index.json")
        files = (sorted(set(json.load(open(index_path))["weight_map"].values()))
                 if os.path.exists(index_path) else ["model.safetensors"])
        import safetensors.torch
        tensors = {}
        for name in files:
            tensors.update(safetensors.torch.load_file(os.path.join(out, name)))
        layers = sorted({name.rsplit(".", 1)[0] for name in tensors
                         if name.endswith((".weight_packed", ".weight_scale"))})
        for layer in layers:
            state = {name[len(layer) + 1:]: value for name, value in tensors.items()
                     if name.startswith(layer + ".")}
            theirs = compressor.decompress(dict(state), scheme)["weight"]
            k = theirs.shape[1]
            mine = torch.from_numpy(lowbit_dequantized(lowbit, out, layer, k, work))
            mine = mine.to(theirs.dtype)
            same = torch.equal(mine.view(torch.int16) if mine.element_size() == 2
                               else mine.view(torch.int32),
                               theirs.view(torch.int16) if theirs.element_size() == 2
                               else theirs.view(torch.int32))
            failures += not same
            print(f"compressed-tensors {qconfig.format} {scheme_text} {layer}: "
                  f"{theirs.dtype} {'bit-exact' if same else 'DIFFERENT'}")
    return failures


def check_gguf(lowbit, model, work):
    import gguf
    failures = 0
    source = source_tensors(model)
    for type_name, qtype in (("q8_0", gguf.GGMLQuantizationType.Q8_0),
                             ("q4_0", gguf.GGMLQuantizationType.Q4_0)):
        path = os.path.join(work, f"lowbit-{type_name}.gguf")
        run(lowbit, "checkpoint", "gguf", os.path.join(model, "model.safetensors"),
            path, "--type", type_name)
        reader = gguf.GGUFReader(path)
        for tensor in reader.tensors:
            values = source[tensor.name]
            if tensor.tensor_type == qtype:
                expected = gguf.quants.quantize(values, qtype)
                same = np.array_equal(np.asarray(tensor.data).view(np.uint8).reshape(-1),
                                      expected.view(np.uint8).reshape(-1))
                back = gguf.quants.dequantize(np.asarray(tensor.data), qtype)
                same = same and back.shape == values.shape
            else:
                same = np.array_equal(np.asarray(tensor.data).reshape(values.shape)
                                      .astype(np.float32), values)
            failures += not same
            print(f"gguf {type_name} {tensor.name} {tensor.tensor_type.name}: "
                  f"{'read, equal' if same else 'DIFFERENT'}")
    return failures


def main():
    lowbit, work = sys.argv[1:3]
    model = os.path.join(work, "hf")
    run(sys.executable, os.path.join(ROOT, "tests/lit/cli/Inputs/make_hf_model.py"),
        model)
    failures = check_compressed_tensors(lowbit, model, work)
    failures += check_gguf(lowbit, model, work)
    print(f"interop: {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

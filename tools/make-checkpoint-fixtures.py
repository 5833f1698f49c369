#!/usr/bin/env python3
"""Makes the checkpoint fixtures of tests/data/checkpoints with each
ecosystem's own packing code (docs/checkpoints.md, "Fixtures from the
packers").

Run through tools/make-checkpoint-fixtures, which builds the venv with the
pinned packages (tools/fixture-requirements.txt) and downloads, without
installing, the two packages whose pack functions are used from their
archives (tools/fixture-sources.txt). Each fixture is a directory with the
packed tensors (model.safetensors or model.gguf), the configuration file the
tool writes beside them, and `dequantized.safetensors`: the packer's own
dequantization of every weight, named `<layer>.weight`, in the dtype the
packer returns. The lowbit tests read the packed file with lowbit's
importer and compare with it bit for bit; they need none of these packages.

Usage: make-checkpoint-fixtures.py SOURCES_DIR OUT_DIR
  SOURCES_DIR holds the unpacked autoawq and auto-gptq archives.
"""

import json
import math
import os
import sys
import types

import numpy as np
import torch
from safetensors.torch import save_file

SEED = 29
LAYERS = ["model.layers.0.mlp.down_proj", "model.layers.1.self_attn.o_proj"]


def weights(n, k, dtype, seed):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(n, k, generator=generator) * 0.05).to(dtype)


def write(directory, tensors, dequantized, config_name=None, config=None):
    os.makedirs(directory, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()},
              os.path.join(directory, "model.safetensors"))
    save_file({k: v.contiguous() for k, v in dequantized.items()},
              os.path.join(directory, "dequantized.safetensors"))
    if config_name:
        with open(os.path.join(directory, config_name), "w") as file:
            json.dump(config, file, indent=2, sort_keys=True)
            file.write("\n")


def package_from_source(name, root):
    """Makes `name` importable from its unpacked archive without running its
    __init__ (which imports the whole tool and its GPU extensions): each
    package on the way is an empty module with the right __path__."""
    def stub(dotted, path):
        module = types.ModuleType(dotted)
        module.__path__ = [path]
        sys.modules[dotted] = module
    stub(name, os.path.join(root, name))


# --- compressed-tensors ----------------------------------------------------

def ct_qparams(weight, args):
    from compressed_tensors.quantization.utils import calculate_qparams
    n, k = weight.shape
    strategy = str(getattr(args.strategy, "value", args.strategy))
    if strategy in ("group", "tensor_group"):
        view = weight.reshape(n, k // args.group_size, args.group_size)
        low, high = view.amin(-1), view.amax(-1)
    elif strategy == "channel":
        low, high = weight.amin(-1, keepdim=True), weight.amax(-1, keepdim=True)
    elif strategy == "tensor":
        low, high = weight.amin().reshape(1), weight.amax().reshape(1)
    elif strategy == "block":
        rows, cols = args.block_structure
        padded = torch.nn.functional.pad(
            weight.float(), (0, -k % cols, 0, -n % rows))
        view = padded.reshape(padded.shape[0] // rows, rows,
                              padded.shape[1] // cols, cols)
        # Padding zeros cannot change a range that includes 0.
        low, high = view.amin((1, 3)), view.amax((1, 3))
        low, high = low.to(weight.dtype), high.to(weight.dtype)
    else:
        raise ValueError(strategy)
    global_scale = None
    if strategy == "tensor_group":
        from compressed_tensors.quantization.utils import generate_gparam
        global_scale = generate_gparam(weight.amin().reshape(1).float(),
                                       weight.amax().reshape(1).float())
    scale, zero = calculate_qparams(low, high, args, global_scale=global_scale)
    return scale, zero, global_scale


def ct_fixture(out, name, args, shape, dtype, compressor, format_name,
               extra=None):
    from compressed_tensors.quantization import (QuantizationConfig,
                                                 QuantizationScheme)
    scheme = QuantizationScheme(targets=["Linear"], weights=args)
    tensors, dequantized = {}, {}
    for index, layer in enumerate(LAYERS):
        weight = weights(*shape, dtype, SEED + index)
        scale, zero, global_scale = ct_qparams(weight, args)
        state = {"weight": weight, "weight_scale": scale}
        if not args.symmetric:
            state["weight_zero_point"] = zero
        if global_scale is not None:
            state["weight_global_scale"] = global_scale
            state["input_global_scale"] = torch.tensor([2688.0 / 3.5])
        compressed = compressor.compress(state, scheme)
        # The packer's own reading of what it wrote.
        restored = compressor.decompress(dict(compressed), scheme)
        for key, value in compressed.items():
            tensors[f"{layer}.{key}"] = value
        dequantized[f"{layer}.weight"] = restored["weight"]
    config = {"quantization_config": QuantizationConfig(
        config_groups={"group_0": scheme}, format=format_name,
        quant_method="compressed-tensors",
        quantization_status="compressed").model_dump(
            mode="json", exclude_none=True)}
    if extra:
        config.update(extra)
    write(os.path.join(out, name), tensors, dequantized, "config.json", config)


def compressed_tensors_fixtures(out):
    from compressed_tensors.compressors.naive_quantized.base import \
        FloatQuantizationCompressor
    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
    from compressed_tensors.compressors.pack_quantized.base import \
        PackedQuantizationCompressor
    from compressed_tensors.quantization import QuantizationArgs
    packed = PackedQuantizationCompressor
    ct_fixture(out, "ct-int4-sym-g32", QuantizationArgs(
        num_bits=4, type="int", symmetric=True, strategy="group",
        group_size=32), (48, 128), torch.bfloat16, packed, "pack-quantized")
    ct_fixture(out, "ct-int4-asym-g32", QuantizationArgs(
        num_bits=4, type="int", symmetric=False, strategy="group",
        group_size=32), (48, 128), torch.bfloat16, packed, "pack-quantized")
    ct_fixture(out, "ct-int8-sym-channel", QuantizationArgs(
        num_bits=8, type="int", symmetric=True, strategy="channel"),
        (40, 96), torch.bfloat16, packed, "pack-quantized")
    ct_fixture(out, "ct-nvfp4", QuantizationArgs(
        num_bits=4, type="float", symmetric=True, strategy="tensor_group",
        group_size=16), (32, 128), torch.bfloat16, NVFP4PackedCompressor,
        "nvfp4-pack-quantized")
    floats = FloatQuantizationCompressor
    ct_fixture(out, "ct-fp8-tensor", QuantizationArgs(
        num_bits=8, type="float", symmetric=True, strategy="tensor"),
        (32, 64), torch.bfloat16, floats, "float-quantized")
    ct_fixture(out, "ct-fp8-channel", QuantizationArgs(
        num_bits=8, type="float", symmetric=True, strategy="channel"),
        (32, 64), torch.bfloat16, floats, "float-quantized")
    ct_fixture(out, "ct-fp8-block", QuantizationArgs(
        num_bits=8, type="float", symmetric=True, strategy="block",
        block_structure=[128, 128]), (160, 200), torch.bfloat16, floats,
        "float-quantized")


# --- GPTQ (AutoGPTQ's QuantLinear.pack) --------------------------------------

def rtn_asymmetric(weight, groups, bits):
    """Min-max scales [N, G] and zeros [N, G] of the groups `groups[k]`."""
    n, k = weight.shape
    count = int(groups.max()) + 1
    maxq = 2 ** bits - 1
    scales = torch.empty(n, count)
    zeros = torch.empty(n, count, dtype=torch.int32)
    for group in range(count):
        columns = weight[:, groups == group].float()
        low = columns.amin(1).clamp(max=0)
        high = columns.amax(1).clamp(min=0)
        scale = (high - low) / maxq
        scales[:, group] = scale
        zeros[:, group] = torch.round(-low / scale).clamp(1, maxq).int()
    return scales, zeros


def gptq_fixture(out, sources, name, bits, group_size, act_order):
    package_from_source("auto_gptq", sources)
    from auto_gptq.nn_modules.qlinear.qlinear_cuda import QuantLinear
    n, k = 64, 128
    tensors, dequantized = {}, {}
    for index, layer in enumerate(LAYERS):
        linear = torch.nn.Linear(k, n, bias=False).half()
        linear.weight.data = weights(n, k, torch.float16, SEED + 10 + index)
        if act_order:
            order = torch.randperm(k, generator=torch.Generator().manual_seed(
                SEED + 20 + index))
            g_idx = torch.empty(k, dtype=torch.int32)
            g_idx[order] = torch.arange(k, dtype=torch.int32) // group_size
        else:
            g_idx = torch.arange(k, dtype=torch.int32) // group_size
        scales, zeros = rtn_asymmetric(linear.weight.data, g_idx, bits)
        module = QuantLinear(bits, group_size, k, n, False)
        module.pack(linear, scales.half(), zeros, g_idx)
        # The module's own dequantization: its torch path (no CUDA
        # extension here) multiplied by the identity gives W^T exactly.
        with torch.no_grad():
            restored = module(torch.eye(k, dtype=torch.float16)).t()
        for part in ("qweight", "qzeros", "scales", "g_idx"):
            tensors[f"{layer}.{part}"] = getattr(module, part)
        dequantized[f"{layer}.weight"] = restored
    config = {"bits": bits, "group_size": group_size, "desc_act": act_order,
              "sym": False, "checkpoint_format": "gptq",
              "quant_method": "gptq"}
    write(os.path.join(out, name), tensors, dequantized,
          "quantize_config.json", config)


# --- AWQ (AutoAWQ's WQLinear_GEMM.from_linear) --------------------------------

def awq_fixture(out, sources):
    package_from_source("awq", sources)
    from awq.modules.linear.gemm import WQLinear_GEMM
    from awq.utils.packing_utils import dequantize_gemm
    n, k, group_size = 64, 128, 32
    tensors, dequantized = {}, {}
    for index, layer in enumerate(LAYERS):
        linear = torch.nn.Linear(k, n, bias=False).half()
        linear.weight.data = weights(n, k, torch.float16, SEED + 30 + index)
        groups = torch.arange(k) // group_size
        scales, zeros = rtn_asymmetric(linear.weight.data, groups, 4)
        # from_linear takes [G, N], as AutoAWQ's quantizer passes them.
        module = WQLinear_GEMM.from_linear(
            linear, 4, group_size, scales=scales.t().contiguous().half(),
            zeros=zeros.t().contiguous())
        restored = dequantize_gemm(module.qweight, module.qzeros,
                                   module.scales, 4, group_size).t()
        for part in ("qweight", "qzeros", "scales"):
            tensors[f"{layer}.{part}"] = getattr(module, part)
        dequantized[f"{layer}.weight"] = restored
    config = {"quantization_config": {
        "quant_method": "awq", "bits": 4, "group_size": group_size,
        "zero_point": True, "version": "gemm"}}
    write(os.path.join(out, "awq-int4-g32"), tensors, dequantized,
          "config.json", config)


# --- ModelOpt NVFP4 (NVFP4QTensor, what its HF export calls) ----------------

def modelopt_fixture(out):
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor
    n, k = 32, 128
    tensors, dequantized = {}, {}
    for index, layer in enumerate(LAYERS):
        weight = weights(n, k, torch.bfloat16, SEED + 40 + index)
        packed, scale, scale_2 = NVFP4QTensor.quantize(weight, 16)
        restored = packed.dequantize(
            dtype=torch.float32, scale=scale, double_scale=scale_2,
            block_sizes={-1: 16})
        tensors[f"{layer}.weight"] = packed._quantized_data
        tensors[f"{layer}.weight_scale"] = scale
        tensors[f"{layer}.weight_scale_2"] = scale_2.float().reshape(())
        tensors[f"{layer}.input_scale"] = torch.tensor(3.5 / 2688.0)
        dequantized[f"{layer}.weight"] = restored
    config = {"producer": {"name": "modelopt", "version": "0.47.0"},
              "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                               "kv_cache_quant_algo": None,
                               "exclude_modules": ["lm_head"]}}
    write(os.path.join(out, "modelopt-nvfp4"), tensors, dequantized,
          "hf_quant_config.json", config)


# --- GGUF (the gguf package's writer and its Q8_0 / Q4_0 quantizers) --------

def gguf_source(rows, cols, seed):
    """Random rows, then blocks that exercise the reference quantizers'
    corners: an all-zero block (d = 0, id = 0), a block whose largest
    magnitude is positive (a negative Q4_0 scale), one where +m and -m tie
    (the first wins), and values on the rounding ties of both types."""
    generator = np.random.default_rng(seed)
    data = (generator.standard_normal((rows, cols)) * 0.05).astype(np.float32)
    data[0, 0:32] = 0
    data[0, 32:64] = np.linspace(-0.5, 1.0, 32, dtype=np.float32)
    data[1, 0:32] = np.linspace(-1.0, 0.5, 32, dtype=np.float32)
    data[1, 31] = 1.0  # ties with data[1, 0] = -1.0; -1.0 comes first
    # Q8_0: amax 127 gives d = 1 and id = 1, so x.5 are roundf ties.
    data[2, 0:32] = np.arange(32, dtype=np.float32) - 15.5
    data[2, 31] = 127
    # Q4_0: max -8 gives d = 1, id = 1; x + 8.5 lands on integers.
    data[3, 0:32] = np.linspace(-8, 7.5, 32, dtype=np.float32)
    return data


def gguf_fixture(out):
    import gguf
    directory = os.path.join(out, "gguf-q8_0-q4_0")
    os.makedirs(directory, exist_ok=True)
    writer = gguf.GGUFWriter(os.path.join(directory, "model.gguf"), "llama")
    writer.add_name("lowbit-fixture")
    writer.add_uint32("lowbit.test.u32", 29)
    writer.add_float32("lowbit.test.f32", 0.5)
    writer.add_bool("lowbit.test.bool", True)
    writer.add_array("lowbit.test.strings", ["a", "bc"])
    writer.add_array("lowbit.test.ints", [1, -2, 3])
    source, dequantized = {}, {}
    types_ = [("blk.0.ffn_down.weight", gguf.GGMLQuantizationType.Q8_0),
              ("blk.0.attn_output.weight", gguf.GGMLQuantizationType.Q4_0),
              ("blk.1.ffn_down.weight", gguf.GGMLQuantizationType.Q4_0),
              ("blk.1.attn_output.weight", gguf.GGMLQuantizationType.Q8_0)]
    for index, (name, qtype) in enumerate(types_):
        data = gguf_source(8, 96, SEED + 50 + index)
        packed = gguf.quants.quantize(data, qtype)
        writer.add_tensor(name, packed, raw_dtype=qtype)
        source[name] = torch.from_numpy(data)
        dequantized[name] = torch.from_numpy(
            gguf.quants.dequantize(packed, qtype).astype(np.float32))
    norm = np.linspace(-1, 1, 96, dtype=np.float32)
    writer.add_tensor("blk.0.attn_norm.weight", norm)
    writer.add_tensor("token_embd.weight",
                      gguf_source(4, 96, SEED + 60).astype(np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    save_file(source, os.path.join(directory, "source.safetensors"))
    save_file(dequantized, os.path.join(directory, "dequantized.safetensors"))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sources, out = sys.argv[1], sys.argv[2]
    torch.manual_seed(SEED)
    compressed_tensors_fixtures(out)
    gptq_fixture(out, os.path.join(sources, "auto-gptq"), "gptq-int4-g32", 4,
                 32, False)
    gptq_fixture(out, os.path.join(sources, "auto-gptq"),
                 "gptq-int4-g32-actorder", 4, 32, True)
    gptq_fixture(out, os.path.join(sources, "auto-gptq"), "gptq-int8-g32", 8,
                 32, False)
    awq_fixture(out, os.path.join(sources, "autoawq"))
    modelopt_fixture(out)
    gguf_fixture(out)


if __name__ == "__main__":
    main()

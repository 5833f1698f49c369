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
3. gguf, llama.cpp's model: `lowbit checkpoint gguf --llama-cpp` writes a
   tiny Llama (tests/lit/cli/Inputs/make_llama_model.py) as Q8_0 and Q4_0.
   GGUFReader reads it; the metadata equals config.json's hyperparameters
   and tokenizer.json's vocabulary as convert_hf_to_gguf.py writes them;
   the tensor names are gguf's own TensorNameMap of the HF names; each
   matrix's blocks equal gguf.quants.quantize of the HF values, q_proj and
   k_proj first permuted as the converter's LlamaModel.permute does; each
   1-D tensor is its values in F32. llama.cpp itself (llama-cpp-python's
   build of it) loads each file and evaluates three tokens: finite logits
   of vocab_size.
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
    "nvfp4",
    "mxfp4",
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


def bits(tensor):
    """A tensor's bits as integers of its width."""
    return tensor.view(torch.int16 if tensor.element_size() == 2 else torch.int32)


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
            same = torch.equal(bits(mine), bits(theirs))
            # The identity matmul sums +0 products, so where the weight is
            # -0.0 (an FP4 code 0x8, kept by the decompressor) lowbit's
            # read-back is +0.0: equal but for the sign of those zeros.
            zeros = int((bits(mine) != bits(theirs)).sum())
            if not same and torch.equal(bits(mine + 0.0), bits(theirs + 0.0)):
                verdict = f"bit-exact but for {zeros} -0.0 read back as +0.0"
                same = True
            else:
                verdict = "bit-exact" if same else "DIFFERENT"
            failures += not same
            print(f"compressed-tensors {qconfig.format} {scheme_text} {layer}: "
                  f"{theirs.dtype} {verdict}")
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


def field_value(reader, key):
    field = reader.get_field(key)
    if field is None:
        return None
    value = field.contents()
    return value


def converter_permute(weights, n_head, n_head_kv=None):
    """convert_hf_to_gguf.py's LlamaModel.permute, transcribed."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2,
                            *weights.shape[1:])
            .swapaxes(1, 2)
            .reshape(weights.shape))


def llama_cpp_loads(path, vocab_size):
    """llama.cpp loads the file and evaluates three tokens."""
    import llama_cpp
    model = llama_cpp.Llama(model_path=path, n_ctx=32, n_threads=1,
                            logits_all=True, verbose=False)
    model.eval([1, 2, 3])
    logits = np.array(model.scores[:3])
    return logits.shape == (3, vocab_size) and bool(np.isfinite(logits).all())


def check_gguf_llama(lowbit, work):
    import gguf
    model = os.path.join(work, "llama")
    run(sys.executable,
        os.path.join(ROOT, "tests/lit/cli/Inputs/make_llama_model.py"), model)
    config = json.load(open(os.path.join(model, "config.json")))
    tokenizer = json.load(open(os.path.join(model, "tokenizer.json"),
                               encoding="utf-8"))
    source = source_tensors(model)
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA,
                                     config["num_hidden_layers"])
    vocab = config["vocab_size"]
    tokens = ["[PAD%d]" % i for i in range(vocab)]
    for text, token_id in tokenizer["model"]["vocab"].items():
        tokens[token_id] = text
    for added in tokenizer["added_tokens"]:
        tokens[added["id"]] = added["content"]
    merges = [m if isinstance(m, str) else " ".join(m)
              for m in tokenizer["model"]["merges"]]
    expected_keys = {
        "general.architecture": "llama",
        "llama.block_count": config["num_hidden_layers"],
        "llama.context_length": config["max_position_embeddings"],
        "llama.embedding_length": config["hidden_size"],
        "llama.feed_forward_length": config["intermediate_size"],
        "llama.attention.head_count": heads,
        "llama.attention.head_count_kv": kv_heads,
        "llama.rope.freq_base": np.float32(config["rope_theta"]),
        "llama.attention.layer_norm_rms_epsilon": np.float32(config["rms_norm_eps"]),
        "llama.rope.dimension_count": config["hidden_size"] // heads,
        "llama.vocab_size": vocab,
        "general.quantization_version": 2,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.bos_token_id": config["bos_token_id"],
        "tokenizer.ggml.eos_token_id": config["eos_token_id"][0],
    }
    failures = 0
    for type_name, qtype, file_type in (
            ("q8_0", gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
            ("q4_0", gguf.GGMLQuantizationType.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0)):
        path = os.path.join(work, f"llama-{type_name}.gguf")
        run(lowbit, "checkpoint", "gguf", model, path, "--type", type_name,
            "--llama-cpp")
        reader = gguf.GGUFReader(path)
        keys = dict(expected_keys, **{"general.file_type": int(file_type)})
        wrong = [key for key, value in keys.items()
                 if field_value(reader, key) != value]
        failures += bool(wrong)
        print(f"gguf llama {type_name} metadata: "
              f"{'equal' if not wrong else 'DIFFERENT ' + ', '.join(wrong)}")
        expected = {}
        for name, values in source.items():
            if name.endswith("inv_freq"):
                continue
            if name.endswith(("q_proj.weight", "q_proj.bias")):
                values = converter_permute(values, heads, heads)
            if name.endswith(("k_proj.weight", "k_proj.bias")):
                values = converter_permute(values, heads, kv_heads)
            expected[names.get_name(name, try_suffixes=(".weight", ".bias"))] = values
        seen = {tensor.name for tensor in reader.tensors}
        same_names = seen == set(expected)
        failures += not same_names
        print(f"gguf llama {type_name} tensor names (gguf's TensorNameMap): "
              f"{'equal' if same_names else 'DIFFERENT'}")
        for tensor in reader.tensors:
            values = expected.get(tensor.name)
            if values is None:
                continue
            data = np.asarray(tensor.data)
            if values.ndim == 2 and values.shape[1] % 32 == 0:
                same = (tensor.tensor_type == qtype and np.array_equal(
                    data.view(np.uint8).reshape(-1),
                    gguf.quants.quantize(values, qtype).view(np.uint8).reshape(-1)))
            else:
                same = (tensor.tensor_type == gguf.GGMLQuantizationType.F32 and
                        np.array_equal(data.reshape(values.shape), values))
            failures += not same
            print(f"gguf llama {type_name} {tensor.name} {tensor.tensor_type.name}: "
                  f"{'equal' if same else 'DIFFERENT'}")
        loaded = llama_cpp_loads(path, vocab)
        failures += not loaded
        print(f"gguf llama {type_name} llama.cpp load and eval: "
              f"{'ok' if loaded else 'FAILED'}")
    return failures


def main():
    lowbit, work = sys.argv[1:3]
    import compressed_tensors
    import gguf
    import llama_cpp
    from importlib.metadata import version
    print("versions: " + ", ".join(
        f"{name} {version(name)}" for name in
        ("torch", "compressed-tensors", "gguf", "safetensors", "numpy",
         "llama_cpp_python")))
    model = os.path.join(work, "hf")
    run(sys.executable, os.path.join(ROOT, "tests/lit/cli/Inputs/make_hf_model.py"),
        model)
    failures = check_compressed_tensors(lowbit, model, work)
    failures += check_gguf(lowbit, model, work)
    failures += check_gguf_llama(lowbit, work)
    print(f"interop: {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

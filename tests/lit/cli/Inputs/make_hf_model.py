"""A tiny Hugging Face checkpoint directory for `lowbit quantize-model`'s
tests: two linear weights (bf16 and f32), an embedding and lm_head (left
alone by the default --ignore), a 1-D norm and a 3-D tensor (no linear
weights), config.json and tokenizer files. Deterministic; plain Python.
With --f16, a third linear weight in f16 [32, 128]."""
import json
import os
import struct
import sys


def values(count, seed):
    """Uniform values in [-0.5, 0.5) from a 32-bit LCG."""
    state = seed
    out = []
    for _ in range(count):
        state = (state * 1664525 + 1013904223) % 2**32
        out.append(state / 2**32 - 0.5)
    return out


def encode(dtype, data):
    if dtype == "F32":
        return struct.pack("<%df" % len(data), *data)
    if dtype == "F16":
        return struct.pack("<%de" % len(data), *data)
    # bf16: the high half of the f32 (truncation; any bits will do).
    words = struct.unpack("<%dI" % len(data), struct.pack("<%df" % len(data), *data))
    return struct.pack("<%dH" % len(data), *(w >> 16 for w in words))


def write_safetensors(path, tensors, first_seed):
    """(name, dtype, shape) tensors of values(count, first_seed + index)."""
    header, data = {}, b""
    for seed, (name, dtype, shape) in enumerate(tensors, first_seed):
        count = 1
        for extent in shape:
            count *= extent
        payload = encode(dtype, values(count, seed))
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main(directory, f16=False):
    os.makedirs(directory, exist_ok=True)
    tensors = [
        ("model.embed_tokens.weight", "BF16", [8, 128]),
        ("model.layers.0.self_attn.q_proj.weight", "BF16", [16, 128]),
        ("model.layers.0.mlp.down_proj.weight", "F32", [16, 256]),
        ("model.layers.0.input_layernorm.weight", "BF16", [128]),
        ("model.conv.weight", "F32", [2, 2, 2]),
        ("lm_head.weight", "BF16", [8, 128]),
    ]
    if f16:
        tensors.append(("model.layers.0.mlp.up_proj.weight", "F16", [32, 128]))
    write_safetensors(os.path.join(directory, "model.safetensors"), tensors, 1)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                   "hidden_size": 128, "torch_dtype": "bfloat16"}, f, indent=2)
    with open(os.path.join(directory, "tokenizer.json"), "w") as f:
        json.dump({"version": "1.0", "model": {"type": "BPE"}}, f)
    with open(os.path.join(directory, "generation_config.json"), "w") as f:
        json.dump({"do_sample": False}, f)


if __name__ == "__main__":
    main(sys.argv[1], f16="--f16" in sys.argv[2:])

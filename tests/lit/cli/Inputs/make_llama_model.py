"""A tiny Hugging Face Llama directory for `lowbit checkpoint gguf
--llama-cpp`'s tests: config.json with every hyperparameter llama.cpp
reads (4 query heads and 2 key/value heads of 16, so q and k permute
differently), two decoder layers in bf16, f16 and f32, the rotary
inv_freq buffer (left out of the GGUF, as llama.cpp's converter does), and
a byte-level BPE tokenizer.json with two special added tokens and ids
past the vocabulary (written as llama.cpp's unused [PAD<id>]).
Deterministic; plain Python. With --no-tokenizer, no tokenizer.json."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_hf_model import write_safetensors  # noqa: E402

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 64, 2, 4, 2, 16, 96, 34


def tensors():
    out = [("model.embed_tokens.weight", "BF16", [VOCAB, HIDDEN]),
           ("model.norm.weight", "F32", [HIDDEN]),
           ("lm_head.weight", "BF16", [VOCAB, HIDDEN])]
    for layer in range(LAYERS):
        prefix = f"model.layers.{layer}."
        out += [(prefix + "input_layernorm.weight", "F16", [HIDDEN]),
                (prefix + "self_attn.q_proj.weight", "BF16", [HEADS * HEAD_DIM, HIDDEN]),
                (prefix + "self_attn.k_proj.weight", "F32", [KV_HEADS * HEAD_DIM, HIDDEN]),
                (prefix + "self_attn.v_proj.weight", "F16", [KV_HEADS * HEAD_DIM, HIDDEN]),
                (prefix + "self_attn.o_proj.weight", "BF16", [HIDDEN, HEADS * HEAD_DIM]),
                (prefix + "self_attn.rotary_emb.inv_freq", "F32", [HEAD_DIM // 2]),
                (prefix + "post_attention_layernorm.weight", "BF16", [HIDDEN]),
                (prefix + "mlp.gate_proj.weight", "BF16", [FFN, HIDDEN]),
                (prefix + "mlp.up_proj.weight", "F32", [FFN, HIDDEN]),
                (prefix + "mlp.down_proj.weight", "F16", [HIDDEN, FFN])]
    return out


def main(directory, tokenizer=True):
    os.makedirs(directory, exist_ok=True)
    write_safetensors(os.path.join(directory, "model.safetensors"), tensors(),
                      101)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                   "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
                   "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
                   "intermediate_size": FFN, "vocab_size": VOCAB,
                   "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
                   "rope_theta": 500000.0, "rope_scaling": None,
                   "bos_token_id": 30, "eos_token_id": [31, 30],
                   "tie_word_embeddings": False, "torch_dtype": "bfloat16"},
                  f, indent=2)
    if not tokenizer:
        return
    # Byte-level BPE: 26 letters, a space (GPT-2's "Ġ") and three merges.
    vocab = {chr(ord("a") + i): i for i in range(26)}
    vocab.update({"Ġ": 26, "th": 27, "Ġt": 28, "the": 29})
    with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump({"version": "1.0",
                   "added_tokens": [
                       {"id": 30, "content": "<|begin|>", "special": True},
                       {"id": 31, "content": "<|end|>", "special": True},
                       {"id": 32, "content": "<tool>", "special": False}],
                   "model": {"type": "BPE", "byte_fallback": False,
                             "vocab": vocab,
                             "merges": ["t h", ["Ġ", "t"], "th e"]}},
                  f, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1], tokenizer="--no-tokenizer" not in sys.argv[2:])

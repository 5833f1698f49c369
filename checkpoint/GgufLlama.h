//===- GgufLlama.h - A Hugging Face Llama as llama.cpp's GGUF model -*- C++
//-*-//
//
// What makes a GGUF file a model llama.cpp loads rather than a container
// of tensors: the architecture's metadata (`general.architecture`,
// `llama.block_count`, ...), taken from the Hugging Face config.json; the
// tensors under llama.cpp's names (`model.layers.N.self_attn.q_proj.weight`
// -> `blk.N.attn_q.weight`); the query and key rows permuted as llama.cpp's
// converter (convert_hf_to_gguf.py) permutes them for its rope; and the
// vocabulary (`tokenizer.ggml.*`) from tokenizer.json when one is given
// (docs/checkpoints.md, "A model llama.cpp loads").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_GGUFLLAMA_H
#define LOWBIT_CHECKPOINT_GGUFLLAMA_H

#include "checkpoint/Gguf.h"
#include "lowbit/Expected.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lowbit::checkpoint {

/// Which rope permutation a tensor's rows take.
enum class RopePermutation { None, Query, Key };

/// One Hugging Face tensor under llama.cpp's name.
struct GgufTensorName {
  std::string name;
  RopePermutation rope = RopePermutation::None;
};

/// A Hugging Face Llama (LlamaForCausalLM, MistralForCausalLM) as
/// llama.cpp's `llama` architecture.
struct GgufLlamaModel {
  /// general.architecture first, then the hyperparameters and the
  /// vocabulary; general.file_type and general.quantization_version are
  /// the writer's (they depend on the tensor type).
  std::vector<std::pair<std::string, GgufValue>> metadata;
  int64_t blockCount = 0;
  int64_t headCount = 0;
  int64_t headCountKv = 0;

  /// llama.cpp's name of `hfName`; nullopt for a tensor llama.cpp's
  /// converter leaves out (the rotary `inv_freq` buffers); an error for
  /// any other tensor (llama.cpp refuses a file with tensors it does not
  /// use) or a block index past block_count.
  Expected<std::optional<GgufTensorName>>
  tensorName(std::string_view hfName) const;

  /// Heads of the rows a permutation of `rope` acts on.
  int64_t ropeHeads(RopePermutation rope) const {
    return rope == RopePermutation::Key ? headCountKv : headCount;
  }
};

/// How the vocabulary is written.
enum class GgufTokenizer {
  /// tokenizer.json's byte-level BPE as llama.cpp's `gpt2` model when the
  /// directory has a tokenizer.json (another tokenizer is refused), else
  /// `no_vocab` with `llama.vocab_size`.
  FromDirectory,
  /// `no_vocab` with `llama.vocab_size` whatever the directory holds.
  None,
};

/// The model of the Hugging Face directory `directory` (config.json, and
/// tokenizer.json as `tokenizer` says). An error names the file and field
/// for an architecture other than Llama's, a missing or malformed
/// hyperparameter, a rope_scaling (llama.cpp's converter adds a tensor
/// for it), a tokenizer lowbit does not convert.
Expected<GgufLlamaModel> readGgufLlamaModel(const std::string &directory,
                                            GgufTokenizer tokenizer);

/// The rows of `rows` x `rowBytes` bytes permuted as llama.cpp's converter
/// permutes q_proj (heads = head_count) and k_proj (heads = head_count_kv)
/// weights and biases: with d = rows / heads rows a head, HF row
/// h*d + i*(d/2) + j becomes row h*d + 2*j + i (i in {0, 1}, j < d/2), i.e.
/// `w.reshape(heads, 2, d/2, ...).swapaxes(1, 2).reshape(w.shape)`: HF
/// keeps a head's rotated pairs half a head apart, llama.cpp's rope takes
/// them adjacent. An error when rows is not a multiple of 2 * heads.
Expected<std::vector<std::byte>>
permuteRopeRows(std::span<const std::byte> data, int64_t rows, int64_t heads,
                const std::string &name);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_GGUFLLAMA_H

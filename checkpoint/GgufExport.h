//===- GgufExport.h - A safetensors checkpoint as a GGUF file ---*- C++ -*-===//
//
// Writes a checkpoint's tensors into one GGUF file: every 2-D float tensor
// whose rows split into 32-element blocks quantized with lowbit's Q8_0 or
// Q4_0 scheme (bit-exact to llama.cpp's reference quantizer) and stored as
// ggml's blocks, every other F32 or F16 tensor as it is, BF16 widened to
// F32. Names and shapes are the checkpoint's (ne reversed): a container
// of the tensors. Given a GgufLlamaModel, the file is a model llama.cpp
// loads instead: its metadata, llama.cpp's tensor names, q/k rows permuted
// for llama.cpp's rope, 1-D tensors as F32. The file is assembled in
// memory (docs/checkpoints.md, "Writing GGUF").
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_GGUFEXPORT_H
#define LOWBIT_CHECKPOINT_GGUFEXPORT_H

#include "checkpoint/Checkpoint.h"
#include "checkpoint/GgufLlama.h"

namespace lowbit::checkpoint {

/// `blockType` is kGgmlQ8_0 or kGgmlQ4_0; `llama`, when given, makes the
/// file llama.cpp's model of it.
Status writeCheckpointAsGguf(const Checkpoint &checkpoint,
                             const std::string &path, uint32_t blockType,
                             const GgufLlamaModel *llama = nullptr);

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_GGUFEXPORT_H

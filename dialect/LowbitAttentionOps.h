//===- LowbitAttentionOps.h - Decode attention over a KV cache --*- C++ -*-===//
//
// lowbit.kv_decode_attention (LowbitAttentionOps.td,
// docs/decode-attention.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_LOWBITATTENTIONOPS_H
#define LOWBIT_DIALECT_LOWBITATTENTIONOPS_H

#include "dialect/LowbitOps.h"

#define GET_OP_CLASSES
#include "dialect/LowbitAttentionOps.h.inc"

#endif // LOWBIT_DIALECT_LOWBITATTENTIONOPS_H

//===- LowbitMatmulOps.h - The quantized-weight matmul ----------*- C++ -*-===//
//
// lowbit.matmul (LowbitMatmulOps.td, docs/matmul.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_LOWBITMATMULOPS_H
#define LOWBIT_DIALECT_LOWBITMATMULOPS_H

#include "dialect/LowbitOps.h"
#include "matmul/MatmulSpec.h"

#define GET_OP_CLASSES
#include "dialect/LowbitMatmulOps.h.inc"

#endif // LOWBIT_DIALECT_LOWBITMATMULOPS_H

//===- LowbitKvOps.h - KV-cache append and dequantize ops -------*- C++ -*-===//
//
// lowbit.kv_append and lowbit.kv_dequantize (LowbitKvOps.td,
// docs/kv-kernels.md). Their schemes are kv/KvKernelSpec.h's.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_LOWBITKVOPS_H
#define LOWBIT_DIALECT_LOWBITKVOPS_H

#include "dialect/LowbitDialect.h"
#include "kv/KvKernelSpec.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialect/LowbitKvOps.h.inc"

#endif // LOWBIT_DIALECT_LOWBITKVOPS_H

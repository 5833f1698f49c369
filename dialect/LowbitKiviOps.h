//===- LowbitKiviOps.h - KIVI cache append and dequantize ops ---*- C++ -*-===//
//
// lowbit.kivi_append and lowbit.kivi_dequantize (LowbitKiviOps.td,
// docs/kv-kernels.md). Their parameters are kv/KvKiviKernelSpec.h's.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_LOWBITKIVIOPS_H
#define LOWBIT_DIALECT_LOWBITKIVIOPS_H

#include "dialect/LowbitDialect.h"
#include "kv/KvKiviKernelSpec.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialect/LowbitKiviOps.h.inc"

#endif // LOWBIT_DIALECT_LOWBITKIVIOPS_H

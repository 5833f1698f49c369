//===- LowbitOps.h - lowbit ops ---------------------------------*- C++ -*-===//
//
// Everything a user of the dialect needs: the dialect, its attributes and its
// ops.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_LOWBITOPS_H
#define LOWBIT_DIALECT_LOWBITOPS_H

#include "dialect/LowbitAttrs.h"
#include "dialect/LowbitDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialect/LowbitOps.h.inc"

#endif // LOWBIT_DIALECT_LOWBITOPS_H

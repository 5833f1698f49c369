//===- LowbitDialect.h - The lowbit dialect ---------------------*- C++ -*-===//
//
// The dialect class only. Attributes are in LowbitAttrs.h and ops in
// LowbitOps.h (which includes both).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_LOWBITDIALECT_H
#define LOWBIT_DIALECT_LOWBITDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialect/LowbitDialect.h.inc"

#endif // LOWBIT_DIALECT_LOWBITDIALECT_H

//===- LowbitDialect.cpp - The lowbit dialect -----------------------------===//

#include "dialect/LowbitDialect.h"
#include "dialect/LowbitAttentionOps.h"
#include "dialect/LowbitKiviOps.h"
#include "dialect/LowbitKvOps.h"
#include "dialect/LowbitMatmulOps.h"
#include "dialect/LowbitOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialect/LowbitDialect.cpp.inc"

void lowbit::dialect::LowbitDialect::initialize() {
  // Attribute storage classes are complete only in LowbitAttrs.cpp.
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialect/LowbitOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/LowbitKvOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/LowbitKiviOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/LowbitAttentionOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/LowbitMatmulOps.cpp.inc"
      >();
}

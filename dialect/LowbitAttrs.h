//===- LowbitAttrs.h - lowbit formats, scales and schemes -------*- C++ -*-===//
//
// The attributes are a spelling of the format model in format/: each one
// converts to and from lowbit::Format, lowbit::ScaleSpec or lowbit::Scheme
// without loss. The lowering reads schemes through toScheme() and builds
// attributes through toSchemeAttr().
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_DIALECT_LOWBITATTRS_H
#define LOWBIT_DIALECT_LOWBITATTRS_H

#include "dialect/LowbitDialect.h"
#include "format/Format.h"
#include "format/Scheme.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/LLVM.h"

#include <string>

#include "dialect/LowbitAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/LowbitAttrs.h.inc"

namespace lowbit::dialect {

/// The attribute for a format: #lowbit.float or #lowbit.int.
FormatAttrInterface toFormatAttr(mlir::MLIRContext *context,
                                 const ::lowbit::Format &format);

/// The model's scheme for an attribute (named when it is a named scheme).
inline ::lowbit::Scheme toScheme(SchemeAttr scheme) {
  return scheme.getScheme();
}

/// The attribute for a scheme. Fails, with the model's message in `error`,
/// when validateScheme rejects the scheme.
mlir::FailureOr<SchemeAttr> toSchemeAttr(mlir::MLIRContext *context,
                                         const ::lowbit::Scheme &scheme,
                                         std::string *error = nullptr);

} // namespace lowbit::dialect

#endif // LOWBIT_DIALECT_LOWBITATTRS_H

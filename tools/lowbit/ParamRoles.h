//===- ParamRoles.h - Names of the kernel ABI's parameter roles -*- C++ -*-===//
//
// Shared by lowbit aot (manifest) and lowbit report; separate from
// Commands.h because the role type comes with the compiler's MLIR headers.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_PARAMROLES_H
#define LOWBIT_TOOLS_LOWBIT_PARAMROLES_H

#include "runtime/compiler/Compiler.h"

#include <string_view>

namespace lowbit::cli {

/// input, scales, zeros, global, codes or output.
std::string_view paramRoleName(compiler::KernelParam::Role role);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_PARAMROLES_H

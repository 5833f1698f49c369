// Catch2 and the MLIR IR core that lowbit's compiler interface headers pull
// in (runtime/compiler/Compiler.h and the KV compilers: an MLIRContext, a
// ModuleOp, the dialect registry; about 65 LLVM/MLIR headers): what the
// MLIR-using test executables' files share, about 5 s of parsing per
// translation unit. Precompiled once and reused by every test target of the
// same flags (cmake/LowbitPch.cmake, docs/testing.md "Precompiled
// headers"). Sources still include what they use. No test file sets a
// CATCH_CONFIG_* macro before including Catch2; one that did would need its
// target taken out of the group.
#ifndef LOWBIT_CMAKE_PCH_TESTMLIR_H
#define LOWBIT_CMAKE_PCH_TESTMLIR_H

#include <catch2/catch.hpp>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#endif

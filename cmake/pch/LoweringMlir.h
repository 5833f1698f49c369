// The MLIR headers that most of lowering/'s translation units include:
// precompiled once for the lowering's object library (cmake/LowbitPch.cmake,
// docs/testing.md "Precompiled headers"). Chosen from the translation units'
// transitive includes, weighted by their compile time: the IR, builder,
// pattern and pass headers, and the dialects that at least 7 of the 27 files
// use. The LLVM and NVVM dialects are the costly part (the .gch takes about
// 100 s of CPU time and 1.2 GB with them, 40 s and 640 MB without), and only
// 8 files include them, but those 8 are half of the library's compile time:
// with them GpuFusedRows.cpp took 15.7 s of CPU time instead of 38.1 s and
// GpuTail.cpp 13.8 s instead of 31.7 s, while a light file such as
// ScaleMath.cpp paid about 1.5 s more to load the larger header. Left out:
// Linalg, Tensor, Func, Affine, the conversion passes and the
// ExecutionEngine (a few files each). Each source still includes what it
// uses, so it compiles without this header (LOWBIT_PCH=OFF).
#ifndef LOWBIT_CMAKE_PCH_LOWERINGMLIR_H
#define LOWBIT_CMAKE_PCH_LOWERINGMLIR_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#endif

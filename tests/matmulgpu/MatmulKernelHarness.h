//===- MatmulKernelHarness.h - The matmul kernels over the ABI's buffers --===//
//
// What the GEMV and GEMM tests share: a module whose functions take the
// matmul ABI's 2-D buffers and hold one kernel emitter's launch, its
// compile for the GPU emulator, and one run of it on a quantized weight.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_MATMULGPU_MATMULKERNELHARNESS_H
#define LOWBIT_TESTS_MATMULGPU_MATMULKERNELHARNESS_H

#include "GpuTestSupport.h"

#include "format/Scheme.h"
#include "lowering/GpuTail.h"
#include "lowering/MatmulKernelCommon.h"
#include "lowering/ScaleMath.h"
#include "matmul/MatmulOrder.h"
#include "matmul/MatmulWeights.h"
#include "runtime/emulator/EmulatedProgram.h"
#include "tests/matmul/MatmulTestData.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <span>

namespace lowbit::matmul::test {

inline mlir::Type dtypeType(mlir::Builder &b, ValueType dtype) {
  switch (dtype) {
  case ValueType::F16:
    return b.getF16Type();
  case ValueType::BF16:
    return b.getBF16Type();
  case ValueType::F32:
    break;
  }
  return b.getF32Type();
}

struct KernelCase {
  Scheme scheme;
  ValueType input = ValueType::F32, output = ValueType::F32;
  bool bias = false;
};

/// A kernel emitter: emitMatmulGemv or emitMatmulGemm.
using EmitKernel = void (*)(mlir::ImplicitLocOpBuilder &, const Scheme &,
                            const MatmulBuffers &, mlir::Value);

/// The loops-level module: for each case i, func @kernel (i = 0) or
/// @kernel_i over the matmul ABI's buffers (x, codes, scales, [zeros],
/// [global], [bias], y; all 2-D, dynamic) whose body is `emit`'s launch.
inline std::string kernelModuleText(std::span<const KernelCase> cases,
                                    EmitKernel emit) {
  mlir::DialectRegistry registry;
  registerGpuTailDependencies(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::ImplicitLocOpBuilder b(mlir::UnknownLoc::get(&context), &context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b);
  for (auto [index, gemv] : llvm::enumerate(cases)) {
    b.setInsertionPointToEnd(module->getBody());
    auto matrix = [&](mlir::Type element) {
      return mlir::MemRefType::get(
          {mlir::ShapedType::kDynamic, mlir::ShapedType::kDynamic}, element);
    };
    const ScaleSpec &scale = gemv.scheme.scale;
    llvm::SmallVector<mlir::Type> params = {
        matrix(dtypeType(b, gemv.input)), matrix(b.getI8Type()),
        matrix(storedScaleTypeOf(b, scale.type))};
    if (scale.zeroPoint)
      params.push_back(matrix(b.getI8Type()));
    if (scale.globalScale != GlobalScale::None)
      params.push_back(matrix(b.getF32Type()));
    if (gemv.bias)
      params.push_back(matrix(b.getF32Type()));
    params.push_back(matrix(dtypeType(b, gemv.output)));
    auto function = mlir::func::FuncOp::create(
        b,
        index == 0 ? std::string("kernel") : "kernel_" + std::to_string(index),
        b.getFunctionType(params, {}));
    b.setInsertionPointToStart(function.addEntryBlock());
    auto arguments = function.getArguments();
    MatmulBuffers buffers;
    size_t next = 0;
    buffers.x = arguments[next++];
    buffers.codes = arguments[next++];
    buffers.scales = arguments[next++];
    if (scale.zeroPoint)
      buffers.zeros = arguments[next++];
    if (scale.globalScale != GlobalScale::None)
      buffers.global = arguments[next++];
    if (gemv.bias)
      buffers.bias = arguments[next++];
    buffers.output = arguments[next];
    emit(b, gemv.scheme, buffers, /*enabled=*/mlir::Value());
    mlir::func::ReturnOp::create(b);
  }
  REQUIRE(mlir::succeeded(mlir::verify(*module)));
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream);
  return text;
}

inline std::unique_ptr<emulator::EmulatedProgram>
compileKernels(const std::string &text, const char *targetName) {
  std::string error;
  std::optional<Target> target = parseTarget(targetName, &error);
  REQUIRE(target);
  auto program = emulator::EmulatedProgram::compileText(text, *target);
  if (!program)
    FAIL(targetName << ": " << program.error().message);
  return std::move(*program);
}

/// Y of the emulated kernel, or the run's error in `error`.
inline std::vector<uint8_t>
runKernel(const emulator::EmulatedProgram &program, const KernelCase &gemv,
          const QuantizedTensor &weights, std::vector<uint8_t> xBytes,
          int64_t m, std::vector<float> bias, std::string &error,
          std::vector<std::vector<uint8_t>> sides = {}) {
  int64_t n = weights.rows, k = weights.cols;
  size_t inputBytes = size_t(valueTypeBytes(gemv.input));
  WeightBuffers stored = weightBuffers(weights);
  Shape2D codes = codesShape(gemv.scheme, n, k);
  Shape2D scales = scaleShape(gemv.scheme, n, k);
  size_t scaleBytes = stored.scales.size() / size_t(scales.rows * scales.cols);
  std::vector<uint8_t> y(size_t(m * n * valueTypeBytes(gemv.output)), 0xA5);
  std::vector<emulator::EmulatorBuffer> buffers = {
      {xBytes.data(), m, k, inputBytes, false, "x"}};
  // The prologues' side tensors follow X (docs/matmul.md, the ABI).
  for (std::vector<uint8_t> &side : sides)
    buffers.push_back({side.data(), 1, k, inputBytes, false, "side"});
  buffers.push_back(
      {stored.codes.data(), codes.rows, codes.cols, 1, false, "codes"});
  buffers.push_back({stored.scales.data(), scales.rows, scales.cols, scaleBytes,
                     false, "scales"});
  if (gemv.scheme.scale.zeroPoint)
    buffers.push_back(
        {stored.zeros.data(), scales.rows, scales.cols, 1, false, "zeros"});
  if (gemv.scheme.scale.globalScale != GlobalScale::None)
    buffers.push_back({stored.global.data(), 1, 1, 4, false, "global"});
  if (gemv.bias)
    buffers.push_back({bias.data(), 1, n, 4, false, "bias"});
  buffers.push_back(
      {y.data(), m, n, size_t(valueTypeBytes(gemv.output)), true, "y"});
  // The runtime's workspace (docs/kernel-abi.md): zero before, and the
  // kernels leave its reduction words zero (all of a fixed one; a
  // prologue's, which grows with X, only those before X's region).
  std::vector<int32_t> workspace(size_t(program.workspaceWordsFor(m, k)), 0);
  if (!workspace.empty())
    buffers.push_back(
        {workspace.data(), 1, int64_t(workspace.size()), 4, true, "workspace"});
  emulator::Device device;
  Status status = program.run(device, buffers);
  if (!status)
    error = status.error().message;
  for (int64_t word = 0; word < program.workspaceZeroedWords(); ++word)
    if (workspace[size_t(word)] != 0)
      error = "the kernels left a reduction word of the workspace non-zero";
  return y;
}

/// NVFP4 and MXFP4 with their scales in the 128x4 tile layout of the
/// Blackwell tensor cores (swizzle_128x4): the stored scales are padded to
/// 128 rows and 4 columns, read at the format model's offsets.
inline const std::vector<WeightSchemeCase> &swizzledSchemeCases() {
  static const std::vector<WeightSchemeCase> cases = {
      {"nvfp4 swizzled",
       "scheme(format=e2m1,scale=group(16;axis=1),tail=true,type=ue4m3,"
       "rule=absmax,global=decode,layout=swizzle_128x4,packing=nibble)"},
      {"mxfp4 swizzled",
       "scheme(format=e2m1,scale=group(32;axis=1),tail=true,type=e8m0,"
       "rule=floor,layout=swizzle_128x4,packing=nibble)"},
  };
  return cases;
}

/// One case per weight scheme, X and Y rotating over `inputs` and
/// `outputs`, the bias on every other scheme (the PTX tests' module).
inline std::vector<KernelCase>
rotatedCases(std::span<const ValueType> inputs,
             std::span<const ValueType> outputs) {
  std::vector<KernelCase> cases;
  size_t index = 0;
  for (const WeightSchemeCase &weightCase : weightSchemeCases()) {
    cases.push_back({schemeOf(weightCase), inputs[(index + 1) % inputs.size()],
                     outputs[(index + 2) % outputs.size()], index % 2 == 0});
    ++index;
  }
  return cases;
}

/// `cases` as one module of `emit`'s kernels (one compile and one ptxas
/// run per chip) on every chip lowbit supports: each case's entry is in
/// the PTX, and so is each of `instructions`; ptxas accepts it.
inline void
checkKernelsAssemble(std::span<const KernelCase> cases, EmitKernel emit,
                     std::initializer_list<const char *> instructions) {
  std::string text = kernelModuleText(cases, emit);
  for (const char *arch : {"sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"}) {
    INFO(arch);
    std::string ptx;
    REQUIRE(lowbit::test::compileToPtx(text, arch, ptx));
    for (size_t i = 0; i < cases.size(); ++i) {
      std::string name = i == 0 ? std::string("kernel_kernel")
                                : "kernel_" + std::to_string(i) + "_kernel";
      INFO(name);
      CHECK(ptx.find(".entry " + name + "(") != std::string::npos);
    }
    for (const char *instruction : instructions) {
      INFO(instruction);
      CHECK(ptx.find(instruction) != std::string::npos);
    }
    lowbit::test::checkAssembles(ptx, arch);
  }
}

} // namespace lowbit::matmul::test

#endif // LOWBIT_TESTS_MATMULGPU_MATMULKERNELHARNESS_H

//===- MatmulGemvTest.cpp - The matmul's GEMV in the GPU emulator ---------===//
//
// The GEMV of lowering/GpuMatmulGemv.h (docs/matmul-gpu.md) over the
// matmul ABI's 2-D buffers, lowered by the GPU tail and run in the GPU
// emulator on sm_80, sm_90a and sm_100a: Y bit for bit the ordered
// reference (matmul::orderedMatmul) for every weight scheme of issue 27,
// M in {1, 3, 16, 17, 64}, a ragged [N, K] (the per-byte code path and a
// chunk cut by K) and an aligned one (16-byte code loads). Its PTX
// assembles with ptxas on every chip lowbit supports. The sweep adds every
// dtype pair on every target and a K past 1024 (chunks wrap around the 32
// slices).
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"

#include "format/Scheme.h"
#include "lowering/GpuMatmulGemv.h"
#include "lowering/GpuTail.h"
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

#include <array>

using namespace lowbit;
using namespace lowbit::matmul;
namespace mt = lowbit::matmul::test;

namespace {

constexpr ValueType kDtypes[] = {ValueType::F32, ValueType::F16,
                                 ValueType::BF16};
constexpr int64_t kRows[] = {1, 3, 16, 17, 64};
constexpr std::array<const char *, 3> kEmulatedTargets = {"sm_80", "sm_90a",
                                                          "sm_100a"};

mlir::Type dtypeType(mlir::Builder &b, ValueType dtype) {
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

struct GemvCase {
  Scheme scheme;
  ValueType input = ValueType::F32, output = ValueType::F32;
  bool bias = false;
};

/// The loops-level module: for each case i, func @kernel (i = 0) or
/// @kernel_i over the matmul ABI's buffers (x, codes, scales, [zeros],
/// [global], [bias], y; all 2-D, dynamic) whose body is the GEMV's launch.
std::string gemvModuleText(std::span<const GemvCase> cases) {
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
    emitMatmulGemv(b, gemv.scheme, buffers, /*enabled=*/mlir::Value());
    mlir::func::ReturnOp::create(b);
  }
  REQUIRE(mlir::succeeded(mlir::verify(*module)));
  std::string text;
  llvm::raw_string_ostream stream(text);
  module->print(stream);
  return text;
}

std::unique_ptr<emulator::EmulatedProgram> compileGemv(const std::string &text,
                                                       const char *targetName) {
  std::string error;
  std::optional<Target> target = parseTarget(targetName, &error);
  REQUIRE(target);
  auto program = emulator::EmulatedProgram::compileText(text, *target);
  if (!program)
    FAIL(targetName << ": " << program.error().message);
  return std::move(*program);
}

/// Y of the emulated GEMV, or the run's error in `error`.
std::vector<uint8_t> runGemv(const emulator::EmulatedProgram &program,
                             const GemvCase &gemv,
                             const QuantizedTensor &weights,
                             std::vector<uint8_t> xBytes, int64_t m,
                             std::vector<float> bias, std::string &error) {
  int64_t n = weights.rows, k = weights.cols;
  WeightBuffers stored = weightBuffers(weights);
  Shape2D codes = codesShape(gemv.scheme, n, k);
  Shape2D scales = scaleShape(gemv.scheme, n, k);
  size_t scaleBytes = stored.scales.size() / size_t(scales.rows * scales.cols);
  std::vector<uint8_t> y(size_t(m * n * valueTypeBytes(gemv.output)), 0xA5);
  std::vector<emulator::EmulatorBuffer> buffers = {
      {xBytes.data(), m, k, size_t(valueTypeBytes(gemv.input)), false, "x"},
      {stored.codes.data(), codes.rows, codes.cols, 1, false, "codes"},
      {stored.scales.data(), scales.rows, scales.cols, scaleBytes, false,
       "scales"}};
  if (gemv.scheme.scale.zeroPoint)
    buffers.push_back(
        {stored.zeros.data(), scales.rows, scales.cols, 1, false, "zeros"});
  if (gemv.scheme.scale.globalScale != GlobalScale::None)
    buffers.push_back({stored.global.data(), 1, 1, 4, false, "global"});
  if (gemv.bias)
    buffers.push_back({bias.data(), 1, n, 4, false, "bias"});
  buffers.push_back(
      {y.data(), m, n, size_t(valueTypeBytes(gemv.output)), true, "y"});
  emulator::Device device;
  Status status = program.run(device, buffers);
  if (!status)
    error = status.error().message;
  return y;
}

/// Every M of kRows through one emulated kernel per target, bit-exact to
/// the ordered reference, for each [n, k] of `shapes`.
void checkGemv(const mt::WeightSchemeCase &weightCase, ValueType input,
               ValueType output, bool bias,
               std::span<const std::array<int64_t, 2>> shapes,
               std::span<const char *const> targets) {
  GemvCase gemv{mt::schemeOf(weightCase), input, output, bias};
  INFO(weightCase.label << " from=" << valueTypeName(input) << " to="
                        << valueTypeName(output) << (bias ? " bias" : ""));
  std::string text = gemvModuleText({&gemv, 1});
  for (const char *targetName : targets) {
    INFO(targetName);
    std::unique_ptr<emulator::EmulatedProgram> program =
        compileGemv(text, targetName);
    size_t compared = 0;
    for (auto [n, k] : shapes) {
      INFO("n=" << n << " k=" << k);
      std::string error;
      std::optional<QuantizedTensor> weights = quantize(
          gemv.scheme, mt::weightLikeMatrix(n, k, uint64_t(n * 31 + k)), n, k,
          &error);
      INFO(error);
      REQUIRE(weights);
      std::vector<float> biasValues =
          bias ? mt::biasVector(n, 7) : std::vector<float>();
      for (int64_t m : kRows) {
        INFO("m=" << m);
        std::vector<uint8_t> xBytes =
            mt::normalActivations(input, m, k, uint64_t(m));
        std::optional<std::vector<uint8_t>> expected = orderedMatmul(
            *weights, input, xBytes, m, biasValues, output, &error);
        REQUIRE(expected);
        std::vector<uint8_t> actual =
            runGemv(*program, gemv, *weights, xBytes, m, biasValues, error);
        INFO(error);
        REQUIRE(error.empty());
        CHECK(actual == *expected);
        compared += expected->size() / size_t(valueTypeBytes(output));
      }
    }
    std::printf("matmul-gpu: %-20s %-7s gemv: %zu outputs bit-exact\n",
                weightCase.label, targetName, compared);
  }
}

/// A ragged shape (13 x 200: rows of 100 or 200 code bytes take the
/// per-byte path, the last chunk is cut at 8) and an aligned one (16-byte
/// code loads; K a whole number of chunks).
constexpr std::array<std::array<int64_t, 2>, 2> kShapes = {
    {{13, 200}, {9, 256}}};

} // namespace

TEST_CASE("the GEMV is bit-exact to the order for every "
          "weight scheme on sm_80, sm_90a and sm_100a",
          "[matmul-gpu][emulator]") {
  // X and Y dtypes rotate over the schemes and the bias alternates, as in
  // the CPU test; the sweep runs every pair.
  size_t index = 0;
  for (const mt::WeightSchemeCase &weightCase : mt::weightSchemeCases()) {
    checkGemv(weightCase, kDtypes[index % 3], kDtypes[(index / 3 + index) % 3],
              index % 2 == 1, kShapes, kEmulatedTargets);
    ++index;
  }
}

TEST_CASE("the GEMV's PTX assembles on every chip", "[matmul-gpu][ptx]") {
  // One module with every scheme's kernel (X and Y rotating): one
  // compile and one ptxas run per chip.
  std::vector<GemvCase> cases;
  size_t index = 0;
  for (const mt::WeightSchemeCase &weightCase : mt::weightSchemeCases()) {
    cases.push_back({mt::schemeOf(weightCase), kDtypes[(index + 1) % 3],
                     kDtypes[(index + 2) % 3], index % 2 == 0});
    ++index;
  }
  std::string text = gemvModuleText(cases);
  for (const char *arch : {"sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"}) {
    INFO(arch);
    std::string ptx;
    REQUIRE(lowbit::test::compileToPtx(text, arch, ptx));
    // Every scheme's kernel, each with its fma chain.
    for (size_t i = 0; i < cases.size(); ++i) {
      std::string name = i == 0 ? std::string("kernel_kernel")
                                : "kernel_" + std::to_string(i) + "_kernel";
      INFO(name);
      CHECK(ptx.find(".entry " + name + "(") != std::string::npos);
    }
    CHECK(ptx.find("fma.rn.f32") != std::string::npos);
    lowbit::test::checkAssembles(ptx, arch);
  }
}

TEST_CASE("sweep: every scheme, dtype pair and target, K past "
          "1024",
          "[.sweep][matmul-gpu]") {
  static constexpr std::array<std::array<int64_t, 2>, 3> kSweepShapes = {
      {{13, 200}, {9, 256}, {67, 2113}}};
  for (const mt::WeightSchemeCase &weightCase : mt::weightSchemeCases())
    for (ValueType input : kDtypes)
      for (ValueType output : kDtypes)
        checkGemv(weightCase, input, output, /*bias=*/true, kSweepShapes,
                  kEmulatedTargets);
}

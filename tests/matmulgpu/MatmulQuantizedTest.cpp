//===- MatmulQuantizedTest.cpp - The W8A8 GEMM in the GPU emulator --------===//
//
// The quantized-activation GEMM of lowering/GpuMatmulQuantized.h
// (docs/matmul-gpu.md, "W8A8") through the whole GPU compile
// (compiler::matmulGpuText), run in the GPU emulator: for int8 x int8 per
// token x per channel (s8 mma, sm_80 and sm_90a) and fp8 x fp8 per tensor,
// per token x per channel and 1x128 x 128x128 (e4m3 mma, sm_89 and
// sm_90a), at M in {1, 16, 17, 128}, a ragged N (one full and one partial
// 32-column tile) and a K that ends inside an mma step, Y is bit for bit
// the ordered reference (matmul::orderedQuantizedMatmul) and within the
// float64 bound (matmul::checkQuantizedBound). The PTX assembles on every
// chip with the instruction; sm_80 is refused FP8 with the instruction's
// name; the FP4 pairs are refused with the reason.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernelHarness.h"

#include "format/SchemeText.h"
#include "lowering/GpuMatmul.h"
#include "lowering/GpuMatmulQuantized.h"
#include "matmul/MatmulBound.h"
#include "matmul/MatmulSpec.h"
#include "matmul/QuantizedOrder.h"
#include "matmul/WeightSchemes.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdio>

using namespace lowbit;
using namespace lowbit::matmul;
namespace mt = lowbit::matmul::test;

namespace {

/// The activation pairs the W8A8 kernel runs (every 8-bit one).
std::vector<ActivationPairEntry> eightBitPairs() {
  std::vector<ActivationPairEntry> pairs;
  for (const ActivationPairEntry &entry : activationPairEntries()) {
    std::optional<Scheme> weights = parseSchemeText(entry.weights),
                          activations = parseSchemeText(entry.activations);
    REQUIRE(weights);
    REQUIRE(activations);
    if (quantizedGemmRefusal(*weights, *activations).empty())
      pairs.push_back(entry);
  }
  return pairs;
}

MatmulSpec specOf(const ActivationPairEntry &entry, const char *dtypes) {
  std::string text = std::string("matmul w=") + entry.weights +
                     " a=" + entry.activations + " " + dtypes + " dynamic";
  std::string error;
  std::optional<MatmulSpec> spec = parseMatmulSpec(text, &error);
  INFO(text << ": " << error);
  REQUIRE(spec);
  return *spec;
}

/// The chips the emulated test runs a pair on: the first with the
/// instruction and sm_90a.
std::array<const char *, 2> emulatedTargets(const MatmulSpec &spec) {
  if (quantizedGemmIsFloat(*spec.activation))
    return {"sm_89", "sm_90a"};
  return {"sm_80", "sm_90a"};
}

struct Compared {
  size_t outputs = 0, mismatches = 0;
};

/// Y of the emulated compiled module against the order and the float64
/// bound for each [m, n, k]; returns the outputs compared and how many
/// differ.
Compared checkPair(const MatmulSpec &spec, const char *targetName,
                   std::span<const std::array<int64_t, 3>> shapes) {
  std::string error;
  std::optional<Target> target = parseTarget(targetName, &error);
  REQUIRE(target);
  CHECK(compiler::matmulTargetRefusal(spec, *target).empty());
  llvm::Expected<std::string> text = compiler::matmulGpuText(spec);
  if (!text)
    FAIL(llvm::toString(text.takeError()));
  std::unique_ptr<emulator::EmulatedProgram> program =
      mt::compileKernels(*text, targetName);
  mt::KernelCase kernel{spec.scheme, spec.input, spec.output, spec.bias};
  Compared compared;
  size_t width = size_t(valueTypeBytes(spec.output));
  for (auto [m, n, k] : shapes) {
    INFO("m=" << m << " n=" << n << " k=" << k);
    std::optional<QuantizedTensor> weights =
        quantize(spec.scheme, mt::weightLikeMatrix(n, k, uint64_t(n * 31 + k)),
                 n, k, &error);
    INFO(error);
    REQUIRE(weights);
    std::vector<float> bias =
        spec.bias ? mt::biasVector(n, 7) : std::vector<float>();
    std::vector<uint8_t> xBytes =
        mt::normalActivations(spec.input, m, k, uint64_t(m + 3 * k));
    std::optional<std::vector<uint8_t>> expected =
        orderedQuantizedMatmul(spec, *weights, xBytes, m, bias, &error);
    REQUIRE(expected);
    std::vector<uint8_t> actual =
        mt::runKernel(*program, kernel, *weights, xBytes, m, bias, error);
    INFO(error);
    REQUIRE(error.empty());
    REQUIRE(actual.size() == expected->size());
    CHECK(actual == *expected);
    for (size_t at = 0; at + width <= expected->size(); at += width)
      compared.mismatches +=
          !std::equal(expected->begin() + at, expected->begin() + at + width,
                      actual.begin() + at);
    std::vector<PrologueOperands> sides;
    std::optional<QuantizedTensor> x = quantizeActivations(
        spec, widenActivations(spec.input, xBytes), m, k, sides, &error);
    REQUIRE(x);
    BoundCheck bound =
        checkQuantizedBound(*x, *weights, bias, actual, spec.output);
    INFO(bound.failure);
    CHECK(bound.holds);
    compared.outputs += expected->size() / width;
  }
  return compared;
}

/// M in {1, 16, 17, 128}; N = 45 (a full and a partial 32-column tile);
/// K = 200 (1x128 groups: a full and a cut block; the last k32 step cut
/// at 8).
constexpr std::array<std::array<int64_t, 3>, 4> kShapes = {
    {{1, 45, 200}, {16, 45, 200}, {17, 45, 200}, {128, 45, 200}}};

} // namespace

TEST_CASE("the W8A8 GEMM is bit-exact to the quantized order in the "
          "emulator",
          "[matmul-gpu][emulator][w8a8]") {
  const char *dtypes[] = {"from=bf16 to=bf16 bias", "from=f16 to=f32",
                          "from=f32 to=f16 bias", "from=bf16 to=f32"};
  std::vector<ActivationPairEntry> pairs = eightBitPairs();
  REQUIRE(pairs.size() == 4);
  size_t index = 0;
  for (const ActivationPairEntry &entry : pairs) {
    MatmulSpec spec = specOf(entry, dtypes[index++ % 4]);
    for (const char *targetName : emulatedTargets(spec)) {
      INFO(entry.label << " on " << targetName);
      Compared compared = checkPair(spec, targetName, kShapes);
      std::printf("matmul-gpu: %-28s %-7s w8a8: %zu outputs, %zu differ "
                  "from the order\n",
                  entry.label, targetName, compared.outputs,
                  compared.mismatches);
    }
  }
}

/// e5m2 on one side or both (the e4m3/e5m2 mma.sync of issue 28): per
/// tensor x per tensor on both e5m2, and each mixed pair in the other two
/// layouts.
const std::array<ActivationPairEntry, 3> kE5m2Pairs = {{
    {"e5m2 per tensor", "fp8_e5m2", "fp8_e5m2"},
    {"e4m3 W x e5m2 X per token", "scheme(format=e4m3,scale=per_token)",
     "scheme(format=e5m2,scale=per_token)"},
    {"e5m2 W x e4m3 X 1x128",
     "scheme(format=e5m2,scale=block(128x128),tail=true)",
     "scheme(format=e4m3,scale=group(128;axis=1),tail=true)"},
}};

/// The mma's spelling for the pair's two code types (A = X, B = W).
std::string fp8Instruction(const MatmulSpec &spec) {
  return "mma.sync.aligned.m16n8k32.row.col.f32." +
         std::string(spec.activation->element.name()) + "." +
         std::string(spec.scheme.element.name()) + ".f32";
}

TEST_CASE("the W8A8 GEMM with e5m2 codes is bit-exact to the quantized "
          "order in the emulator",
          "[matmul-gpu][emulator][w8a8]") {
  const char *dtypes[] = {"from=bf16 to=bf16 bias", "from=f16 to=f32",
                          "from=f32 to=f16 bias"};
  size_t index = 0;
  for (const ActivationPairEntry &entry : kE5m2Pairs) {
    MatmulSpec spec = specOf(entry, dtypes[index++ % 3]);
    REQUIRE(quantizedGemmRefusal(spec.scheme, *spec.activation).empty());
    for (const char *targetName : emulatedTargets(spec)) {
      INFO(entry.label << " on " << targetName);
      Compared compared = checkPair(spec, targetName, kShapes);
      CHECK(compared.mismatches == 0);
      std::printf("matmul-gpu: %-28s %-7s w8a8: %zu outputs, %zu differ "
                  "from the order\n",
                  entry.label, targetName, compared.outputs,
                  compared.mismatches);
    }
  }
}

TEST_CASE("the W8A8 GEMM's e5m2 PTX assembles on every FP8 chip",
          "[matmul-gpu][ptx][w8a8]") {
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(!lowbit::test::ptxasPath().empty());
  int assembled = 0;
  for (const ActivationPairEntry &entry : kE5m2Pairs) {
    MatmulSpec spec = specOf(entry, "from=bf16 to=bf16 bias");
    std::string instruction = fp8Instruction(spec);
    for (const char *arch : {"sm_89", "sm_90a", "sm_100a", "sm_120a"}) {
      INFO(entry.label << " on " << arch);
      std::string error;
      std::optional<Target> target = parseTarget(arch, &error);
      REQUIRE(target);
      llvm::Expected<compiler::GpuCompilation> compiled =
          compiler::compileMatmulToPtx(spec, *target);
      if (!compiled)
        FAIL(llvm::toString(compiled.takeError()));
      INFO(instruction);
      CHECK(compiled->ptx.find(instruction) != std::string::npos);
      assembled += lowbit::test::checkAssembles(compiled->ptx, arch);
    }
  }
  CHECK(assembled == 3 * 4);
  std::printf("matmul-gpu: %d e5m2 W8A8 kernels' PTX assembled\n", assembled);
}

TEST_CASE("the W8A8 GEMM at larger shapes", "[.sweep]") {
  constexpr std::array<std::array<int64_t, 3>, 3> shapes = {
      {{128, 130, 520}, {33, 200, 384}, {64, 77, 1000}}};
  for (const ActivationPairEntry &entry : eightBitPairs()) {
    MatmulSpec spec = specOf(entry, "from=bf16 to=bf16 bias");
    INFO(entry.label);
    checkPair(spec, "sm_90a", shapes);
  }
}

TEST_CASE("the W8A8 GEMM's PTX assembles on every chip with its mma",
          "[matmul-gpu][ptx][w8a8]") {
  INFO("ptxas not found (CUDA_HOME/bin/ptxas); the CUDA toolkit is required");
  REQUIRE(!lowbit::test::ptxasPath().empty());
  int assembled = 0;
  for (const ActivationPairEntry &entry : eightBitPairs()) {
    MatmulSpec spec = specOf(entry, "from=bf16 to=bf16 bias");
    bool fp8 = quantizedGemmIsFloat(*spec.activation);
    const char *instruction =
        fp8 ? "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
            : "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32";
    for (const char *arch :
         {"sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"}) {
      INFO(entry.label << " on " << arch);
      std::string error;
      std::optional<Target> target = parseTarget(arch, &error);
      REQUIRE(target);
      llvm::Expected<compiler::GpuCompilation> compiled =
          compiler::compileMatmulToPtx(spec, *target);
      if (fp8 && std::string(arch) == "sm_80") {
        // No FP8 mma before sm_89: refused, naming the instruction.
        REQUIRE(!compiled);
        std::string message = llvm::toString(compiled.takeError());
        INFO(message);
        CHECK(message.find(instruction) != std::string::npos);
        CHECK(message.find("sm_80") != std::string::npos);
        continue;
      }
      if (!compiled)
        FAIL(llvm::toString(compiled.takeError()));
      CHECK(compiled->plan.unsupported.empty());
      CHECK(compiled->ptx.find(instruction) != std::string::npos);
      assembled += lowbit::test::checkAssembles(compiled->ptx, arch);
    }
  }
  CHECK(assembled == 5 + 3 * 4);
  std::printf("matmul-gpu: %d W8A8 kernels' PTX assembled\n", assembled);
}

TEST_CASE("the W8A8 GEMM reduces a per-tensor X scale once through the "
          "workspace, and quantizes per token and per group in its A load",
          "[matmul-gpu][w8a8]") {
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  for (const ActivationPairEntry &entry : eightBitPairs()) {
    MatmulSpec spec = specOf(entry, "from=bf16 to=bf16");
    INFO(entry.label);
    llvm::Expected<compiler::GpuCompilation> compiled =
        compiler::compileMatmulToPtx(spec, *target);
    if (!compiled)
      FAIL(llvm::toString(compiled.takeError()));
    std::string choice =
        activationQuantizeChoice(spec.scheme, *spec.activation, false);
    INFO(choice);
    if (spec.activation->scale.granularity == Granularity::PerTensor) {
      // The amax launch, the GEMM, the launch that zeroes the word.
      CHECK(compiled->plan.steps.size() == 3);
      CHECK(compiled->workspaceWords >= 3);
      CHECK(choice.find("reduced once through the workspace") !=
            std::string::npos);
    } else {
      CHECK(compiled->plan.steps.size() == 1);
      CHECK(compiled->workspaceWords == 0);
      CHECK(choice.find("in the GEMM's A load") != std::string::npos);
    }
  }
}

TEST_CASE("the GPU refuses the quantized-activation pairs it has no kernel "
          "for, naming why",
          "[matmul-gpu][w8a8]") {
  std::string error;
  std::optional<MatmulSpec> spec =
      parseMatmulSpec("matmul w=fp8_e4m3 a=mxfp4 from=bf16 dynamic", &error);
  REQUIRE(spec);
  llvm::Error refusal = compiler::refuseQuantizedActivationsOnGpu(*spec);
  bool refused = bool(refusal);
  std::string message = llvm::toString(std::move(refusal));
  REQUIRE(refused);
  INFO(message);
  CHECK(message.find("fits neither") != std::string::npos);
  CHECK(message.find("--backend cpu") != std::string::npos);
}

//===- MatmulGemmTest.cpp - The matmul's mma.sync GEMM in the GPU emulator ===//
//
// The GEMM of lowering/GpuMatmulGemm.h (docs/matmul-gpu.md) over the matmul
// ABI's 2-D buffers, lowered by the GPU tail and run in the GPU emulator on
// sm_80, sm_90a and sm_100a: Y bit for bit the ordered reference
// (matmul::orderedMatmul) for every weight scheme of issue 27, f16 and bf16
// X, M in {17, 64}, ragged N and K (a partial tile, a chunk cut by K, rows
// that are not 16-byte aligned and take the element-load path) and a K
// past 1024 (chunks wrap around the 32 slices, so slices hold two chunks
// and the slice-major walk's closed form is exercised). Then the whole
// compiled module: the launch plan picks the GEMV for M <= 16 and the GEMM
// for M > 16, one launch each, and the emulated module is bit-exact at
// M in {1, 16, 17, 64}. Its PTX assembles with ptxas on every chip, and
// stages W's codes (and group scales, zero points) through shared memory
// with cp.async, which shapes with 16-byte aligned W rows run.
//
//===----------------------------------------------------------------------===//

#include "MatmulKernelHarness.h"

#include "lowering/GpuMatmulGemm.h"
#include "matmul/MatmulSpec.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "tests/matmul/MatmulTestData.h"

#include <catch2/catch.hpp>

#include <array>
#include <functional>

using namespace lowbit;
using namespace lowbit::matmul;
namespace mt = lowbit::matmul::test;
using namespace lowbit::matmul::test;

namespace {

constexpr ValueType kInputs[] = {ValueType::F16, ValueType::BF16};
constexpr ValueType kOutputs[] = {ValueType::F32, ValueType::F16,
                                  ValueType::BF16};
constexpr std::array<const char *, 3> kEmulatedTargets = {"sm_80", "sm_90a",
                                                          "sm_100a"};

using Shapes = std::span<const std::array<int64_t, 3>>;

/// Y of `run` (one kernel's module or the whole compiled one) against the
/// ordered reference for each [m, n, k] of `shapes`; the outputs compared.
size_t
checkAgainstOrder(const KernelCase &kernel, Shapes shapes,
                  const std::function<std::vector<uint8_t>(
                      const QuantizedTensor &, std::vector<uint8_t>, int64_t,
                      std::vector<float>, std::string &)> &run) {
  size_t compared = 0;
  for (auto [m, n, k] : shapes) {
    INFO("m=" << m << " n=" << n << " k=" << k);
    std::string error;
    std::optional<QuantizedTensor> weights = quantize(
        kernel.scheme, mt::weightLikeMatrix(n, k, uint64_t(n * 31 + k)), n, k,
        &error);
    INFO(error);
    REQUIRE(weights);
    std::vector<float> biasValues =
        kernel.bias ? mt::biasVector(n, 7) : std::vector<float>();
    std::vector<uint8_t> xBytes =
        mt::normalActivations(kernel.input, m, k, uint64_t(m + k));
    std::optional<std::vector<uint8_t>> expected = orderedMatmul(
        *weights, kernel.input, xBytes, m, biasValues, kernel.output, &error);
    REQUIRE(expected);
    std::vector<uint8_t> actual = run(*weights, xBytes, m, biasValues, error);
    INFO(error);
    REQUIRE(error.empty());
    CHECK(actual == *expected);
    compared += expected->size() / size_t(valueTypeBytes(kernel.output));
  }
  return compared;
}

/// The GEMM alone, on each target, bit-exact to the order.
void checkGemm(const mt::WeightSchemeCase &weightCase, ValueType input,
               ValueType output, bool bias, Shapes shapes) {
  KernelCase gemm{mt::schemeOf(weightCase), input, output, bias};
  INFO(weightCase.label << " from=" << valueTypeName(input) << " to="
                        << valueTypeName(output) << (bias ? " bias" : ""));
  std::string text = kernelModuleText({&gemm, 1}, emitMatmulGemm);
  for (const char *targetName : kEmulatedTargets) {
    INFO(targetName);
    std::unique_ptr<emulator::EmulatedProgram> program =
        compileKernels(text, targetName);
    size_t compared = checkAgainstOrder(
        gemm, shapes,
        [&](const QuantizedTensor &weights, std::vector<uint8_t> xBytes,
            int64_t m, std::vector<float> biasValues, std::string &error) {
          return runKernel(*program, gemm, weights, std::move(xBytes), m,
                           std::move(biasValues), error);
        });
    std::printf("matmul-gpu: %-20s %-7s gemm: %zu outputs bit-exact\n",
                weightCase.label, targetName, compared);
  }
}

/// [m, n, k]: M = 17 and 64 on a ragged 13 x 200 (one partial column
/// tile, the last chunk cut at 8, 16-byte aligned rows: cp.async with
/// zero-fill), 130 x 75 (two column tiles, rows of X not 16-byte aligned:
/// the element-load path, an odd K) and, at M = 17, 9 x 1100 (35 chunks:
/// slices 0-2 hold two).
constexpr std::array<std::array<int64_t, 3>, 5> kShapes = {{{17, 13, 200},
                                                            {64, 13, 200},
                                                            {17, 130, 75},
                                                            {64, 130, 75},
                                                            {17, 9, 1100}}};

/// Whether the GEMM stages `scheme`'s scales (and zero points) per chunk:
/// row-major groups along K.
bool groupsStaged(const Scheme &scheme) {
  return scheme.scale.granularity == Granularity::Group &&
         scheme.scale.axis == 1 && scheme.scale.layout == ScaleLayout::RowMajor;
}

/// The smallest K >= 256 with K % 32 == residue at which the rows of X
/// (f16/bf16) and the codes are 16-byte aligned and those of the staged
/// scales and zero points 4-byte aligned, so that the GEMM copies each of them
/// with cp.async; 0 if none below 8192 (nibble codes need K % 32 == 0).
int64_t alignedK(const Scheme &scheme, int64_t residue) {
  int64_t scaleBytes = scaleStorageBits(scheme.scale.type) / 8;
  for (int64_t k = 256 + residue; k < 8192; k += 32) {
    int64_t groups = scaleShape(scheme, 13, k).cols;
    bool aligned = k * 2 % 16 == 0 &&
                   codesShape(scheme, 13, k).cols % 16 == 0 &&
                   (!groupsStaged(scheme) ||
                    (groups * scaleBytes % 4 == 0 &&
                     (!scheme.scale.zeroPoint || groups % 4 == 0)));
    if (aligned)
      return k;
  }
  return 0;
}

} // namespace

TEST_CASE("the mma.sync GEMM is bit-exact to the order for every weight "
          "scheme on sm_80, sm_90a and sm_100a",
          "[matmul-gpu][emulator]") {
  // X alternates f16/bf16, Y rotates and the bias alternates over the
  // schemes; the sweep runs every pair.
  size_t index = 0;
  for (const mt::WeightSchemeCase &weightCase : mt::weightSchemeCases()) {
    checkGemm(weightCase, kInputs[index % 2], kOutputs[(index / 2) % 3],
              index % 3 != 1, kShapes);
    ++index;
  }
}

TEST_CASE("the compiled matmul picks the GEMV's row bucket for M <= 16 "
          "and the GEMM above, one launch per call, bit-exact",
          "[matmul-gpu][emulator]") {
  std::string error;
  std::optional<MatmulSpec> spec =
      parseMatmulSpec("matmul int4_g128 from=bf16 to=f16 bias", &error);
  INFO(error);
  REQUIRE(spec);
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  int64_t n = 13, k = 200;

  // The launch plan: the GEMV's launches (row buckets 1, 2-4, 5-16) then
  // the GEMM's, grids selected by M; exactly one is non-empty for every M.
  llvm::Expected<compiler::GpuCompilation> compiled =
      compiler::compileMatmulToPtx(*spec, *target);
  if (!compiled)
    FAIL(llvm::toString(compiled.takeError()));
  const launch::LaunchPlan &plan = compiled->plan;
  INFO(plan.serialize());
  REQUIRE(plan.unsupported.empty());
  REQUIRE(plan.steps.size() == 4);
  CHECK(compiled->ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16."
                           "f32") != std::string::npos);
  // The ABI's shapes: x, codes, scales, zeros, bias, y.
  Shape2D codes = codesShape(spec->scheme, n, k);
  Shape2D scales = scaleShape(spec->scheme, n, k);
  // [M, the launch it picks].
  constexpr std::array<std::pair<int64_t, size_t>, 7> kPicks = {
      {{1, 0}, {2, 1}, {4, 1}, {5, 2}, {16, 2}, {17, 3}, {64, 3}}};
  for (auto [m, picked] : kPicks) {
    INFO("m=" << m);
    std::array<launch::Shape, 6> shapes = {{{m, k},
                                            {codes.rows, codes.cols},
                                            {scales.rows, scales.cols},
                                            {scales.rows, scales.cols},
                                            {1, n},
                                            {m, n}}};
    std::array<int64_t, 4> grids{};
    for (size_t step = 0; step < grids.size(); ++step) {
      auto expression =
          launch::Expression::compile(plan.steps[step].sizes[0], shapes.size());
      REQUIRE(expression);
      auto grid = expression->evaluate(shapes);
      REQUIRE(grid);
      grids[step] = *grid;
    }
    for (size_t step = 0; step < grids.size(); ++step)
      CHECK((grids[step] > 0) == (step == picked));
  }

  // The whole module in the emulator (the CLI's gpu-emulator path).
  llvm::Expected<std::string> text = compiler::matmulGpuText(*spec);
  if (!text)
    FAIL(llvm::toString(text.takeError()));
  std::unique_ptr<emulator::EmulatedProgram> program =
      compileKernels(*text, "sm_90a");
  KernelCase kernel{spec->scheme, spec->input, spec->output, spec->bias};
  std::array<std::array<int64_t, 3>, 6> rows = {
      {{1, n, k}, {3, n, k}, {5, n, k}, {16, n, k}, {17, n, k}, {64, n, k}}};
  checkAgainstOrder(
      kernel, rows,
      [&](const QuantizedTensor &weights, std::vector<uint8_t> xBytes,
          int64_t m, std::vector<float> biasValues, std::string &runError) {
        return runKernel(*program, kernel, weights, std::move(xBytes), m,
                         std::move(biasValues), runError);
      });
}

TEST_CASE("the GEMM reads swizzled 128x4 scales, bit-exact",
          "[matmul-gpu][emulator]") {
  for (const mt::WeightSchemeCase &weightCase : mt::swizzledSchemeCases())
    checkGemm(weightCase, ValueType::BF16, ValueType::F16, /*bias=*/false,
              kShapes);
}

TEST_CASE("the GEMM stages W with cp.async, bit-exact where W's rows are "
          "aligned to its copies",
          "[matmul-gpu][emulator]") {
  // K chosen per scheme so that every row of X, the codes, the scales and
  // the zero points is aligned to its copies: the cp.async paths of all of them
  // (the shapes above take the element copies for W). N = 130: two column
  // tiles, rows 130 .. 255 of the second zero-filled (sourceBytes 0). For
  // byte codes also a K with K % 32 = 16: the last chunk's second 16-byte
  // piece of every codes row is past K (zero-filled).
  size_t index = 0;
  for (const mt::WeightSchemeCase &weightCase : mt::weightSchemeCases()) {
    Scheme scheme = mt::schemeOf(weightCase);
    std::vector<std::array<int64_t, 3>> shapes;
    for (int64_t residue : {0, 16})
      if (int64_t k = alignedK(scheme, residue))
        shapes.push_back({17, residue == 0 ? 130 : 13, k});
    REQUIRE(!shapes.empty());
    checkGemm(weightCase, kInputs[(index + 1) % 2], kOutputs[index % 3],
              index % 2 == 0, shapes);
    ++index;
  }
}

TEST_CASE("the GEMM copies X, the codes and the group scales and zero "
          "points with cp.async",
          "[matmul-gpu][ptx]") {
  // Each staged operand has two copy sites, before the K loop and in it
  // (the next chunk's stage): X and the codes always, 16 bytes
  // (cp.async.cg); the scales and zero points where they are row-major
  // groups along K, 4-byte windows (cp.async.ca). Reading W per lane from
  // global memory (no staging) gives 2 and 0.
  std::vector<KernelCase> cases = rotatedCases(kInputs, kOutputs);
  std::string text = kernelModuleText(cases, emitMatmulGemm);
  std::string ptx;
  REQUIRE(lowbit::test::compileToPtx(text, "sm_90a", ptx));
  for (size_t i = 0; i < cases.size(); ++i) {
    const ScaleSpec &scale = cases[i].scheme.scale;
    std::string name = i == 0 ? std::string("kernel_kernel")
                              : "kernel_" + std::to_string(i) + "_kernel";
    INFO(name << " " << mt::weightSchemeCases()[i].label);
    size_t begin = ptx.find(".entry " + name + "(");
    REQUIRE(begin != std::string::npos);
    size_t end = ptx.find(".entry ", begin + 1);
    std::string_view body = std::string_view(ptx).substr(
        begin, end == std::string::npos ? std::string::npos : end - begin);
    auto count = [&](std::string_view instruction) {
      size_t found = 0;
      for (size_t at = body.find(instruction); at != std::string_view::npos;
           at = body.find(instruction, at + 1))
        ++found;
      return found;
    };
    size_t groups =
        groupsStaged(cases[i].scheme) ? 1 + size_t(scale.zeroPoint) : 0;
    CHECK(count("cp.async.cg.shared.global [") == 2 * 2);
    CHECK(count("cp.async.ca.shared.global [") == 2 * groups);
  }
}

TEST_CASE("the GEMM's PTX assembles on every chip", "[matmul-gpu][ptx]") {
  std::vector<KernelCase> cases = rotatedCases(kInputs, kOutputs);
  checkKernelsAssemble(cases, emitMatmulGemm,
                       {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                        "cp.async.cg.shared.global", "cp.async.commit_group",
                        "cp.async.wait_group"});
}

TEST_CASE("sweep: the GEMM for every scheme and dtype pair, larger shapes",
          "[.sweep][matmul-gpu]") {
  static constexpr std::array<std::array<int64_t, 3>, 3> kSweepShapes = {
      {{64, 13, 200}, {100, 67, 2113}, {17, 136, 64}}};
  for (const mt::WeightSchemeCase &weightCase : mt::weightSchemeCases())
    for (ValueType input : kInputs)
      for (ValueType output : kOutputs)
        checkGemm(weightCase, input, output, /*bias=*/true, kSweepShapes);
}

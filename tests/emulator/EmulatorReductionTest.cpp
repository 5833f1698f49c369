//===- EmulatorReductionTest.cpp - Per-tensor and per-row GPU reductions --===//
//
// The reductions of the bandwidth-shaped mapping (lowering/GpuTensorReduce
// and GpuRowReduce, docs/gpu.md): per-tensor dynamic quantize in two
// launches through the runtime's workspace, nvfp4's computed global, and
// per-token / per_channel(axis=0) quantize one warp per row. Each runs in
// the emulator bit-exact against the reference, with absmax and minmax
// rules, byte and nibble codes, from f32, f16 and bf16, on sm_90a and
// sm_100a; the launch plans cover 1 x 2^24 and 2^24 x 1; and broken
// reductions must fail.
//
//===----------------------------------------------------------------------===//

#include "tests/emulator/EmulatorTestSupport.h"

#include "format/Scheme.h"
#include "runtime/compiler/Compiler.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include <catch2/catch.hpp>

#include <iostream>

using namespace lowbit;
using namespace lowbit::testing;

namespace {

struct ReductionCase {
  const char *scheme;
  int64_t workspaceWords; ///< what the GPU kernels take
  size_t maxLaunches;
};

/// Per-tensor absmax (2 words: amax, ticket) and minmax (4: amax, -min,
/// max, ticket); nvfp4's global (2); per-row schemes need no workspace.
const ReductionCase kCases[] = {
    {"fp8_e4m3", 2, 2},
    {"fp8_e5m2", 2, 2},
    {"int8", 2, 2},
    {"nvfp4", 2, 2},
    {"scheme(format=uint8,scale=per_tensor,rule=minmax,zero_point=true)", 4, 2},
    {"scheme(format=int8,scale=per_token)", 0, 1},
    {"scheme(format=e4m3,scale=per_token,type=f16)", 0, 1},
    {"scheme(format=e5m2,scale=per_channel(axis=0))", 0, 1},
    {"scheme(format=int4,scale=per_token,type=f16,packing=nibble)", 0, 1},
    {"scheme(format=uint4,scale=per_token,rule=minmax,zero_point=true,"
     "packing=nibble)",
     0, 1},
};

/// Ragged and aligned shapes, 1xN and Nx1, one block and several (33x257
/// is 9 blocks in launch 1), and one that strides: 1024 blocks of 256
/// lanes cover 2^20 f32 elements in one step, so 1 x (2^20 + 4100) loops.
const std::pair<int64_t, int64_t> kShapes[] = {
    {1, 1},    {3, 37},  {33, 257}, {1, 4099},
    {4099, 1}, {2, 256}, {3, 96},   {1, (int64_t(1) << 20) + 4100}};

KernelSpec quantizeSpec(const char *scheme, ValueType type) {
  std::string error;
  std::optional<KernelSpec> spec =
      parseKernelSpec(std::string("quantize ") + scheme, &error);
  INFO(scheme << ": " << error);
  REQUIRE(spec);
  spec->valueType = type;
  return *spec;
}

void checkTarget(const char *targetName) {
  Target target = targetNamed(targetName);
  emulator::Device device;
  int exact = 0;
  for (const ReductionCase &reduction : kCases)
    for (ValueType type : {ValueType::F32, ValueType::F16, ValueType::BF16}) {
      KernelSpec spec = quantizeSpec(reduction.scheme, type);
      std::string label = std::string(targetName) + " " + printKernelSpec(spec);
      INFO(label);
      auto program = emulator::EmulatedProgram::compile(spec, target);
      if (!program)
        FAIL("compile: " << program.error().message);
      CHECK((*program)->workspaceWords() == reduction.workspaceWords);
      CHECK((*program)->plan().steps.size() <= reduction.maxLaunches);
      KernelRunner run = emulatorRunner(**program, device);
      for (auto [rows, cols] : kShapes) {
        // The long row, where launch 1 strides, once per per-tensor
        // scheme (f32), to keep the run short.
        if (cols > 5000 &&
            (type != ValueType::F32 || reduction.workspaceWords == 0))
          continue;
        INFO(rows << "x" << cols);
        std::string mismatch =
            checkQuantize(spec, rows, cols, uint32_t(rows * 31 + cols), run);
        CHECK(mismatch == "");
        if (mismatch.empty())
          ++exact;
      }
    }
  std::cout << "emulator: reductions on " << targetName << ": " << exact
            << " runs bit-exact\n";
  int perTensor = 0;
  for (const ReductionCase &reduction : kCases)
    perTensor += reduction.workspaceWords > 0;
  CHECK(exact == int(std::size(kCases)) * 3 * 7 + perTensor);
}

} // namespace

TEST_CASE("emulator: per-tensor and per-row reductions bit-exact on sm_90a",
          "[emulator][reduction]") {
  checkTarget("sm_90a");
}

TEST_CASE("emulator: per-tensor and per-row reductions bit-exact on sm_100a",
          "[emulator][reduction]") {
  checkTarget("sm_100a");
}

TEST_CASE("emulator: reduction launch grids cover 1 x 2^24 and 2^24 x 1",
          "[emulator][reduction]") {
  Target target = targetNamed("sm_90a");
  const int64_t n = int64_t(1) << 24;
  for (const ReductionCase &reduction : kCases) {
    KernelSpec spec = quantizeSpec(reduction.scheme, ValueType::F32);
    auto program = emulator::EmulatedProgram::compile(spec, target);
    REQUIRE(program);
    for (auto [rows, cols] :
         {std::pair{int64_t(1), n}, std::pair{n, int64_t(1)}}) {
      jit::ParamShapes shapes;
      for (const Shape2D &shape : compiler::bufferShapes(spec, rows, cols))
        shapes.push_back({shape.rows, shape.cols});
      if (reduction.workspaceWords > 0)
        shapes.push_back({1, reduction.workspaceWords});
      std::vector<uint64_t> pointers(shapes.size(), 0x10000);
      for (const jit::LaunchStep &step : (*program)->plan().steps) {
        auto resolved = jit::resolveLaunch(step, shapes, pointers);
        INFO(reduction.scheme << " " << rows << "x" << cols << " "
                              << step.kernelName);
        REQUIRE(resolved);
        const std::array<int64_t, 7> &sizes = resolved->sizes;
        CHECK(sizes[0] >= 1);
        CHECK(sizes[0] <= (int64_t(1) << 31) - 1);
        CHECK(sizes[1] == 1);
        CHECK(sizes[2] == 1);
      }
    }
  }
}

namespace {

/// Runs `spec` (f32, sm_90a) broken by `mutation` on shapes of several
/// blocks; the first failure, or "" when every run passed.
std::string runBroken(const char *scheme,
                      const emulator::ModuleMutation &mutation) {
  KernelSpec spec = quantizeSpec(scheme, ValueType::F32);
  auto program =
      emulator::EmulatedProgram::compile(spec, targetNamed("sm_90a"), mutation);
  if (!program)
    return "compile: " + program.error().message;
  emulator::Device device;
  KernelRunner run = emulatorRunner(**program, device);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{33, 257}, {64, 1000}}) {
    std::string outcome = checkQuantize(spec, rows, cols, 7, run);
    if (!outcome.empty())
      return outcome;
  }
  return "";
}

/// Calls `edit` on every atomicrmw of `kind`; counts them in `edits`.
emulator::ModuleMutation
editAtomics(mlir::LLVM::AtomicBinOp kind, int &edits,
            std::function<void(mlir::LLVM::AtomicRMWOp)> edit) {
  return [kind, &edits, edit](mlir::ModuleOp module) {
    module.walk([&](mlir::LLVM::AtomicRMWOp rmw) {
      if (rmw.getBinOp() != kind)
        return;
      edit(rmw);
      ++edits;
    });
  };
}

} // namespace

TEST_CASE("emulator: broken per-tensor reductions fail",
          "[emulator][reduction][broken]") {
  // The last block leaves the workspace dirty: it stores 1 where it must
  // store 0. The run must fail even though the codes are right.
  {
    int edits = 0;
    std::string outcome = runBroken(
        "fp8_e4m3",
        editAtomics(mlir::LLVM::AtomicBinOp::xchg, edits,
                    [](mlir::LLVM::AtomicRMWOp rmw) {
                      mlir::OpBuilder b(rmw);
                      mlir::Type type = rmw.getVal().getType();
                      rmw.getValMutable().assign(mlir::LLVM::ConstantOp::create(
                          b, rmw.getLoc(), type, b.getIntegerAttr(type, 1)));
                    }));
    CHECK(edits == 2);
    CHECK_THAT(outcome, Catch::Contains("workspace"));
    std::cout << "emulator: broken (workspace not zeroed): " << outcome << "\n";
  }
  // The ticket compares with 0 instead of gridDim - 1: the first block to
  // finish computes the scale from the blocks done so far.
  {
    int edits = 0;
    std::string outcome = runBroken("int8", [&edits](mlir::ModuleOp module) {
      module.walk([&](mlir::LLVM::ICmpOp compare) {
        auto ticket = compare.getLhs().getDefiningOp<mlir::LLVM::AtomicRMWOp>();
        if (!ticket || ticket.getBinOp() != mlir::LLVM::AtomicBinOp::add)
          return;
        mlir::OpBuilder b(compare);
        mlir::Type type = compare.getRhs().getType();
        compare.getRhsMutable().assign(mlir::LLVM::ConstantOp::create(
            b, compare.getLoc(), type, b.getIntegerAttr(type, 0)));
        ++edits;
      });
    });
    CHECK(edits == 1);
    CHECK(outcome != "");
    std::cout << "emulator: broken (ticket of the first block): "
              << outcome.substr(0, 160) << "\n";
  }
}

namespace {

/// The scale fp8_e4m3 (f32, sm_90a) stores for a 1 x 1024 tensor of ones
/// with 100 at element 1000, which lane 250 (warp 7) loads in launch 1.
Expected<float>
scaleWithMaxInLastWarp(const emulator::ModuleMutation &mutation) {
  KernelSpec spec = quantizeSpec("fp8_e4m3", ValueType::F32);
  auto program =
      emulator::EmulatedProgram::compile(spec, targetNamed("sm_90a"), mutation);
  if (!program)
    return std::move(program).takeError();
  std::vector<float> input(1024, 1.0f);
  input[1000] = 100.0f;
  std::vector<int8_t> codes(1024);
  float scale = 0;
  emulator::ShapedBuffer buffers[] = {
      {input.data(), 1, 1024}, {codes.data(), 1, 1024}, {&scale, 1, 1}};
  emulator::Device device;
  if (Status status = (*program)->runSpec(device, buffers); !status)
    return std::move(status).takeError();
  return scale;
}

} // namespace

TEST_CASE("emulator: a block reduction that skips a warp fails",
          "[emulator][reduction][broken]") {
  Expected<float> right = scaleWithMaxInLastWarp({});
  if (!right)
    FAIL(right.error().message);
  CHECK(*right == 100.0f / 448.0f);
  // Warp 0 reads the 8 warps' slots of shared memory under lane < 8; with
  // lane < 7 the block reduction skips warp 7, which holds the maximum.
  int edits = 0;
  Expected<float> skipped =
      scaleWithMaxInLastWarp([&edits](mlir::ModuleOp module) {
        module.walk([&](mlir::LLVM::ICmpOp compare) {
          auto bound = compare.getRhs().getDefiningOp<mlir::LLVM::ConstantOp>();
          auto value =
              bound ? dyn_cast<mlir::IntegerAttr>(bound.getValue()) : nullptr;
          if (compare.getPredicate() != mlir::LLVM::ICmpPredicate::ult ||
              !value || value.getInt() != 8)
            return;
          mlir::OpBuilder b(compare);
          mlir::Type type = compare.getRhs().getType();
          compare.getRhsMutable().assign(mlir::LLVM::ConstantOp::create(
              b, compare.getLoc(), type, b.getIntegerAttr(type, 7)));
          ++edits;
        });
      });
  CHECK(edits >= 1);
  if (!skipped)
    FAIL(skipped.error().message);
  CHECK(*skipped == 1.0f / 448.0f);
  std::cout << "emulator: broken (block reduction skips warp 7): scale "
            << *skipped << " instead of " << *right << "\n";
}

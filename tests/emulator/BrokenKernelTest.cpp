//===- BrokenKernelTest.cpp - A broken GPU mapping must fail --------------===//
//
// The emulator judges the GPU mapping, so a mapping that is wrong must fail
// it. Each case edits the kernels after lowerToNvvm, the way a buggy mapping
// would have produced them, and requires a mismatch or an error:
//   - an off-by-one lane (every read of tid.x becomes tid.x + 1), in every
//     named scheme's real kernels;
//   - a missing barrier (every barrier erased);
//   - a reduction over the wrong lanes (every shuffle offset * 2).
// The last two run on the hand-written kernels, and on every named kernel
// that has barriers or shuffles (none before the bandwidth-shaped mapping;
// the count is printed).
//
//===----------------------------------------------------------------------===//

#include "tests/emulator/EmulatorTestSupport.h"
#include "tests/emulator/HandWrittenKernels.h"

#include "format/Scheme.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <numeric>

using namespace lowbit;
using namespace lowbit::testing;

namespace {

/// Every tid.x read becomes tid.x + 1. Counts the edits in `edits`.
emulator::ModuleMutation offByOneLane(int &edits) {
  return [&edits](mlir::ModuleOp module) {
    module.walk([&](mlir::NVVM::ThreadIdXOp tid) {
      mlir::OpBuilder b(tid->getContext());
      b.setInsertionPointAfter(tid);
      mlir::Value one = mlir::LLVM::ConstantOp::create(
          b, tid.getLoc(), tid.getType(), b.getIntegerAttr(tid.getType(), 1));
      auto next = mlir::LLVM::AddOp::create(b, tid.getLoc(), tid, one);
      tid.getResult().replaceAllUsesExcept(next, next);
      ++edits;
    });
  };
}

/// Every block-wide barrier is erased.
emulator::ModuleMutation missingBarrier(int &edits) {
  return [&edits](mlir::ModuleOp module) {
    llvm::SmallVector<mlir::Operation *> barriers;
    module.walk([&](mlir::Operation *op) {
      if (mlir::isa<mlir::NVVM::Barrier0Op, mlir::NVVM::BarrierOp>(op))
        barriers.push_back(op);
    });
    for (mlir::Operation *op : barriers)
      op->erase();
    edits += int(barriers.size());
  };
}

/// Every shuffle reads a lane twice as far as it should. (offset + 1 is no
/// bug for an xor butterfly of max: 4, 2, 1 -> 5, 3, 2 still spans the
/// lanes of a group, so the reduction is unchanged; doubling skips the
/// nearest partner and crosses into the next group.)
emulator::ModuleMutation wrongShuffleLane(int &edits) {
  return [&edits](mlir::ModuleOp module) {
    module.walk([&](mlir::NVVM::ShflOp shfl) {
      mlir::OpBuilder b(shfl);
      mlir::Value offset = shfl.getOffset();
      mlir::Value one =
          mlir::LLVM::ConstantOp::create(b, shfl.getLoc(), offset.getType(),
                                         b.getIntegerAttr(offset.getType(), 1));
      shfl.getOffsetMutable().assign(
          mlir::LLVM::ShlOp::create(b, shfl.getLoc(), offset, one));
      ++edits;
    });
  };
}

/// Runs `spec` broken by `mutation` on two ragged shapes and one of whole
/// 16-byte rows (the vector paths); "" if nothing noticed (the mutation
/// changed nothing, or the test failed to catch it).
std::string runBroken(const KernelSpec &spec, const Target &target,
                      const emulator::ModuleMutation &mutation) {
  auto program = emulator::EmulatedProgram::compile(spec, target, mutation);
  if (!program)
    return "compile: " + program.error().message;
  emulator::Device device;
  KernelRunner run = emulatorRunner(**program, device);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 37}, {33, 257}, {5, 320}}) {
    std::string error;
    if (!validateSchemeForShape(spec.scheme, rows, cols, &error))
      continue;
    std::string outcome =
        spec.op == KernelOp::Quantize
            ? checkQuantize(spec, rows, cols, uint32_t(rows + cols), run)
            : checkDequantize(spec, rows, cols, uint32_t(rows + cols), run);
    if (!outcome.empty())
      return outcome;
  }
  return "";
}

struct MutationKind {
  const char *name;
  emulator::ModuleMutation (*make)(int &);
};
const MutationKind kMutations[] = {
    {"off-by-one lane (tid.x + 1)", &offByOneLane},
    {"missing barrier", &missingBarrier},
    {"wrong shuffle lane (offset * 2)", &wrongShuffleLane},
};

} // namespace

TEST_CASE("emulator: broken mappings of the real kernels fail",
          "[emulator][broken]") {
  Target target = targetNamed("sm_90a");
  for (const MutationKind &kind : kMutations) {
    int mutatedKernels = 0, caught = 0;
    for (const Scheme &scheme : namedSchemes())
      for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize}) {
        KernelSpec spec;
        spec.op = op;
        spec.scheme = scheme;
        int edits = 0;
        std::string outcome = runBroken(spec, target, kind.make(edits));
        if (edits == 0)
          continue; // nothing of this kind in the kernel
        ++mutatedKernels;
        INFO(kind.name << ": " << printKernelSpec(spec));
        CHECK(outcome != "");
        if (outcome.empty())
          continue;
        ++caught;
        std::cout << "emulator: broken (" << kind.name << ") "
                  << printKernelSpec(spec)
                  << ": caught: " << outcome.substr(0, 160) << "\n";
      }
    std::cout << "emulator: " << kind.name << ": " << caught << " of "
              << mutatedKernels << " mutated named kernels caught\n";
  }
}

TEST_CASE("emulator: broken hand-written kernels fail", "[emulator][broken]") {
  std::vector<int32_t> input(640);
  std::iota(input.begin(), input.end(), -300);

  // A missing barrier in the shared-memory tree reduction.
  {
    int edits = 0;
    std::vector<int32_t> sums(5, 0);
    std::string error =
        runI32Kernel(kSharedReductionKernel, "sm_90a",
                     {{&input, false}, {&sums, true}}, missingBarrier(edits));
    CHECK(edits == 2);
    CHECK_THAT(error, Catch::Contains("shared-memory race"));
    std::cout << "emulator: broken (missing barrier) block reduction: "
              << error.substr(0, 160) << "\n";
  }

  // A warp reduction over the wrong lanes: no error, wrong sums.
  {
    int edits = 0;
    std::vector<int32_t> sums(6, 0), prefix(192, 0);
    std::vector<int32_t> values(input.begin(), input.begin() + 192);
    std::string error =
        runI32Kernel(kWarpShuffleKernels, "sm_90a",
                     {{&values, false}, {&sums, true}, {&prefix, true}},
                     wrongShuffleLane(edits));
    REQUIRE(error == "");
    CHECK(edits == 10);
    int wrong = 0;
    for (size_t warp = 0; warp < sums.size(); ++warp)
      wrong +=
          sums[warp] != std::accumulate(values.begin() + warp * 32,
                                        values.begin() + warp * 32 + 32, 0);
    CHECK(wrong == int(sums.size()));
    std::cout << "emulator: broken (wrong shuffle lane) warp sums: " << wrong
              << " of " << sums.size() << " sums wrong\n";
  }

  // An off-by-one lane in the warp sums: the last lane reads past the end.
  {
    int edits = 0;
    std::vector<int32_t> sums(6, 0), prefix(192, 0);
    std::vector<int32_t> values(input.begin(), input.begin() + 192);
    std::string error =
        runI32Kernel(kWarpShuffleKernels, "sm_90a",
                     {{&values, false}, {&sums, true}, {&prefix, true}},
                     offByOneLane(edits));
    CHECK(edits == 2);
    CHECK_THAT(error, Catch::Contains("past the end"));
    std::cout << "emulator: broken (off-by-one lane) warp sums: "
              << error.substr(0, 160) << "\n";
  }
}

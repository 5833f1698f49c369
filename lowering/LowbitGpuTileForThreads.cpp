//===- LowbitGpuTileForThreads.cpp - scf.parallel -> blocks x threads -----===//
//
// gpu-map-parallel-loops maps the outermost scf.parallel to the grid and
// the next one to the threads: tiling gives it that nest.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"

#define DEBUG_TYPE "lowbit-gpu-tile-for-threads"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITGPUTILEFORTHREADS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;

namespace {

/// Tiles every outermost scf.parallel so its innermost dimension becomes
/// `threadsPerBlock` threads; the tile loop maps to blocks. Bounds that do
/// not divide are guarded with scf.if (noMinMaxBounds), so the thread
/// count stays a constant.
void tileForThreads(ModuleOp module, int64_t threadsPerBlock) {
  SmallVector<scf::ParallelOp> outermost;
  module.walk([&](scf::ParallelOp parallel) {
    if (!parallel->getParentOfType<scf::ParallelOp>())
      outermost.push_back(parallel);
  });
  for (scf::ParallelOp parallel : outermost) {
    SmallVector<int64_t> tileSizes(parallel.getNumLoops(), 1);
    tileSizes.back() = threadsPerBlock;
    scf::tileParallelLoop(parallel, tileSizes, /*noMinMaxBounds=*/true);
  }
}

struct LowbitGpuTileForThreads
    : lowbit::impl::LowbitGpuTileForThreadsBase<LowbitGpuTileForThreads> {
  using LowbitGpuTileForThreadsBase::LowbitGpuTileForThreadsBase;
  void runOnOperation() override {
    tileForThreads(getOperation(), threadsPerBlock);
  }
};

} // namespace

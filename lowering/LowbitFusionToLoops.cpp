//===- LowbitFusionToLoops.cpp - lowbit.fused kernels to loops ------------===//
//
// A fused kernel becomes one function body: the region is inlined (the
// function is the kernel boundary), the prologue's linalg/tensor ops are
// bufferized by One-Shot Bufferize, restricted to those ops, and lowered to
// scf loops by upstream linalg. lowbit.quantize stays on tensors and reads
// the prologue's buffer through a bufferization.to_tensor, which
// lowbit-to-loops then reads directly (docs/lowering.md, Bufferization
// boundary). The prologue's temporary buffers are freed before the
// function returns.
//
//===----------------------------------------------------------------------===//

#include "lowering/LowbitFusion.h"
#include "lowering/Passes.h"

#include "dialect/LowbitOps.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITFUSIONTOLOOPS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

/// lowbit.fused -> its body, in place.
struct InlineFusedKernel : OpRewritePattern<ld::FusedOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ld::FusedOp op,
                                PatternRewriter &rewriter) const override {
    Block *body = &op.getBody().front();
    auto yield = cast<ld::YieldOp>(body->getTerminator());
    SmallVector<Value> yielded(yield.getValues());
    rewriter.inlineBlockBefore(body, op, op.getInputs());
    rewriter.eraseOp(yield);
    rewriter.replaceOp(op, yielded);
    return success();
  }
};

/// Whether One-Shot Bufferize rewrites `op`: the prologue's linalg and
/// tensor ops, and the copy of a side output (an updated residual) into
/// its destination. lowbit ops and the materialization of their results
/// are lowbit-to-loops' job.
bool isPrologueOp(Operation *op) {
  // tensor.empty becomes an alloc_tensor before it is bufferized.
  if (isa<linalg::LinalgDialect, tensor::TensorDialect>(op->getDialect()) ||
      isa<bufferization::AllocTensorOp>(op))
    return true;
  auto materialize = dyn_cast<bufferization::MaterializeInDestinationOp>(op);
  return materialize &&
         !isa_and_nonnull<ld::LowbitDialect>(
             materialize.getSource().getDefiningOp()
                 ? materialize.getSource().getDefiningOp()->getDialect()
                 : nullptr);
}

LogicalResult bufferizePrologues(ModuleOp module) {
  bufferization::OneShotBufferizationOptions options;
  options.allowUnknownOps = true;
  options.opFilter.allowOperation(isPrologueOp);
  // Tensors from outside the prologue are the kernel's own identity-layout
  // buffers (to_tensor of a parameter, or lowbit-to-loops' results).
  options.unknownTypeConverterFn =
      [](TensorType type, Attribute memorySpace,
         const bufferization::BufferizationOptions &) {
        return bufferization::getMemRefTypeWithStaticIdentityLayout(
            type, memorySpace);
      };
  bufferization::BufferizationState state;
  return bufferization::runOneShotBufferize(module, options, state);
}

/// Every linalg op on buffers becomes loops: scf.parallel over the
/// parallel dimensions, scf.for (in increasing order) over reductions; the
/// loops' index maps (affine.apply) become arith.
LogicalResult linalgToLoops(ModuleOp module) {
  SmallVector<linalg::LinalgOp> linalgOps;
  module.walk([&](linalg::LinalgOp op) { linalgOps.push_back(op); });
  IRRewriter rewriter(module.getContext());
  for (linalg::LinalgOp op : linalgOps) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
      return op->emitOpError("could not be lowered to loops");
    rewriter.eraseOp(op);
  }
  RewritePatternSet patterns(module.getContext());
  populateAffineToStdConversionPatterns(patterns);
  return applyPatternsGreedily(module, std::move(patterns));
}

/// The prologue's temporaries live for one call: freed before each return.
void freeTemporaries(func::FuncOp func,
                     const llvm::DenseSet<Operation *> &before) {
  SmallVector<memref::AllocOp> allocs;
  func.walk([&](memref::AllocOp alloc) {
    if (!before.contains(alloc))
      allocs.push_back(alloc);
  });
  func.walk([&](func::ReturnOp ret) {
    OpBuilder b(ret);
    for (memref::AllocOp alloc : allocs)
      memref::DeallocOp::create(b, ret.getLoc(), alloc);
  });
}

struct LowbitFusionToLoopsPass
    : public lowbit::impl::LowbitFusionToLoopsBase<LowbitFusionToLoopsPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    LowbitFusionToLoopsBase::getDependentDialects(registry);
    lowbit::registerLowbitFusionDependencies(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    module.walk([&](func::FuncOp func) {
      if (!func.getOps<ld::FusedOp>().empty())
        kernels.push_back(func);
    });
    if (kernels.empty())
      return;
    // lowbit-to-loops' own buffers come later; only the ones bufferization
    // makes here are the prologue's.
    llvm::DenseSet<Operation *> allocsBefore;
    module.walk([&](memref::AllocOp alloc) { allocsBefore.insert(alloc); });

    RewritePatternSet patterns(&getContext());
    lowbit::populateLowbitFusionInlinePatterns(patterns);
    GreedyRewriteConfig config;
    config.enableFolding(false).setRegionSimplificationLevel(
        GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(module, std::move(patterns), config)))
      return signalPassFailure();
    if (failed(bufferizePrologues(module)) || failed(linalgToLoops(module)))
      return signalPassFailure();
    for (func::FuncOp func : kernels)
      freeTemporaries(func, allocsBefore);
  }
};

} // namespace

void lowbit::populateLowbitFusionInlinePatterns(RewritePatternSet &patterns) {
  patterns.add<InlineFusedKernel>(patterns.getContext());
}

void lowbit::registerLowbitFusionDependencies(DialectRegistry &registry) {
  registry.insert<linalg::LinalgDialect, tensor::TensorDialect,
                  memref::MemRefDialect, bufferization::BufferizationDialect,
                  scf::SCFDialect>();
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
}

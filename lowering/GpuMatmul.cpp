//===- GpuMatmul.cpp - lowbit.matmul to its GPU kernels -------------------===//
//
// lowbit-to-gpu's rewrite of lowbit.matmul (docs/matmul-gpu.md): an op
// whose result is written into a kernel parameter and whose scales the
// kernels read becomes the GEMV launches of GpuMatmulGemv.h (one per row
// bucket) and, for an f16/bf16 X, the mma.sync GEMM launch of
// GpuMatmulGemm.h, each with an empty grid unless M picks it (M <= 16: the
// GEMV's bucket of M). An op it leaves is
// refused by the compile entry with gpuMatmulRefusal's reason.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuMatmul.h"
#include "dialect/LowbitMatmulOps.h"
#include "lowering/DecodeAttentionEmitter.h"
#include "lowering/GpuKernelBuilder.h"
#include "lowering/GpuMatmulFp4.h"
#include "lowering/GpuMatmulFrontQuantize.h"
#include "lowering/GpuMatmulGemm.h"
#include "lowering/GpuMatmulGemv.h"
#include "lowering/GpuMatmulQuantized.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

/// The largest M the GEMV serves for an f16/bf16 X; the mma.sync GEMM takes
/// the rest (docs/matmul-gpu.md, "Choosing the kernel at run time").
constexpr int64_t kGemvMaxRows = 16;

/// Why the GEMV cannot serve `op`, or "" when it can.
std::string refusalOf(ld::MatmulOp op) {
  bool prologues = !op.getPrologueChain().empty();
  if (prologues && !op.getActivationScheme())
    return "prologues run in front of X's quantize, and the op has no "
           "activation scheme";
  if (std::optional<lowbit::Scheme> activations = op.getActivationScheme()) {
    // W4A4: the FP4 GEMM (GpuMatmulFp4.h), which reads row-major scales.
    if (lowbit::fp4GemmRefusal(op.getWeightScheme(), *activations).empty()) {
      if (prologues)
        if (std::string front = lowbit::frontQuantizeRefusal(*activations);
            !front.empty())
          return front;
      if (op.getWeightScheme().scale.layout ==
          lowbit::ScaleLayout::Swizzle128x4)
        return "the FP4 GEMM reads the weights' scales row-major, not in "
               "the swizzled 128x4 layout";
    } else if (std::string why = lowbit::quantizedGemmRefusal(
                   op.getWeightScheme(), *activations);
               !why.empty()) {
      return why;
    } else if (prologues) {
      if (std::string front = lowbit::frontQuantizeRefusal(*activations);
          !front.empty())
        return front;
    }
  } else if (!lowbit::gemvCoversScheme(op.getWeightScheme()))
    return "the GPU kernels read row-major scales per tensor, per output "
           "channel, in groups along K or in blocks, and swizzled 128x4 "
           "scales in groups along K";
  if (!lowbit::gpu_mapping::resultDestination(op.getResult(), op))
    return "the result is not written by one "
           "bufferization.materialize_in_destination into a memref defined "
           "before the op (the kernel function's parameter)";
  return "";
}

struct MatmulToGpu : OpRewritePattern<ld::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ld::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    std::string why = refusalOf(op);
    if (!why.empty())
      return rewriter.notifyMatchFailure(op, why);
    auto materialize =
        lowbit::gpu_mapping::resultDestination(op.getResult(), op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    b.setInsertionPoint(op);
    // The bias is [N], collapsed from the ABI's [1, N], so it need not come
    // straight from a to_tensor: operandMemref reads it through to_buffer.
    using lowbit::attention::operandMemref;
    lowbit::MatmulBuffers buffers;
    buffers.x = operandMemref(b, op.getX());
    buffers.codes = operandMemref(b, op.getCodes());
    buffers.scales = operandMemref(b, op.getScales());
    buffers.zeros = operandMemref(b, op.getZeros());
    buffers.global = operandMemref(b, op.getGlobal());
    buffers.bias = operandMemref(b, op.getBias());
    buffers.output = materialize.getDest();
    // Quantized activations: the FP4 GEMM for W4A4, else the W8A8 GEMM
    // for every M (activationQuantizeChoice says where X is quantized).
    if (std::optional<lowbit::Scheme> activations = op.getActivationScheme()) {
      if (lowbit::fp4GemmRefusal(op.getWeightScheme(), *activations).empty()) {
        auto module = op->getParentOfType<ModuleOp>();
        bool blockScaledMma =
            module && module->hasAttr(lowbit::kBlockScaledMmaAttr);
        if (!op.getPrologueChain().empty()) {
          // Behind prologues: X's codes from the front kernel.
          FailureOr<lowbit::QuantizedX> quantizedX =
              lowbit::emitFrontQuantize(rewriter, b, op, *activations);
          if (failed(quantizedX))
            return rewriter.notifyMatchFailure(op, "the function has a "
                                                   "workspace already");
          lowbit::emitMatmulFp4GemmOnCodes(b, op.getWeightScheme(),
                                           *activations, buffers,
                                           blockScaledMma, *quantizedX);
        } else if (failed(lowbit::emitMatmulFp4Gemm(
                       rewriter, b, op, op.getWeightScheme(), *activations,
                       buffers, blockScaledMma))) {
          return rewriter.notifyMatchFailure(op, "no room for the workspace");
        }
      } else if (!op.getPrologueChain().empty()) {
        // Behind prologues: the fused prologue | quantize kernel writes X's
        // codes and scales into the workspace, the GEMM reads them.
        FailureOr<lowbit::QuantizedX> quantizedX =
            lowbit::emitFrontQuantize(rewriter, b, op, *activations);
        if (failed(quantizedX))
          return rewriter.notifyMatchFailure(op, "the function has a "
                                                 "workspace already");
        lowbit::emitQuantizedMatmulGemmOnCodes(
            b, op.getWeightScheme(), *activations, buffers, *quantizedX);
      } else if (failed(lowbit::emitQuantizedMatmulGemm(
                     rewriter, b, op, op.getWeightScheme(), *activations,
                     buffers))) {
        return rewriter.notifyMatchFailure(op, "no room for the workspace");
      }
      rewriter.eraseOp(materialize);
      rewriter.eraseOp(op);
      return success();
    }
    // M is the batch, known only at run time: both kernels are launched,
    // the one M does not pick with an empty grid, which every launcher
    // skips. An f32 X has only the GEMV (tf32 would round X).
    if (cast<MemRefType>(buffers.x.getType()).getElementType().isF32()) {
      lowbit::emitMatmulGemv(b, op.getWeightScheme(), buffers,
                             /*enabled=*/Value());
    } else {
      Value rows = lowbit::kit::dimOf(b, buffers.x, 0);
      Value bound = arith::ConstantIndexOp::create(b, kGemvMaxRows);
      lowbit::emitMatmulGemv(
          b, op.getWeightScheme(), buffers,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ule, rows, bound));
      lowbit::emitMatmulGemm(
          b, op.getWeightScheme(), buffers,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, rows, bound));
    }
    rewriter.eraseOp(materialize);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void lowbit::populateGpuMatmulPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulToGpu>(patterns.getContext());
}

std::string lowbit::gpuMatmulRefusal(Operation *op) {
  auto matmul = dyn_cast<ld::MatmulOp>(op);
  if (!matmul)
    return "not a lowbit.matmul";
  return refusalOf(matmul);
}

std::string lowbit::activationQuantizeChoice(const Scheme &weights,
                                             const Scheme &activations,
                                             bool hasPrologues) {
  if (hasPrologues) {
    if (!quantizedGemmRefusal(weights, activations).empty() &&
        !fp4GemmRefusal(weights, activations).empty())
      return "";
    if (std::string why = frontQuantizeRefusal(activations); !why.empty())
      return "X's quantize: no GPU kernel behind prologues: " + why;
    return "X's quantize: a front kernel, then the GEMM (2 launches; 3 "
           "with a per-tensor scale or a global scale): the prologues need "
           "X's whole row before its scale exists, so the fused prologue | "
           "quantize kernel (as `quantize` builds it for the chain) writes "
           "X's codes and scales into the workspace, whose size grows with "
           "M x K (docs/kernel-abi.md), and the GEMM reads them instead of "
           "quantizing in its A load";
  }
  if (fp4GemmRefusal(weights, activations).empty()) {
    std::string choice =
        "X's quantize: in the FP4 GEMM's A load (a scale block of X lies "
        "inside one 32-wide K chunk)";
    if (activations.scale.globalScale != GlobalScale::None)
      choice += "; its global scale needs all of X: X's amax reduced once "
                "through the workspace in a launch before the GEMM";
    return choice;
  }
  if (!quantizedGemmRefusal(weights, activations).empty())
    return "";
  if (quantizedGemmReducesX(activations))
    return "X's quantize: a per-tensor scale needs all of X: X's amax "
           "reduced once through the workspace in a launch before the GEMM, "
           "which quantizes in its A load with that scale";
  if (activations.scale.granularity == Granularity::Group)
    return "X's quantize: in the GEMM's A load (1xG groups along K lie "
           "inside the K block the GEMM loads; each lane scans its group)";
  return "X's quantize: in the GEMM's A load (a per-token scale needs its "
         "row only: each lane scans its rows; a separate quantize kernel "
         "would need M x K bytes of scratch, and the workspace's size is "
         "fixed while M is not)";
}

//===- GpuMatmulFrontQuantize.cpp - X behind prologues, into the workspace ===//
//
// The workspace of a matmul with prologues (docs/kernel-abi.md,
// "Workspace"): memref<1 x WORDS x i32>, WORDS = wordsFor(kFixedWords,
// rowWordsOf(a), M, K):
//
//   words 0 .. 3    the reductions' words (a per-tensor X's statistics and
//                   ticket, GpuFusedRows.cpp through workspaceArgument)
//   byte 16 ..      X's codes, [M, K] i8 (FP4: [M, ceil(K / 2)], nibbles
//                   packed), row-major
//   16-aligned      X's stored scales, [1, 1], [M, 1] or [M, ceil(K / G)]
//   16-aligned      nvfp4's computed global scale, [1, 1] f32
//
// The front kernel writes the codes and scales before the GEMM reads them,
// so the region has no initial contents to keep and may hold anything
// after the sequence; only the reductions' words go back to zero.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuMatmulFrontQuantize.h"

#include "lowering/DecodeAttentionEmitter.h"
#include "lowering/GpuTensorReduce.h"
#include "lowering/LowbitFusionBody.h"
#include "lowering/ScaleMath.h"
#include "matmul/QuantizedOrder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace lowbit {
namespace {

/// Where X's region starts: after the words a per-tensor minmax reduction
/// takes (the most any reduction in front of the GEMM uses); the words
/// before it are the ones that return to zero (workspace_abi::zeroedWords).
constexpr int64_t kRegionWord = workspace_abi::kRowRegionWord;
/// The byte alignment of the codes and of the scales.
constexpr int64_t kAlignBytes = 16;
/// Fixed words past the region's start that the rows do not count: two
/// alignments (up to 15 bytes each) and a per-tensor scale or the global
/// scale (4 bytes).
constexpr int64_t kSlackWords = 12;
constexpr int64_t kFixedWords = kRegionWord + kSlackWords;
static_assert(4 * kRegionWord % kAlignBytes == 0,
              "X's codes start 16-byte aligned");

int64_t ceilDivInt(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The words per row of X that hold its codes and scales: the code bits
/// per element (and a word for an odd K's last nibble), a row's share of
/// its group scales (ceil(8 scaleBytes / G) bits per element, and a scale
/// per row for a partial last group), or one scale per row (per token).
workspace_abi::RowWords rowWordsOf(const Scheme &activations,
                                   int64_t scaleBytes) {
  workspace_abi::RowWords rows;
  bool nibble = activations.packing == Packing::Nibble;
  rows.bitsPerElement = nibble ? 4 : 8;
  rows.wordsPerRow = nibble ? 1 : 0;
  int64_t extent = matmul::scaleExtentAlongK(activations.scale);
  if (activations.scale.granularity != Granularity::PerTensor)
    rows.wordsPerRow += ceilDivInt(scaleBytes, 4);
  if (extent > 0)
    rows.bitsPerElement += ceilDivInt(8 * scaleBytes, extent);
  return rows;
}

} // namespace

std::string frontQuantizeRefusal(const Scheme &activations) {
  const ScaleSpec &scale = activations.scale;
  if (scale.mode != ScaleMode::Dynamic ||
      scale.layout != ScaleLayout::RowMajor || scale.zeroPoint)
    return "the front quantize kernel takes dynamic row-major scales "
           "without zero points";
  bool rowGroups = scale.granularity == Granularity::Group && scale.axis == 1;
  if (!rowGroups && scale.globalScale != GlobalScale::None)
    return "the front quantize kernel takes a global scale with groups "
           "along K only";
  if (!rowGroups && scale.granularity != Granularity::PerToken &&
      scale.granularity != Granularity::PerTensor)
    return "the front quantize kernel takes one scale per tensor, per token "
           "or in groups along K";
  return "";
}

FailureOr<QuantizedX> emitFrontQuantize(RewriterBase &rewriter,
                                        ImplicitLocOpBuilder &b,
                                        dialect::MatmulOp op,
                                        const Scheme &activations) {
  Type scaleElement = storedScaleTypeOf(b, activations.scale.type);
  int64_t scaleBytes = ceilDivInt(scaleElement.getIntOrFloatBitWidth(), 8);
  Value workspace = gpu_mapping::rowWorkspaceArgument(
      rewriter, op, kFixedWords, rowWordsOf(activations, scaleBytes));
  if (!workspace)
    return failure();
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, value);
  };
  auto alignUp = [&](Value bytes) -> Value {
    Value padded = arith::AddIOp::create(b, bytes, index(kAlignBytes - 1));
    return arith::MulIOp::create(
        b, arith::DivUIOp::create(b, padded, index(kAlignBytes)),
        index(kAlignBytes));
  };
  Value x = attention::operandMemref(b, op.getX());
  Value m = memref::DimOp::create(b, x, 0);
  Value k = memref::DimOp::create(b, x, 1);

  // The workspace's bytes: the descriptor is the same for any element
  // type (pointers, offset, sizes, strides), so the cast is free; the
  // views below are plain memref.view ops of it.
  int64_t dyn = ShapedType::kDynamic;
  Value bytes2d = UnrealizedConversionCastOp::create(
                      b, MemRefType::get({1, dyn}, b.getI8Type()), workspace)
                      .getResult(0);
  Value byteCount = arith::MulIOp::create(
      b, memref::DimOp::create(b, workspace, 1), index(4));
  Value bytes = memref::ReinterpretCastOp::create(
      b, MemRefType::get({dyn}, b.getI8Type()), bytes2d,
      OpFoldResult(b.getIndexAttr(0)), ArrayRef<OpFoldResult>{byteCount},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});

  // X's codes, then its scales (rows x cols of the stored type).
  bool nibble = activations.packing == Packing::Nibble;
  Value codeCols =
      nibble ? Value(arith::CeilDivUIOp::create(b, k, index(2))) : k;
  Value codesAt = index(4 * kRegionWord);
  Value codes =
      memref::ViewOp::create(b, MemRefType::get({dyn, dyn}, b.getI8Type()),
                             bytes, codesAt, ValueRange{m, codeCols});
  Value scalesAt = alignUp(
      arith::AddIOp::create(b, codesAt, arith::MulIOp::create(b, m, codeCols)));
  int64_t extent = matmul::scaleExtentAlongK(activations.scale);
  bool perTensor = activations.scale.granularity == Granularity::PerTensor;
  Value scales;
  RankedTensorType scalesType;
  Value scaleCount = index(1);
  if (perTensor) {
    scales = memref::ViewOp::create(b, MemRefType::get({1, 1}, scaleElement),
                                    bytes, scalesAt, ValueRange{});
    scalesType = RankedTensorType::get({1, 1}, scaleElement);
  } else {
    Value cols = extent > 0
                     ? Value(arith::CeilDivUIOp::create(b, k, index(extent)))
                     : index(1);
    int64_t staticCols = extent > 0 ? dyn : 1;
    SmallVector<Value> sizes{m};
    if (extent > 0)
      sizes.push_back(cols);
    scales = memref::ViewOp::create(
        b, MemRefType::get({dyn, staticCols}, scaleElement), bytes, scalesAt,
        sizes);
    scalesType = RankedTensorType::get({dyn, staticCols}, scaleElement);
    scaleCount = arith::MulIOp::create(b, m, cols);
  }
  // nvfp4's global scale, which the front kernel's statistics launch
  // computes from X's amax.
  Value global;
  if (activations.scale.globalScale != GlobalScale::None) {
    Value globalAt = alignUp(arith::AddIOp::create(
        b, scalesAt, arith::MulIOp::create(b, scaleCount, index(scaleBytes))));
    global = memref::ViewOp::create(b, MemRefType::get({1, 1}, b.getF32Type()),
                                    bytes, globalAt, ValueRange{});
  }

  // The fused kernel `PROLOGUE | quantize a=` builds (docs/fusion.md),
  // its results written into the views; lowbit-to-gpu lowers it
  // (GpuFusedRows.cpp) in front of the GEMM.
  FusedQuantizeSignature signature;
  signature.codes = RankedTensorType::get({dyn, dyn}, b.getI8Type());
  signature.scales = scalesType;
  if (global)
    signature.global = RankedTensorType::get({1, 1}, b.getF32Type());
  signature.scheme = op.getActSchemeAttr();
  dialect::FusedOp fused =
      buildFusedQuantize(b, b.getLoc(), op.getPrologueChain(), op.getX(),
                         op.getPrologueInputs(), signature);
  SmallVector<Value, 3> destinations{codes, scales};
  if (global)
    destinations.push_back(global);
  for (auto [index, destination] : llvm::enumerate(destinations))
    bufferization::MaterializeInDestinationOp::create(
        b, Type(), fused->getResult(index), destination, /*restrict=*/true,
        /*writable=*/true);
  return QuantizedX{codes, scales, global};
}

} // namespace lowbit

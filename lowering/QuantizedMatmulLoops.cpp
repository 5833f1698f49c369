//===- QuantizedMatmulLoops.cpp - lowbit.matmul with act_scheme to loops --===//
//
// The quantized-activation order (docs/matmul.md, "Quantized activations";
// matmul::quantizedAccumulate is the same in plain C++), operation for
// operation:
//
//   X's codes, scales (and global scale): a lowbit.quantize of X with the
//     activations' scheme into scratch, which lowbit-to-loops lowers next
//     (the reference quantizer's arithmetic, ScaleMath); behind prologues
//     a lowbit.fused kernel (the chain, then that quantize), lowered by
//     lowbit-fusion-to-loops;
//   both sides' code values: lowbit.decode of every code into an [R, K]
//     scratch (f32, or i32 for integer codes: exact either way);
//   both sides' scale factors: the decoded scale, times the global scale
//     (decode convention) or divided by it (encode convention), into an
//     f32 scratch shaped as the scales; for block-scaled FP4
//     (matmul::globalsAfterKLoop) the decoded scale alone;
//   one scf.parallel unit per (m, n): for each K block j, p = +0 then
//     p = fma(qx, qw, p) (integers: p = p + qx * qw in i32, then sitofp);
//     s = fx * fw; acc = fma(p, s, acc); block-scaled FP4 with a global
//     scale: acc = acc * (gamma_x * gamma_w); + bias[n]; rounded to Y's
//     dtype.
//
//===----------------------------------------------------------------------===//

#include "lowering/MatmulLoops.h"

#include "lowering/DecodeAttentionEmitter.h"
#include "lowering/LowbitFusionBody.h"
#include "lowering/MatmulArithmetic.h"
#include "lowering/ScaleMath.h"
#include "lowering/kit/KernelEmitter.h"
#include "matmul/QuantizedOrder.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit::matmul_loops {

Value roundOutput(ImplicitLocOpBuilder &b, Value acc, Type outputType) {
  return roundMatmulOutput(b, acc, cast<FloatType>(outputType));
}

Value loadBias(ImplicitLocOpBuilder &b, Value bias, Value col) {
  if (auto view = bias.getDefiningOp<memref::CollapseShapeOp>())
    return memref::LoadOp::create(
        b, view.getSrc(),
        ValueRange{arith::ConstantIndexOp::create(b, 0), col});
  return memref::LoadOp::create(b, bias, col);
}

namespace {

/// A scratch memref of `shape` (kDynamic where `sizes` gives the size).
Value allocScratch(ImplicitLocOpBuilder &b, ArrayRef<int64_t> shape,
                   Type element, ArrayRef<Value> sizes) {
  SmallVector<Value, 2> dynamicSizes;
  for (auto [size, value] : llvm::zip(shape, sizes))
    if (ShapedType::isDynamic(size))
      dynamicSizes.push_back(value);
  return memref::AllocOp::create(b, MemRefType::get(shape, element),
                                 dynamicSizes);
}

/// One quantized operand as the loops read it: its scheme, its code values
/// ([R, K], f32 or i32) and its scale factors (f32, the scales' shape).
struct Operand {
  Scheme scheme;
  Value values, factors;
};

class QuantizedMatmulEmitter : public kit::KernelEmitter {
public:
  using KernelEmitter::KernelEmitter;

  /// A static size as a constant, a dynamic one as `dynamic`.
  Value sizeOr(int64_t size, Value dynamic) {
    return ShapedType::isDynamic(size) ? dynamic : idx(size);
  }

  /// Every code of `codes` (packed as `scheme` says, [rows, cols] logical)
  /// as its exact value in `values`.
  void emitCodeValues(const Scheme &scheme, Value codes, Value values,
                      Value rows, Value cols) {
    auto format = ld::toFormatAttr(b.getContext(), scheme.element);
    bool nibbles = scheme.packing == Packing::Nibble;
    auto units = scf::ParallelOp::create(b, ValueRange{idx(0), idx(0)},
                                         ValueRange{rows, cols},
                                         ValueRange{idx(1), idx(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(units.getBody()->getTerminator());
    Value row = units.getInductionVars()[0], col = units.getInductionVars()[1];
    Value code;
    if (nibbles) {
      // Element 0 in the low nibble (format/Quantize.h, codePosition).
      Value byte = memref::LoadOp::create(
          b, codes, ValueRange{row, arith::DivUIOp::create(b, col, idx(2))});
      Value odd = arith::RemUIOp::create(b, col, idx(2));
      Value shift =
          arith::IndexCastOp::create(b, b.getI8Type(), mul(odd, idx(4)));
      code = arith::AndIOp::create(b, arith::ShRUIOp::create(b, byte, shift),
                                   i8(0xF));
    } else {
      code = memref::LoadOp::create(b, codes, ValueRange{row, col});
    }
    Value value = ld::DecodeOp::create(b, b.getF32Type(), code, format);
    if (scheme.element.isInt())
      value = arith::FPToSIOp::create(b, b.getI32Type(), value);
    memref::StoreOp::create(b, value, values, ValueRange{row, col});
  }

  /// Every stored scale of `scales` ([scaleRows, scaleCols]) as its f32
  /// factor in `factors`: s, s * g or s / g (s alone without a `global`).
  void emitScaleFactors(const Scheme &scheme, Value scales, Value global,
                        Value factors, Value scaleRows, Value scaleCols) {
    auto units = scf::ParallelOp::create(b, ValueRange{idx(0), idx(0)},
                                         ValueRange{scaleRows, scaleCols},
                                         ValueRange{idx(1), idx(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(units.getBody()->getTerminator());
    Value row = units.getInductionVars()[0], col = units.getInductionVars()[1];
    ScaleMath math(b, scheme);
    Value factor = math.decodeScale(
        memref::LoadOp::create(b, scales, ValueRange{row, col}));
    if (math.hasGlobal() && global) {
      Value g = loadGlobal(global);
      factor = math.scaleKind() == ScaleKind::GlobalDecode
                   ? math.mulf(factor, g)
                   : math.divf(factor, g);
    }
    memref::StoreOp::create(b, factor, factors, ValueRange{row, col});
  }

  /// The global scale g of a [1, 1] (or [1]) buffer.
  Value loadGlobal(Value global) {
    int64_t rank = cast<MemRefType>(global.getType()).getRank();
    return memref::LoadOp::create(b, global, SmallVector<Value>(rank, idx(0)));
  }

  /// gamma of matmul::globalFactor: g, 1 / g (encode convention) or 1.
  Value globalFactor(const Scheme &scheme, Value global) {
    ScaleKind kind = scaleKindOf(scheme);
    if (kind == ScaleKind::GlobalDecode)
      return loadGlobal(global);
    if (kind == ScaleKind::GlobalEncode)
      return arith::DivFOp::create(b, f32(1.0f), loadGlobal(global));
    return f32(1.0f);
  }

  /// The factor of `operand` for its row `row` and K block `block` of
  /// `blockK` (a scale unit never straddles a block).
  Value blockFactor(const Operand &operand, Value row, Value block,
                    Value blockK) {
    const ScaleSpec &scale = operand.scheme.scale;
    Value scaleRow = row, scaleCol = idx(0);
    if (scale.granularity == Granularity::PerTensor)
      scaleRow = idx(0);
    else if (scale.granularity == Granularity::Block)
      scaleRow = arith::DivUIOp::create(b, row, idx(scale.blockRows));
    if (int64_t extent = matmul::scaleExtentAlongK(scale); extent > 0)
      scaleCol = arith::DivUIOp::create(b, mul(block, blockK), idx(extent));
    return memref::LoadOp::create(b, operand.factors,
                                  ValueRange{scaleRow, scaleCol});
  }

  /// p of K block `block` for x[row, :] and w[col, :]: an f32 fma chain, or
  /// an exact i32 sum converted once.
  Value emitBlockSum(const Operand &x, const Operand &w, Value row, Value col,
                     Value begin, Value end) {
    bool integer = x.scheme.element.isInt();
    Value zero = integer ? i32(0) : f32(0.0f);
    auto elements = scf::ForOp::create(b, begin, end, idx(1), ValueRange{zero});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(elements.getBody());
      Value index = elements.getInductionVar();
      Value xValue =
          memref::LoadOp::create(b, x.values, ValueRange{row, index});
      Value wValue =
          memref::LoadOp::create(b, w.values, ValueRange{col, index});
      Value partial = elements.getRegionIterArg(0);
      Value next =
          integer ? arith::AddIOp::create(
                        b, partial, arith::MulIOp::create(b, xValue, wValue))
                        .getResult()
                  : math::FmaOp::create(b, xValue, wValue, partial).getResult();
      scf::YieldOp::create(b, next);
    }
    Value sum = elements.getResult(0);
    if (integer)
      sum = arith::SIToFPOp::create(b, b.getF32Type(), sum);
    return sum;
  }
};

} // namespace

LogicalResult lowerQuantizedMatmul(ld::MatmulOp op, Value output) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  QuantizedMatmulEmitter emitter(b);
  Scheme weightScheme = op.getWeightScheme();
  Scheme actScheme = *op.getActivationScheme();
  Value x = attention::operandMemref(b, op.getX());
  Value bias = attention::operandMemref(b, op.getBias());
  Value m = kit::dimOf(b, x, 0), k = kit::dimOf(b, x, 1);
  Value n = kit::dimOf(b, output, 1);
  int64_t staticM = op.getM(), staticN = op.getN(), staticK = op.getK();
  const int64_t dyn = ShapedType::kDynamic;
  SmallVector<Value> scratch;
  auto alloc = [&](ArrayRef<int64_t> shape, Type element,
                   ArrayRef<Value> sizes) {
    Value buffer = allocScratch(b, shape, element, sizes);
    scratch.push_back(buffer);
    return buffer;
  };
  auto materialize = [&](Value tensor, Value buffer) {
    bufferization::MaterializeInDestinationOp::create(
        b, /*result=*/Type(), tensor, buffer, /*restrict=*/true,
        /*writable=*/true);
  };

  // X quantized by the activations' own quantize lowering. Its scales are
  // [1, 1] (per tensor), [M, 1] (per token) or [M, ceil(K / G)] (groups).
  auto isNibble = [](const Scheme &scheme) {
    return scheme.packing == Packing::Nibble;
  };
  int64_t staticCodeCols = ShapedType::isDynamic(staticK) ? dyn
                           : isNibble(actScheme)          ? (staticK + 1) / 2
                                                          : staticK;
  Value codeCols = isNibble(actScheme) ? emitter.ceilDiv(k, emitter.idx(2)) : k;
  const ScaleSpec &actScale = actScheme.scale;
  int64_t actExtent = matmul::scaleExtentAlongK(actScale);
  bool perTensor = actScale.granularity == Granularity::PerTensor;
  int64_t staticScaleRows = perTensor ? 1 : staticM;
  int64_t staticScaleCols = actExtent == 0 ? 1
                            : ShapedType::isDynamic(staticK)
                                ? dyn
                                : (staticK + actExtent - 1) / actExtent;
  Value scaleRows = perTensor ? emitter.idx(1) : m;
  Value scaleCols = actExtent == 0 ? emitter.idx(1)
                                   : emitter.ceilDiv(k, emitter.idx(actExtent));
  Type scaleElement = storedScaleTypeOf(b, actScale.type);
  bool actGlobal = actScale.globalScale != GlobalScale::None;
  Value xCodes = alloc({staticM, staticCodeCols}, b.getI8Type(), {m, codeCols});
  Value xScales = alloc({staticScaleRows, staticScaleCols}, scaleElement,
                        {scaleRows, scaleCols});
  Value xGlobal = actGlobal ? alloc({1, 1}, b.getF32Type(), {}) : Value();
  Type codesType =
      RankedTensorType::get({staticM, staticCodeCols}, b.getI8Type());
  Type scalesType =
      RankedTensorType::get({staticScaleRows, staticScaleCols}, scaleElement);
  Type globalType =
      actGlobal ? RankedTensorType::get({1, 1}, b.getF32Type()) : Type();
  // Behind prologues, X goes through the fused kernel's own body
  // (docs/fusion.md: the chain, then this quantize), which
  // lowbit-fusion-to-loops lowers next.
  Operation *quantize;
  if (std::vector<Prologue> chain = op.getPrologueChain(); !chain.empty()) {
    FusedQuantizeSignature signature;
    signature.codes = codesType;
    signature.scales = scalesType;
    signature.global = globalType;
    signature.scheme = op.getActSchemeAttr();
    quantize = buildFusedQuantize(b, b.getLoc(), chain, op.getX(),
                                  op.getPrologueInputs(), signature);
  } else {
    quantize = ld::QuantizeOp::create(
        b, codesType, scalesType, /*zeros=*/Type(), globalType, op.getX(),
        /*static_scales=*/Value(), /*static_zeros=*/Value(),
        /*static_global=*/Value(), op.getActSchemeAttr());
  }
  // The quantize's results: codes, scales, then the global scale.
  materialize(quantize->getResult(0), xCodes);
  materialize(quantize->getResult(1), xScales);
  if (actGlobal)
    materialize(quantize->getResult(2), xGlobal);

  // Both sides' code values and scale factors; block-scaled FP4 leaves the
  // global scales for after the K loop.
  bool globalsAfter = matmul::globalsAfterKLoop(weightScheme, actScheme);
  auto decodeOperand = [&](const Scheme &scheme, Value codes, Value scales,
                           Value global, int64_t staticRows, Value rows) {
    Type valueType =
        scheme.element.isInt() ? Type(b.getI32Type()) : Type(b.getF32Type());
    Operand operand{scheme, alloc({staticRows, staticK}, valueType, {rows, k}),
                    Value()};
    emitter.emitCodeValues(scheme, codes, operand.values, rows, k);
    auto scaleType = cast<MemRefType>(scales.getType());
    Value factorRows = kit::dimOf(b, scales, 0);
    Value factorCols = kit::dimOf(b, scales, 1);
    operand.factors =
        alloc(scaleType.getShape(), b.getF32Type(), {factorRows, factorCols});
    emitter.emitScaleFactors(scheme, scales, globalsAfter ? Value() : global,
                             operand.factors, factorRows, factorCols);
    return operand;
  };
  Operand xOperand =
      decodeOperand(actScheme, xCodes, xScales, xGlobal, staticM, m);
  Value weightGlobal = attention::operandMemref(b, op.getGlobal());
  Operand wOperand = decodeOperand(
      weightScheme, attention::operandMemref(b, op.getCodes()),
      attention::operandMemref(b, op.getScales()), weightGlobal, staticN, n);

  // The K blocks: B constant, or all of K (integer codes whose scales
  // cover K).
  bool wholeK = actScheme.element.isInt() &&
                matmul::scaleExtentAlongK(weightScheme.scale) == 0 &&
                actExtent == 0;
  Value blockK = wholeK
                     ? k
                     : emitter.idx(matmul::orderBlockK(weightScheme, actScheme,
                                                       /*k=*/1));
  Value numBlocks = emitter.ceilDiv(k, blockK);
  Type outputType = cast<MemRefType>(output.getType()).getElementType();
  auto units = scf::ParallelOp::create(
      b, ValueRange{emitter.idx(0), emitter.idx(0)}, ValueRange{m, n},
      ValueRange{emitter.idx(1), emitter.idx(1)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(units.getBody()->getTerminator());
    Value row = units.getInductionVars()[0], col = units.getInductionVars()[1];
    auto blocks =
        scf::ForOp::create(b, emitter.idx(0), numBlocks, emitter.idx(1),
                           ValueRange{emitter.f32(0.0f)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(blocks.getBody());
      Value block = blocks.getInductionVar();
      Value begin = emitter.mul(block, blockK);
      Value end = arith::MinUIOp::create(b, emitter.add(begin, blockK), k);
      Value partial =
          emitter.emitBlockSum(xOperand, wOperand, row, col, begin, end);
      // fx first, then fw: the IR reads in the order's order.
      Value xFactor = emitter.blockFactor(xOperand, row, block, blockK);
      Value wFactor = emitter.blockFactor(wOperand, col, block, blockK);
      Value factor = arith::MulFOp::create(b, xFactor, wFactor);
      scf::YieldOp::create(
          b, math::FmaOp::create(b, partial, factor, blocks.getRegionIterArg(0))
                 .getResult());
    }
    Value acc = blocks.getResult(0);
    if (globalsAfter && (xGlobal || weightGlobal))
      acc = arith::MulFOp::create(
          b, acc,
          arith::MulFOp::create(
              b, emitter.globalFactor(actScheme, xGlobal),
              emitter.globalFactor(weightScheme, weightGlobal)));
    if (bias)
      acc = arith::AddFOp::create(b, acc, loadBias(b, bias, col));
    memref::StoreOp::create(b, roundOutput(b, acc, outputType), output,
                            ValueRange{row, col});
  }
  for (Value buffer : scratch)
    memref::DeallocOp::create(b, buffer);
  return success();
}

} // namespace lowbit::matmul_loops

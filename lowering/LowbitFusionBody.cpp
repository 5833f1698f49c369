//===- LowbitFusionBody.cpp - Prologues as upstream ops on tensors --------===//
//
// Every f32 operation below is one of format/Prologue.cpp's, in the same
// order (docs/fusion.md); that is what makes the fused kernels bit-exact.
//
//===----------------------------------------------------------------------===//

#include "lowering/LowbitFusionBody.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <bit>

using namespace mlir;
namespace ld = lowbit::dialect;

namespace lowbit {
namespace {

Value f32Constant(OpBuilder &b, Location loc, float value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

Value toF32(OpBuilder &b, Location loc, Value value) {
  if (value.getType() == b.getF32Type())
    return value;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), value); // exact
}

/// 2^k as an f32 for k in [-126, 127]: the bits (k + 127) << 23.
Value powerOfTwo(OpBuilder &b, Location loc, Value exponent) {
  Value biased = arith::AddIOp::create(
      b, loc, exponent,
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(127)));
  Value bits = arith::ShLIOp::create(
      b, loc, biased,
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(23)));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

/// Builds one prologue stage on tensors.
class ChainBuilder {
public:
  ChainBuilder(OpBuilder &b, Location loc, Value input)
      : b(b), loc(loc), rows(dim(input, 0)) {}

  /// [rows, cols] of f32 from `stage`, an elementwise body over the
  /// elements of `operands` (each [rows, cols] or [1, cols]).
  Value
  elementwise(ValueRange operands, OpFoldResult cols, Type elementType,
              function_ref<Value(OpBuilder &, Location, ValueRange)> stage) {
    MLIRContext *context = b.getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
    AffineMap broadcast = AffineMap::get(
        2, 0, {getAffineConstantExpr(0, context), getAffineDimExpr(1, context)},
        context);
    SmallVector<AffineMap> maps;
    for (Value operand : operands)
      maps.push_back(cast<RankedTensorType>(operand.getType()).getDimSize(0) ==
                                 1 &&
                             !isStaticOne(rows)
                         ? broadcast
                         : identity);
    maps.push_back(identity);
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{rows, cols}, elementType);
    auto generic = linalg::GenericOp::create(
        b, loc, init.getType(), operands, init, maps,
        {utils::IteratorType::parallel, utils::IteratorType::parallel},
        [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
          Value result = stage(nested, nestedLoc, args.drop_back());
          linalg::YieldOp::create(nested, nestedLoc, result);
        });
    return generic.getResult(0);
  }

  /// RMSNorm of `values` ([rows, cols], any float type) with `weight`.
  Value rmsNorm(Value values, Value weight, float eps) {
    OpFoldResult cols = dim(values, 1);
    MLIRContext *context = b.getContext();
    // Sum of squares in the warp order (docs/fusion.md): 32 strided
    // partial sums, then the halving tree.
    Value colsIndex = getValueOrCreateConstantIndexOp(b, loc, cols);
    Value sum = rowSumOfSquares(values, colsIndex);
    // factor = 1 / sqrt(sum / float(cols) + eps), once per row.
    Value colsFloat = arith::SIToFPOp::create(
        b, loc, b.getF32Type(),
        arith::IndexCastOp::create(b, loc, b.getI64Type(), colsIndex));
    Value factorInit = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{rows}, b.getF32Type());
    AffineMap rowIdentity = AffineMap::getMultiDimIdentityMap(1, context);
    auto factor = linalg::GenericOp::create(
        b, loc, factorInit.getType(), sum, factorInit,
        ArrayRef<AffineMap>{rowIdentity, rowIdentity},
        {utils::IteratorType::parallel},
        [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
          Value mean =
              arith::DivFOp::create(nested, nestedLoc, args[0], colsFloat);
          Value shifted = arith::AddFOp::create(
              nested, nestedLoc, mean, f32Constant(nested, nestedLoc, eps));
          Value root = math::SqrtOp::create(nested, nestedLoc, shifted);
          linalg::YieldOp::create(
              nested, nestedLoc,
              arith::DivFOp::create(nested, nestedLoc,
                                    f32Constant(nested, nestedLoc, 1.0f), root)
                  .getResult());
        });
    // y = x * factor * weight.
    AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
    AffineMap perRow =
        AffineMap::get(2, 0, {getAffineDimExpr(0, context)}, context);
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{rows, cols}, b.getF32Type());
    AffineMap column = AffineMap::get(
        2, 0, {getAffineConstantExpr(0, context), getAffineDimExpr(1, context)},
        context);
    auto normalized = linalg::GenericOp::create(
        b, loc, init.getType(), ValueRange{values, factor.getResult(0), weight},
        init, ArrayRef<AffineMap>{identity, perRow, column, identity},
        {utils::IteratorType::parallel, utils::IteratorType::parallel},
        [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
          Value scaled = arith::MulFOp::create(
              nested, nestedLoc, toF32(nested, nestedLoc, args[0]), args[1]);
          linalg::YieldOp::create(
              nested, nestedLoc,
              arith::MulFOp::create(nested, nestedLoc, scaled,
                                    toF32(nested, nestedLoc, args[2]))
                  .getResult());
        });
    return normalized.getResult(0);
  }

  /// [rows] f32: each row's sum of squares in the warp order. A
  /// [rows, 32] generic marked kLanePartialsAttr holds the partials: it
  /// iterates (row, lane, k), k = 0 .. ceil(cols / 32) - 1 a reduction,
  /// and adds column 32 k + lane when it exists (k's extent comes from an
  /// unread [K] operand). A [rows] generic then adds the partials in the
  /// halving tree p[i] = p[i] + p[i + h], h = 16, 8, 4, 2, 1.
  Value rowSumOfSquares(Value values, Value cols) {
    MLIRContext *context = b.getContext();
    int64_t lanes = int64_t(kRowSumLanes);
    Value lanesIndex = arith::ConstantIndexOp::create(b, loc, lanes);
    Value trips = arith::DivUIOp::create(
        b, loc,
        arith::AddIOp::create(
            b, loc, cols, arith::ConstantIndexOp::create(b, loc, lanes - 1)),
        lanesIndex);
    Value tripExtent = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{trips}, b.getF32Type());
    Value partialInit = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(lanes)},
        b.getF32Type());
    Value partialZero =
        linalg::FillOp::create(b, loc, f32Constant(b, loc, 0.0f), partialInit)
            .getResult(0);
    AffineMap tripMap =
        AffineMap::get(3, 0, {getAffineDimExpr(2, context)}, context);
    AffineMap laneMap = AffineMap::get(
        3, 0, {getAffineDimExpr(0, context), getAffineDimExpr(1, context)},
        context);
    auto partials = linalg::GenericOp::create(
        b, loc, partialZero.getType(), tripExtent, partialZero,
        ArrayRef<AffineMap>{tripMap, laneMap},
        {utils::IteratorType::parallel, utils::IteratorType::parallel,
         utils::IteratorType::reduction},
        [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
          Value row = linalg::IndexOp::create(nested, nestedLoc, 0);
          Value lane = linalg::IndexOp::create(nested, nestedLoc, 1);
          Value trip = linalg::IndexOp::create(nested, nestedLoc, 2);
          Value col = arith::AddIOp::create(
              nested, nestedLoc,
              arith::MulIOp::create(
                  nested, nestedLoc, trip,
                  arith::ConstantIndexOp::create(nested, nestedLoc, lanes)),
              lane);
          Value exists = arith::CmpIOp::create(
              nested, nestedLoc, arith::CmpIPredicate::ult, col, cols);
          // A missing column reads column 0 and adds nothing.
          Value readCol = arith::SelectOp::create(
              nested, nestedLoc, exists, col,
              arith::ConstantIndexOp::create(nested, nestedLoc, 0));
          Value value =
              toF32(nested, nestedLoc,
                    tensor::ExtractOp::create(nested, nestedLoc, values,
                                              ValueRange{row, readCol}));
          Value sum = arith::AddFOp::create(
              nested, nestedLoc, args[1],
              arith::MulFOp::create(nested, nestedLoc, value, value));
          linalg::YieldOp::create(
              nested, nestedLoc,
              arith::SelectOp::create(nested, nestedLoc, exists, sum, args[1])
                  .getResult());
        });
    partials->setAttr(kLanePartialsAttr, b.getUnitAttr());
    Value sumInit = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{rows}, b.getF32Type());
    AffineMap rowIdentity = AffineMap::getMultiDimIdentityMap(1, context);
    Value partialTensor = partials.getResult(0);
    auto tree = linalg::GenericOp::create(
        b, loc, sumInit.getType(), ValueRange{}, sumInit,
        ArrayRef<AffineMap>{rowIdentity}, {utils::IteratorType::parallel},
        [&](OpBuilder &nested, Location nestedLoc, ValueRange) {
          Value row = linalg::IndexOp::create(nested, nestedLoc, 0);
          SmallVector<Value> partial;
          for (int64_t lane = 0; lane < lanes; ++lane)
            partial.push_back(tensor::ExtractOp::create(
                nested, nestedLoc, partialTensor,
                ValueRange{row, arith::ConstantIndexOp::create(
                                    nested, nestedLoc, lane)}));
          for (int64_t half = lanes / 2; half >= 1; half /= 2)
            for (int64_t lane = 0; lane < half; ++lane)
              partial[lane] = arith::AddFOp::create(
                  nested, nestedLoc, partial[lane], partial[lane + half]);
          linalg::YieldOp::create(nested, nestedLoc, partial[0]);
        });
    return tree.getResult(0);
  }

  /// The normalized Walsh-Hadamard transform of each block of `block`
  /// columns: log2(block) butterfly stages, then the 1/sqrt(block) factor.
  Value hadamard(Value values, int64_t block) {
    OpFoldResult cols = dim(values, 1);
    for (int64_t half = 1; half < block; half *= 2) {
      Value previous = values;
      values = elementwise(
          {}, cols, b.getF32Type(),
          [&](OpBuilder &nested, Location nestedLoc, ValueRange) {
            Value row = linalg::IndexOp::create(nested, nestedLoc, 0);
            Value col = linalg::IndexOp::create(nested, nestedLoc, 1);
            Value halfIndex =
                arith::ConstantIndexOp::create(nested, nestedLoc, half);
            Value zero = arith::ConstantIndexOp::create(nested, nestedLoc, 0);
            Value upper = arith::CmpIOp::create(
                nested, nestedLoc, arith::CmpIPredicate::ne,
                arith::AndIOp::create(nested, nestedLoc, col, halfIndex), zero);
            // (a, b) = (v[c], v[c + h]) in the lower half of a 2h-chunk,
            // (v[c - h], v[c]) in the upper half.
            Value first = arith::SelectOp::create(
                nested, nestedLoc, upper,
                arith::SubIOp::create(nested, nestedLoc, col, halfIndex), col);
            Value second =
                arith::AddIOp::create(nested, nestedLoc, first, halfIndex);
            Value a = tensor::ExtractOp::create(nested, nestedLoc, previous,
                                                ValueRange{row, first});
            Value bValue = tensor::ExtractOp::create(
                nested, nestedLoc, previous, ValueRange{row, second});
            a = toF32(nested, nestedLoc, a);
            bValue = toF32(nested, nestedLoc, bValue);
            Value sum = arith::AddFOp::create(nested, nestedLoc, a, bValue);
            Value difference =
                arith::SubFOp::create(nested, nestedLoc, a, bValue);
            return arith::SelectOp::create(nested, nestedLoc, upper, difference,
                                           sum)
                .getResult();
          });
      values.getDefiningOp()->setAttr(kHadamardHalfAttr,
                                      b.getI64IntegerAttr(half));
    }
    float scale = hadamardScale(block);
    return elementwise(
        values, cols, b.getF32Type(),
        [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
          return arith::MulFOp::create(nested, nestedLoc,
                                       toF32(nested, nestedLoc, args[0]),
                                       f32Constant(nested, nestedLoc, scale))
              .getResult();
        });
  }

  OpFoldResult dim(Value tensor, int64_t index) {
    auto type = cast<RankedTensorType>(tensor.getType());
    if (!type.isDynamicDim(index))
      return b.getIndexAttr(type.getDimSize(index));
    return tensor::DimOp::create(b, loc, tensor, index).getResult();
  }

  OpBuilder &b;
  Location loc;
  OpFoldResult rows;

private:
  static bool isStaticOne(OpFoldResult size) {
    std::optional<int64_t> value = getConstantIntValue(size);
    return value && *value == 1;
  }
};

} // namespace

Value emitPrologueExp(OpBuilder &b, Location loc, Value x) {
  // prologueExp, operation for operation.
  auto constant = [&](float value) { return f32Constant(b, loc, value); };
  Value isNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  using C = PrologueExpConstants;
  Value clamped = arith::MinimumFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, x, constant(C::kLowest)),
      constant(C::kHighest));
  Value n = math::RoundEvenOp::create(
      b, loc, arith::MulFOp::create(b, loc, clamped, constant(C::kLog2E)));
  Value r = arith::SubFOp::create(
      b, loc, clamped, arith::MulFOp::create(b, loc, n, constant(C::kLn2High)));
  r = arith::SubFOp::create(
      b, loc, r, arith::MulFOp::create(b, loc, n, constant(C::kLn2Low)));
  Value p = constant(C::kCoefficients[0]);
  for (float coefficient : ArrayRef<float>(C::kCoefficients).drop_front())
    p = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, p, r),
                              constant(coefficient));
  Value exponent = arith::FPToSIOp::create(b, loc, b.getI32Type(), n);
  Value first = arith::DivSIOp::create(
      b, loc, exponent,
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(2)));
  Value second = arith::SubIOp::create(b, loc, exponent, first);
  Value result = arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, p, powerOfTwo(b, loc, first)),
      powerOfTwo(b, loc, second));
  return arith::SelectOp::create(b, loc, isNan, x, result);
}

Value emitPrologueSilu(OpBuilder &b, Location loc, Value x) {
  Value negated = arith::NegFOp::create(b, loc, x);
  Value denominator = arith::AddFOp::create(b, loc, f32Constant(b, loc, 1.0f),
                                            emitPrologueExp(b, loc, negated));
  return arith::DivFOp::create(b, loc, x, denominator);
}

Value emitPrologueExpr(OpBuilder &b, Location loc, const PrologueExpr &expr,
                       Value x) {
  using Op = PrologueExpr::Op;
  auto at = [&](size_t index) {
    return emitPrologueExpr(b, loc, expr.operands[index], x);
  };
  switch (expr.op) {
  case Op::X:
    return x;
  case Op::Constant:
    return f32Constant(b, loc, expr.value);
  case Op::Neg:
    return arith::NegFOp::create(b, loc, at(0));
  case Op::Add:
    return arith::AddFOp::create(b, loc, at(0), at(1));
  case Op::Sub:
    return arith::SubFOp::create(b, loc, at(0), at(1));
  case Op::Mul:
    return arith::MulFOp::create(b, loc, at(0), at(1));
  case Op::Div:
    return arith::DivFOp::create(b, loc, at(0), at(1));
  case Op::Min:
    return arith::MinimumFOp::create(b, loc, at(0), at(1));
  case Op::Max:
    return arith::MaximumFOp::create(b, loc, at(0), at(1));
  case Op::Abs:
    return math::AbsFOp::create(b, loc, at(0));
  case Op::Sqrt:
    return math::SqrtOp::create(b, loc, at(0));
  case Op::Exp:
    return emitPrologueExp(b, loc, at(0));
  case Op::Silu:
    return emitPrologueSilu(b, loc, at(0));
  case Op::Sigmoid: {
    Value denominator = arith::AddFOp::create(
        b, loc, f32Constant(b, loc, 1.0f),
        emitPrologueExp(b, loc, arith::NegFOp::create(b, loc, at(0))));
    return arith::DivFOp::create(b, loc, f32Constant(b, loc, 1.0f),
                                 denominator);
  }
  }
  return x;
}

ld::FusedOp buildFusedQuantize(OpBuilder &b, Location loc,
                               ArrayRef<Prologue> chain, Value input,
                               ValueRange sideInputs,
                               const FusedQuantizeSignature &signature) {
  SmallVector<Value> operands = {input};
  llvm::append_range(operands, sideInputs);
  for (Value extra :
       {signature.staticScales, signature.staticZeros, signature.staticGlobal})
    if (extra)
      operands.push_back(extra);
  bool writesResidual = llvm::any_of(chain, [](const Prologue &prologue) {
    return prologueWritesResidual(prologue.kind);
  });
  SmallVector<Type> resultTypes;
  for (Type type :
       {signature.codes, signature.scales, signature.zeros, signature.global})
    if (type)
      resultTypes.push_back(type);
  if (writesResidual)
    resultTypes.push_back(input.getType());

  auto fused = ld::FusedOp::create(b, loc, resultTypes, operands,
                                   writesResidual ? 1 : 0);
  Block *body = new Block();
  fused.getBody().push_back(body);
  for (Value operand : operands)
    body->addArgument(operand.getType(), loc);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);

  Value values = body->getArgument(0);
  Type valueType = cast<RankedTensorType>(values.getType()).getElementType();
  unsigned nextArgument = 1;
  auto takeSide = [&]() { return body->getArgument(nextArgument++); };
  ChainBuilder builder(b, loc, values);
  Value residual;
  for (const Prologue &prologue : chain) {
    switch (prologue.kind) {
    case PrologueKind::RmsNorm:
      values = builder.rmsNorm(values, takeSide(), prologue.eps);
      break;
    case PrologueKind::AddRmsNorm: {
      Value residualIn = takeSide(), weight = takeSide();
      // h = x + residual in f32, stored in the kernel's dtype (RNE).
      residual = builder.elementwise(
          {values, residualIn}, builder.dim(values, 1), valueType,
          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            Value sum = arith::AddFOp::create(
                nested, nestedLoc, toF32(nested, nestedLoc, args[0]),
                toF32(nested, nestedLoc, args[1]));
            if (valueType == nested.getF32Type())
              return sum;
            return arith::TruncFOp::create(nested, nestedLoc, valueType, sum)
                .getResult();
          });
      values = builder.rmsNorm(residual, weight, prologue.eps);
      break;
    }
    case PrologueKind::SiluMul: {
      OpFoldResult width = builder.dim(values, 1);
      OpFoldResult cols;
      if (std::optional<int64_t> staticWidth = getConstantIntValue(width))
        cols = b.getIndexAttr(*staticWidth / 2);
      else
        cols = arith::DivUIOp::create(b, loc, cast<Value>(width),
                                      arith::ConstantIndexOp::create(b, loc, 2))
                   .getResult();
      // The halves are read with tensor.extract at (r, c) and (r, c + cols):
      // no strided views, so the loops index the input buffer directly.
      Value input = values;
      Value colsValue = getValueOrCreateConstantIndexOp(b, loc, cols);
      values = builder.elementwise(
          {}, cols, b.getF32Type(),
          [&](OpBuilder &nested, Location nestedLoc, ValueRange) {
            Value row = linalg::IndexOp::create(nested, nestedLoc, 0);
            Value col = linalg::IndexOp::create(nested, nestedLoc, 1);
            Value upCol =
                arith::AddIOp::create(nested, nestedLoc, col, colsValue);
            Value gate = tensor::ExtractOp::create(nested, nestedLoc, input,
                                                   ValueRange{row, col});
            Value up = tensor::ExtractOp::create(nested, nestedLoc, input,
                                                 ValueRange{row, upCol});
            Value silu = emitPrologueSilu(nested, nestedLoc,
                                          toF32(nested, nestedLoc, gate));
            return arith::MulFOp::create(nested, nestedLoc, silu,
                                         toF32(nested, nestedLoc, up))
                .getResult();
          });
      break;
    }
    case PrologueKind::Smooth: {
      Value smooth = takeSide();
      values = builder.elementwise(
          {values, smooth}, builder.dim(values, 1), b.getF32Type(),
          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            return arith::DivFOp::create(nested, nestedLoc,
                                         toF32(nested, nestedLoc, args[0]),
                                         toF32(nested, nestedLoc, args[1]))
                .getResult();
          });
      break;
    }
    case PrologueKind::Hadamard: {
      int64_t block = prologue.block;
      if (block == 0)
        block = cast<RankedTensorType>(values.getType()).getDimSize(1);
      values = builder.hadamard(values, block);
      break;
    }
    case PrologueKind::Map:
      values = builder.elementwise(
          {values}, builder.dim(values, 1), b.getF32Type(),
          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            return emitPrologueExpr(nested, nestedLoc, prologue.expr,
                                    toF32(nested, nestedLoc, args[0]));
          });
      break;
    }
  }
  auto argumentOrNull = [&](Value outer) {
    return outer ? takeSide() : Value();
  };
  Value staticScales = argumentOrNull(signature.staticScales);
  Value staticZeros = argumentOrNull(signature.staticZeros);
  Value staticGlobal = argumentOrNull(signature.staticGlobal);
  auto quantize = ld::QuantizeOp::create(
      b, loc, signature.codes, signature.scales, signature.zeros,
      signature.global, values, staticScales, staticZeros, staticGlobal,
      signature.scheme);
  SmallVector<Value> yielded(quantize->getResults());
  if (residual)
    yielded.push_back(residual);
  ld::YieldOp::create(b, loc, yielded);
  return fused;
}

} // namespace lowbit

//===- LowbitNativeConversions.cpp - lowbit.encode/decode -> NVVM cvt -----===//
//
// Replaces the scalar conversions that the target chip can do in one
// instruction (lowering/NativeConversionTable.h) with NVVM ops; everything
// else is left for lowbit-expand-codecs. The table, not this file, decides
// which conversions are native, so this pass never emits an instruction the
// chip lacks (LLVM would abort the process on it).
//
// Packing, which is where native and codec paths could disagree:
//   - the f32x2 -> f8x2/f6x2/f4x2 cvt puts its FIRST operand `a` in the HIGH
//     byte (nibble). A scalar is passed as `b` (low byte) with a = 0; a pair
//     [x0, x1] is passed as a = x1, b = x0 so that element 0 lands in the
//     low byte, which is element 0 of the vector<2xi8> result;
//   - a scalar decode broadcasts its code into both halves of the packed
//     source, so which half the instruction reads first cannot matter; a
//     pair [c0, c1] is packed with c0 in the low byte (nibble), which the
//     f16x2 cvt converts into the low half (the same order as the encode).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "dialect/LowbitOps.h"
#include "target/NativeConversionTable.h"
#include "target/Target.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "lowbit-native-cvt"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITNATIVECONVERSIONS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
using lowbit::NativeConversion;
using lowbit::NativeInstruction;

namespace {

/// The MLIR float type NVVM's convert ops name as their destination/source.
Type nvvmFormatType(MLIRContext *context, std::string_view formatName) {
  Builder builder(context);
  if (formatName == "e4m3" || formatName == "ue4m3")
    return builder.getType<Float8E4M3FNType>();
  if (formatName == "e5m2")
    return builder.getType<Float8E5M2Type>();
  if (formatName == "e8m0")
    return builder.getType<Float8E8M0FNUType>();
  if (formatName == "e2m3")
    return builder.getType<Float6E2M3FNType>();
  if (formatName == "e3m2")
    return builder.getType<Float6E3M2FNType>();
  if (formatName == "e2m1")
    return builder.getType<Float4E2M1FNType>();
  return {};
}

Value i8Const(ImplicitLocOpBuilder &b, int value) {
  return arith::ConstantOp::create(b, b.getI8IntegerAttr(value));
}

/// Converts the pair (hi, lo) with one cvt; returns the codes as
/// vector<2xi8> = [code(lo), code(hi)].
Value encodePair(ImplicitLocOpBuilder &b, const NativeConversion &row, Value hi,
                 Value lo) {
  Type formatType = nvvmFormatType(b.getContext(), row.formatName);
  auto pairType = VectorType::get({2}, b.getI8Type());
  switch (row.instruction) {
  case NativeInstruction::F32x2ToF8x2: {
    NVVM::FPRoundingMode rounding =
        row.rounding == lowbit::Rounding::TowardZero ? NVVM::FPRoundingMode::RZ
        : row.rounding == lowbit::Rounding::TowardPosInf
            ? NVVM::FPRoundingMode::RP
            : NVVM::FPRoundingMode::RN;
    return NVVM::ConvertF32x2ToF8x2Op::create(b, pairType, hi, lo, rounding,
                                              NVVM::SaturationMode::SATFINITE,
                                              /*relu=*/false, formatType);
  }
  case NativeInstruction::F32x2ToF6x2:
    return NVVM::ConvertF32x2ToF6x2Op::create(b, pairType, hi, lo,
                                              /*relu=*/false, formatType);
  case NativeInstruction::F32x2ToF4x2: {
    // One byte: hi in the high nibble, lo in the low nibble.
    Value packed = NVVM::ConvertF32x2ToF4x2Op::create(
        b, b.getI8Type(), hi, lo, /*relu=*/false, formatType);
    Value low = arith::AndIOp::create(b, packed, i8Const(b, 0x0f));
    Value high = arith::ShRUIOp::create(b, packed, i8Const(b, 4));
    return vector::FromElementsOp::create(b, pairType, ValueRange{low, high});
  }
  default:
    return {};
  }
}

/// Unsigned formats encode |x|: clear the sign bit (a NaN stays NaN).
Value magnitudeOf(ImplicitLocOpBuilder &b, Value value) {
  Type bitsType = b.getI32Type();
  if (auto vectorType = dyn_cast<VectorType>(value.getType()))
    bitsType = VectorType::get(vectorType.getShape(), b.getI32Type());
  Value bits = arith::BitcastOp::create(b, bitsType, value);
  Attribute mask = b.getI32IntegerAttr(0x7fffffff);
  if (auto vectorType = dyn_cast<VectorType>(bitsType))
    mask = DenseElementsAttr::get(vectorType, mask);
  Value cleared = arith::AndIOp::create(
      b, bits, arith::ConstantOp::create(b, cast<TypedAttr>(mask)));
  return arith::BitcastOp::create(b, value.getType(), cleared);
}

void rewriteEncode(lowbit::dialect::EncodeOp op, const NativeConversion &row) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Value input = op.getInput();
  if (row.encodeMagnitude)
    input = magnitudeOf(b, input);
  auto vectorType = dyn_cast<VectorType>(input.getType());
  if (!vectorType) {
    Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
    Value pair = encodePair(b, row, /*hi=*/zero, /*lo=*/input);
    Value code = vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{0});
    op.replaceAllUsesWith(code);
    op.erase();
    return;
  }
  // Pairs of elements; an odd last element is paired with 0.
  int64_t count = vectorType.getNumElements();
  SmallVector<Value> codes;
  Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
  for (int64_t index = 0; index < count; index += 2) {
    Value lo = vector::ExtractOp::create(b, input, ArrayRef<int64_t>{index});
    Value hi = index + 1 < count ? Value(vector::ExtractOp::create(
                                       b, input, ArrayRef<int64_t>{index + 1}))
                                 : zero;
    Value pair = encodePair(b, row, hi, lo);
    codes.push_back(vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{0}));
    if (index + 1 < count)
      codes.push_back(vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{1}));
  }
  Value result =
      vector::FromElementsOp::create(b, cast<VectorType>(op.getType()), codes);
  op.replaceAllUsesWith(result);
  op.erase();
}

/// For a NaN code the f16x2 cvt gives the canonical f16 NaN, and widening
/// it to f32 keeps its payload (0x7fffe000) and loses the code's sign. The
/// codec and the reference quantizer give 0x7fc00000 with the code's sign
/// (docs/numerics.md), so a NaN is rebuilt here: every backend then writes
/// the same bytes. Only the FP8 rows have NaN codes. A decode marked
/// kDecodeAnyNanAttr keeps the cvt's NaN (its consumer needs only NaN-ness).
Value matchCodecNan(ImplicitLocOpBuilder &b, const NativeConversion &row,
                    int formatBits, Value code, Value value, bool anyNan) {
  if (row.instruction != NativeInstruction::F8x2ToF16x2 || anyNan)
    return value;
  auto i32 = [&](uint32_t constant) -> Value {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(int32_t(constant)));
  };
  Value codeBits = arith::ExtUIOp::create(b, b.getI32Type(), code);
  Value sign = arith::ShLIOp::create(
      b,
      arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, codeBits, i32(formatBits - 1)), i32(1)),
      i32(31));
  Value nan = arith::BitcastOp::create(
      b, b.getF32Type(), arith::OrIOp::create(b, i32(0x7fc00000u), sign));
  Value isNan =
      arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, value, value);
  return arith::SelectOp::create(b, isNan, nan, value);
}

/// Decodes one i8 code to f32 through the chip's f16x2 cvt.
Value decodeScalar(ImplicitLocOpBuilder &b, const NativeConversion &row,
                   int formatBits, Value code, bool anyNan) {
  Type formatType = nvvmFormatType(b.getContext(), row.formatName);
  auto halfPair = VectorType::get({2}, b.getF16Type());
  auto bytePair = VectorType::get({2}, b.getI8Type());
  // Only the format's low bits are the code.
  if (formatBits < 8)
    code = arith::AndIOp::create(b, code, i8Const(b, (1 << formatBits) - 1));
  Value halves;
  switch (row.instruction) {
  case NativeInstruction::F8x2ToF16x2:
    halves = NVVM::ConvertF8x2ToF16x2Op::create(
        b, halfPair, vector::BroadcastOp::create(b, bytePair, code),
        /*relu=*/false, formatType);
    break;
  case NativeInstruction::F6x2ToF16x2:
    halves = NVVM::ConvertF6x2ToF16x2Op::create(
        b, halfPair, vector::BroadcastOp::create(b, bytePair, code),
        /*relu=*/false, formatType);
    break;
  case NativeInstruction::F4x2ToF16x2: {
    Value both = arith::OrIOp::create(
        b, code, arith::ShLIOp::create(b, code, i8Const(b, 4)));
    halves = NVVM::ConvertF4x2ToF16x2Op::create(b, halfPair, both,
                                                /*relu=*/false, formatType);
    break;
  }
  default:
    return {};
  }
  Value half = vector::ExtractOp::create(b, halves, ArrayRef<int64_t>{0});
  // Every value of these formats is an f16, and f16 -> f32 is exact.
  return matchCodecNan(b, row, formatBits, code,
                       arith::ExtFOp::create(b, b.getF32Type(), half), anyNan);
}

/// Decodes two i8 codes with one f16x2 cvt: the first code in the low byte
/// (nibble), which the cvt converts into the low half, element 0.
std::pair<Value, Value> decodePair(ImplicitLocOpBuilder &b,
                                   const NativeConversion &row, int formatBits,
                                   Value first, Value second, bool anyNan) {
  Type formatType = nvvmFormatType(b.getContext(), row.formatName);
  auto halfPair = VectorType::get({2}, b.getF16Type());
  auto bytePair = VectorType::get({2}, b.getI8Type());
  if (formatBits < 8) {
    Value mask = i8Const(b, (1 << formatBits) - 1);
    first = arith::AndIOp::create(b, first, mask);
    second = arith::AndIOp::create(b, second, mask);
  }
  Value halves;
  switch (row.instruction) {
  case NativeInstruction::F8x2ToF16x2:
    halves = NVVM::ConvertF8x2ToF16x2Op::create(
        b, halfPair,
        vector::FromElementsOp::create(b, bytePair, ValueRange{first, second}),
        /*relu=*/false, formatType);
    break;
  case NativeInstruction::F6x2ToF16x2:
    halves = NVVM::ConvertF6x2ToF16x2Op::create(
        b, halfPair,
        vector::FromElementsOp::create(b, bytePair, ValueRange{first, second}),
        /*relu=*/false, formatType);
    break;
  case NativeInstruction::F4x2ToF16x2: {
    Value both = arith::OrIOp::create(
        b, first, arith::ShLIOp::create(b, second, i8Const(b, 4)));
    halves = NVVM::ConvertF4x2ToF16x2Op::create(b, halfPair, both,
                                                /*relu=*/false, formatType);
    break;
  }
  default:
    return {decodeScalar(b, row, formatBits, first, anyNan),
            decodeScalar(b, row, formatBits, second, anyNan)};
  }
  // Every value of these formats is an f16, and f16 -> f32 is exact.
  auto toF32 = [&](int64_t index, Value code) -> Value {
    Value half = vector::ExtractOp::create(b, halves, ArrayRef<int64_t>{index});
    return matchCodecNan(b, row, formatBits, code,
                         arith::ExtFOp::create(b, b.getF32Type(), half),
                         anyNan);
  };
  return {toF32(0, first), toF32(1, second)};
}

void rewriteDecode(lowbit::dialect::DecodeOp op, const NativeConversion &row) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  int formatBits = op.getModelFormat().bits();
  bool anyNan = op->hasAttr(lowbit::kDecodeAnyNanAttr);
  Value input = op.getInput();
  auto vectorType = dyn_cast<VectorType>(input.getType());
  if (!vectorType) {
    op.replaceAllUsesWith(decodeScalar(b, row, formatBits, input, anyNan));
    op.erase();
    return;
  }
  SmallVector<Value> values;
  int64_t count = vectorType.getNumElements();
  for (int64_t index = 0; index < count; index += 2) {
    Value first = vector::ExtractOp::create(b, input, ArrayRef<int64_t>{index});
    if (index + 1 == count) {
      values.push_back(decodeScalar(b, row, formatBits, first, anyNan));
      continue;
    }
    Value second =
        vector::ExtractOp::create(b, input, ArrayRef<int64_t>{index + 1});
    auto [low, high] = decodePair(b, row, formatBits, first, second, anyNan);
    values.push_back(low);
    values.push_back(high);
  }
  op.replaceAllUsesWith(
      vector::FromElementsOp::create(b, cast<VectorType>(op.getType()), values)
          .getResult());
  op.erase();
}

struct LowbitNativeConversions
    : lowbit::impl::LowbitNativeConversionsBase<LowbitNativeConversions> {
  using Base::Base;

  void runOnOperation() override {
    std::string error;
    const lowbit::ChipInfo *chipInfo = lowbit::lookupChip(chip);
    if (!lowbit::validateTarget(chip, ptxVersion, &error)) {
      getOperation()->emitError() << "lowbit-native-cvt: " << error;
      return signalPassFailure();
    }
    lowbit::Target target{lowbit::Target::Kind::Nvidia, chip,
                          ptxVersion ? unsigned(ptxVersion)
                                     : lowbit::defaultPtxVersion(*chipInfo)};
    SmallVector<Operation *> conversions;
    getOperation()->walk([&](Operation *op) {
      if (isa<lowbit::dialect::EncodeOp, lowbit::dialect::DecodeOp>(op))
        conversions.push_back(op);
    });
    for (Operation *op : conversions) {
      if (auto encode = dyn_cast<lowbit::dialect::EncodeOp>(op)) {
        lowbit::EncodeOptions options = encode.getEncodeOptions();
        const NativeConversion *row =
            lowbit::findNativeConversion(target, encode.getModelFormat(),
                                         lowbit::ConversionDirection::Encode,
                                         options.rounding, options.saturate);
        LLVM_DEBUG(llvm::dbgs() << "encode " << encode.getModelFormat().name()
                                << (row ? ": native " : ": codec ")
                                << (row ? row->ptxMnemonic : "") << "\n");
        if (row)
          rewriteEncode(encode, *row);
        continue;
      }
      auto decode = cast<lowbit::dialect::DecodeOp>(op);
      const NativeConversion *row = lowbit::findNativeConversion(
          target, decode.getModelFormat(), lowbit::ConversionDirection::Decode,
          lowbit::Rounding::NearestEven, true);
      if (row)
        rewriteDecode(decode, *row);
    }
  }
};

} // namespace

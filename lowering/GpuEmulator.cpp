//===- GpuEmulator.cpp - GPU kernels -> host module -> ORC JIT ------------===//
//
// The steps of buildEmulatorHostModule, in order: clone the gpu.module's
// body into a fresh module; strip address spaces (shared memory globals are
// laid out first, then their addresses become lowbit_emu_shared calls);
// rewrite the NVVM ops into runtime calls; refuse what is left; instrument
// memory accesses; add one entry wrapper per kernel.
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuEmulator.h"

#include "lowering/CpuTail.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace lowbit {

namespace {

using emulator::CvtFormat;
using emulator::LdMatrixVariant;
using emulator::MmaVariant;
using emulator::SpecialRegister;
using emulator::WarpOpKind;

llvm::Error emulatorError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "GPU emulator: " + message);
}

std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << "'" << op->getName() << "'";
  if (auto function = op->getParentOfType<LLVM::LLVMFuncOp>())
    stream << " in @" << function.getSymName();
  return text;
}

const llvm::StringMap<SpecialRegister> &specialRegisters() {
  static const llvm::StringMap<SpecialRegister> table = {
      {"nvvm.read.ptx.sreg.tid.x", SpecialRegister::TidX},
      {"nvvm.read.ptx.sreg.tid.y", SpecialRegister::TidY},
      {"nvvm.read.ptx.sreg.tid.z", SpecialRegister::TidZ},
      {"nvvm.read.ptx.sreg.ntid.x", SpecialRegister::NtidX},
      {"nvvm.read.ptx.sreg.ntid.y", SpecialRegister::NtidY},
      {"nvvm.read.ptx.sreg.ntid.z", SpecialRegister::NtidZ},
      {"nvvm.read.ptx.sreg.ctaid.x", SpecialRegister::CtaidX},
      {"nvvm.read.ptx.sreg.ctaid.y", SpecialRegister::CtaidY},
      {"nvvm.read.ptx.sreg.ctaid.z", SpecialRegister::CtaidZ},
      {"nvvm.read.ptx.sreg.nctaid.x", SpecialRegister::NctaidX},
      {"nvvm.read.ptx.sreg.nctaid.y", SpecialRegister::NctaidY},
      {"nvvm.read.ptx.sreg.nctaid.z", SpecialRegister::NctaidZ},
      {"nvvm.read.ptx.sreg.laneid", SpecialRegister::LaneId},
      {"nvvm.read.ptx.sreg.warpsize", SpecialRegister::WarpSize},
  };
  return table;
}

/// The runtime functions' LLVM signatures (Simt.cpp defines them).
struct RuntimeDeclarations {
  explicit RuntimeDeclarations(ModuleOp module) : module(module) {}

  LLVM::LLVMFuncOp get(StringRef name) {
    if (auto found = functions.find(name); found != functions.end())
      return found->second;
    MLIRContext *context = module.getContext();
    Type i32 = IntegerType::get(context, 32),
         i64 = IntegerType::get(context, 64);
    Type f32 = Float32Type::get(context),
         ptr = LLVM::LLVMPointerType::get(context);
    Type none = LLVM::LLVMVoidType::get(context);
    static const llvm::StringMap<int> index = {
        {"lowbit_emu_sreg", 0},
        {"lowbit_emu_barrier", 1},
        {"lowbit_emu_warp_op", 2},
        {"lowbit_emu_shared", 3},
        {"lowbit_emu_access", 4},
        {"lowbit_emu_cvt_f32x2", 5},
        {"lowbit_emu_cvt_to_half2", 6},
        {"lowbit_emu_cvt_half2_to_f8x2", 7},
        {"lowbit_emu_cvt_f32x2_to_half2", 8},
        {"lowbit_emu_narrow_f32", 9},
        {"lowbit_emu_widen_to_f32", 10},
        {"lowbit_emu_mma", 11},
        {"lowbit_emu_fragment", 12},
        {"lowbit_emu_ldmatrix", 13},
        {"lowbit_emu_cp_async", 14},
        {"lowbit_emu_cp_async_commit", 15},
        {"lowbit_emu_cp_async_wait", 16}};
    SmallVector<std::pair<Type, SmallVector<Type>>> signatures = {
        {i32, {i32}},
        {none, {i32}},
        {i64, {i32, i32, i32, i32, i32}},
        {ptr, {i64}},
        {none, {ptr, i64, i64, i32}},
        {i32, {f32, f32, i32, i32, i32, i32}},
        {i32, {i32, i32, i32, i32}},
        {i32, {i32, i32, i32, i32, i32, i32}},
        {i32, {f32, f32, i32, i32, i32}},
        {i32, {f32, i32}},
        {f32, {i32, i32}},
        {i32,
         {i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32,
          i32}},
        {i32, {i32}},
        {i32, {i32, i32, ptr}},
        {none, {ptr, ptr, i32, i32}},
        {none, {}},
        {none, {i32}}};
    auto &[result, params] = signatures[index.lookup(name)];
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto function =
        LLVM::LLVMFuncOp::create(builder, module.getLoc(), name,
                                 LLVM::LLVMFunctionType::get(result, params));
    // Two mma or ldmatrix sites must stay two calls (the site check,
    // docs/emulator.md): LLVM does not merge convergent calls.
    if (name == "lowbit_emu_mma" || name == "lowbit_emu_ldmatrix")
      function.setConvergent(true);
    functions[name] = function;
    return function;
  }

  Value call(OpBuilder &b, Location loc, StringRef name, ValueRange args) {
    auto op = LLVM::CallOp::create(b, loc, get(name), args);
    return op.getNumResults() ? op.getResult() : Value();
  }

  ModuleOp module;
  llvm::StringMap<LLVM::LLVMFuncOp> functions;
};

Value i32Constant(OpBuilder &b, Location loc, int64_t value) {
  return LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                  b.getI32IntegerAttr(int32_t(value)));
}
Value i64Constant(OpBuilder &b, Location loc, int64_t value) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                  b.getI64IntegerAttr(value));
}

/// An integer of any width to/from i32 (zero-extending).
Value toI32(OpBuilder &b, Location loc, Value value) {
  Type type = value.getType();
  if (isa<Float32Type>(type))
    return LLVM::BitcastOp::create(b, loc, b.getI32Type(), value);
  unsigned width = type.getIntOrFloatBitWidth();
  if (width == 32)
    return value;
  if (width < 32)
    return LLVM::ZExtOp::create(b, loc, b.getI32Type(), value);
  return LLVM::TruncOp::create(b, loc, b.getI32Type(), value);
}
Value fromI32(OpBuilder &b, Location loc, Value value, Type type) {
  if (isa<Float32Type>(type))
    return LLVM::BitcastOp::create(b, loc, type, value);
  if (auto vector = dyn_cast<VectorType>(type)) {
    unsigned bits = vector.getNumElements() *
                    vector.getElementType().getIntOrFloatBitWidth();
    Value narrowed = fromI32(b, loc, value, b.getIntegerType(bits));
    return LLVM::BitcastOp::create(b, loc, type, narrowed);
  }
  unsigned width = type.getIntOrFloatBitWidth();
  if (width == 32)
    return value;
  if (width < 32)
    return LLVM::TruncOp::create(b, loc, type, value);
  return LLVM::ZExtOp::create(b, loc, type, value);
}
/// A vector<2xi8>, vector<2xf16> or scalar operand as its bits in an i32.
Value packedBits(OpBuilder &b, Location loc, Value value) {
  if (auto vector = dyn_cast<VectorType>(value.getType())) {
    unsigned bits = vector.getNumElements() *
                    vector.getElementType().getIntOrFloatBitWidth();
    value = LLVM::BitcastOp::create(b, loc, b.getIntegerType(bits), value);
  }
  return toI32(b, loc, value);
}

std::optional<CvtFormat> cvtFormatOf(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return CvtFormat::E4M3;
  if (isa<Float8E5M2Type>(type))
    return CvtFormat::E5M2;
  if (isa<Float8E8M0FNUType>(type))
    return CvtFormat::UE8M0;
  if (isa<Float6E2M3FNType>(type))
    return CvtFormat::E2M3;
  if (isa<Float6E3M2FNType>(type))
    return CvtFormat::E3M2;
  if (isa<Float4E2M1FNType>(type))
    return CvtFormat::E2M1;
  return std::nullopt;
}

/// The runtime's rounding code (0 rn, 1 rz, 2 rp), or nullopt.
std::optional<int> roundingOf(NVVM::FPRoundingMode mode) {
  switch (mode) {
  case NVVM::FPRoundingMode::NONE:
  case NVVM::FPRoundingMode::RN:
    return 0;
  case NVVM::FPRoundingMode::RZ:
    return 1;
  case NVVM::FPRoundingMode::RP:
    return 2;
  default:
    return std::nullopt;
  }
}

std::optional<WarpOpKind> reduxKindOf(NVVM::ReduxKind kind, bool abs,
                                      bool nan) {
  switch (kind) {
  case NVVM::ReduxKind::ADD:
    return WarpOpKind::ReduxAdd;
  case NVVM::ReduxKind::AND:
    return WarpOpKind::ReduxAnd;
  case NVVM::ReduxKind::MAX:
    return WarpOpKind::ReduxMax;
  case NVVM::ReduxKind::MIN:
    return WarpOpKind::ReduxMin;
  case NVVM::ReduxKind::OR:
    return WarpOpKind::ReduxOr;
  case NVVM::ReduxKind::UMAX:
    return WarpOpKind::ReduxUmax;
  case NVVM::ReduxKind::UMIN:
    return WarpOpKind::ReduxUmin;
  case NVVM::ReduxKind::XOR:
    return WarpOpKind::ReduxXor;
  case NVVM::ReduxKind::FMIN:
    return abs ? (nan ? WarpOpKind::ReduxFminAbsNan : WarpOpKind::ReduxFminAbs)
               : (nan ? WarpOpKind::ReduxFminNan : WarpOpKind::ReduxFmin);
  case NVVM::ReduxKind::FMAX:
    return abs ? (nan ? WarpOpKind::ReduxFmaxAbsNan : WarpOpKind::ReduxFmaxAbs)
               : (nan ? WarpOpKind::ReduxFmaxNan : WarpOpKind::ReduxFmax);
  }
  return std::nullopt;
}

/// The register results of a matrix op: `first` (the runtime call's
/// result) and lowbit_emu_fragment(1..) as the elements of `resultType` (a
/// struct, or one i32).
Value matrixOpResult(OpBuilder &b, Location loc, Value first, Type resultType,
                     RuntimeDeclarations &runtime) {
  auto structType = dyn_cast<LLVM::LLVMStructType>(resultType);
  if (!structType)
    return fromI32(b, loc, first, resultType);
  Value result = LLVM::UndefOp::create(b, loc, resultType);
  for (auto [i, type] : llvm::enumerate(structType.getBody())) {
    Value element = i == 0 ? first
                           : runtime.call(b, loc, "lowbit_emu_fragment",
                                          {i32Constant(b, loc, int64_t(i))});
    result = LLVM::InsertValueOp::create(b, loc, result,
                                         fromI32(b, loc, element, type),
                                         ArrayRef<int64_t>{int64_t(i)});
  }
  return result;
}

/// lowbit_emu_mma for `variant` at `site`: this lane's A, B (padded with 0
/// to 4 and 2 registers), C (as bits) and a block-scaled form's scale-a-data
/// and scale-b-data (`scales`, else 0) in, D out as `resultType`.
Value emitWarpMma(OpBuilder &b, Location loc, const MmaVariant &variant,
                  int32_t site, ValueRange a, ValueRange bRegisters,
                  ValueRange c, Type resultType, RuntimeDeclarations &runtime,
                  ValueRange scales = {}) {
  SmallVector<Value> arguments = {i32Constant(b, loc, variant.code()),
                                  i32Constant(b, loc, site)};
  auto appendPadded = [&](ValueRange registers, size_t count) {
    for (size_t i = 0; i < count; ++i)
      arguments.push_back(i < registers.size()
                              ? packedBits(b, loc, registers[i])
                              : i32Constant(b, loc, 0));
  };
  appendPadded(a, 4);
  appendPadded(bRegisters, 2);
  appendPadded(c, 4);
  appendPadded(scales, 2);
  Value d0 = runtime.call(b, loc, "lowbit_emu_mma", arguments);
  return matrixOpResult(b, loc, d0, resultType, runtime);
}

std::optional<mma::MmaElement> mmaElementOf(NVVM::MMATypes type) {
  switch (type) {
  case NVVM::MMATypes::f16:
    return mma::MmaElement::F16;
  case NVVM::MMATypes::bf16:
    return mma::MmaElement::BF16;
  case NVVM::MMATypes::s8:
    return mma::MmaElement::S8;
  case NVVM::MMATypes::u8:
    return mma::MmaElement::U8;
  default:
    return std::nullopt;
  }
}

/// nvvm.mma.sync -> lowbit_emu_mma (the op's site, this lane's registers
/// in, d0 out) and lowbit_emu_fragment(1..3): row.col m16n8k16 and m16n8k8
/// with f16 or bf16 multiplicands and f32 accumulators, m16n8k32 with s8/u8
/// ones and s32 accumulators (.satfinite or wrapping); anything else is
/// refused. `site` numbers the module's matrix ops: .aligned requires every
/// lane of the warp at the same one.
llvm::Error rewriteMmaSync(NVVM::MmaOp mma, int32_t site,
                           RuntimeDeclarations &runtime) {
  auto refuse = [&](const std::string &why) {
    return emulatorError(
        "cannot emulate " + describe(mma) + ": " + why +
        " (emulated: row.col m16n8k16 and m16n8k8 with f16 or bf16 "
        "multiplicands and four f32 accumulators, m16n8k32 with s8/u8 ones "
        "and four s32 accumulators)");
  };
  NVVM::MMAShapeAttr shape = mma.getShape();
  if (mma.getLayoutA() != NVVM::MMALayout::row ||
      mma.getLayoutB() != NVVM::MMALayout::col)
    return refuse("layouts other than row.col");
  auto typeOf = [&](std::optional<NVVM::MMATypes> given,
                    ValueRange operands) -> std::optional<mma::MmaElement> {
    if (!given && !operands.empty())
      given = NVVM::MmaOp::inferOperandMMAType(
          getElementTypeOrSelf(operands.front().getType()),
          /*isAccumulator=*/false);
    return given ? mmaElementOf(*given) : std::nullopt;
  };
  std::optional<mma::MmaElement> a =
      typeOf(mma.getMultiplicandAPtxType(), mma.getOperandA());
  std::optional<mma::MmaElement> bType =
      typeOf(mma.getMultiplicandBPtxType(), mma.getOperandB());
  if (!a || !bType)
    return refuse("multiplicands other than f16, bf16, s8 and u8");
  MmaVariant variant{*a, *bType, int(shape.getK()), false};
  bool halves = *a == mma::MmaElement::F16 || *a == mma::MmaElement::BF16;
  std::string form = "m" + std::to_string(shape.getM()) + "n" +
                     std::to_string(shape.getN()) + "k" +
                     std::to_string(shape.getK());
  if (shape.getM() != 16 || shape.getN() != 8 ||
      (halves ? (variant.k != 16 && variant.k != 8) || *bType != *a
              : variant.k != 32))
    return refuse("the shape " + form + " of these multiplicands");
  NVVM::MMATypes accumulator =
      halves ? NVVM::MMATypes::f32 : NVVM::MMATypes::s32;
  if (mma.accumPtxType() != accumulator || mma.resultPtxType() != accumulator ||
      mma.getOperandC().size() != 4)
    return refuse(std::string("accumulators other than four ") +
                  (halves ? "f32" : "s32"));
  variant.satfinite = !halves && mma.getIntOverflowBehavior() ==
                                     NVVM::MMAIntOverflow::satfinite;
  OpBuilder b(mma);
  Value result = emitWarpMma(b, mma.getLoc(), variant, site, mma.getOperandA(),
                             mma.getOperandB(), mma.getOperandC(),
                             mma.getResult().getType(), runtime);
  mma.getResult().replaceAllUsesWith(result);
  mma.erase();
  return llvm::Error::success();
}

/// The 8-bit float mma.sync MLIR 22's nvvm.mma.sync does not express, as
/// the LLVM intrinsic a kernel calls instead:
/// llvm.nvvm.mma.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32 (4 + 2
/// i32 registers, 4 f32 accumulators). nullopt for any other intrinsic.
std::optional<MmaVariant> float8MmaIntrinsic(StringRef name) {
  StringRef rest = name;
  if (!rest.consume_front("llvm.nvvm.mma.m16n8k32.row.col.f32.") ||
      !rest.consume_back(".f32"))
    return std::nullopt;
  auto [first, second] = rest.split('.');
  auto element = [](StringRef type) -> std::optional<mma::MmaElement> {
    if (type == "e4m3")
      return mma::MmaElement::E4M3;
    if (type == "e5m2")
      return mma::MmaElement::E5M2;
    return std::nullopt;
  };
  std::optional<mma::MmaElement> a = element(first), b = element(second);
  if (!a || !b)
    return std::nullopt;
  return MmaVariant{*a, *b, 32, false};
}

llvm::Error rewriteFloat8Mma(LLVM::CallIntrinsicOp call,
                             const MmaVariant &variant, int32_t site,
                             RuntimeDeclarations &runtime) {
  auto structType =
      call.getNumResults() == 1
          ? dyn_cast<LLVM::LLVMStructType>(call.getResult(0).getType())
          : LLVM::LLVMStructType();
  if (call.getArgs().size() != 10 || !structType ||
      structType.getBody().size() != 4)
    return emulatorError("cannot emulate " + describe(call) + " (" +
                         call.getIntrin().str() +
                         "): expected 4 A, 2 B and 4 C registers and four "
                         "f32 results");
  OperandRange args = call.getArgs();
  OpBuilder b(call);
  Value result =
      emitWarpMma(b, call.getLoc(), variant, site, args.take_front(4),
                  args.slice(4, 2), args.drop_front(6), structType, runtime);
  call.getResult(0).replaceAllUsesWith(result);
  call.erase();
  return llvm::Error::success();
}

/// nvvm.mma.block_scale -> lowbit_emu_mma: m16n8k64 row.col with e2m1
/// multiplicands, f32 accumulators, .kind::mxf4 .scale_vec::2X ue8m0 or
/// .kind::mxf4nvf4 .scale_vec::4X ue4m3 (2X ue8m0), the byte-id /
/// thread-id selectors constant (PTX takes them as immediates) and in the
/// ISA's range; anything else is refused.
llvm::Error rewriteMmaBlockScale(NVVM::MmaBlockScaleOp mma, int32_t site,
                                 RuntimeDeclarations &runtime) {
  auto refuse = [&](const std::string &why) {
    return emulatorError(
        "cannot emulate " + describe(mma) + ": " + why +
        " (emulated: m16n8k64 e2m1 x e2m1 -> f32, .kind::mxf4 "
        ".scale_vec::2X ue8m0, .kind::mxf4nvf4 .scale_vec::2X ue8m0 or "
        ".scale_vec::4X ue4m3, constant selectors)");
  };
  NVVM::MMAShapeAttr shape = mma.getShape();
  if (shape.getM() != 16 || shape.getN() != 8 || shape.getK() != 64)
    return refuse("the shape");
  auto e2m1 = [](std::optional<NVVM::MMATypes> type) {
    return type && *type == NVVM::MMATypes::e2m1;
  };
  if (!e2m1(mma.getMultiplicandAPtxType()) ||
      !e2m1(mma.getMultiplicandBPtxType()))
    return refuse("multiplicands other than e2m1");
  if (mma.getOperandA().size() != 4 || mma.getOperandB().size() != 2 ||
      mma.getOperandC().size() != 4)
    return refuse("other than 4 A, 2 B and 4 C registers");
  MmaVariant variant{mma::MmaElement::E2M1Packed, mma::MmaElement::E2M1Packed,
                     64, false};
  variant.nvf4 = mma.getKind() == NVVM::MMABlockScaleKind::MXF4NVF4;
  variant.ue4m3 = mma.getBlockScaleFormat() == NVVM::BlockScaleFormat::UE4M3;
  switch (mma.getScaleVecSize()) {
  case NVVM::ScaleVecSize::X1:
    variant.scaleVec = 1;
    break;
  case NVVM::ScaleVecSize::X2:
    variant.scaleVec = 2;
    break;
  case NVVM::ScaleVecSize::X4:
    variant.scaleVec = 4;
    break;
  }
  bool valid =
      mma.getKind() == NVVM::MMABlockScaleKind::MXF4
          ? variant.scaleVec == 2 && !variant.ue4m3
      : mma.getKind() == NVVM::MMABlockScaleKind::MXF4NVF4
          ? (variant.scaleVec == 4 || (variant.scaleVec == 2 && !variant.ue4m3))
          : false;
  if (!valid)
    return refuse("this kind, scale vector size and scale type");
  auto selector = [](Value value) -> std::optional<int> {
    APInt constant;
    if (!matchPattern(value, m_ConstantInt(&constant)))
      return std::nullopt;
    return int(constant.getZExtValue());
  };
  std::optional<int> byteA = selector(mma.getByteIdA()),
                     threadA = selector(mma.getThreadIdA()),
                     byteB = selector(mma.getByteIdB()),
                     threadB = selector(mma.getThreadIdB());
  if (!byteA || !threadA || !byteB || !threadB)
    return refuse("a byte-id or thread-id that is not a constant");
  // byte-id: 0 for 4X, 0 or 2 for 2X; thread-id-a 0 or 1, thread-id-b 0..3.
  auto validByte = [&](int byte) {
    return byte % variant.scaleVec == 0 && byte + variant.scaleVec <= 4;
  };
  if (!validByte(*byteA) || !validByte(*byteB) || *threadA > 1 || *threadB > 3)
    return refuse("selectors outside the ISA's range");
  variant.byteIdA = *byteA;
  variant.threadIdA = *threadA;
  variant.byteIdB = *byteB;
  variant.threadIdB = *threadB;
  OpBuilder b(mma);
  Value result = emitWarpMma(
      b, mma.getLoc(), variant, site, mma.getOperandA(), mma.getOperandB(),
      mma.getOperandC(), mma.getResult().getType(), runtime,
      ValueRange{mma.getScaleAData(), mma.getScaleBData()});
  mma.getResult().replaceAllUsesWith(result);
  mma.erase();
  return llvm::Error::success();
}

/// nvvm.ldmatrix (m8n8 b16, x1/x2/x4, row or col = .trans) ->
/// lowbit_emu_ldmatrix (site, this lane's row address) and
/// lowbit_emu_fragment(1..3).
llvm::Error rewriteLdMatrix(NVVM::LdMatrixOp load, int32_t site,
                            RuntimeDeclarations &runtime) {
  if (load.getShape().getM() != 8 || load.getShape().getN() != 8 ||
      load.getEltType() != NVVM::LdStMatrixEltType::B16)
    return emulatorError("cannot emulate " + describe(load) +
                         ": only ldmatrix .m8n8 .b16 (x1, x2, x4, .trans) "
                         "is emulated");
  LdMatrixVariant variant{int(load.getNum()),
                          load.getLayout() == NVVM::MMALayout::col};
  OpBuilder b(load);
  Location loc = load.getLoc();
  Value first = runtime.call(b, loc, "lowbit_emu_ldmatrix",
                             {i32Constant(b, loc, variant.code()),
                              i32Constant(b, loc, site), load.getPtr()});
  Value result = matrixOpResult(b, loc, first, load.getType(), runtime);
  load.getResult().replaceAllUsesWith(result);
  load.erase();
  return llvm::Error::success();
}

/// Replaces one NVVM op with runtime calls; an error for ops it does not
/// know.
llvm::Error rewriteNvvmOp(Operation *op, int32_t index,
                          RuntimeDeclarations &runtime) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto replace = [&](Value value) {
    op->getResult(0).replaceAllUsesWith(value);
    op->erase();
    return llvm::Error::success();
  };
  auto refuse = [&](const std::string &why) {
    return emulatorError("cannot emulate " + describe(op) + ": " + why);
  };
  auto warpCall = [&](WarpOpKind kind, Value mask, Value value, Value lane,
                      Value clamp) {
    return runtime.call(
        b, loc, "lowbit_emu_warp_op",
        {i32Constant(b, loc, int32_t(kind)), toI32(b, loc, mask),
         value ? toI32(b, loc, value) : i32Constant(b, loc, 0),
         lane ? toI32(b, loc, lane) : i32Constant(b, loc, 0),
         clamp ? toI32(b, loc, clamp) : i32Constant(b, loc, 0)});
  };
  auto low32 = [&](Value wide) {
    return LLVM::TruncOp::create(b, loc, b.getI32Type(), wide);
  };

  if (auto mma = dyn_cast<NVVM::MmaOp>(op))
    return rewriteMmaSync(mma, index, runtime);
  if (auto mma = dyn_cast<NVVM::MmaBlockScaleOp>(op))
    return rewriteMmaBlockScale(mma, index, runtime);
  if (auto load = dyn_cast<NVVM::LdMatrixOp>(op))
    return rewriteLdMatrix(load, index, runtime);
  if (auto call = dyn_cast<LLVM::CallIntrinsicOp>(op))
    return rewriteFloat8Mma(call, *float8MmaIntrinsic(call.getIntrin()), index,
                            runtime);
  if (auto copy = dyn_cast<NVVM::CpAsyncOp>(op)) {
    // The cache operator (.ca/.cg) does not change what lands.
    Value size = i32Constant(b, loc, int32_t(copy.getSize()));
    runtime.call(b, loc, "lowbit_emu_cp_async",
                 {copy.getDst(), copy.getSrc(), size,
                  copy.getCpSize() ? copy.getCpSize() : size});
    op->erase();
    return llvm::Error::success();
  }
  if (isa<NVVM::CpAsyncCommitGroupOp>(op)) {
    runtime.call(b, loc, "lowbit_emu_cp_async_commit", {});
    op->erase();
    return llvm::Error::success();
  }
  if (auto wait = dyn_cast<NVVM::CpAsyncWaitGroupOp>(op)) {
    runtime.call(b, loc, "lowbit_emu_cp_async_wait",
                 {i32Constant(b, loc, int32_t(wait.getN()))});
    op->erase();
    return llvm::Error::success();
  }
  StringRef name = op->getName().getStringRef();
  if (auto found = specialRegisters().find(name);
      found != specialRegisters().end()) {
    Value value = runtime.call(b, loc, "lowbit_emu_sreg",
                               {i32Constant(b, loc, int32_t(found->second))});
    return replace(fromI32(b, loc, value, op->getResult(0).getType()));
  }
  if (isa<NVVM::Barrier0Op>(op)) {
    runtime.call(b, loc, "lowbit_emu_barrier", {i32Constant(b, loc, 0)});
    op->erase();
    return llvm::Error::success();
  }
  if (auto barrier = dyn_cast<NVVM::BarrierOp>(op)) {
    if (barrier.getNumberOfThreads() || barrier.getReductionOpAttr() ||
        barrier.getReductionPredicate())
      return refuse("only whole-block barriers are emulated");
    Value id = barrier.getBarrierId() ? toI32(b, loc, barrier.getBarrierId())
                                      : i32Constant(b, loc, 0);
    runtime.call(b, loc, "lowbit_emu_barrier", {id});
    op->erase();
    return llvm::Error::success();
  }
  if (isa<NVVM::FenceScClusterOp, NVVM::MembarOp>(op)) {
    // One OS thread runs all fibers: memory is already sequentially
    // consistent.
    op->erase();
    return llvm::Error::success();
  }
  if (auto shfl = dyn_cast<NVVM::ShflOp>(op)) {
    WarpOpKind kind =
        shfl.getKind() == NVVM::ShflKind::bfly   ? WarpOpKind::ShflBfly
        : shfl.getKind() == NVVM::ShflKind::up   ? WarpOpKind::ShflUp
        : shfl.getKind() == NVVM::ShflKind::down ? WarpOpKind::ShflDown
                                                 : WarpOpKind::ShflIdx;
    Type valueType = shfl.getVal().getType();
    if (!isa<Float32Type>(valueType) && !valueType.isInteger(32))
      return refuse("shuffles of 32-bit values only");
    Value wide = warpCall(kind, shfl.getThreadMask(), shfl.getVal(),
                          shfl.getOffset(), shfl.getMaskAndClamp());
    Value value = fromI32(b, loc, low32(wide), valueType);
    if (!shfl->getAttr(shfl.getReturnValueAndIsValidAttrName()))
      return replace(value);
    Value valid = LLVM::TruncOp::create(
        b, loc, b.getI1Type(),
        LLVM::LShrOp::create(b, loc, wide, i64Constant(b, loc, 32)));
    Type structType = op->getResult(0).getType();
    Value result = LLVM::UndefOp::create(b, loc, structType);
    result = LLVM::InsertValueOp::create(b, loc, result, value,
                                         ArrayRef<int64_t>{0});
    result = LLVM::InsertValueOp::create(b, loc, result, valid,
                                         ArrayRef<int64_t>{1});
    return replace(result);
  }
  if (auto vote = dyn_cast<NVVM::VoteSyncOp>(op)) {
    WarpOpKind kind =
        vote.getKind() == NVVM::VoteSyncKind::any      ? WarpOpKind::VoteAny
        : vote.getKind() == NVVM::VoteSyncKind::all    ? WarpOpKind::VoteAll
        : vote.getKind() == NVVM::VoteSyncKind::ballot ? WarpOpKind::VoteBallot
                                                       : WarpOpKind::VoteUni;
    Value wide = warpCall(kind, vote.getMask(), vote.getPred(), {}, {});
    return replace(fromI32(b, loc, low32(wide), op->getResult(0).getType()));
  }
  if (auto redux = dyn_cast<NVVM::ReduxOp>(op)) {
    std::optional<WarpOpKind> kind =
        reduxKindOf(redux.getKind(), redux.getAbs(), redux.getNan());
    if (!kind)
      return refuse("unknown reduction kind");
    Value wide =
        warpCall(*kind, redux.getMaskAndClamp(), redux.getVal(), {}, {});
    return replace(fromI32(b, loc, low32(wide), op->getResult(0).getType()));
  }
  if (auto sync = dyn_cast<NVVM::SyncWarpOp>(op)) {
    warpCall(WarpOpKind::SyncWarp, sync.getMask(), {}, {}, {});
    op->erase();
    return llvm::Error::success();
  }
  if (auto elect = dyn_cast<NVVM::ElectSyncOp>(op)) {
    Value mask =
        elect.getMembermask() ? elect.getMembermask() : i32Constant(b, loc, -1);
    Value wide = warpCall(WarpOpKind::Elect, mask, {}, {}, {});
    return replace(fromI32(b, loc, low32(wide), op->getResult(0).getType()));
  }

  // Native conversions: the format model is bit-exact to them.
  auto cvtF32x2 = [&](Value a, Value bValue, Type formatType,
                      std::optional<int> rounding, bool saturate, bool relu) {
    std::optional<CvtFormat> format = cvtFormatOf(formatType);
    if (!format || !rounding)
      return Value();
    return runtime.call(b, loc, "lowbit_emu_cvt_f32x2",
                        {a, bValue, i32Constant(b, loc, int32_t(*format)),
                         i32Constant(b, loc, *rounding),
                         i32Constant(b, loc, saturate),
                         i32Constant(b, loc, relu)});
  };
  if (auto cvt = dyn_cast<NVVM::ConvertF32x2ToF8x2Op>(op)) {
    std::optional<CvtFormat> format = cvtFormatOf(cvt.getDstTy());
    // e4m3x2/e5m2x2 from f32 are always .satfinite in PTX.
    bool saturate = cvt.getSat() == NVVM::SaturationMode::SATFINITE ||
                    (format && *format != CvtFormat::UE8M0);
    Value packed = cvtF32x2(cvt.getA(), cvt.getB(), cvt.getDstTy(),
                            roundingOf(cvt.getRnd()), saturate, cvt.getRelu());
    if (!packed)
      return refuse("unsupported format or rounding");
    return replace(fromI32(b, loc, packed, op->getResult(0).getType()));
  }
  if (auto cvt = dyn_cast<NVVM::ConvertF32x2ToF6x2Op>(op)) {
    Value packed = cvtF32x2(cvt.getA(), cvt.getB(), cvt.getDstTy(), 0, true,
                            cvt.getRelu());
    if (!packed)
      return refuse("unsupported format");
    return replace(fromI32(b, loc, packed, op->getResult(0).getType()));
  }
  if (auto cvt = dyn_cast<NVVM::ConvertF32x2ToF4x2Op>(op)) {
    Value packed = cvtF32x2(cvt.getA(), cvt.getB(), cvt.getDstTy(), 0, true,
                            cvt.getRelu());
    if (!packed)
      return refuse("unsupported format");
    return replace(fromI32(b, loc, packed, op->getResult(0).getType()));
  }
  auto toHalf2 = [&](Value codes, Type formatType, bool relu, bool toBf16) {
    std::optional<CvtFormat> format = cvtFormatOf(formatType);
    if (!format)
      return Value();
    Value halves = runtime.call(
        b, loc, "lowbit_emu_cvt_to_half2",
        {packedBits(b, loc, codes), i32Constant(b, loc, int32_t(*format)),
         i32Constant(b, loc, relu), i32Constant(b, loc, toBf16)});
    return fromI32(b, loc, halves, op->getResult(0).getType());
  };
  Value decoded;
  if (auto cvt = dyn_cast<NVVM::ConvertF8x2ToF16x2Op>(op))
    decoded = toHalf2(cvt.getSrc(), cvt.getSrcType(), cvt.getRelu(), false);
  else if (auto cvt = dyn_cast<NVVM::ConvertF8x2ToBF16x2Op>(op))
    decoded = toHalf2(cvt.getSrc(), cvt.getSrcType(), false, true);
  else if (auto cvt = dyn_cast<NVVM::ConvertF6x2ToF16x2Op>(op))
    decoded = toHalf2(cvt.getSrc(), cvt.getSrcType(), cvt.getRelu(), false);
  else if (auto cvt = dyn_cast<NVVM::ConvertF4x2ToF16x2Op>(op))
    decoded = toHalf2(cvt.getSrc(), cvt.getSrcType(), cvt.getRelu(), false);
  if (decoded)
    return replace(decoded);
  if (isa<NVVM::ConvertF8x2ToF16x2Op, NVVM::ConvertF8x2ToBF16x2Op,
          NVVM::ConvertF6x2ToF16x2Op, NVVM::ConvertF4x2ToF16x2Op>(op))
    return refuse("unsupported format");
  auto half2ToF8x2 = [&](Value halves, CvtFormat format, bool fromBf16,
                         std::optional<int> rounding, bool saturate,
                         bool relu) {
    Value packed = runtime.call(
        b, loc, "lowbit_emu_cvt_half2_to_f8x2",
        {packedBits(b, loc, halves), i32Constant(b, loc, int32_t(format)),
         i32Constant(b, loc, fromBf16), i32Constant(b, loc, *rounding),
         i32Constant(b, loc, saturate), i32Constant(b, loc, relu)});
    return fromI32(b, loc, packed, op->getResult(0).getType());
  };
  if (auto cvt = dyn_cast<NVVM::ConvertF16x2ToF8x2Op>(op)) {
    std::optional<CvtFormat> format = cvtFormatOf(cvt.getDstTy());
    if (!format)
      return refuse("unsupported format");
    return replace(
        half2ToF8x2(cvt.getA(), *format, false, 0, true, cvt.getRelu()));
  }
  if (auto cvt = dyn_cast<NVVM::ConvertBF16x2ToF8x2Op>(op)) {
    std::optional<int> rounding = roundingOf(cvt.getRnd());
    if (!rounding)
      return refuse("unsupported rounding");
    return replace(half2ToF8x2(cvt.getA(), CvtFormat::UE8M0, true, rounding,
                               cvt.getSat() == NVVM::SaturationMode::SATFINITE,
                               false));
  }
  auto f32x2ToHalf2 = [&](auto cvt, bool toBf16) -> llvm::Error {
    if (cvt.getRandomBits() || (cvt.getRnd() != NVVM::FPRoundingMode::RN &&
                                cvt.getRnd() != NVVM::FPRoundingMode::NONE))
      return refuse("only round-to-nearest-even is emulated");
    Value packed = runtime.call(
        b, loc, "lowbit_emu_cvt_f32x2_to_half2",
        {cvt.getSrcHi(), cvt.getSrcLo(), i32Constant(b, loc, toBf16),
         i32Constant(b, loc, cvt.getSat() == NVVM::SaturationMode::SATFINITE),
         i32Constant(b, loc, cvt.getRelu())});
    return replace(fromI32(b, loc, packed, op->getResult(0).getType()));
  };
  if (auto cvt = dyn_cast<NVVM::ConvertF32x2ToF16x2Op>(op))
    return f32x2ToHalf2(cvt, false);
  if (auto cvt = dyn_cast<NVVM::ConvertF32x2ToBF16x2Op>(op))
    return f32x2ToHalf2(cvt, true);
  return refuse("the emulator does not know this NVVM op");
}

/// f32 <-> f16/bf16 conversions through the format model (cvt.rn), not
/// the host's soft-float library calls. Vectors go element by element.
llvm::Error rewriteHalfConversion(Operation *op, RuntimeDeclarations &runtime) {
  Type source = getElementTypeOrSelf(op->getOperand(0).getType());
  Type result = getElementTypeOrSelf(op->getResult(0).getType());
  bool narrowing = isa<LLVM::FPTruncOp>(op);
  Type half = narrowing ? result : source;
  Type wide = narrowing ? source : result;
  if (!isa<Float16Type, BFloat16Type>(half))
    return llvm::Error::success();
  if (!isa<Float32Type>(wide))
    return emulatorError("cannot emulate " + describe(op) +
                         ": only f32 <-> f16/bf16 conversions");
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value isBf16 = i32Constant(b, loc, isa<BFloat16Type>(half));
  auto convert = [&](Value scalar) -> Value {
    if (narrowing) {
      Value bits =
          runtime.call(b, loc, "lowbit_emu_narrow_f32", {scalar, isBf16});
      Value narrow = LLVM::TruncOp::create(b, loc, b.getI16Type(), bits);
      return LLVM::BitcastOp::create(b, loc, half, narrow);
    }
    Value bits = LLVM::BitcastOp::create(b, loc, b.getI16Type(), scalar);
    return runtime.call(
        b, loc, "lowbit_emu_widen_to_f32",
        {LLVM::ZExtOp::create(b, loc, b.getI32Type(), bits), isBf16});
  };
  Value input = op->getOperand(0), output;
  if (auto vector = dyn_cast<VectorType>(input.getType())) {
    output = LLVM::UndefOp::create(b, loc, op->getResult(0).getType());
    for (int64_t i = 0; i < vector.getNumElements(); ++i) {
      Value index = i64Constant(b, loc, i);
      Value element = LLVM::ExtractElementOp::create(b, loc, input, index);
      output = LLVM::InsertElementOp::create(b, loc, output, convert(element),
                                             index);
    }
  } else {
    output = convert(input);
  }
  op->getResult(0).replaceAllUsesWith(output);
  op->erase();
  return llvm::Error::success();
}

/// Follows GEPs and casts to the pointer's origin.
Value pointerOrigin(Value pointer) {
  for (int depth = 0; depth < 64; ++depth) {
    Operation *def = pointer.getDefiningOp();
    if (!def || !isa<LLVM::GEPOp, LLVM::BitcastOp, LLVM::AddrSpaceCastOp>(def))
      return pointer;
    pointer = def->getOperand(0);
  }
  return pointer;
}

/// Inserts lowbit_emu_access before each memory access of `function` whose
/// pointer is not one of the thread's own allocas.
void instrumentAccesses(LLVM::LLVMFuncOp function, RuntimeDeclarations &runtime,
                        const DataLayout &layout) {
  SmallVector<Operation *> accesses;
  function.walk([&](Operation *op) {
    if (isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::AtomicRMWOp,
            LLVM::AtomicCmpXchgOp>(op))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    Value pointer;
    Type valueType;
    std::optional<uint64_t> alignment;
    emulator::AccessKind kind = emulator::AccessKind::Atomic;
    if (auto load = dyn_cast<LLVM::LoadOp>(op)) {
      pointer = load.getAddr();
      valueType = load.getType();
      alignment = load.getAlignment();
      kind = emulator::AccessKind::Load;
    } else if (auto store = dyn_cast<LLVM::StoreOp>(op)) {
      pointer = store.getAddr();
      valueType = store.getValue().getType();
      alignment = store.getAlignment();
      kind = emulator::AccessKind::Store;
    } else if (auto rmw = dyn_cast<LLVM::AtomicRMWOp>(op)) {
      pointer = rmw.getPtr();
      valueType = rmw.getVal().getType();
    } else {
      auto cmpxchg = cast<LLVM::AtomicCmpXchgOp>(op);
      pointer = cmpxchg.getPtr();
      valueType = cmpxchg.getVal().getType();
    }
    if (Operation *origin = pointerOrigin(pointer).getDefiningOp();
        origin && isa<LLVM::AllocaOp>(origin))
      continue;
    uint64_t bytes = layout.getTypeSize(valueType);
    uint64_t align =
        kind == emulator::AccessKind::Atomic
            ? bytes
            : alignment.value_or(layout.getTypeABIAlignment(valueType));
    OpBuilder b(op);
    Location loc = op->getLoc();
    runtime.call(b, loc, "lowbit_emu_access",
                 {pointer, i64Constant(b, loc, int64_t(bytes)),
                  i64Constant(b, loc, int64_t(align)),
                  i32Constant(b, loc, int32_t(kind))});
  }
}

/// lowbit_emu_entry_K(void **parameters): loads each parameter through its
/// pointer, as cuLaunchKernel reads them, and calls K.
void addEntryWrapper(ModuleOp module, LLVM::LLVMFuncOp kernel) {
  MLIRContext *context = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = kernel.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(context);
  auto wrapper = LLVM::LLVMFuncOp::create(
      b, loc, ("lowbit_emu_entry_" + kernel.getSymName()).str(),
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context), {ptr}));
  Block *body = wrapper.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  SmallVector<Value> arguments;
  for (auto [index, type] :
       llvm::enumerate(kernel.getFunctionType().getParams())) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, body->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{int32_t(index)});
    Value address = LLVM::LoadOp::create(b, loc, ptr, slot);
    arguments.push_back(LLVM::LoadOp::create(b, loc, type, address));
  }
  LLVM::CallOp::create(b, loc, kernel, arguments);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

bool isKernel(LLVM::LLVMFuncOp function) {
  return function->hasAttr("nvvm.kernel") ||
         function->hasAttr(gpu::GPUDialect::getKernelFuncAttrName());
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>>
buildEmulatorHostModule(ModuleOp gpuModule, EmulatorModuleInfo &info) {
  MLIRContext *context = gpuModule.getContext();
  OwningOpRef<ModuleOp> host = ModuleOp::create(gpuModule.getLoc());
  OpBuilder builder = OpBuilder::atBlockEnd(host->getBody());
  IRMapping mapping;
  bool found = false;
  std::string clash;
  gpuModule.walk([&](gpu::GPUModuleOp kernels) {
    found = true;
    for (Operation &op : kernels.getBody()->getOperations()) {
      if (auto symbol = dyn_cast<SymbolOpInterface>(op))
        if (SymbolTable::lookupSymbolIn(*host, symbol.getName()))
          clash = symbol.getName().str();
      builder.clone(op, mapping);
    }
  });
  if (!found)
    return emulatorError("the module has no gpu.module (run lowerToNvvm "
                         "first)");
  if (!clash.empty())
    return emulatorError("two gpu.modules define @" + clash);

  // Shared memory: lay out the addrspace(3) globals, static ones first; a
  // zero-sized one is the dynamic shared memory, after all static ones.
  DataLayout layout(*host);
  llvm::StringMap<uint64_t> sharedOffsets;
  SmallVector<LLVM::GlobalOp> sharedGlobals, dynamicGlobals;
  uint64_t staticEnd = 0, dynamicAlign = 16;
  for (auto global : host->getOps<LLVM::GlobalOp>()) {
    if (global.getAddrSpace() != 3)
      continue;
    uint64_t bytes = layout.getTypeSize(global.getGlobalType());
    uint64_t align =
        std::max<uint64_t>(global.getAlignment().value_or(1),
                           layout.getTypeABIAlignment(global.getGlobalType()));
    if (bytes == 0) {
      dynamicGlobals.push_back(global);
      dynamicAlign = std::max(dynamicAlign, align);
      continue;
    }
    staticEnd = llvm::alignTo(staticEnd, align);
    sharedOffsets[global.getSymName()] = staticEnd;
    staticEnd += bytes;
    sharedGlobals.push_back(global);
  }
  uint64_t dynamicOffset = llvm::alignTo(staticEnd, dynamicAlign);
  for (LLVM::GlobalOp global : dynamicGlobals) {
    sharedOffsets[global.getSymName()] = dynamicOffset;
    sharedGlobals.push_back(global);
  }
  info.staticSharedBytes = staticEnd;
  info.dynamicSharedOffset = dynamicOffset;

  // Every address space becomes the host's.
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](LLVM::LLVMPointerType) -> Type {
    return LLVM::LLVMPointerType::get(context);
  });
  replacer.recursivelyReplaceElementsIn(*host, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  // Module globals stay one instance per module, as on the GPU; external
  // linkage keeps their names for the JIT's lookup (bounds checks).
  for (auto global : host->getOps<LLVM::GlobalOp>()) {
    global.setAddrSpace(0);
    if (sharedOffsets.count(global.getSymName()))
      continue;
    global.setLinkage(LLVM::Linkage::External);
    // A device global without an initializer is a definition on the GPU
    // (zero-filled at module load); on the host it would be a declaration.
    if (!global.getValueOrNull() && global.getInitializerRegion().empty()) {
      OpBuilder b(context);
      b.setInsertionPointToStart(&global.getInitializerRegion().emplaceBlock());
      Value zero = LLVM::ZeroOp::create(b, global.getLoc(), global.getType());
      LLVM::ReturnOp::create(b, global.getLoc(), zero);
    }
  }
  SmallVector<Operation *> casts;
  host->walk([&](LLVM::AddrSpaceCastOp cast) { casts.push_back(cast); });
  for (Operation *cast : casts) {
    cast->getResult(0).replaceAllUsesWith(cast->getOperand(0));
    cast->erase();
  }

  RuntimeDeclarations runtime(*host);
  SmallVector<LLVM::AddressOfOp> addresses;
  host->walk([&](LLVM::AddressOfOp address) { addresses.push_back(address); });
  for (LLVM::AddressOfOp address : addresses) {
    auto offset = sharedOffsets.find(address.getGlobalName());
    if (offset == sharedOffsets.end())
      continue;
    OpBuilder b(address);
    Value base = runtime.call(
        b, address.getLoc(), "lowbit_emu_shared",
        {i64Constant(b, address.getLoc(), int64_t(offset->second))});
    address.replaceAllUsesWith(base);
    address.erase();
  }
  for (LLVM::GlobalOp global : sharedGlobals)
    global.erase();

  // NVVM ops -> runtime calls; anything else GPU-only is refused.
  SmallVector<Operation *> nvvmOps;
  std::string refusal;
  host->walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() ==
                                NVVM::NVVMDialect::getDialectNamespace())
      nvvmOps.push_back(op);
    else if (isa<LLVM::InlineAsmOp>(op) && refusal.empty())
      refusal = "cannot emulate inline assembly " + describe(op);
    else if (auto intrinsic = dyn_cast<LLVM::CallIntrinsicOp>(op);
             intrinsic && float8MmaIntrinsic(intrinsic.getIntrin()))
      nvvmOps.push_back(op);
    else if (intrinsic && intrinsic.getIntrin().starts_with("llvm.nvvm") &&
             refusal.empty())
      refusal = "cannot emulate the intrinsic " + intrinsic.getIntrin().str() +
                " in " + describe(op);
  });
  if (!refusal.empty())
    return emulatorError(refusal);
  for (auto [index, op] : llvm::enumerate(nvvmOps))
    if (llvm::Error error = rewriteNvvmOp(op, int32_t(index), runtime))
      return error;
  SmallVector<Operation *> halfConversions;
  host->walk([&](Operation *op) {
    if (isa<LLVM::FPTruncOp, LLVM::FPExtOp>(op))
      halfConversions.push_back(op);
  });
  for (Operation *op : halfConversions)
    if (llvm::Error error = rewriteHalfConversion(op, runtime))
      return error;

  SmallVector<LLVM::LLVMFuncOp> kernels;
  for (auto function : host->getOps<LLVM::LLVMFuncOp>()) {
    if (function.isExternal()) {
      if (!runtime.functions.count(function.getSymName()) &&
          !function.getSymName().starts_with("llvm."))
        return emulatorError("the kernels call @" +
                             function.getSymName().str() +
                             ", which is declared but not defined (a "
                             "device library function?)");
      continue;
    }
    // GPU-only function attributes would confuse the host code generator.
    for (StringRef attribute : {"target_cpu", "target_features", "tune_cpu"})
      function->removeAttr(attribute);
    SmallVector<StringAttr> gpuAttributes;
    for (NamedAttribute attribute : function->getDiscardableAttrs())
      if (attribute.getName().strref().starts_with("nvvm.") ||
          attribute.getName().strref().starts_with("gpu."))
        gpuAttributes.push_back(attribute.getName());
    bool kernel = isKernel(function);
    for (StringAttr attribute : gpuAttributes)
      function->removeAttr(attribute);
    instrumentAccesses(function, runtime, layout);
    if (kernel)
      kernels.push_back(function);
  }
  for (LLVM::LLVMFuncOp kernel : kernels) {
    info.kernelNames.push_back(kernel.getSymName().str());
    addEntryWrapper(*host, kernel);
  }
  for (auto global : host->getOps<LLVM::GlobalOp>())
    info.globals.push_back({global.getSymName().str(),
                            size_t(layout.getTypeSize(global.getGlobalType())),
                            global.getConstant()});
  if (failed(verify(*host)))
    return emulatorError("the host module does not verify");
  return host;
}

EmulatedModule::~EmulatedModule() = default;

const EmulatedKernel *EmulatedModule::kernel(const std::string &name) const {
  auto found = kernels.find(name);
  return found == kernels.end() ? nullptr : &found->second;
}

llvm::Expected<std::unique_ptr<EmulatedModule>>
compileForEmulator(ModuleOp gpuModule,
                   std::span<const emulator::RuntimeSymbol> runtime) {
  EmulatorModuleInfo info;
  auto host = buildEmulatorHostModule(gpuModule, info);
  if (!host)
    return host.takeError();

  // -O1: the kernels are small and the runtime calls dominate their run
  // time; compiling hundreds of specs dominates the tests' time.
  HostJitOptions options;
  options.optLevel = 1;
  options.packedWrappers = false;
  for (const emulator::RuntimeSymbol &symbol : runtime)
    options.symbols.push_back({std::string(symbol.name), symbol.address});
  auto executable = makeHostExecutable(**host, options);
  if (!executable)
    return emulatorError("JIT: " + llvm::toString(executable.takeError()));

  std::unique_ptr<EmulatedModule> module(new EmulatedModule());
  for (const std::string &name : info.kernelNames) {
    auto address = (*executable)->address("lowbit_emu_entry_" + name);
    if (!address)
      return emulatorError("JIT: " + llvm::toString(address.takeError()));
    EmulatedKernel kernel;
    kernel.name = name;
    kernel.entry = reinterpret_cast<emulator::KernelEntry>(*address);
    kernel.staticSharedBytes = info.staticSharedBytes;
    kernel.dynamicSharedOffset = info.dynamicSharedOffset;
    module->kernels[name] = kernel;
  }
  for (const EmulatorModuleInfo::Global &global : info.globals) {
    auto address = (*executable)->address(global.name);
    if (!address)
      return emulatorError("JIT: " + llvm::toString(address.takeError()));
    module->globals.push_back({*address, global.bytes, !global.constant,
                               "module global @" + global.name});
  }
  module->executable = std::move(*executable);
  return module;
}

} // namespace lowbit

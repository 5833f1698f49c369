//===- GpuMatmulQuantized.cpp - W8A8 matmul on 8-bit tensor cores --------===//
//
// One gpu.launch (docs/matmul-gpu.md, "W8A8"), the order of
// matmul::quantizedAccumulate operation for operation:
//
//   block b (one warp): the 16 x 32 tile of Y at (16 (b / nTiles),
//   32 (b % nTiles)), four m16n8 tiles; lane l holds rows g = l / 4 and
//   g + 8 of every tile (GpuMmaLayout.h);
//   X's scale per unit (the tensor, a row, or a row's K group): the lane
//     scans the unit's elements of X (NaN skipped), picks and decodes the
//     scale (ScaleMath: the reference quantizer's arithmetic);
//   for each K block j (B = matmul::orderBlockK): p = 0; for each k32 step:
//     A = the lane's 16 elements of X quantized as they are loaded, B = the
//     weights' codes, one mma.sync m16n8k32 per n8 tile (s8 -> s32, or
//     e4m3/e5m2 -> f32: the emulator's fma chain is the order's p);
//     acc = fma(p (sitofp for s32), fx(row, j) * fw(col, j), acc);
//   Y = acc (+ bias), rounded to Y's dtype, stores guarded by M and N.
//
// X is quantized inside the GEMM's A load: a per-token or per-group scale
// needs only its row or group, which the lane scans itself. A per-tensor
// scale needs all of X: launch 1 reduces X's amax once through the
// workspace (GpuTensorReduce.h) into word A, the GEMM picks the scale from
// it, and a one-thread launch zeroes word A again (the workspace leaves
// the sequence all zero; docs/kernel-abi.md).
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuMatmulQuantized.h"

#include "lowering/GpuMatmulGemv.h"
#include "lowering/GpuMmaLayout.h"
#include "lowering/GpuTensorReduce.h"
#include "matmul/QuantizedOrder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace lowbit {

namespace {

using kit::dimOf;
using kit::kWarpSize;

inline constexpr int64_t kMmaK = 32;
/// The 8-bit m16n8k32 fragments (s8, e4m3 and e5m2 share them).
inline constexpr mma::MmaFragmentShape kShape = mma::kM16N8K32S8;
static_assert(kShape.aRegisters() == 4 && kShape.bRegisters() == 2 &&
                  kShape.elementsPerRegister() == 4,
              "m16n8k32: four A and two B registers of four bytes");
inline constexpr int64_t kNTiles = 4;
inline constexpr int64_t kTileM = mma::kMmaM;
inline constexpr int64_t kTileN = kNTiles * mma::kMmaN;
inline constexpr int64_t kAccumulators = kNTiles * mma::kAccumulatorRegisters;
/// The workspace word that carries X's per-tensor amax from the reduction
/// to the GEMM, after the reduction's own amax and ticket.
inline constexpr int64_t kAmaxWord =
    workspace_abi::reductionWords(/*withMinMax=*/false);
/// Threads per block of the per-tensor reduction.
inline constexpr int64_t kReduceThreads = 256;

/// What one scale of X covers.
enum class XUnit { Tensor, Row, RowGroup };

XUnit xUnitOf(const Scheme &activations) {
  const ScaleSpec &scale = activations.scale;
  if (scale.granularity == Granularity::PerTensor)
    return XUnit::Tensor;
  if (scale.granularity == Granularity::Group)
    return XUnit::RowGroup;
  return XUnit::Row;
}

/// The 8-bit multiplicand type of an element format, if mma.sync has one.
std::optional<NVVM::MMATypes> mmaTypeOf(const Format &element) {
  if (element.isInt() && element.bits() == 8 && element.isSigned())
    return NVVM::MMATypes::s8;
  if (element.name() == "e4m3")
    return NVVM::MMATypes::e4m3;
  if (element.name() == "e5m2")
    return NVVM::MMATypes::e5m2;
  return std::nullopt;
}

class QuantizedGemmEmitter : public MatmulKernelBuilder {
public:
  QuantizedGemmEmitter(ImplicitLocOpBuilder &builder, const Scheme &weights,
                       const Scheme &activations, const MatmulBuffers &buffers,
                       const QuantizedX &quantizedX = {})
      : MatmulKernelBuilder(builder, weights, buffers, kWarpSize),
        xMath(builder, activations), unit(xUnitOf(activations)),
        integer(activations.element.isInt()),
        extentK(std::max(matmul::scaleExtentAlongK(weights.scale),
                         matmul::scaleExtentAlongK(activations.scale))),
        xExtentK(matmul::scaleExtentAlongK(activations.scale)),
        quantizedX(quantizedX), typeA(*mmaTypeOf(activations.element)),
        typeB(*mmaTypeOf(weights.element)) {}

  /// The GEMM launch; `workspace` (per-tensor X only) holds X's amax.
  void emit(Value workspace) {
    m = dimOf(b, buffers.x, 0);
    k = dimOf(b, buffers.x, 1);
    n = dimOf(b, buffers.output, 1);
    Value columnTiles = ceilDiv(n, idx(kTileN));
    Value blocks = mul(ceilDiv(m, idx(kTileM)), columnTiles);
    gpu::LaunchOp launch = launchBlocks(blocks, kWarpSize);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value lane = launch.getThreadIds().x;
    group = arith::DivUIOp::create(b, lane, idx(4));
    threadInGroup = arith::RemUIOp::create(b, lane, idx(4));
    Value block = launch.getBlockIds().x;
    Value blockRow =
        mul(arith::DivUIOp::create(b, block, columnTiles), idx(kTileM));
    columnBase =
        mul(arith::RemUIOp::create(b, block, columnTiles), idx(kTileN));
    rows[0] = add(blockRow, group);
    rows[1] = add(rows[0], idx(8));
    Value lastRow = arith::SubIOp::create(b, m, idx(1));
    for (int half = 0; half < 2; ++half)
      safeRows[half] = arith::MinUIOp::create(b, rows[half], lastRow);
    if (buffers.global)
      global = loadScalar(buffers.global);
    if (quantizedX.codes && unit == XUnit::Tensor) {
      GroupParams params = storedParams(idx(0), idx(0));
      xUnitParams = {params, params};
    } else if (workspace) {
      Value amax = arith::BitcastOp::create(
          b, b.getF32Type(),
          memref::LoadOp::create(b, workspace,
                                 ValueRange{idx(0), idx(kAmaxWord)}));
      GroupParams params = paramsOf(SmallVector<Value>{amax});
      xUnitParams = {params, params};
    }
    emitBody();
  }

private:
  /// The order's K block B: the common scale extent along K, else 128
  /// for float codes, else all of K.
  Value blockK() {
    if (extentK > 0)
      return idx(extentK);
    return integer ? k : idx(matmul::kPromotionK);
  }

  void emitBody() {
    Value blockSize = blockK();
    Value numBlocks = ceilDiv(k, blockSize);
    // A per-tensor X's parameters came from the workspace (emit).
    if (unit == XUnit::Row) {
      for (int half = 0; half < 2; ++half)
        xUnitParams[half] =
            quantizedX.codes ? storedParams(safeRows[half], idx(0))
                             : xParams(safeRows[half],
                                       add(safeRows[half], idx(1)), idx(0), k);
    }
    SmallVector<Value> initial(kAccumulators, f32(0.0f));
    auto kBlocks = scf::ForOp::create(b, idx(0), numBlocks, idx(1), initial);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(kBlocks.getBody());
      Value kBegin = mul(kBlocks.getInductionVar(), blockSize);
      Value kEnd = arith::MinUIOp::create(b, add(kBegin, blockSize), k);
      if (unit == XUnit::RowGroup)
        for (int half = 0; half < 2; ++half)
          xUnitParams[half] =
              quantizedX.codes
                  ? storedParams(safeRows[half], arith::DivUIOp::create(
                                                     b, kBegin, idx(xExtentK)))
                  : xParams(safeRows[half], add(safeRows[half], idx(1)), kBegin,
                            kEnd);
      SmallVector<Value> partial = emitBlockPartial(kBegin, kEnd);
      SmallVector<Value> acc(kBlocks.getRegionIterArgs());
      Value lastColumn = arith::SubIOp::create(b, n, idx(1));
      for (int64_t tileN = 0; tileN < kNTiles; ++tileN)
        for (int64_t i = 0; i < mma::kAccumulatorRegisters; ++i) {
          int64_t at = tileN * mma::kAccumulatorRegisters + i;
          Value column =
              arith::MinUIOp::create(b, outputColumn(tileN, i), lastColumn);
          Value factor =
              mulf(xUnitParams[i / 2].scale, weightFactor(column, kBegin));
          Value p = partial[at];
          if (integer)
            p = arith::SIToFPOp::create(b, b.getF32Type(), p); // RNE
          acc[at] = math::FmaOp::create(b, p, factor, acc[at]);
        }
      scf::YieldOp::create(b, acc);
    }
    storeOutputs(kBlocks.getResults());
  }

  /// p of K block [kBegin, kEnd) for the lane's accumulator elements: the
  /// chained mma.sync of the block's k32 steps from zero (codes past kEnd
  /// are zeros: +0 products leave an f32 chain that never holds -0, and
  /// the integer sum, unchanged).
  SmallVector<Value> emitBlockPartial(Value kBegin, Value kEnd) {
    Value steps = ceilDiv(arith::SubIOp::create(b, kEnd, kBegin), idx(kMmaK));
    Value zero = integer ? i32(0) : f32(0.0f);
    SmallVector<Value> initial(kAccumulators, zero);
    auto loop = scf::ForOp::create(b, idx(0), steps, idx(1), initial);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kStep = add(kBegin, mul(loop.getInductionVar(), idx(kMmaK)));
    SmallVector<Value, 4> a = activationFragment(kStep, kEnd);
    SmallVector<Value> partial(loop.getRegionIterArgs());
    for (int64_t tileN = 0; tileN < kNTiles; ++tileN) {
      SmallVector<Value, 2> registersB = weightFragment(tileN, kStep, kEnd);
      int64_t at = tileN * mma::kAccumulatorRegisters;
      SmallVector<Value, 4> d = mmaSync(
          a, registersB,
          ArrayRef<Value>(partial).slice(at, mma::kAccumulatorRegisters));
      llvm::copy(d, partial.begin() + at);
    }
    scf::YieldOp::create(b, partial);
    return SmallVector<Value>(loop.getResults());
  }

  /// X[row, col] as an f32 (exact).
  Value loadX(Value row, Value col) {
    return widen(memref::LoadOp::create(b, buffers.x, ValueRange{row, col}));
  }

  /// The conversion parameters of X's scale unit rows [rowBegin, rowEnd) x
  /// columns [colBegin, colEnd): its statistics by one lane's scan (max is
  /// exact and order-free), then the reference's scale.
  GroupParams xParams(Value rowBegin, Value rowEnd, Value colBegin,
                      Value colEnd) {
    auto rowLoop =
        scf::ForOp::create(b, rowBegin, rowEnd, idx(1), ValueRange{f32(0.0f)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(rowLoop.getBody());
      auto colLoop = scf::ForOp::create(b, colBegin, colEnd, idx(1),
                                        rowLoop.getRegionIterArgs());
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(colLoop.getBody());
        Value x = loadX(rowLoop.getInductionVar(), colLoop.getInductionVar());
        scf::YieldOp::create(
            b, xMath.accumulate(colLoop.getRegionIterArgs(), x, false));
      }
      scf::YieldOp::create(b, colLoop.getResults());
    }
    return paramsOf(SmallVector<Value>(rowLoop.getResults()));
  }

  /// X's decoded scale at [row, col] of the scales the front kernel
  /// stored (the reference quantizer's bits; ScaleMath decodes them as
  /// the CPU tail does).
  GroupParams storedParams(Value row, Value col) {
    GroupParams params;
    params.scale = xMath.decodeScale(
        memref::LoadOp::create(b, quantizedX.scales, ValueRange{row, col}));
    return params;
  }

  /// The conversion parameters of a unit with statistics `acc` (amax):
  /// the reference's scale.
  GroupParams paramsOf(SmallVector<Value> acc) {
    Stats stats = xMath.toStats(acc, false);
    GroupParams params;
    params.scale = xMath.decodeScale(xMath.pickScale(stats, Value()));
    return xMath.withExactReciprocal(params);
  }

  /// The lane's four A registers at K offset `kStep`: by aElement, byte e
  /// of register r is X[row g + 8 (r % 2), kStep + 4 t + e + 16 (r / 2)]
  /// quantized; 0 past kEnd.
  SmallVector<Value, 4> activationFragment(Value kStep, Value kEnd) {
    static_assert(
        mma::aElement(kShape, 0, 1) == mma::MatrixCoordinate{0, 1} &&
            mma::aElement(kShape, 5, 4) == mma::MatrixCoordinate{9, 4} &&
            mma::aElement(kShape, 1, 8) == mma::MatrixCoordinate{0, 16 + 4},
        "A register r holds row g + 8 (r % 2), columns 4 t + 16 "
        "(r / 2) ..+3");
    Value lastK = arith::SubIOp::create(b, k, idx(1));
    SmallVector<Value, 4> registers;
    for (int64_t r = 0; r < kShape.aRegisters(); ++r) {
      Value row = safeRows[r % 2];
      Value first =
          add(kStep, add(mul(threadInGroup, idx(4)), idx(16 * (r / 2))));
      SmallVector<Value, 4> codes;
      for (int64_t e = 0; e < 4; ++e) {
        Value col = add(first, idx(e));
        Value at = arith::MinUIOp::create(b, col, lastK);
        Value code =
            quantizedX.codes
                ? Value(memref::LoadOp::create(b, quantizedX.codes,
                                               ValueRange{row, at}))
                : xMath.quantizeValue(loadX(row, at), xUnitParams[r % 2]);
        codes.push_back(select(before(col, kEnd), code, i8(0)));
      }
      registers.push_back(packBytes(codes));
    }
    return registers;
  }

  /// The lane's two B registers of n8 tile `tileN`: byte e of register r
  /// is W's code [n = the tile's column g, kStep + 4 t + e + 16 r]; 0 past
  /// kEnd. A column past N reads row N - 1 (its outputs are not stored).
  SmallVector<Value, 2> weightFragment(int64_t tileN, Value kStep, Value kEnd) {
    static_assert(mma::bElement(kShape, 0, 1) == mma::MatrixCoordinate{1, 0} &&
                      mma::bElement(kShape, 6, 4) ==
                          mma::MatrixCoordinate{8 + 16, 1},
                  "B register r holds rows 4 t + 16 r ..+3 of column g");
    Value column = arith::MinUIOp::create(
        b, add(columnBase, add(idx(tileN * mma::kMmaN), group)),
        arith::SubIOp::create(b, n, idx(1)));
    Value lastK = arith::SubIOp::create(b, k, idx(1));
    SmallVector<Value, 2> registers;
    for (int64_t r = 0; r < kShape.bRegisters(); ++r) {
      Value first = add(kStep, add(mul(threadInGroup, idx(4)), idx(16 * r)));
      SmallVector<Value, 4> codes;
      for (int64_t e = 0; e < 4; ++e) {
        Value at = add(first, idx(e));
        Value code = memref::LoadOp::create(
            b, buffers.codes,
            ValueRange{column, arith::MinUIOp::create(b, at, lastK)});
        codes.push_back(select(before(at, kEnd), code, i8(0)));
      }
      registers.push_back(packBytes(codes));
    }
    return registers;
  }

  Value before(Value position, Value end) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, position, end);
  }

  /// Four i8 codes as one register, code 0 in the low byte.
  Value packBytes(ArrayRef<Value> codes) {
    Value word = i32(0);
    for (auto [index, code] : llvm::enumerate(codes)) {
      Value wide = arith::ExtUIOp::create(b, b.getI32Type(), code);
      word = arith::OrIOp::create(
          b, word, arith::ShLIOp::create(b, wide, i32(int32_t(8 * index))));
    }
    return word;
  }

  /// D = A B + C: s8 through nvvm.mma.sync (s32, wrapping: the order's
  /// int32 sums never overflow), e4m3/e5m2 through the LLVM intrinsic
  /// (MLIR 22's nvvm.mma.sync has no FP8 form).
  SmallVector<Value, 4> mmaSync(ArrayRef<Value> a, ArrayRef<Value> registersB,
                                ArrayRef<Value> c) {
    Type accumulator = integer ? Type(b.getI32Type()) : Type(b.getF32Type());
    auto resultType = LLVM::LLVMStructType::getLiteral(
        b.getContext(),
        SmallVector<Type>(mma::kAccumulatorRegisters, accumulator));
    Value result;
    if (integer) {
      result =
          NVVM::MmaOp::create(b, resultType, a, registersB, c,
                              ArrayRef<int64_t>{mma::kMmaM, mma::kMmaN, kMmaK},
                              std::nullopt, NVVM::MMAIntOverflow::wrapped,
                              std::array<NVVM::MMATypes, 2>{typeA, typeB},
                              std::array<NVVM::MMALayout, 2>{
                                  NVVM::MMALayout::row, NVVM::MMALayout::col});
    } else {
      auto name = [](NVVM::MMATypes type) {
        return type == NVVM::MMATypes::e4m3 ? "e4m3" : "e5m2";
      };
      std::string intrinsic =
          std::string("llvm.nvvm.mma.m16n8k32.row.col.f32.") + name(typeA) +
          "." + name(typeB) + ".f32";
      SmallVector<Value> operands(a);
      llvm::append_range(operands, registersB);
      llvm::append_range(operands, c);
      result = LLVM::CallIntrinsicOp::create(
                   b, resultType, b.getStringAttr(intrinsic), operands)
                   .getResult(0);
    }
    SmallVector<Value, 4> d;
    for (int64_t i = 0; i < mma::kAccumulatorRegisters; ++i)
      d.push_back(
          LLVM::ExtractValueOp::create(b, result, ArrayRef<int64_t>{i}));
    return d;
  }

  /// fw(column, block): the weights' decoded scale at (column, kBegin),
  /// times (decode convention) or divided by (encode) the global scale.
  Value weightFactor(Value column, Value kBegin) {
    Value scale =
        loadParams(buffers.scales, buffers.zeros, column, kBegin).scale;
    if (scaleKind() == ScaleKind::GlobalDecode)
      return mulf(scale, global);
    if (scaleKind() == ScaleKind::GlobalEncode)
      return divf(scale, global);
    return scale;
  }

  /// The column of accumulator element i of n8 tile `tileN`
  /// (accumulatorElement: 2 t + i % 2).
  Value outputColumn(int64_t tileN, int64_t i) {
    return add(columnBase, add(idx(tileN * mma::kMmaN + i % 2),
                               mul(threadInGroup, idx(2))));
  }

  void storeOutputs(ValueRange acc) {
    for (int64_t tileN = 0; tileN < kNTiles; ++tileN)
      for (int64_t i = 0; i < mma::kAccumulatorRegisters; ++i) {
        Value row = rows[i / 2];
        Value column = outputColumn(tileN, i);
        auto inside = scf::IfOp::create(
            b, andAll({before(row, m), before(column, n)}), false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(inside.thenBlock()->getTerminator());
        Value y = addBias(acc[tileN * mma::kAccumulatorRegisters + i], column);
        memref::StoreOp::create(b, roundOutput(y), buffers.output,
                                ValueRange{row, column});
      }
  }

  ScaleMath xMath;
  XUnit unit;
  bool integer;
  int64_t extentK;
  /// X's own scale extent along K (its groups), 0 for one per row.
  int64_t xExtentK;
  /// X's codes and scales from a front kernel (X behind prologues), or
  /// null: the A load quantizes X.
  QuantizedX quantizedX;
  NVVM::MMATypes typeA, typeB;
  // Set while emitting the kernel body.
  Value m, n, k, group, threadInGroup, columnBase, global;
  std::array<Value, 2> rows, safeRows;
  /// X's conversion parameters for the lane's rows g and g + 8.
  std::array<GroupParams, 2> xUnitParams;
};

} // namespace

bool quantizedGemmIsFloat(const Scheme &activations) {
  return !activations.element.isInt();
}

std::string quantizedGemmRefusal(const Scheme &weights,
                                 const Scheme &activations) {
  std::optional<NVVM::MMATypes> a = mmaTypeOf(activations.element),
                                w = mmaTypeOf(weights.element);
  if (!a || !w || weights.packing != Packing::Byte ||
      activations.packing != Packing::Byte)
    return "the W8A8 GEMM multiplies 8-bit codes (int8, e4m3, e5m2) with "
           "mma.sync m16n8k32 and the FP4 GEMM e2m1 codes with equal scale "
           "blocks on both sides (nvfp4, mxfp4); " +
           printSchemeText(weights) + " x " + printSchemeText(activations) +
           " fits neither";
  if (!gemvCoversScheme(weights))
    return "the W8A8 kernel reads the weights' scales row-major per tensor, "
           "per output channel or in blocks";
  if (activations.scale.globalScale != GlobalScale::None ||
      activations.scale.zeroPoint)
    return "the W8A8 kernel quantizes X with one scale per unit, without a "
           "global scale or zero points";
  int64_t extent = std::max(matmul::scaleExtentAlongK(weights.scale),
                            matmul::scaleExtentAlongK(activations.scale));
  if (extent > 0 && extent % kMmaK != 0)
    return "the W8A8 kernel needs the scales' extent along K (" +
           std::to_string(extent) + ") to be a multiple of the mma's K (32)";
  return "";
}

bool quantizedGemmReducesX(const Scheme &activations) {
  return xUnitOf(activations) == XUnit::Tensor;
}

LogicalResult emitQuantizedMatmulGemm(RewriterBase &rewriter,
                                      ImplicitLocOpBuilder &builder,
                                      Operation *op, const Scheme &weights,
                                      const Scheme &activations,
                                      const MatmulBuffers &buffers) {
  Value workspace;
  if (quantizedGemmReducesX(activations)) {
    workspace = gpu_mapping::emitTensorAmaxIntoWorkspace(
        rewriter, builder, op, activations, buffers.x, kAmaxWord,
        kReduceThreads);
    if (!workspace)
      return failure();
  }
  QuantizedGemmEmitter(builder, weights, activations, buffers).emit(workspace);
  if (!workspace)
    return success();
  gpu_mapping::emitWorkspaceWordReset(builder, workspace, kAmaxWord);
  return success();
}

void emitQuantizedMatmulGemmOnCodes(ImplicitLocOpBuilder &builder,
                                    const Scheme &weights,
                                    const Scheme &activations,
                                    const MatmulBuffers &buffers,
                                    const QuantizedX &quantizedX) {
  QuantizedGemmEmitter(builder, weights, activations, buffers, quantizedX)
      .emit(Value());
}

} // namespace lowbit

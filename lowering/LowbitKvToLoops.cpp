//===- LowbitKvToLoops.cpp - lowbit.kv_append/kv_dequantize to loops ------===//
//
// Rewrites each KV-cache op into one flat scf.parallel over the (sequence,
// head, token) rows whose body finds the token's cache row (contiguous, or
// through the block table) and runs the row's groups with scf.for loops.
// The arithmetic and its order are kv/KvQuantize.cpp's, op for op, so the
// codes and scales equal the reference bit for bit (docs/kv-kernels.md):
//
//   kv_int8_g<G>: amax = fmax over |x| (compare and select: a NaN never
//     wins), g = std::max(amax, eps), s = 127 / g (multiplier) or g / 127
//     (divisor), q = clamp(rne(x * s | x / s), -127, 127), NaN -> 0;
//   kv_fp8_*: code = encode(format, x / scale) saturating (lowbit.encode,
//     expanded or made native later), scale per tensor or per head.
//
// The GPU tail maps the scf.parallel to threads as it does for every other
// loop nest, so this one lowering serves both tails.
//
//===----------------------------------------------------------------------===//

#include "lowering/KvArithmetic.h"
#include "lowering/Passes.h"

#include "dialect/LowbitKvOps.h"
#include "dialect/LowbitOps.h"
#include "kv/KvPaged.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITKVTOLOOPS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

class KvEmitter : public lowbit::KvArithmetic<lowbit::ScaleMath> {
public:
  KvEmitter(ImplicitLocOpBuilder &builder,
            const lowbit::kv::KvSchemeParams &params, Value codes, Value scales,
            Value positions, Value blockTable)
      : KvArithmetic(builder, lowbit::kvElementScheme(params)), params(params),
        codes(codes), scales(scales), positions(positions),
        blockTable(blockTable) {}

  Value dim(Value buffer, int64_t axis) {
    return memref::DimOp::create(b, buffer, axis);
  }

  /// One scf.parallel over (sequence, head, token) of `values`; `body`
  /// gets the token's cache slot: [b, h, position] (contiguous) or [page,
  /// h, slot] (paged), inside an scf.if that skips slots outside the cache.
  /// `outside`, when set, runs for the skipped ones.
  void emitTokenLoop(
      Value values,
      function_ref<void(Value seq, Value head, Value token, ValueRange slot)>
          body,
      function_ref<void(Value seq, Value head, Value token)> outside = {}) {
    // One flat dimension of B * H * N rows: the generic GPU mapping puts
    // the innermost dimension of a 3-D nest on threadIdx.z, whose limit
    // (64) a 128-thread block exceeds.
    Value heads = dim(values, 1), tokens = dim(values, 2);
    Value headTokens = arith::MulIOp::create(b, heads, tokens);
    auto loop = scf::ParallelOp::create(
        b, ValueRange{idx(0)},
        ValueRange{arith::MulIOp::create(b, dim(values, 0), headTokens)},
        ValueRange{idx(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value rowIndex = loop.getInductionVars()[0];
    Value seq = arith::DivUIOp::create(b, rowIndex, headTokens);
    Value head = arith::RemUIOp::create(
        b, arith::DivUIOp::create(b, rowIndex, tokens), heads);
    Value token = arith::RemUIOp::create(b, rowIndex, tokens);
    lowbit::KvCacheSlot slot =
        findCacheSlot(codes, positions, blockTable, seq, head, token);
    auto guardIf =
        scf::IfOp::create(b, slot.inside, /*withElseRegion=*/bool(outside));
    b.setInsertionPoint(guardIf.thenBlock()->getTerminator());
    body(seq, head, token, slot.indices);
    if (outside) {
      b.setInsertionPoint(guardIf.elseBlock()->getTerminator());
      outside(seq, head, token);
    }
  }

  /// [begin, end) of group `group` along head_dim.
  std::pair<Value, Value> groupRange(Value group, Value headDim) {
    Value begin = arith::MulIOp::create(b, group, idx(groupSize()));
    Value end = arith::MinSIOp::create(
        b, headDim, arith::AddIOp::create(b, begin, idx(groupSize())));
    return {begin, end};
  }

  /// An scf.for over [begin, end) with `body` at its insertion point.
  void emitElementLoop(Value begin, Value end,
                       function_ref<void(Value channel)> body) {
    auto loop = scf::ForOp::create(b, begin, end, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  /// The f32 value of element `channel` of a token row of `values`.
  Value loadValue(Value values, ValueRange row, Value channel) {
    SmallVector<Value> indices(row);
    indices.push_back(channel);
    Value value = memref::LoadOp::create(b, values, indices);
    if (value.getType().isF32())
      return value;
    return arith::ExtFOp::create(b, b.getF32Type(), value);
  }

  SmallVector<Value> at(ValueRange slot, Value last) {
    SmallVector<Value> indices(slot);
    indices.push_back(last);
    return indices;
  }

  /// The static scale of head `head` (kv_fp8).
  Value staticScale(Value head) {
    return memref::LoadOp::create(b, scales,
                                  ValueRange{params.perHead ? head : idx(0)});
  }

  void emitAppend(Value input) {
    emitTokenLoop(input, [&](Value seq, Value head, Value token,
                             ValueRange slot) {
      Value headDim = dim(input, 3);
      Value row[] = {seq, head, token};
      if (!params.isInt8()) {
        Value scale = staticScale(head);
        emitElementLoop(idx(0), headDim, [&](Value channel) {
          Value code =
              encodeElement(divf(loadValue(input, row, channel), scale));
          memref::StoreOp::create(b, code, codes, at(slot, channel));
        });
        return;
      }
      emitElementLoop(idx(0), dim(scales, 3), [&](Value group) {
        auto [begin, end] = groupRange(group, headDim);
        // groupAbsMax: fmax from 0 over |x|.
        auto reduce =
            scf::ForOp::create(b, begin, end, idx(1), ValueRange{f32(0.0f)});
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(reduce.getBody());
          Value amax =
              absMaxStep(reduce.getRegionIterArgs()[0],
                         loadValue(input, row, reduce.getInductionVar()));
          scf::YieldOp::create(b, ValueRange{amax});
        }
        Value scale = int8GroupScale(reduce.getResult(0), params.int8);
        memref::StoreOp::create(b, scale, scales, at(slot, group));
        emitElementLoop(begin, end, [&](Value channel) {
          Value code =
              quantizeInt8(loadValue(input, row, channel), scale, params.int8);
          memref::StoreOp::create(b, code, codes, at(slot, channel));
        });
      });
    });
  }

  void emitDequantize(Value output) {
    Type outputType = cast<MemRefType>(output.getType()).getElementType();
    auto store = [&](Value value, ValueRange row, Value channel) {
      if (!outputType.isF32())
        value = arith::TruncFOp::create(b, outputType, value);
      memref::StoreOp::create(b, value, output, at(row, channel));
    };
    Value headDim = dim(output, 3);
    emitTokenLoop(
        output,
        [&](Value seq, Value head, Value token, ValueRange slot) {
          Value row[] = {seq, head, token};
          Value scale = params.isInt8() ? Value() : staticScale(head);
          emitElementLoop(idx(0), headDim, [&](Value channel) {
            Value code = memref::LoadOp::create(b, codes, at(slot, channel));
            if (!params.isInt8()) {
              Value decoded = ld::DecodeOp::create(b, b.getF32Type(), code,
                                                   elementFormatAttr);
              store(mulf(decoded, scale), row, channel);
              return;
            }
            Value groupScale = memref::LoadOp::create(
                b, scales,
                at(slot, arith::DivSIOp::create(b, channel, idx(groupSize()))));
            store(dequantizeInt8(code, groupScale, params.int8), row, channel);
          });
        },
        [&](Value seq, Value head, Value token) {
          Value row[] = {seq, head, token};
          emitElementLoop(idx(0), headDim, [&](Value channel) {
            store(f32(0.0f), row, channel);
          });
        });
  }

private:
  int64_t groupSize() const { return params.int8.groupSize; }

  lowbit::kv::KvSchemeParams params;
  Value codes, scales, positions, blockTable;
};

struct LowbitKvToLoops
    : public lowbit::impl::LowbitKvToLoopsBase<LowbitKvToLoops> {
  void runOnOperation() override {
    SmallVector<Operation *> kvOps;
    getOperation().walk([&](Operation *op) {
      if (isa<ld::KvAppendOp, ld::KvDequantizeOp>(op))
        kvOps.push_back(op);
    });
    for (Operation *op : kvOps) {
      ImplicitLocOpBuilder builder(op->getLoc(), op);
      if (auto append = dyn_cast<ld::KvAppendOp>(op)) {
        KvEmitter emitter(builder, append.getSchemeParams(), append.getCodes(),
                          append.getScales(), append.getPositions(),
                          append.getBlockTable());
        emitter.emitAppend(append.getInput());
      } else {
        auto dequantize = cast<ld::KvDequantizeOp>(op);
        KvEmitter emitter(builder, dequantize.getSchemeParams(),
                          dequantize.getCodes(), dequantize.getScales(),
                          dequantize.getPositions(),
                          dequantize.getBlockTable());
        emitter.emitDequantize(dequantize.getOutput());
      }
      op->erase();
    }
  }
};

} // namespace

//===- LowbitAttentionToLoops.cpp - kv_decode_attention to split-K loops --===//
//
// Rewrites lowbit.kv_decode_attention into two scf.parallel nests whose
// arithmetic, operation for operation, is the kernel contract of
// docs/decode-attention.md (kv::decodeAttentionKernelOrder is the same in
// plain C++):
//
//   stage 1, one unit per (sequence, kv head, split): for each query head
//     of the group, m = max over the split's tokens of (q . k) * scale (the
//     dot an fma chain in channel order), then l = sum exp(logit - m) and
//     acc = fma(exp(logit - m), v, acc) in token order, written to the
//     partials as [acc..., m, l];
//   stage 2, one unit per (sequence, query head): M = max of the used
//     splits' m, then in split order f = exp(m_s - M), L = fma(l_s, f, L),
//     out = fma(acc_s, f, out); finally out / L (zeros for length 0).
//
// K and V codes are dequantized where the loops read them (int8 groups:
// code / scale or code * scale; FP8: decode(code) * scale), and exp is
// lowbit's own (emitPrologueExp), so the CPU tail and the GPU tail's
// mapping of these loops give the same bits.
//
//===----------------------------------------------------------------------===//

#include "lowering/DecodeAttentionEmitter.h"
#include "lowering/Passes.h"

#include "mlir/IR/Iterators.h"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITATTENTIONTOLOOPS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;
using lowbit::attention::AttentionEmitter;
using lowbit::attention::operandMemref;

LogicalResult lowbit::attention::rewriteDecodeAttention(
    ld::KvDecodeAttentionOp op, RewriterBase &rewriter,
    function_ref<void(AttentionEmitter &)> emit) {
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  b.setInsertionPoint(op);
  SmallVector<Value, 2> destinations;
  SmallVector<Operation *, 2> boundary;
  for (Value result : op->getResults()) {
    auto materialize = lowbit::gpu_mapping::resultDestination(result, op);
    if (!materialize)
      return op.emitOpError()
             << "lowers only with each result written by one "
                "bufferization.materialize_in_destination into a memref "
                "defined before it (the kernel function's parameters)";
    destinations.push_back(materialize.getDest());
    boundary.push_back(materialize);
  }
  AttentionEmitter emitter(b, op);
  emitter.query = operandMemref(b, op.getQuery());
  emitter.keyCodes = operandMemref(b, op.getKeyCodes());
  emitter.keyScales = operandMemref(b, op.getKeyScales());
  emitter.valueCodes = operandMemref(b, op.getValueCodes());
  emitter.valueScales = operandMemref(b, op.getValueScales());
  emitter.seqLens = operandMemref(b, op.getSeqLens());
  emitter.blockTable = operandMemref(b, op.getBlockTable());
  emitter.output = destinations[0];
  emitter.partials = destinations[1];
  emit(emitter);
  for (Operation *materialize : boundary)
    rewriter.eraseOp(materialize);
  rewriter.eraseOp(op);
  return success();
}

namespace {

struct LowbitAttentionToLoopsPass
    : public lowbit::impl::LowbitAttentionToLoopsBase<
          LowbitAttentionToLoopsPass> {
  void runOnOperation() override {
    SmallVector<ld::KvDecodeAttentionOp> targets;
    getOperation().walk(
        [&](ld::KvDecodeAttentionOp op) { targets.push_back(op); });
    IRRewriter rewriter(&getContext());
    bool failedAny = false;
    for (ld::KvDecodeAttentionOp op : targets)
      failedAny |= failed(lowbit::attention::rewriteDecodeAttention(
          op, rewriter, [](lowbit::attention::AttentionEmitter &emitter) {
            emitter.emit();
          }));
    if (failedAny)
      return signalPassFailure();
    // Inputs read through their buffers leave dead to_tensor ops, and the
    // reshaped views of the parameters dead reshapes, behind.
    SmallVector<Operation *> dead;
    getOperation().walk<WalkOrder::PostOrder, ReverseIterator>(
        [&](Operation *op) {
          if (isa<bufferization::ToTensorOp, memref::ExpandShapeOp,
                  memref::CollapseShapeOp>(op))
            dead.push_back(op);
        });
    for (Operation *op : dead)
      if (op->use_empty())
        op->erase();
  }
};

} // namespace

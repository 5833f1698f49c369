//===- LowbitFlattenLeadingDims.cpp - N-D lowbit ops to 2-D ---------------===//
//
// lowbit.quantize / lowbit.dequantize of a tensor of rank > 2 quantize it
// as [rows, cols] with rows the product of the leading axes (the dialect's
// verifiers define the N-D shapes). This pass collapses every N-D operand
// to 2-D with tensor.collapse_shape, clones the op with 2-D types and
// expands its N-D results back with tensor.expand_shape, so the lowerings
// after it (lowbit-to-gpu, lowbit-to-loops) only ever see 2-D ops.
//
// Kernels in the ABI form (docs/kernel-abi.md) keep their bufferization
// boundary direct: an operand `bufferization.to_tensor %m` becomes
// `to_tensor (memref.collapse_shape %m)`, and a result whose one use is
// `materialize_in_destination` into %d is materialized into
// `memref.collapse_shape %d`, so lowbit-to-loops still reads and writes
// the parameters in place (a collapse of an identity-layout memref is a
// view, no copy).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "dialect/LowbitOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"

namespace lowbit {
#define GEN_PASS_DEF_LOWBITFLATTENLEADINGDIMS
#include "lowering/Passes.h.inc"
} // namespace lowbit

using namespace mlir;
namespace ld = lowbit::dialect;

namespace {

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

/// [[0, ..., rank - 2], [rank - 1]]: the leading axes into one.
SmallVector<ReassociationIndices> leadingIntoRows(int64_t rank) {
  ReassociationIndices leading;
  for (int64_t axis = 0; axis + 1 < rank; ++axis)
    leading.push_back(axis);
  return {leading, {rank - 1}};
}

/// The 2-D type of an N-D tensor type: [product of leading axes, last].
RankedTensorType flattenedType(RankedTensorType type) {
  int64_t rows = 1;
  for (int64_t dim : type.getShape().drop_back())
    rows = ShapedType::isDynamic(dim) || ShapedType::isDynamic(rows)
               ? ShapedType::kDynamic
               : rows * dim;
  return RankedTensorType::get({rows, type.getShape().back()},
                               type.getElementType());
}

Value collapseToRows(OpBuilder &builder, Location loc, Value value) {
  if (!value || rankOf(value) <= 2)
    return value;
  auto reassociation = leadingIntoRows(rankOf(value));
  if (auto toTensor = value.getDefiningOp<bufferization::ToTensorOp>()) {
    Value view = memref::CollapseShapeOp::create(
        builder, loc, toTensor.getBuffer(), reassociation);
    return bufferization::ToTensorOp::create(
        builder, loc, flattenedType(cast<RankedTensorType>(value.getType())),
        view, toTensor.getRestrict(), toTensor.getWritable());
  }
  return tensor::CollapseShapeOp::create(builder, loc, value, reassociation);
}

/// The one materialize_in_destination into a memref that `result` has, if
/// that is its only use.
bufferization::MaterializeInDestinationOp memrefDestinationOf(Value result) {
  if (!result.hasOneUse())
    return {};
  auto materialize = dyn_cast<bufferization::MaterializeInDestinationOp>(
      *result.getUsers().begin());
  if (!materialize || !isa<MemRefType>(materialize.getDest().getType()))
    return {};
  return materialize;
}

/// Rewrites `op` with 2-D operands and results. The N-D results take the
/// leading axes of the input of a quantize, of the codes of a dequantize.
void flatten(Operation *op, DominanceInfo &dominance) {
  Value shapeSource = isa<ld::QuantizeOp>(op)
                          ? cast<ld::QuantizeOp>(op).getInput()
                          : cast<ld::DequantizeOp>(op).getCodes();
  OpBuilder builder(op);
  Location loc = op->getLoc();
  IRMapping mapping;
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()))
      mapping.map(operand, collapseToRows(builder, loc, operand));
  // 2-D views of the memrefs N-D results are materialized into, made
  // before the op so that lowbit-to-loops sees them dominate it.
  SmallVector<Value> views;
  for (Value result : op->getResults()) {
    auto materialize = memrefDestinationOf(result);
    views.push_back(
        materialize && rankOf(result) > 2 &&
                dominance.properlyDominates(materialize.getDest(), op)
            ? memref::CollapseShapeOp::create(builder, loc,
                                              materialize.getDest(),
                                              leadingIntoRows(rankOf(result)))
                  .getResult()
            : Value());
  }
  Operation *flat = builder.clone(*op, mapping);
  for (auto [result, flatResult, view] :
       llvm::zip(op->getResults(), flat->getResults(), views)) {
    auto type = cast<RankedTensorType>(result.getType());
    if (type.getRank() <= 2) {
      result.replaceAllUsesWith(flatResult);
      continue;
    }
    flatResult.setType(flattenedType(type));
    if (view) {
      // Written into the 2-D view of the destination; nothing to expand.
      auto materialize = memrefDestinationOf(result);
      OpBuilder atUse(materialize);
      IRMapping destination;
      destination.map(result, flatResult);
      destination.map(materialize.getDest(), view);
      atUse.clone(*materialize, destination);
      materialize->erase();
      continue;
    }
    // The result's leading axes are the source's; its last is its own.
    SmallVector<OpFoldResult> sizes;
    for (int64_t axis = 0; axis + 1 < type.getRank(); ++axis)
      sizes.push_back(tensor::getMixedSize(builder, loc, shapeSource, axis));
    sizes.push_back(tensor::getMixedSize(builder, loc, flatResult, 1));
    result.replaceAllUsesWith(
        tensor::ExpandShapeOp::create(builder, loc, type, flatResult,
                                      leadingIntoRows(type.getRank()), sizes));
  }
  SmallVector<Value> operands(op->getOperands());
  op->erase();
  // An N-D to_tensor read only through its 2-D view is dead now.
  for (Value operand : operands)
    if (auto toTensor = operand.getDefiningOp<bufferization::ToTensorOp>())
      if (toTensor->use_empty())
        toTensor->erase();
}

struct LowbitFlattenLeadingDims
    : lowbit::impl::LowbitFlattenLeadingDimsBase<LowbitFlattenLeadingDims> {
  void runOnOperation() override {
    SmallVector<Operation *> targets;
    getOperation().walk([&](Operation *op) {
      if (auto quantize = dyn_cast<ld::QuantizeOp>(op)) {
        if (rankOf(quantize.getInput()) > 2)
          targets.push_back(op);
      } else if (auto dequantize = dyn_cast<ld::DequantizeOp>(op)) {
        if (rankOf(dequantize.getResult()) > 2)
          targets.push_back(op);
      }
    });
    DominanceInfo dominance(getOperation());
    for (Operation *op : targets)
      flatten(op, dominance);
  }
};

} // namespace

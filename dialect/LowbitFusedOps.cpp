//===- LowbitFusedOps.cpp - The kernel-boundary region's verifier ---------===//
//
// lowbit.fused is one kernel: its region yields the quantize's results and
// the declared side outputs, and nothing else escapes (docs/fusion.md).
//
//===----------------------------------------------------------------------===//

#include "dialect/LowbitOps.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace lowbit::dialect;

namespace {

/// The dialects whose ops a kernel body may hold: upstream ops on tensors
/// and scalars, and lowbit's own.
bool isKernelBodyDialect(StringRef name) {
  static const llvm::StringSet<> allowed = {"arith", "math", "linalg", "tensor",
                                            "lowbit"};
  return allowed.contains(name);
}

} // namespace

QuantizeOp FusedOp::getQuantize() {
  for (Operation &op : getBody().front())
    if (auto quantize = dyn_cast<QuantizeOp>(op))
      return quantize;
  return {};
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size()
                         << " operands but its block takes "
                         << body.getNumArguments() << " arguments";
  for (auto [index, operand, argument] :
       llvm::enumerate(getInputs(), body.getArguments()))
    if (operand.getType() != argument.getType())
      return emitOpError() << "block argument #" << index << " has type "
                           << argument.getType() << " but operand #" << index
                           << " is " << operand.getType();

  QuantizeOp quantize;
  WalkResult walk = getBody().walk([&](Operation *op) {
    StringRef dialect = op->getName().getDialectNamespace();
    if (!isKernelBodyDialect(dialect)) {
      op->emitOpError() << "cannot be in a lowbit.fused kernel: its body "
                           "holds arith, math, linalg, tensor and lowbit ops";
      return WalkResult::interrupt();
    }
    auto found = dyn_cast<QuantizeOp>(op);
    if (!found)
      return WalkResult::advance();
    if (op->getParentOp() != getOperation()) {
      op->emitOpError() << "must be directly in the lowbit.fused body, not "
                           "nested in another op";
      return WalkResult::interrupt();
    }
    if (quantize) {
      op->emitOpError() << "is a second lowbit.quantize in one lowbit.fused "
                           "kernel (one per kernel)";
      return WalkResult::interrupt();
    }
    quantize = found;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (!quantize)
    return emitOpError() << "holds no lowbit.quantize: a kernel region feeds "
                            "exactly one";

  auto yield = cast<YieldOp>(body.getTerminator());
  ValueRange yielded = yield.getValues();
  unsigned quantizeResults = quantize->getNumResults();
  int64_t sideOutputs = getSideOutputs();
  if (sideOutputs < 0 ||
      int64_t(yielded.size()) != quantizeResults + sideOutputs)
    return yield.emitOpError()
           << "yields " << yielded.size() << " values; the kernel writes the "
           << quantizeResults << " results of its lowbit.quantize and "
           << sideOutputs << " side outputs";
  for (auto [index, value] : llvm::enumerate(yielded)) {
    if (index < quantizeResults) {
      if (value != quantize->getResult(index))
        return yield.emitOpError() << "value #" << index << " must be result #"
                                   << index << " of the lowbit.quantize";
      continue;
    }
    // A side output must be computed in the kernel; passing an operand
    // through would be a copy, not something the kernel writes.
    if (isa<BlockArgument>(value))
      return yield.emitOpError() << "side output #" << index - quantizeResults
                                 << " is a block argument, not a value the "
                                    "kernel computes";
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || type.getRank() != 2 || !isa<FloatType>(type.getElementType()))
      return yield.emitOpError()
             << "side output #" << index - quantizeResults
             << " must be a 2-D float tensor, got " << value.getType();
  }
  // Values used outside their kernel are refused by IsolatedFromAbove and by
  // dominance; the check that matters is what the yield returns, above.
  if (TypeRange(yielded) != getResultTypes())
    return emitOpError() << "result types " << getResultTypes()
                         << " differ from the yielded types "
                         << TypeRange(yielded);
  return success();
}

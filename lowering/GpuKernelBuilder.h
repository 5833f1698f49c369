//===- GpuKernelBuilder.h - Shared pieces of the lowbit-to-gpu kernels ----===//
//
// What every bandwidth-shaped kernel of lowbit-to-gpu needs: finding the
// buffers at the bufferization boundary, 1-D launches, bounds and alignment
// tests, and the stored-scale lookup. The kernel bodies derive from
// GpuKernelBuilder; the scale and element arithmetic is ScaleMath's, the
// index math, launches, shuffles and vector accesses kit::KernelEmitter's
// (lowering/kit/KernelEmitter.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUKERNELBUILDER_H
#define LOWBIT_LOWERING_GPUKERNELBUILDER_H

#include "lowering/ScaleMath.h"
#include "lowering/kit/GridStride.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit::gpu_mapping {

using namespace mlir;

using kit::dimOf;
using kit::kVectorBytes;
using kit::kWarpSize;

//===----------------------------------------------------------------------===//
// The bufferization boundary
//===----------------------------------------------------------------------===//

/// The memref an operand is read from, when it comes from to_tensor.
inline Value operandBuffer(Value tensor) {
  if (!tensor)
    return {};
  if (auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>())
    return toTensor.getBuffer();
  return {};
}

/// The materialize op that writes `result` into a memref available before
/// `anchor` (a block argument or an op earlier in its block), if any.
inline bufferization::MaterializeInDestinationOp
resultDestination(Value result, Operation *anchor) {
  if (!result || !result.hasOneUse())
    return {};
  auto materialize = dyn_cast<bufferization::MaterializeInDestinationOp>(
      *result.getUsers().begin());
  if (!materialize || !isa<MemRefType>(materialize.getDest().getType()))
    return {};
  Value dest = materialize.getDest();
  if (auto argument = dyn_cast<BlockArgument>(dest)) {
    if (argument.getOwner()->getParent()->isAncestor(anchor->getParentRegion()))
      return materialize;
    return {};
  }
  Operation *definition = dest.getDefiningOp();
  if (definition->getBlock() == anchor->getBlock() &&
      definition->isBeforeInBlock(anchor))
    return materialize;
  return {};
}

inline int64_t bytesOf(Type type) { return type.getIntOrFloatBitWidth() / 8; }

/// Base of the kernel emitters: one gpu.launch per op.
class GpuKernelBuilder : public lowbit::ScaleMath {
public:
  GpuKernelBuilder(ImplicitLocOpBuilder &builder, const lowbit::Scheme &scheme,
                   int64_t threadsPerBlock)
      : ScaleMath(builder, scheme), threadsPerBlock(threadsPerBlock) {}

protected:
  Value inBounds(Value valid, Value col, Value cols) {
    return andAll(
        {valid, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col, cols)
                    .getResult()});
  }
  /// Whether the buffer's data pointer is a multiple of `bytes`.
  Value isAligned(Value buffer, int64_t bytes) {
    if (bytes <= 1)
      return arith::ConstantOp::create(b, b.getBoolAttr(true));
    Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, buffer);
    return divides(bytes, pointer);
  }
  Value widen(Value value) {
    if (value.getType() == b.getF32Type())
      return value;
    return arith::ExtFOp::create(b, b.getF32Type(), value); // exact
  }
  Value narrow(Value value, Type type) {
    if (type == b.getF32Type())
      return value;
    return arith::TruncFOp::create(b, type, value);
  }
  Value packNibbles(Value low, Value high) {
    return arith::OrIOp::create(
        b, arith::AndIOp::create(b, low, i8(0xF)),
        arith::ShLIOp::create(b, arith::AndIOp::create(b, high, i8(0xF)),
                              i8(4)));
  }
  Value loadScalar(Value buffer) {
    int64_t rank = cast<MemRefType>(buffer.getType()).getRank();
    return memref::LoadOp::create(b, buffer, SmallVector<Value>(rank, idx(0)));
  }

  /// What element (row, col) needs, read from the stored (row-major)
  /// scales.
  lowbit::GroupParams loadParams(Value scales, Value zeros, Value row,
                                 Value col) {
    const lowbit::ScaleSpec &scale = scheme.scale;
    Value scaleRow = row, scaleCol = idx(0);
    if (scale.granularity == lowbit::Granularity::PerTensor)
      scaleRow = idx(0);
    else if (scale.granularity == lowbit::Granularity::Group)
      scaleCol = arith::DivUIOp::create(b, col, idx(scale.groupSize));
    else if (scale.granularity == lowbit::Granularity::Block) {
      scaleRow = arith::DivUIOp::create(b, row, idx(scale.blockRows));
      scaleCol = arith::DivUIOp::create(b, col, idx(scale.blockCols));
    }
    lowbit::GroupParams params;
    params.scale = decodeScale(
        memref::LoadOp::create(b, scales, ValueRange{scaleRow, scaleCol}));
    if (scaleKind() == lowbit::ScaleKind::Asymmetric) {
      Value zero =
          memref::LoadOp::create(b, zeros, ValueRange{scaleRow, scaleCol});
      params.zero = arith::ExtUIOp::create(b, b.getI32Type(), zero);
    }
    return params;
  }

  /// A 1-D grid over `laneCount` lanes (the large dimension on grid x,
  /// which holds 2^31 - 1 blocks).
  gpu::LaunchOp createLaunch(Value laneCount) {
    return launchBlocks(ceilDiv(laneCount, idx(threadsPerBlock)),
                        threadsPerBlock);
  }
  /// A grid-stride launch: ceil(laneCount / threadsPerBlock) blocks, at
  /// most the kit's grid cap; the body loops over what the grid does not
  /// cover. It asks for the kit's residency (GridStride.h).
  gpu::LaunchOp createGridStrideLaunch(Value laneCount,
                                       TypeRange workgroup = {}) {
    gpu::LaunchOp launch = launchBlocks(
        arith::MinUIOp::create(b, ceilDiv(laneCount, idx(threadsPerBlock)),
                               idx(kit::kGridStrideBlocks)),
        threadsPerBlock, workgroup);
    kit::requireBlocksPerSm(launch, kit::kGridStrideBlocksPerSm);
    return launch;
  }
  /// Threads in the whole grid.
  Value gridThreads(gpu::LaunchOp launch) {
    return arith::MulIOp::create(b, launch.getGridSize().x,
                                 launch.getBlockSize().x);
  }
  Value globalThread(gpu::LaunchOp launch) {
    Value base = arith::MulIOp::create(b, launch.getBlockIds().x,
                                       launch.getBlockSize().x);
    return arith::AddIOp::create(b, base, launch.getThreadIds().x);
  }

  int64_t threadsPerBlock;
};

} // namespace lowbit::gpu_mapping

#endif // LOWBIT_LOWERING_GPUKERNELBUILDER_H

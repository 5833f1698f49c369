//===- KernelEmitter.h - The root of lowbit's kernel emitters ---*- C++ -*-===//
//
// The one base every kernel emitter derives from (docs/kernel-kit.md):
// ScaleMath (and through it the CPU loop emitters and the bandwidth-shaped
// GPU kernels of GpuKernelBuilder.h) and the decode-attention emitters of
// DecodeAttentionEmitter.h. It holds the builder and what every kernel
// needs to say the same way: index math and constants, buffer sizes, 1-D
// launches, shared memory, barriers, warp shuffles and butterfly
// reductions, 16-byte vector accesses, and the tensor-core tile moves
// (ldmatrix, cp.async and its groups). The mma fragments are
// GpuMmaLayout.h's (which lane holds which element) and GpuMma.h's (the
// op).
//
// Every helper emits exactly the ops it names, in the order it names them,
// so moving a kernel onto the kit leaves its PTX as it was.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_KIT_KERNELEMITTER_H
#define LOWBIT_LOWERING_KIT_KERNELEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace lowbit::kit {

/// Lanes of a warp.
inline constexpr int64_t kWarpSize = 32;
/// Bytes each lane moves with one vector access (ld.global.v4.b32).
inline constexpr int64_t kVectorBytes = 16;

/// Size `dim` of a memref: a constant when its type has it, else
/// memref.dim.
inline mlir::Value dimOf(mlir::ImplicitLocOpBuilder &b, mlir::Value buffer,
                         int64_t dim) {
  auto type = mlir::cast<mlir::MemRefType>(buffer.getType());
  if (!type.isDynamicDim(dim))
    return mlir::arith::ConstantIndexOp::create(b, type.getDimSize(dim));
  return mlir::memref::DimOp::create(b, buffer, dim);
}

/// A memref of `shape` x `element` in shared (workgroup) memory.
inline mlir::MemRefType workgroupMemRefType(mlir::MLIRContext *context,
                                            llvm::ArrayRef<int64_t> shape,
                                            mlir::Type element) {
  return mlir::MemRefType::get(
      shape, element, mlir::AffineMap(),
      mlir::gpu::AddressSpaceAttr::get(context,
                                       mlir::gpu::AddressSpace::Workgroup));
}

class KernelEmitter {
public:
  explicit KernelEmitter(mlir::ImplicitLocOpBuilder &builder) : b(builder) {}

  //===--------------------------------------------------------------------===//
  // Constants and index math
  //===--------------------------------------------------------------------===//

  mlir::Value idx(int64_t value) {
    return mlir::arith::ConstantIndexOp::create(b, value);
  }
  mlir::Value f32(float value) {
    return mlir::arith::ConstantOp::create(b, b.getF32FloatAttr(value));
  }
  mlir::Value i32(int32_t value) {
    return mlir::arith::ConstantOp::create(b, b.getI32IntegerAttr(value));
  }
  mlir::Value i8(int32_t value) {
    return mlir::arith::ConstantOp::create(b,
                                           b.getI8IntegerAttr(int8_t(value)));
  }
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(b, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulIOp::create(b, x, y);
  }
  mlir::Value select(mlir::Value condition, mlir::Value ifTrue,
                     mlir::Value ifFalse) {
    return mlir::arith::SelectOp::create(b, condition, ifTrue, ifFalse);
  }
  /// (value + divisor - 1) / divisor, unsigned; arith.ceildivui would need
  /// arith-expand on every target.
  mlir::Value ceilDiv(mlir::Value value, mlir::Value divisor) {
    mlir::Value biased = mlir::arith::SubIOp::create(
        b, mlir::arith::AddIOp::create(b, value, divisor), idx(1));
    return mlir::arith::DivUIOp::create(b, biased, divisor);
  }
  /// The conjunction of `conditions` (at least one), left to right.
  mlir::Value andAll(llvm::ArrayRef<mlir::Value> conditions) {
    mlir::Value result = conditions.front();
    for (mlir::Value condition : conditions.drop_front())
      result = mlir::arith::AndIOp::create(b, result, condition);
    return result;
  }
  /// Whether `multiple` divides `value`.
  mlir::Value divides(int64_t multiple, mlir::Value value) {
    return mlir::arith::CmpIOp::create(
        b, mlir::arith::CmpIPredicate::eq,
        mlir::arith::RemUIOp::create(b, value, idx(multiple)), idx(0));
  }

  //===--------------------------------------------------------------------===//
  // Launches, shared memory and barriers
  //===--------------------------------------------------------------------===//

  /// A gpu.launch of `blocks` blocks of `threads` threads along x, with its
  /// terminator and `workgroup` shared-memory attributions (the builder
  /// stays before the launch; the body goes before its terminator).
  mlir::gpu::LaunchOp launchBlocks(mlir::Value blocks, int64_t threads,
                                   mlir::TypeRange workgroup = {}) {
    mlir::Value one = idx(1);
    auto launch = mlir::gpu::LaunchOp::create(
        b, blocks, one, one, idx(threads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, workgroup);
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&launch.getBody().front());
    mlir::gpu::TerminatorOp::create(b);
    return launch;
  }
  /// `elements` f32 of shared memory for `launch`'s block.
  mlir::Value sharedFloats(mlir::gpu::LaunchOp launch, int64_t elements) {
    return launch.addWorkgroupAttribution(
        workgroupMemRefType(b.getContext(), {elements}, b.getF32Type()),
        b.getLoc());
  }
  /// Every thread of the block waits here (bar.sync 0).
  void barrier() { mlir::gpu::BarrierOp::create(b); }
  /// Every lane of the warp waits here (bar.warp.sync 0xffffffff).
  void warpSync() { mlir::NVVM::SyncWarpOp::create(b, i32(-1)); }

  //===--------------------------------------------------------------------===//
  // Warps: shuffles and butterfly reductions
  //===--------------------------------------------------------------------===//

  /// The value of lane (this lane xor `offset`) (shfl.sync.bfly).
  mlir::Value shuffleXor(mlir::Value value, int64_t offset) {
    return mlir::gpu::ShuffleOp::create(b, value, int32_t(offset),
                                        int32_t(kWarpSize),
                                        mlir::gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }
  /// The value of lane `source` (an i32; shfl.sync.idx).
  mlir::Value shuffleIdx(mlir::Value value, mlir::Value source) {
    return mlir::gpu::ShuffleOp::create(b, value, source, i32(kWarpSize),
                                        mlir::gpu::ShuffleMode::IDX)
        .getShuffleResult();
  }
  /// Combines `values` over aligned runs of `lanes` lanes (a power of two,
  /// at most a warp) with xor shuffles over offsets lanes / 2, ..., 1:
  /// values[i] = combine(i, values[i], the partner's values[i]), all
  /// values at one offset before the next. Every lane of the warp takes
  /// part; every lane of a run ends with the run's result.
  llvm::SmallVector<mlir::Value>
  butterfly(llvm::SmallVector<mlir::Value> values, int64_t lanes,
            llvm::function_ref<mlir::Value(size_t, mlir::Value, mlir::Value)>
                combine) {
    for (int64_t offset = lanes / 2; offset >= 1; offset /= 2)
      for (size_t position = 0; position < values.size(); ++position)
        values[position] = combine(position, values[position],
                                   shuffleXor(values[position], offset));
    return values;
  }
  /// butterfly of one value.
  mlir::Value
  butterfly(mlir::Value value, int64_t lanes,
            llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> combine) {
    return butterfly(llvm::SmallVector<mlir::Value>{value}, lanes,
                     [&](size_t, mlir::Value own, mlir::Value other) {
                       return combine(own, other);
                     })
        .front();
  }

  //===--------------------------------------------------------------------===//
  // Vector accesses
  //===--------------------------------------------------------------------===//

  /// A vector load of `type` at `indices`, aligned to the vector's size
  /// (one ld.global.v4.b32 for kVectorBytes): the caller has checked that
  /// the address is.
  mlir::Value loadVector(mlir::VectorType type, mlir::Value buffer,
                         mlir::ValueRange indices) {
    return mlir::vector::LoadOp::create(
        b, type, buffer, indices,
        /*nontemporal=*/false, llvm::MaybeAlign(vectorSizeInBytes(type)));
  }
  /// A vector store of `vector` at `indices`, aligned to its size.
  void storeVector(mlir::Value vector, mlir::Value buffer,
                   mlir::ValueRange indices) {
    mlir::vector::StoreOp::create(
        b, vector, buffer, indices, /*nontemporal=*/false,
        llvm::MaybeAlign(
            vectorSizeInBytes(mlir::cast<mlir::VectorType>(vector.getType()))));
  }
  static int64_t vectorSizeInBytes(mlir::VectorType type) {
    return type.getNumElements() * type.getElementTypeBitWidth() / 8;
  }

  //===--------------------------------------------------------------------===//
  // Tensor-core tiles: ldmatrix and cp.async
  //===--------------------------------------------------------------------===//

  /// Address spaces of the pointers ldmatrix and cp.async take.
  static constexpr unsigned kGlobalAddressSpace = 1;
  static constexpr unsigned kSharedAddressSpace = 3;

  /// The address of `buffer[indices]` as an `!llvm.ptr<addressSpace>`:
  /// the aligned base plus the row-major element offset (the buffers of
  /// the kernel ABI and workgroup memory have the identity layout and
  /// offset 0). A global pointer is cast from the generic one a kernel
  /// parameter holds; a shared one is already in address space 3.
  mlir::Value elementPointer(mlir::Value buffer, mlir::ValueRange indices,
                             unsigned addressSpace) {
    auto type = mlir::cast<mlir::MemRefType>(buffer.getType());
    mlir::Value offset = idx(0);
    for (auto [dim, index] : llvm::enumerate(indices))
      offset = add(mul(offset, dimOf(b, buffer, int64_t(dim))), index);
    mlir::Value base =
        mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, buffer);
    mlir::Value address = add(
        base, mul(offset, idx(type.getElementTypeBitWidth() / 8)));
    mlir::Value bits =
        mlir::arith::IndexCastOp::create(b, b.getI64Type(), address);
    auto sourceSpace =
        addressSpace == kSharedAddressSpace ? kSharedAddressSpace : 0;
    mlir::Value pointer = mlir::LLVM::IntToPtrOp::create(
        b, mlir::LLVM::LLVMPointerType::get(b.getContext(), sourceSpace),
        bits);
    if (sourceSpace == addressSpace)
      return pointer;
    return mlir::LLVM::AddrSpaceCastOp::create(
        b, mlir::LLVM::LLVMPointerType::get(b.getContext(), addressSpace),
        pointer);
  }

  /// ldmatrix.sync.aligned.m8n8.x`count`[.trans].shared.b16: `count` (1,
  /// 2 or 4) 8x8 b16 matrices; lanes 8 j .. 8 j + 7 give the row
  /// addresses (`rowPointer`, an !llvm.ptr<3>, 16-byte aligned) of matrix
  /// j. Returns one i32 per matrix: lane l holds elements (l / 4, 2 (l % 4))
  /// and the next column of each (of the transposed matrix with
  /// `transpose`), the mma fragments' pairs.
  llvm::SmallVector<mlir::Value, 4> loadMatrices(mlir::Value rowPointer,
                                                 int count, bool transpose) {
    mlir::Type i32Type = b.getI32Type();
    mlir::Type resultType =
        count == 1 ? i32Type
                   : mlir::LLVM::LLVMStructType::getLiteral(
                         b.getContext(),
                         llvm::SmallVector<mlir::Type>(count, i32Type));
    mlir::Value loaded = mlir::NVVM::LdMatrixOp::create(
        b, resultType, rowPointer, count,
        transpose ? mlir::NVVM::MMALayout::col : mlir::NVVM::MMALayout::row,
        mlir::NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        mlir::NVVM::LdStMatrixEltType::B16);
    if (count == 1)
      return {loaded};
    llvm::SmallVector<mlir::Value, 4> registers;
    for (int64_t i = 0; i < count; ++i)
      registers.push_back(mlir::LLVM::ExtractValueOp::create(
          b, loaded, llvm::ArrayRef<int64_t>{i}));
    return registers;
  }

  /// cp.async.{ca,cg}.shared.global [shared], [global], `bytes` (4, 8 or
  /// 16; .cg, which bypasses L1, for 16): an asynchronous copy, complete
  /// after the wait on its group. With `sourceBytes` (an i32 at most
  /// `bytes`), only that many bytes are read and the rest of the
  /// destination is zero-filled: the form for a tile's ragged edge (0
  /// reads nothing).
  void copyAsync(mlir::Value sharedPointer, mlir::Value globalPointer,
                 int64_t bytes, mlir::Value sourceBytes = {}) {
    mlir::NVVM::CpAsyncOp::create(
        b, sharedPointer, globalPointer, int32_t(bytes),
        bytes == 16 ? mlir::NVVM::LoadCacheModifierKind::CG
                    : mlir::NVVM::LoadCacheModifierKind::CA,
        sourceBytes);
  }
  /// cp.async.commit_group: the copies issued since the last commit form
  /// a group.
  void commitCopies() { mlir::NVVM::CpAsyncCommitGroupOp::create(b); }
  /// cp.async.wait_group `pending`: waits until at most `pending` of this
  /// thread's groups are incomplete (0: all). Other threads' copies need a
  /// barrier after it.
  void waitCopies(int64_t pending) {
    mlir::NVVM::CpAsyncWaitGroupOp::create(b, int32_t(pending));
  }

protected:
  mlir::ImplicitLocOpBuilder &b;
};

} // namespace lowbit::kit

#endif // LOWBIT_LOWERING_KIT_KERNELEMITTER_H

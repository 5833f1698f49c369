//===- GpuKvAppend.h - KV-cache append/dequantize, one warp per row -------===//
//
// lowbit-to-gpu's rewrites of lowbit.kv_append and lowbit.kv_dequantize
// into bandwidth-shaped gpu.launch ops (docs/kv-kernels.md, "GPU
// mapping"): one warp per (sequence, kv head, token) row, lanes over the
// row in the widest aligned vectors the layout allows, int8 group amax by
// xor shuffles within the lanes of a group. The arithmetic is
// KvArithmetic.h's, shared with lowbit-kv-to-loops, which takes what these
// patterns leave (KIVI schemes, dynamic head_dim).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_GPUKVAPPEND_H
#define LOWBIT_LOWERING_GPUKVAPPEND_H

#include "mlir/IR/PatternMatch.h"

#include <cstdint>

namespace lowbit {

/// How a KV row is spread over the 32 lanes of its warp; a function of the
/// static sizes only (head_dim, the group size, the element bytes).
struct KvRowMapping {
  /// Elements per lane access: the largest power of two that divides
  /// head_dim (and the group size of kv_int8), keeps an access at most 16
  /// bytes on the wider side, and leaves at least 32 chunks in the row
  /// where head_dim allows, so that no lane idles (a warp issues the same
  /// instructions for 16 busy lanes as for 32).
  int64_t width = 1;
  int64_t chunksPerRow = 1;   ///< head_dim / width
  int64_t chunksPerGroup = 1; ///< G / width (kv_int8); chunksPerRow (fp8)
  int64_t groupsPerRow = 1;   ///< ceil(head_dim / G); 1 (fp8)
  /// Lanes that share a group: a power of two, at most 32.
  int64_t lanesPerGroup = 32;
  int64_t groupsPerTrip = 1; ///< 32 / lanesPerGroup
  int64_t trips = 1;         ///< ceil(groupsPerRow / groupsPerTrip)
};

/// The mapping of a row of `headDim` elements in groups of `groupSize`
/// (0: one group, kv_fp8), with `wideBytes` bytes per element on the wider
/// side (the f16/bf16/f32 values; codes are 1 byte).
KvRowMapping kvRowMapping(int64_t headDim, int64_t groupSize,
                          int64_t wideBytes);

/// lowbit.kv_append / kv_dequantize (kv_int8_g<G>, kv_fp8) -> gpu.launch
/// with `threadsPerBlock` threads (a multiple of 32).
void populateGpuKvPatterns(mlir::RewritePatternSet &patterns,
                           int64_t threadsPerBlock);

} // namespace lowbit

#endif // LOWBIT_LOWERING_GPUKVAPPEND_H

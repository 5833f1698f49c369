//===- KvKiviTestSupport.h - KIVI kernels against kv/KvKivi.h -*- C++ -*-===//
//
// One side of a KIVI cache (keys per channel, or values / per-token keys)
// held in the kernel ABI's buffers (runtime/compiler/KiviCompiler.h),
// appended to chunk by chunk by some runner (the CPU tail or the GPU
// emulator), and after every chunk compared byte for byte with KiviStream
// (kv/KvKivi.h) fed the same tokens: the codes, scales and zeros of every
// quantized group at their rows, sentinels everywhere else, and the
// dequantized tokens (quantized prefix and residual) bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TESTS_KVKERNELS_KVKIVITESTSUPPORT_H
#define LOWBIT_TESTS_KVKERNELS_KVKIVITESTSUPPORT_H

#include "kv/KvKiviKernelSpec.h"
#include "runtime/compiler/KiviCompiler.h"

#include <functional>
#include <string>
#include <vector>

namespace lowbit::kvtest {

/// Runs `spec`'s kernel over `buffers` (ABI order); "" or the error.
using KiviRunner = std::function<std::string(
    const kv::KiviKernelSpec &spec, const std::vector<compiler::KvBuffer> &)>;

struct KiviCaseConfig {
  kv::KiviSide side;
  kv::KvLayout layout = kv::KvLayout::Contiguous;
  kv::KvValueType type = kv::KvValueType::F16;
  int64_t headDim = 40;
  /// Tokens per append call; sequence 1 first gets `headStart` tokens
  /// alone, so the two sequences' lengths and flushes differ.
  std::vector<int64_t> chunks;
  int64_t headStart = 7;
  /// The cache lacks room for some tokens: a contiguous one is 20 tokens
  /// short of the longest sequence, a paged one has no page for sequence
  /// 0's tokens [32, 48). Those rows stay sentinels and read 0.
  bool holes = false;
};

/// The appends and every check after each one. Returns the final codes,
/// scales and zeros (to compare chunked and whole appends).
std::vector<uint8_t> checkKiviAppends(const KiviRunner &run,
                                      const KiviCaseConfig &config);

/// checkKiviAppends for every layout and both sides (keys per channel,
/// values per token), and that appending chunk by chunk or all at once
/// gives the same cache bytes.
void checkKiviEverywhere(const KiviRunner &run, int bits, int64_t groupSize,
                         int64_t residual, int64_t headDim,
                         kv::KvValueType type,
                         const std::vector<int64_t> &chunks);

/// Appends into a cache with holes (KiviCaseConfig::holes), both sides and
/// layouts: only the rows inside the cache are written.
void checkKiviSkipsOutsideTheCache(const KiviRunner &run);

} // namespace lowbit::kvtest

#endif // LOWBIT_TESTS_KVKERNELS_KVKIVITESTSUPPORT_H

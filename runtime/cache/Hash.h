//===- Hash.h - Stable hashes for cache keys and payload checksums -*- C++
//-*-===//
//
// lowbit's cache files outlive the process and move between machines, so the
// hash must be the same everywhere and forever: std::hash is neither. This
// is XXH64 (Yann Collet's xxHash, 64-bit variant, as specified in
// xxhash.h / doc/xxhash_spec.md), written out here so that the runtime has
// no dependency. Known values: XXH64("", 0) = 0xEF46DB3751D8E999 and
// XXH64("abc", 0) = 0x44BC2CF5AD770999 (tests/runtime/HashTest.cpp).
//
// A 128-bit hash is two XXH64 runs with different seeds. It is not a
// cryptographic hash: the cache never trusts it alone (the in-memory map
// compares whole keys, disk entries carry the key in their receipt).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CACHE_HASH_H
#define LOWBIT_RUNTIME_CACHE_HASH_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lowbit::runtime {

/// The seed is not optional on purpose: with a default, xxh64("abc", 0)
/// would silently hash zero bytes.
uint64_t xxh64(const void *data, size_t size, uint64_t seed);

struct Hash128 {
  uint64_t low = 0, high = 0;
  bool operator==(const Hash128 &other) const = default;
  /// 32 lowercase hex digits, high half first: the disk entry's file name.
  std::string toHex() const;
};

/// The seeds of the two halves (the second is the golden-ratio constant).
inline constexpr uint64_t kHashSeedLow = 0;
inline constexpr uint64_t kHashSeedHigh = 0x9E3779B97F4A7C15ULL;

inline Hash128 hash128(const void *data, size_t size) {
  return Hash128{xxh64(data, size, kHashSeedLow),
                 xxh64(data, size, kHashSeedHigh)};
}
inline Hash128 hash128(std::string_view bytes) {
  return hash128(bytes.data(), bytes.size());
}

/// 16 lowercase hex digits.
std::string toHex64(uint64_t value);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CACHE_HASH_H

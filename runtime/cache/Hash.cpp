//===- Hash.cpp - XXH64
//-----------------------------------------------------===//

#include "runtime/cache/Hash.h"

#include <cstring>

namespace lowbit::runtime {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

inline uint64_t rotateLeft(uint64_t value, int bits) {
  return (value << bits) | (value >> (64 - bits));
}

// Little-endian loads through memcpy: unaligned input is allowed and the
// result is the same on every host lowbit runs on (x86-64, aarch64).
inline uint64_t load64(const unsigned char *bytes) {
  uint64_t value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}
inline uint32_t load32(const unsigned char *bytes) {
  uint32_t value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

inline uint64_t round(uint64_t accumulator, uint64_t input) {
  accumulator += input * kPrime2;
  accumulator = rotateLeft(accumulator, 31);
  return accumulator * kPrime1;
}

inline uint64_t mergeRound(uint64_t hash, uint64_t lane) {
  hash ^= round(0, lane);
  return hash * kPrime1 + kPrime4;
}

} // namespace

uint64_t xxh64(const void *data, size_t size, uint64_t seed) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  const unsigned char *end = bytes + size;
  uint64_t hash;
  if (size >= 32) {
    uint64_t lane1 = seed + kPrime1 + kPrime2;
    uint64_t lane2 = seed + kPrime2;
    uint64_t lane3 = seed;
    uint64_t lane4 = seed - kPrime1;
    const unsigned char *stripesEnd = end - 32;
    do {
      lane1 = round(lane1, load64(bytes));
      lane2 = round(lane2, load64(bytes + 8));
      lane3 = round(lane3, load64(bytes + 16));
      lane4 = round(lane4, load64(bytes + 24));
      bytes += 32;
    } while (bytes <= stripesEnd);
    hash = rotateLeft(lane1, 1) + rotateLeft(lane2, 7) + rotateLeft(lane3, 12) +
           rotateLeft(lane4, 18);
    hash = mergeRound(hash, lane1);
    hash = mergeRound(hash, lane2);
    hash = mergeRound(hash, lane3);
    hash = mergeRound(hash, lane4);
  } else {
    hash = seed + kPrime5;
  }
  hash += uint64_t(size);
  while (bytes + 8 <= end) {
    hash ^= round(0, load64(bytes));
    hash = rotateLeft(hash, 27) * kPrime1 + kPrime4;
    bytes += 8;
  }
  if (bytes + 4 <= end) {
    hash ^= uint64_t(load32(bytes)) * kPrime1;
    hash = rotateLeft(hash, 23) * kPrime2 + kPrime3;
    bytes += 4;
  }
  while (bytes < end) {
    hash ^= uint64_t(*bytes) * kPrime5;
    hash = rotateLeft(hash, 11) * kPrime1;
    ++bytes;
  }
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}

std::string toHex64(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int index = 15; index >= 0; --index, value >>= 4)
    text[size_t(index)] = kDigits[value & 0xF];
  return text;
}

std::string Hash128::toHex() const { return toHex64(high) + toHex64(low); }

} // namespace lowbit::runtime

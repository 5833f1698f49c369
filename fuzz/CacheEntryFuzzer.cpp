//===- CacheEntryFuzzer.cpp - Fuzz the kernel cache's disk entry reader
//----===//
//
// Input: the bytes of a disk entry (header, receipt, payload;
// docs/runtime.md). Random bytes almost never carry valid checksums, so
// the first input byte chooses the mode: odd, the bytes are decoded as
// they are (header checks); even, the rest of the input gets its two
// checksums recomputed first, so mutations reach the receipt parser.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzCheck.h"
#include "runtime/cache/Hash.h"
#include "runtime/cache/KernelCache.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

using namespace lowbit;
using namespace lowbit::runtime;

namespace {

// The header layout of docs/runtime.md: magic (8), version (4), receipt
// bytes (4), payload bytes (8), receipt xxh64 (8), payload xxh64 (8).
constexpr size_t kHeaderBytes = 40;

uint64_t readLittle(const std::string &bytes, size_t offset, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= uint64_t(uint8_t(bytes[offset + i])) << (8 * i);
  return value;
}

void writeLittle(std::string &bytes, size_t offset, uint64_t value) {
  for (size_t i = 0; i < 8; ++i)
    bytes[offset + i] = char(uint8_t(value >> (8 * i)));
}

/// Recomputes the checksums where the header's sizes fit the input.
void fixChecksums(std::string &bytes) {
  if (bytes.size() < kHeaderBytes)
    return;
  uint64_t receiptBytes = readLittle(bytes, 12, 4);
  if (receiptBytes > bytes.size() - kHeaderBytes)
    return;
  const char *receipt = bytes.data() + kHeaderBytes;
  const char *payload = receipt + receiptBytes;
  size_t payloadBytes = bytes.size() - kHeaderBytes - receiptBytes;
  writeLittle(bytes, 24, xxh64(receipt, receiptBytes, 0));
  writeLittle(bytes, 32, xxh64(payload, payloadBytes, 0));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  if ((data[0] & 1) == 0)
    fixChecksums(bytes);
  DiskEntryInfo info;
  Expected<CompiledKernel> kernel = decodeDiskEntry(bytes, nullptr, &info);
  if (!kernel) {
    LOWBIT_FUZZ_CHECK(!kernel.error().message.empty(),
                      "a refused entry names its problem");
    return 0;
  }
  LOWBIT_FUZZ_CHECK(kernel->binary.size() == info.payloadBytes,
                    "the payload has the size the header says");
  LOWBIT_FUZZ_CHECK(kernel->binary.size() < bytes.size(),
                    "the payload lies inside the entry");
  return 0;
}

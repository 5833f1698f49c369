//===- Sha256.h - SHA-256 for file checksums --------------------*- C++ -*-===//
//
// The checksum a quantized directory's manifest.json records for each file
// (FIPS 180-4 SHA-256). A standard hash, so that Python's hashlib and
// sha256sum check the same manifest; the runtime stays free of libraries.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_CORE_SHA256_H
#define LOWBIT_RUNTIME_CORE_SHA256_H

#include <string>
#include <string_view>

namespace lowbit::runtime {

/// The digest of `bytes` as 64 lowercase hex digits.
std::string sha256Hex(std::string_view bytes);

} // namespace lowbit::runtime

#endif // LOWBIT_RUNTIME_CORE_SHA256_H

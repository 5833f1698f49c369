//===- KvCacheDirectory.h - A KV cache as a directory of files --*- C++ -*-===//
//
// The directory form of `lowbit kv`'s cache (kv/KvCache.h): meta.json and
// .npy files (docs/kv-cache.md), replaced as one unit
// (runtime/core/AtomicDirectory.h), so a failed write leaves the old cache
// whole. The reader checks every file's shape before it fills a storage-
// less cache (KvCache::withoutStorage), so nothing is allocated from
// meta.json's numbers alone. Here rather than in kv/, which stays below
// the runtime: the cache model does no I/O.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_FILES_KVCACHEDIRECTORY_H
#define LOWBIT_RUNTIME_FILES_KVCACHEDIRECTORY_H

#include "kv/KvCache.h"

#include <optional>
#include <string>

namespace lowbit::files {

/// Writes `cache` to the directory `path`; false and a message on failure.
bool writeKvCacheDirectory(const std::string &path, const kv::KvCache &cache,
                           std::string *error);
/// The cache in the directory `path`; nullopt and a message naming the
/// file and what is wrong with it.
std::optional<kv::KvCache> readKvCacheDirectory(const std::string &path,
                                                std::string *error);

} // namespace lowbit::files

#endif // LOWBIT_RUNTIME_FILES_KVCACHEDIRECTORY_H

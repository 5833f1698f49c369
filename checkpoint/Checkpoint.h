//===- Checkpoint.h - A model's safetensors files, one or sharded -*- C++
//-*-===//
//
// A checkpoint is one `model.safetensors`, or shards listed by
// `model.safetensors.index.json` ({"metadata": {"total_size": N},
// "weight_map": {tensor: shard file}}), the layout Hugging Face's
// libraries read and write. Reading maps every shard once and finds a
// tensor through the weight map; the index is checked against the shards
// (each listed tensor is in its shard, each shard is a plain file name in
// the directory, no tensor is in two shards). Writing cuts the tensors, in
// order, into shards of at most a given size and writes the shards and the
// index as one unit: each goes to a temporary file and all are renamed into
// place only when every one is complete (docs/checkpoints.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_CHECKPOINT_CHECKPOINT_H
#define LOWBIT_CHECKPOINT_CHECKPOINT_H

#include "checkpoint/SafeTensors.h"
#include "runtime/core/Json.h"

#include <map>
#include <memory>

namespace lowbit::checkpoint {

constexpr std::string_view kSingleFileName = "model.safetensors";
constexpr std::string_view kIndexFileName = "model.safetensors.index.json";

/// The shard file names of a checkpoint of `count` shards:
/// "model-00001-of-00003.safetensors".
std::string shardFileName(int index, int count);

class Checkpoint {
public:
  /// A .safetensors file, a directory with an index, or a directory with
  /// model.safetensors.
  static Expected<Checkpoint> open(const std::string &path);

  struct Entry {
    const SafeTensorsFile *file = nullptr;
    const TensorInfo *info = nullptr;
    std::span<const std::byte> data() const { return file->data(*info); }
  };

  /// Every tensor, sorted by name.
  const std::map<std::string, Entry, std::less<>> &tensors() const {
    return byName;
  }
  const Entry *find(std::string_view name) const;
  /// The named tensor or an error naming it.
  Expected<Entry> get(std::string_view name) const;
  const std::vector<std::unique_ptr<SafeTensorsFile>> &files() const {
    return shards;
  }

private:
  std::vector<std::unique_ptr<SafeTensorsFile>> shards;
  std::map<std::string, Entry, std::less<>> byName;
};

/// model.safetensors.index.json's text: `weightMap` (an object, tensor
/// name -> shard file) and the tensors' total bytes.
std::string serializeIndex(json::JsonValue weightMap, uint64_t totalBytes);

/// Writes `tensors` into `directory` (created if missing): one
/// model.safetensors when they fit `maxShardBytes` of data, else shards of
/// at most that (a larger tensor gets a shard of its own) and the index.
/// Shards hold the tensors in the given order. Every file goes through a
/// temporary and a rename, the index last, so a reader never sees a
/// partial file or an index without its shards. A single file replaces an
/// existing model.safetensors; a sharded write refuses a directory that
/// already holds checkpoint files.
Status writeCheckpoint(
    const std::string &directory, std::span<const TensorData> tensors,
    uint64_t maxShardBytes,
    std::span<const std::pair<std::string, std::string>> metadata = {});

} // namespace lowbit::checkpoint

#endif // LOWBIT_CHECKPOINT_CHECKPOINT_H

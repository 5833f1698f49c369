//===- Checkpoint.cpp - Sharded safetensors checkpoints -------------------===//

#include "checkpoint/Checkpoint.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/FileIo.h"
#include "runtime/core/Json.h"

#include <cstdio>
#include <dirent.h>
#include <sys/stat.h>

namespace lowbit::checkpoint {

namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

bool isDirectory(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool exists(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

/// A shard named by the index must be a file of the checkpoint's own
/// directory: no path separators, no "." or "..".
bool isPlainFileName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

/// Whether `name` is a file of a checkpoint this writer may produce.
bool isCheckpointFileName(std::string_view name) {
  if (name == kSingleFileName || name == kIndexFileName)
    return true;
  return name.starts_with("model-") && name.ends_with(".safetensors") &&
         name.find("-of-") != std::string_view::npos;
}

} // namespace

std::string shardFileName(int index, int count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", index,
                count);
  return name;
}

const Checkpoint::Entry *Checkpoint::find(std::string_view name) const {
  auto found = byName.find(name);
  return found == byName.end() ? nullptr : &found->second;
}

Expected<Checkpoint::Entry> Checkpoint::get(std::string_view name) const {
  if (const Entry *entry = find(name))
    return *entry;
  return invalid("the checkpoint has no tensor '" + std::string(name) + "'");
}

Expected<Checkpoint> Checkpoint::open(const std::string &path) {
  Checkpoint checkpoint;
  auto addFile = [&](const std::string &filePath) -> Expected<size_t> {
    Expected<SafeTensorsFile> file = SafeTensorsFile::open(filePath);
    if (!file)
      return std::move(file).takeError();
    checkpoint.shards.push_back(
        std::make_unique<SafeTensorsFile>(std::move(*file)));
    return checkpoint.shards.size() - 1;
  };
  auto addAll = [&](const SafeTensorsFile &file) -> Status {
    for (const TensorInfo &info : file.header().tensors)
      if (!checkpoint.byName.emplace(info.name, Entry{&file, &info}).second)
        return invalid("tensor '" + info.name +
                       "' is in two shards (also in '" + file.path() + "')");
    return Status::success();
  };

  if (!isDirectory(path)) {
    Expected<size_t> index = addFile(path);
    if (!index)
      return std::move(index).takeError();
    if (Status status = addAll(*checkpoint.shards.back()); !status)
      return std::move(status).takeError();
    return checkpoint;
  }

  std::string indexPath = path + "/" + std::string(kIndexFileName);
  if (!exists(indexPath)) {
    std::string single = path + "/" + std::string(kSingleFileName);
    if (!exists(single))
      return invalid("'" + path + "' holds neither " +
                     std::string(kIndexFileName) + " nor " +
                     std::string(kSingleFileName));
    return open(single);
  }

  std::string text, error;
  if (!runtime::readFile(indexPath, text, &error))
    return makeError(ErrorCode::Io, error);
  std::optional<json::JsonValue> index = json::parseJson(text, &error);
  auto bad = [&](std::string what) {
    return invalid("'" + indexPath + "': " + what);
  };
  if (!index)
    return bad(error);
  const json::JsonValue *weightMap =
      index->isObject() ? index->get("weight_map") : nullptr;
  if (!weightMap || !weightMap->isObject())
    return bad("no \"weight_map\" object");

  std::map<std::string, size_t, std::less<>> shardByName;
  for (const auto &[tensor, shard] : weightMap->members()) {
    if (!shard.isString() || !isPlainFileName(shard.text()))
      return bad("tensor '" + tensor +
                 "' maps to something that is not a file name of the "
                 "checkpoint's directory");
    auto found = shardByName.find(shard.text());
    if (found == shardByName.end()) {
      Expected<size_t> opened = addFile(path + "/" + shard.text());
      if (!opened)
        return std::move(opened).takeError();
      found = shardByName.emplace(shard.text(), *opened).first;
    }
    const SafeTensorsFile &file = *checkpoint.shards[found->second];
    const TensorInfo *info = file.header().find(tensor);
    if (!info)
      return bad("tensor '" + tensor + "' is not in its shard '" +
                 shard.text() + "'");
    checkpoint.byName.emplace(tensor, Entry{&file, info});
  }
  // A shard's tensors that the map does not list would be invisible to
  // every loader; the map and the shards must agree.
  for (const auto &file : checkpoint.shards)
    for (const TensorInfo &info : file->header().tensors) {
      const Entry *entry = checkpoint.find(info.name);
      if (!entry || entry->file != file.get())
        return bad("shard '" + file->path() + "' holds tensor '" + info.name +
                   "', which the weight map does not place there");
    }
  return checkpoint;
}

std::string serializeIndex(json::JsonValue weightMap, uint64_t totalBytes) {
  json::JsonValue index = json::JsonValue::object();
  json::JsonValue indexMetadata = json::JsonValue::object();
  indexMetadata.set("total_size",
                    json::JsonValue::number(static_cast<int64_t>(totalBytes)));
  index.set("metadata", std::move(indexMetadata));
  index.set("weight_map", std::move(weightMap));
  return index.serialize() + "\n";
}

Status
writeCheckpoint(const std::string &directory,
                std::span<const TensorData> tensors, uint64_t maxShardBytes,
                std::span<const std::pair<std::string, std::string>> metadata) {
  if (maxShardBytes == 0)
    return invalid("the shard size limit must be positive");

  // Cut the tensors, in order, into shards of at most maxShardBytes.
  std::vector<std::pair<size_t, size_t>> shardRanges; // [first, last)
  uint64_t shardBytes = 0, totalBytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t bytes = tensors[i].bytes.size();
    if (shardRanges.empty() ||
        (shardBytes > 0 && shardBytes + bytes > maxShardBytes)) {
      shardRanges.emplace_back(i, i);
      shardBytes = 0;
    }
    shardRanges.back().second = i + 1;
    shardBytes += bytes;
    totalBytes += bytes;
  }
  if (shardRanges.empty())
    shardRanges.emplace_back(0, 0);
  if (shardRanges.size() > 99999)
    return invalid("the checkpoint would need more than 99999 shards");

  int shardCount = static_cast<int>(shardRanges.size());
  std::vector<std::string> names;
  if (shardCount == 1)
    names.emplace_back(kSingleFileName);
  else
    for (int i = 1; i <= shardCount; ++i)
      names.push_back(shardFileName(i, shardCount));
  if (shardCount > 1)
    names.emplace_back(kIndexFileName);

  std::string error;
  if (!isDirectory(directory) && !runtime::makeDirectory(directory, &error))
    return makeError(ErrorCode::Io, error);
  // Files of another checkpoint left beside the new one would be read in
  // its place (an old index wins over a new model.safetensors), and shards
  // replaced one by one under an old index could mix two checkpoints. So
  // only a single file replaces its own name (one rename); a sharded write
  // needs a directory without a checkpoint.
  if (DIR *listing = ::opendir(directory.c_str())) {
    std::string stale;
    while (dirent *item = ::readdir(listing)) {
      std::string_view name = item->d_name;
      if (isCheckpointFileName(name) &&
          !(shardCount == 1 && name == kSingleFileName))
        stale = name;
    }
    ::closedir(listing);
    if (!stale.empty())
      return invalid("'" + directory + "' already holds '" + stale +
                     "' of a checkpoint; write a sharded checkpoint into a "
                     "directory without one");
  }

  runtime::StagedFiles staged;
  json::JsonValue weightMap = json::JsonValue::object();
  for (int shard = 0; shard < shardCount; ++shard) {
    auto [first, last] = shardRanges[shard];
    std::span<const TensorData> part = tensors.subspan(first, last - first);
    Expected<std::string> file = serializeFile(
        part, shard == 0
                  ? metadata
                  : std::span<const std::pair<std::string, std::string>>{});
    if (!file)
      return std::move(file).takeError();
    for (const TensorData &tensor : part) {
      if (weightMap.get(tensor.name))
        return invalid("tensor '" + tensor.name + "' is given twice");
      weightMap.set(tensor.name, json::JsonValue::string(names[shard]));
    }
    if (!staged.stage(directory + "/" + names[shard], *file, &error))
      return makeError(ErrorCode::Io, error);
  }
  // The index is staged last, so it is renamed last: until it is in place
  // the directory holds no checkpoint a reader would open.
  if (shardCount > 1) {
    if (!staged.stage(directory + "/" + std::string(kIndexFileName),
                      serializeIndex(std::move(weightMap), totalBytes), &error))
      return makeError(ErrorCode::Io, error);
  }
  if (!staged.commit(&error))
    return makeError(ErrorCode::Io, error);
  return Status::success();
}

} // namespace lowbit::checkpoint

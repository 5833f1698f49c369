//===- CheckpointTest.cpp - Sharded checkpoints and their index -----------===//

#include "checkpoint/Checkpoint.h"

#include "runtime/core/Json.h"

#include "tests/checkpoint/CheckpointTesting.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace lowbit::checkpoint;
using Catch::Matchers::Contains;
using namespace lowbit::checkpoint::testing;

namespace {

std::string readText(const std::filesystem::path &path) {
  std::ifstream stream(path);
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

/// Five F32 tensors of 4, 8, 12, 16 and 20 values.
struct FiveTensors {
  std::vector<std::vector<float>> values;
  std::vector<TensorData> tensors;
  FiveTensors() {
    for (int t = 0; t < 5; ++t) {
      std::vector<float> data;
      for (int i = 0; i < 4 * (t + 1); ++i)
        data.push_back(float(t * 100 + i));
      values.push_back(std::move(data));
    }
    for (int t = 0; t < 5; ++t)
      tensors.push_back({"layer." + std::to_string(t) + ".weight",
                         DType::F32,
                         {t + 1, 4},
                         std::as_bytes(std::span(values[t]))});
  }
};

void checkReadsBack(const Checkpoint &checkpoint, const FiveTensors &five) {
  REQUIRE(checkpoint.tensors().size() == 5);
  for (size_t t = 0; t < 5; ++t) {
    lowbit::Expected<Checkpoint::Entry> entry =
        checkpoint.get(five.tensors[t].name);
    REQUIRE(entry.ok());
    CHECK(entry->info->shape == five.tensors[t].shape);
    std::span<const std::byte> data = entry->data();
    REQUIRE(data.size() == five.tensors[t].bytes.size());
    CHECK(std::memcmp(data.data(), five.tensors[t].bytes.data(), data.size()) ==
          0);
  }
}

} // namespace

TEST_CASE("a checkpoint that fits one shard is model.safetensors",
          "[checkpoint]") {
  FiveTensors five;
  std::filesystem::path directory = scratchDirectory("single");
  REQUIRE(writeCheckpoint(directory.string(), five.tensors, 1 << 20).ok());
  CHECK(std::filesystem::exists(directory / "model.safetensors"));
  CHECK_FALSE(std::filesystem::exists(directory / std::string(kIndexFileName)));
  lowbit::Expected<Checkpoint> checkpoint =
      Checkpoint::open(directory.string());
  REQUIRE(checkpoint.ok());
  checkReadsBack(*checkpoint, five);
  // The file itself opens as a checkpoint too, and a rewrite replaces it.
  REQUIRE(Checkpoint::open((directory / "model.safetensors").string()).ok());
  REQUIRE(writeCheckpoint(directory.string(), std::span(five.tensors).first(2),
                          1 << 20)
              .ok());
  checkpoint = Checkpoint::open(directory.string());
  REQUIRE(checkpoint.ok());
  CHECK(checkpoint->tensors().size() == 2);
  CHECK_FALSE(checkpoint->get("layer.4.weight").ok());
  std::filesystem::remove_all(directory);
}

TEST_CASE("a larger checkpoint is sharded by size with an index",
          "[checkpoint]") {
  FiveTensors five;
  std::filesystem::path directory = scratchDirectory("sharded");
  // 16, 32, 48, 64, 80 bytes with a 64-byte limit: {16, 32}, {48}, {64},
  // {80} (a tensor over the limit gets a shard of its own).
  REQUIRE(writeCheckpoint(directory.string(), five.tensors, 64).ok());
  CHECK_FALSE(std::filesystem::exists(directory / "model.safetensors"));
  for (int shard = 1; shard <= 4; ++shard)
    CHECK(std::filesystem::exists(directory / shardFileName(shard, 4)));
  CHECK(shardFileName(2, 4) == "model-00002-of-00004.safetensors");

  std::string error;
  std::optional<lowbit::json::JsonValue> index = lowbit::json::parseJson(
      readText(directory / std::string(kIndexFileName)), &error);
  REQUIRE(index);
  CHECK(index->get("metadata")->get("total_size")->asInt() == 240);
  const lowbit::json::JsonValue *map = index->get("weight_map");
  REQUIRE(map);
  CHECK(map->get("layer.0.weight")->text() == shardFileName(1, 4));
  CHECK(map->get("layer.1.weight")->text() == shardFileName(1, 4));
  CHECK(map->get("layer.2.weight")->text() == shardFileName(2, 4));
  CHECK(map->get("layer.4.weight")->text() == shardFileName(4, 4));

  lowbit::Expected<Checkpoint> checkpoint =
      Checkpoint::open(directory.string());
  REQUIRE(checkpoint.ok());
  CHECK(checkpoint->files().size() == 4);
  checkReadsBack(*checkpoint, five);

  // A second sharded write into it is refused: shards replaced one by one
  // under the old index could mix two checkpoints.
  lowbit::Status again = writeCheckpoint(directory.string(), five.tensors, 64);
  REQUIRE_FALSE(again.ok());
  CHECK_THAT(again.error().message, Contains("already holds"));
  std::filesystem::remove_all(directory);
}

TEST_CASE("a failed checkpoint write leaves nothing", "[checkpoint]") {
  FiveTensors five;
  std::vector<TensorData> tensors = five.tensors;
  tensors[3].shape = {7}; // the fourth shard's bytes disagree with its shape
  std::filesystem::path directory = scratchDirectory("failed");
  lowbit::Status status = writeCheckpoint(directory.string(), tensors, 64);
  REQUIRE_FALSE(status.ok());
  CHECK_THAT(status.error().message, Contains("layer.3.weight"));
  CHECK(std::filesystem::is_empty(directory));

  tensors = five.tensors;
  tensors[4].name = tensors[0].name;
  CHECK_FALSE(writeCheckpoint(directory.string(), tensors, 64).ok());
  CHECK(std::filesystem::is_empty(directory));
  CHECK_FALSE(writeCheckpoint(directory.string(), five.tensors, 0).ok());
  std::filesystem::remove_all(directory);
}

TEST_CASE("an index that disagrees with its shards is refused",
          "[checkpoint]") {
  FiveTensors five;
  std::filesystem::path directory = scratchDirectory("index");
  REQUIRE(writeCheckpoint(directory.string(), five.tensors, 64).ok());
  std::filesystem::path indexPath = directory / std::string(kIndexFileName);
  std::string original = readText(indexPath);
  auto withIndex = [&](const std::string &text) {
    std::ofstream(indexPath) << text;
    lowbit::Expected<Checkpoint> checkpoint =
        Checkpoint::open(directory.string());
    REQUIRE_FALSE(checkpoint.ok());
    return checkpoint.error().message;
  };
  auto replaced = [&](const std::string &from, const std::string &to) {
    std::string text = original;
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };

  CHECK_THAT(
      withIndex(replaced("\"layer.2.weight\": \"" + shardFileName(2, 4),
                         "\"layer.2.weight\": \"" + shardFileName(3, 4))),
      Contains("is not in its shard"));
  CHECK_THAT(withIndex(replaced("\"layer.2.weight\": \"" + shardFileName(2, 4),
                                "\"layer.2.weight\": \"../x.safetensors")),
             Contains("not a file name of the checkpoint"));
  CHECK_THAT(withIndex(replaced(
                 "\"layer.0.weight\": \"" + shardFileName(1, 4) + "\",", "")),
             Contains("does not place there"));
  CHECK_THAT(withIndex("{\"metadata\": {}}"), Contains("weight_map"));
  CHECK_THAT(withIndex("{"), Contains("JSON"));

  std::ofstream(indexPath) << original;
  std::filesystem::resize_file(directory / shardFileName(2, 4), 20);
  lowbit::Expected<Checkpoint> truncated = Checkpoint::open(directory.string());
  REQUIRE_FALSE(truncated.ok());
  CHECK_THAT(truncated.error().message, Contains(shardFileName(2, 4)));

  std::filesystem::path empty = scratchDirectory("none");
  lowbit::Expected<Checkpoint> none = Checkpoint::open(empty.string());
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Contains("holds neither"));
  std::filesystem::remove_all(directory);
  std::filesystem::remove_all(empty);
}

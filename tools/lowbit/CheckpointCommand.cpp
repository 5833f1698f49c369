//===- CheckpointCommand.cpp - `lowbit checkpoint ls` ---------------------===//
//
// Lists a safetensors checkpoint's tensors (a file, or a directory with
// model.safetensors or an index): name, dtype, shape, shard file and byte
// range, sorted by name. Opening the checkpoint runs every check of
// checkpoint/ (docs/checkpoints.md), so a malformed file is an error here
// too, with the library's message.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/Checkpoint.h"
#include "checkpoint/Gguf.h"
#include "checkpoint/GgufExport.h"
#include "checkpoint/QuantConfig.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit checkpoint ls PATH\n"
    "       lowbit checkpoint gguf PATH OUT.gguf --type q8_0|q4_0\n"
    "           [--llama-cpp [--no-tokenizer]]\n\n"
    "Lists the tensors of a safetensors checkpoint: PATH is a .safetensors\n"
    "file, or a directory holding model.safetensors or\n"
    "model.safetensors.index.json and its shards. One line a tensor, by\n"
    "name: name, dtype, shape, file, and [begin, end) in the file's data\n"
    "buffer. The file and its header are checked first (docs/checkpoints.md).\n"
    "A quantized checkpoint's first line names the importer its config\n"
    "(hf_quant_config.json, config.json or quantize_config.json) picks.\n"
    "A .gguf file lists its tensors in file order: name, ggml type, ne[]\n"
    "(fastest-varying first), and [begin, end) in its data section.\n\n"
    "gguf writes the checkpoint's tensors into one GGUF file: each 2-D\n"
    "float tensor of whole 32-element row blocks quantized to Q8_0 or Q4_0\n"
    "(llama.cpp's reference quantizer, bit for bit), the others as F32 or\n"
    "F16; names and shapes as they are (docs/checkpoints.md).\n"
    "With --llama-cpp, a model llama.cpp loads: PATH is a Hugging Face\n"
    "Llama directory; the metadata comes from its config.json, the\n"
    "vocabulary from its tokenizer.json (none with --no-tokenizer), the\n"
    "tensors take llama.cpp's names (blk.N.attn_q.weight, ...) and its\n"
    "rope's order of the q and k rows.\n";

constexpr std::array<OptionSpec, 3> kOptions = {
    {{"type", true}, {"llama-cpp", false}, {"no-tokenizer", false}}};

/// The directory holding PATH's config files: PATH, or the file's.
std::string configDirectory(const std::string &path) {
  if (std::filesystem::is_directory(path))
    return path;
  std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

/// A GGUF file's tensors, in file order (offsets increase).
CommandResult listGguf(const std::string &path) {
  Expected<checkpoint::GgufFile> file = checkpoint::GgufFile::open(path);
  if (!file)
    return fail(file.error().message);
  const checkpoint::GgufHeader &header = file->header();
  size_t nameWidth = 4, shapeWidth = 2;
  for (const checkpoint::GgufTensorInfo &tensor : header.tensors) {
    nameWidth = std::max(nameWidth, tensor.name.size());
    shapeWidth = std::max(shapeWidth, shapeText(tensor.extents).size());
  }
  fmt::print("gguf: version {}, {} metadata keys, alignment {}\n",
             header.version, header.metadata.size(), header.alignment);
  fmt::print("{:<{}}  {:<7}  {:<{}}  {}\n", "name", nameWidth, "type", "ne",
             shapeWidth, "bytes");
  for (const checkpoint::GgufTensorInfo &tensor : header.tensors)
    fmt::print("{:<{}}  {:<7}  {:<{}}  [{}, {})\n", tensor.name, nameWidth,
               tensor.type->name, shapeText(tensor.extents), shapeWidth,
               tensor.offset, tensor.offset + tensor.byteSize);
  return std::nullopt;
}

/// `checkpoint gguf PATH OUT.gguf --type q8_0|q4_0 [--llama-cpp
/// [--no-tokenizer]]`.
CommandResult writeGgufFile(const ParsedCommandLine &parsed) {
  const std::string *type = parsed.value("type");
  if (!type || (*type != "q8_0" && *type != "q4_0"))
    return fail("'checkpoint gguf' needs --type q8_0 or --type q4_0");
  if (parsed.flag("no-tokenizer") && !parsed.flag("llama-cpp"))
    return fail("--no-tokenizer goes with --llama-cpp");
  std::string path(parsed.operands[1]);
  Expected<checkpoint::Checkpoint> opened = checkpoint::Checkpoint::open(path);
  if (!opened)
    return fail(opened.error().message);
  std::optional<checkpoint::GgufLlamaModel> llama;
  if (parsed.flag("llama-cpp")) {
    Expected<checkpoint::GgufLlamaModel> model = checkpoint::readGgufLlamaModel(
        configDirectory(path), parsed.flag("no-tokenizer")
                                   ? checkpoint::GgufTokenizer::None
                                   : checkpoint::GgufTokenizer::FromDirectory);
    if (!model)
      return fail(model.error().message);
    llama = std::move(*model);
  }
  std::string out(parsed.operands[2]);
  if (Status status = checkpoint::writeCheckpointAsGguf(
          *opened, out,
          *type == "q8_0" ? checkpoint::kGgmlQ8_0 : checkpoint::kGgmlQ4_0,
          llama ? &*llama : nullptr);
      !status)
    return fail(status.error().message);
  return std::nullopt;
}

} // namespace

CommandResult runCheckpoint(Arguments args) {
  CommandResult done;
  auto parsed =
      parseCommandLineOrHelp("checkpoint", args, kOptions, kUsage, &done);
  if (!parsed)
    return done;
  if (parsed->operands.size() == 3 && parsed->operands[0] == "gguf")
    return writeGgufFile(*parsed);
  if (parsed->operands.size() != 2 || parsed->operands[0] != "ls" ||
      parsed->value("type") || parsed->flag("llama-cpp") ||
      parsed->flag("no-tokenizer"))
    return fail("usage: lowbit checkpoint ls PATH | "
                "lowbit checkpoint gguf PATH OUT.gguf --type q8_0|q4_0 "
                "[--llama-cpp [--no-tokenizer]]");
  std::string path(parsed->operands[1]);
  if (std::filesystem::path(path).extension() == ".gguf")
    return listGguf(path);
  Expected<checkpoint::Checkpoint> opened = checkpoint::Checkpoint::open(path);
  if (!opened)
    return fail(opened.error().message);
  // The config files sit beside the weights.
  Expected<checkpoint::QuantLayout> layout =
      checkpoint::detectLayout(configDirectory(path));
  if (!layout)
    return fail(layout.error().message);
  if (layout->kind != checkpoint::QuantLayout::Kind::None)
    fmt::print("layout: {}\n", layout->describe());

  auto fileName = [](const checkpoint::Checkpoint::Entry &entry) {
    return std::filesystem::path(entry.file->path()).filename().string();
  };
  size_t nameWidth = 4, shapeWidth = 5, fileWidth = 4;
  for (const auto &[name, entry] : opened->tensors()) {
    nameWidth = std::max(nameWidth, name.size());
    shapeWidth = std::max(shapeWidth, shapeText(entry.info->shape).size());
    fileWidth = std::max(fileWidth, fileName(entry).size());
  }
  fmt::print("{:<{}}  {:<7}  {:<{}}  {:<{}}  {}\n", "name", nameWidth, "dtype",
             "shape", shapeWidth, "file", fileWidth, "bytes");
  for (const auto &[name, entry] : opened->tensors())
    fmt::print("{:<{}}  {:<7}  {:<{}}  {:<{}}  [{}, {})\n", name, nameWidth,
               checkpoint::dtypeName(entry.info->dtype),
               shapeText(entry.info->shape), shapeWidth, fileName(entry),
               fileWidth, entry.info->begin, entry.info->end);
  return std::nullopt;
}

} // namespace lowbit::cli

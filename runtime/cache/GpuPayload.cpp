//===- GpuPayload.cpp - The payload of a GPU kernel's cache entry ---------===//

#include "runtime/cache/GpuPayload.h"

#include <charconv>

namespace lowbit::runtime {
namespace {

constexpr std::string_view kPayloadMagic = "lowbit-jit-gpu 2\n";
/// Version 1 had no workspace section: get() recomputed it with MLIR.
constexpr std::string_view kPayloadMagicV1 = "lowbit-jit-gpu 1\n";
enum Section { Plan, Workspace, Ptx, CubinSection, SectionCount };
constexpr std::string_view kSectionNames[] = {"plan", "workspace", "ptx",
                                              "cubin"};
/// The optional last section: the cubin is still to be linked.
constexpr std::string_view kLinkSection = "link";
constexpr std::string_view kLinkDeferred = "deferred";

void appendSection(std::string &out, std::string_view name,
                   std::string_view bytes) {
  out.append(name).append(" ").append(std::to_string(bytes.size()));
  out.append("\n").append(bytes);
}

} // namespace

std::string encodeGpuPayload(const GpuPayload &payload) {
  std::string out(kPayloadMagic);
  appendSection(out, kSectionNames[Plan], payload.plan);
  std::string workspace = std::to_string(payload.workspaceWords);
  if (payload.workspaceRows.any())
    workspace += " " + std::to_string(payload.workspaceRows.wordsPerRow) + " " +
                 std::to_string(payload.workspaceRows.bitsPerElement);
  appendSection(out, kSectionNames[Workspace], workspace);
  appendSection(out, kSectionNames[Ptx], payload.ptx);
  appendSection(out, kSectionNames[CubinSection], payload.cubin);
  if (payload.cubinDeferred)
    appendSection(out, kLinkSection, kLinkDeferred);
  return out;
}

Expected<GpuPayload> decodeGpuPayload(std::string_view bytes) {
  auto corrupt = [](std::string why) {
    return makeError(ErrorCode::CorruptEntry, "GPU payload: " + why);
  };
  if (bytes.starts_with(kPayloadMagicV1))
    return corrupt("format 1 (written by an older lowbit, without the "
                   "workspace size); this lowbit reads format 2");
  if (!bytes.starts_with(kPayloadMagic))
    return corrupt("bad header");
  bytes.remove_prefix(kPayloadMagic.size());
  GpuPayload payload;
  std::string workspace;
  std::string *sections[] = {&payload.plan, &workspace, &payload.ptx,
                             &payload.cubin};
  for (size_t i = 0; i < SectionCount; ++i) {
    std::string_view name = kSectionNames[i];
    if (!bytes.starts_with(name) || bytes.size() <= name.size() ||
        bytes[name.size()] != ' ')
      return corrupt("missing section '" + std::string(name) + "'");
    bytes.remove_prefix(name.size() + 1);
    size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos || newline == 0)
      return corrupt("section '" + std::string(name) + "' has no length");
    size_t length = 0;
    auto [end, status] =
        std::from_chars(bytes.data(), bytes.data() + newline, length);
    if (status != std::errc() || end != bytes.data() + newline)
      return corrupt("section '" + std::string(name) + "' has a bad length");
    bytes.remove_prefix(newline + 1);
    if (length > bytes.size())
      return corrupt("section '" + std::string(name) + "' is truncated");
    sections[i]->assign(bytes.data(), length);
    bytes.remove_prefix(length);
  }
  std::string link = std::string(kLinkSection) + " " +
                     std::to_string(kLinkDeferred.size()) + "\n" +
                     std::string(kLinkDeferred);
  if (bytes == link && payload.cubin.empty()) {
    payload.cubinDeferred = true;
    bytes = {};
  }
  if (!bytes.empty())
    return corrupt(std::to_string(bytes.size()) +
                   " bytes after the last section");
  if (payload.ptx.empty())
    return corrupt("no PTX");
  // "fixed" or "fixed wordsPerRow bitsPerElement".
  int64_t counts[3] = {0, 0, 0};
  const char *at = workspace.data();
  const char *stop = workspace.data() + workspace.size();
  size_t read = 0;
  for (; read < 3 && at != stop; ++read) {
    if (read > 0 && *at++ != ' ')
      return corrupt("the workspace section is not a word count");
    auto [end, status] = std::from_chars(at, stop, counts[read]);
    if (status != std::errc() || counts[read] < 0)
      return corrupt("the workspace section is not a word count");
    at = end;
  }
  workspace_abi::RowWords rows{counts[1], counts[2]};
  if (read == 0 || at != stop || read == 2 || (read == 3 && !rows.any()) ||
      counts[0] > workspace_abi::kMaxWords ||
      workspace_abi::wordsFor(counts[0], rows, 0, 0) < 0)
    return corrupt("the workspace section is not a word count");
  payload.workspaceWords = counts[0];
  payload.workspaceRows = rows;
  return payload;
}

} // namespace lowbit::runtime

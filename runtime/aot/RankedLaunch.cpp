//===- RankedLaunch.cpp - A bundle launch over ranked buffers, compiled ---===//

#include "runtime/aot/RankedLaunch.h"

#include "target/KernelAbi.h"

#include <charconv>

namespace lowbit::aot {

namespace {

/// [rows, cols] pairs per parameter in the evaluator's shape table.
constexpr size_t kPairsPerParam = kMaxRankedRank / 2;

Error corrupt(const std::string &entry, const std::string &why) {
  return Error{ErrorCode::CorruptEntry, entry + ": " + why};
}

/// `text` with each `dim:P:D` rewritten to the pair layout; nullopt when
/// one names no dimension of the parameters.
std::optional<std::string> toPairLayout(std::string_view text,
                                        std::span<const size_t> ranks) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view token = text.substr(start, end - start);
    if (!out.empty())
      out += ' ';
    if (token.starts_with("dim:")) {
      size_t param = 0, dim = 0;
      const char *first = token.data() + 4, *last = token.data() + token.size();
      auto [colon, paramError] = std::from_chars(first, last, param);
      if (paramError != std::errc() || colon == last || *colon != ':')
        return std::nullopt;
      auto [finish, dimError] = std::from_chars(colon + 1, last, dim);
      if (dimError != std::errc() || finish != last || param >= ranks.size() ||
          dim >= ranks[param])
        return std::nullopt;
      out += "dim:" + std::to_string(param * kPairsPerParam + dim / 2) + ":" +
             std::to_string(dim % 2);
    } else {
      out += token;
    }
    start = end + 1;
  }
  return out;
}

Expected<launch::Expression> compileRanked(const Launch &launch,
                                           const std::string &text,
                                           std::span<const size_t> ranks) {
  std::optional<std::string> paired = toPairLayout(text, ranks);
  if (!paired)
    return corrupt(launch.entry,
                   "launch size '" + text + "' names no buffer dimension");
  Expected<launch::Expression> compiled =
      launch::Expression::compile(*paired, ranks.size() * kPairsPerParam);
  if (!compiled)
    return corrupt(launch.entry, compiled.error().message);
  return compiled;
}

} // namespace

Expected<RankedLaunch>
RankedLaunch::compile(const Launch &launch, std::span<const size_t> ranks,
                      int64_t workspaceWords,
                      workspace_abi::RowWords workspaceRows) {
  if (ranks.size() > kMaxRankedParams)
    return corrupt(launch.entry, std::to_string(ranks.size()) +
                                     " parameters, more than " +
                                     std::to_string(kMaxRankedParams));
  for (size_t rank : ranks)
    if (rank < 1 || rank > kMaxRankedRank)
      return corrupt(launch.entry,
                     "a parameter of rank " + std::to_string(rank));
  // X's [rows, cols] sizes a growing workspace.
  if (workspaceRows.any() && (ranks.empty() || ranks[0] != 2))
    return corrupt(launch.entry, "a workspace that grows with X, whose "
                                 "parameter 0 is not of rank 2");
  RankedLaunch ranked;
  ranked.name = launch.entry;
  ranked.ranks.assign(ranks.begin(), ranks.end());
  ranked.workspaceWords = workspaceWords;
  ranked.workspaceRows = workspaceRows;
  for (size_t i = 0; i < 7; ++i) {
    const std::string &text =
        i < 3 ? launch.grid[i] : (i < 6 ? launch.block[i - 3] : launch.shared);
    Expected<launch::Expression> compiled = compileRanked(launch, text, ranks);
    if (!compiled)
      return compiled.error();
    ranked.sizes[i] = std::move(*compiled);
  }
  for (const aot::Operand &source : launch.operands) {
    RankedLaunch::Operand operand;
    if (source.memref >= 0) {
      operand.param = size_t(source.memref);
      if (operand.param < ranks.size()) {
        operand.kind = Kind::Memref;
        ranked.slotCount += abi::memrefDescriptorSlots(ranks[operand.param]);
      } else if (operand.param == ranks.size() &&
                 (workspaceWords > 0 || workspaceRows.any())) {
        operand.kind = Kind::Workspace;
        ranked.slotCount += abi::memrefDescriptorSlots(2);
      } else {
        return corrupt(launch.entry,
                       "operand m:" + std::to_string(operand.param) +
                           " names no parameter");
      }
    } else {
      operand.kind = source.bits == 32 ? Kind::Scalar32 : Kind::Scalar64;
      Expected<launch::Expression> compiled =
          compileRanked(launch, source.scalar, ranks);
      if (!compiled)
        return compiled.error();
      operand.value = std::move(*compiled);
      ranked.slotCount += 1;
    }
    ranked.operands.push_back(std::move(operand));
  }
  if (ranked.slotCount > launch::kMaxLaunchSlots)
    return corrupt(launch.entry, std::to_string(ranked.slotCount) +
                                     " kernel parameters, more than " +
                                     std::to_string(launch::kMaxLaunchSlots));
  return ranked;
}

Expected<int64_t>
RankedLaunch::workspaceWordsFor(std::span<const RankedShape> shapes) const {
  if (!workspaceRows.any())
    return workspaceWords;
  // compile() checked parameter 0's rank; the caller checked the shapes.
  int64_t words = workspace_abi::wordsFor(workspaceWords, workspaceRows,
                                          shapes[0].dims[0], shapes[0].dims[1]);
  if (words < 0)
    return makeError(
        ErrorCode::InvalidArgument,
        name + ": X of [" + std::to_string(shapes[0].dims[0]) + ", " +
            std::to_string(shapes[0].dims[1]) + "] needs a workspace over " +
            std::to_string(workspace_abi::kMaxWords * 4) + " bytes");
  return words;
}

Status RankedLaunch::resolve(std::span<const RankedShape> shapes,
                             std::span<const uint64_t> addresses,
                             uint64_t workspace,
                             launch::ResolvedStep &out) const {
  if (shapes.size() != ranks.size() || addresses.size() != ranks.size())
    return makeError(ErrorCode::InvalidArgument,
                     name + ": " + std::to_string(ranks.size()) +
                         " parameters, the call has " +
                         std::to_string(shapes.size()));
  std::array<launch::Shape, kMaxRankedParams * kPairsPerParam> pairs{};
  for (size_t param = 0; param < shapes.size(); ++param) {
    if (shapes[param].rank != ranks[param])
      return makeError(ErrorCode::InvalidArgument,
                       name + ": parameter " + std::to_string(param) +
                           " has rank " + std::to_string(shapes[param].rank) +
                           ", the launch was compiled for " +
                           std::to_string(ranks[param]));
    for (size_t dim = 0; dim < ranks[param]; ++dim)
      pairs[param * kPairsPerParam + dim / 2][dim % 2] =
          shapes[param].dims[dim];
  }
  std::span<const launch::Shape> table(pairs.data(),
                                       shapes.size() * kPairsPerParam);
  for (size_t i = 0; i < 7; ++i) {
    Expected<int64_t> value = sizes[i].evaluate(table);
    if (!value)
      return value.error();
    out.sizes[i] = *value;
  }
  // Only an error's message allocates: a launchable size is "" (SSO).
  if (std::string problem = launch::launchSizesProblem(name, out.sizes);
      !problem.empty())
    return makeError(ErrorCode::InvalidArgument, problem);

  Expected<int64_t> callWords = workspaceWordsFor(shapes);
  if (!callWords)
    return callWords.error();
  size_t slot = 0;
  const std::array<int64_t, 2> workspaceDims{1, *callWords};
  for (const Operand &operand : operands) {
    switch (operand.kind) {
    case Kind::Memref:
      slot = launch::packRowMajorDescriptor(
          addresses[operand.param],
          std::span<const int64_t>(shapes[operand.param].dims.data(),
                                   ranks[operand.param]),
          out.slots, slot);
      continue;
    case Kind::Workspace:
      slot = launch::packRowMajorDescriptor(workspace, workspaceDims, out.slots,
                                            slot);
      continue;
    case Kind::Scalar32:
    case Kind::Scalar64: {
      Expected<int64_t> value = operand.value.evaluate(table);
      if (!value)
        return value.error();
      // A 32-bit scalar is the low half of its slot (little endian).
      out.slots[slot++] = operand.kind == Kind::Scalar32
                              ? uint64_t(uint32_t(*value))
                              : uint64_t(*value);
      continue;
    }
    }
  }
  for (size_t i = 0; i < slot; ++i)
    out.pointers[i] = &out.slots[i];
  out.slotCount = slot;
  return Status::success();
}

} // namespace lowbit::aot

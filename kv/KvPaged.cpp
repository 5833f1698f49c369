//===- KvPaged.cpp - The paged KV-cache layout ----------------------------===//

#include "kv/KvPaged.h"
#include "kv/KvPageTable.h"

#include <algorithm>

namespace lowbit::kv {

bool checkPagesUnshared(std::span<const int32_t> blockTable, int64_t maxBlocks,
                        int64_t pages, std::string *error) {
  // (page, slot) of every entry naming a page, sorted: a shared page is
  // two neighbours, found in O(n log n) whatever the page count.
  std::vector<std::pair<int32_t, int64_t>> named;
  for (size_t slot = 0; slot < blockTable.size(); ++slot)
    if (blockTable[slot] >= 0 && blockTable[slot] < pages)
      named.push_back({blockTable[slot], int64_t(slot)});
  std::sort(named.begin(), named.end());
  auto shared = std::adjacent_find(
      named.begin(), named.end(),
      [](const auto &a, const auto &b) { return a.first == b.first; });
  if (shared == named.end())
    return true;
  auto slotText = [&](int64_t slot) {
    return "[" + std::to_string(slot / maxBlocks) + ", " +
           std::to_string(slot % maxBlocks) + "]";
  };
  if (error)
    *error = "block table " + slotText(shared->second) + " and " +
             slotText(std::next(shared)->second) + " both name page " +
             std::to_string(shared->first) +
             "; every page belongs to one (sequence, block) slot";
  return false;
}

bool validatePagedLayout(const PagedLayout &layout,
                         std::span<const int64_t> tokens, std::string *error) {
  auto fail = [&](std::string message) {
    if (error)
      *error = std::move(message);
    return false;
  };
  if (layout.pages < 1 || layout.kvHeads < 1 || layout.width < 1 ||
      layout.batch < 1 || layout.maxBlocks < 1)
    return fail("a paged cache needs pages, heads, width, batch and blocks "
                "per sequence >= 1");
  if (int64_t(layout.blockTable.size()) != layout.batch * layout.maxBlocks)
    return fail("the block table has " +
                std::to_string(layout.blockTable.size()) +
                " entries; [batch, max_blocks] needs " +
                std::to_string(layout.batch * layout.maxBlocks));
  if (!checkPagesUnshared(layout.blockTable, layout.maxBlocks, layout.pages,
                          error))
    return false;
  if (int64_t(tokens.size()) != layout.batch)
    return fail("got " + std::to_string(tokens.size()) +
                " sequence lengths for a batch of " +
                std::to_string(layout.batch));
  for (int64_t b = 0; b < layout.batch; ++b) {
    if (tokens[b] < 0 || tokens[b] > layout.maxBlocks * kPageTokens)
      return fail("sequence " + std::to_string(b) + " has " +
                  std::to_string(tokens[b]) + " tokens; its " +
                  std::to_string(layout.maxBlocks) + " blocks hold " +
                  std::to_string(layout.maxBlocks * kPageTokens));
    int64_t blocks = (tokens[b] + kPageTokens - 1) / kPageTokens;
    for (int64_t block = 0; block < blocks; ++block) {
      int32_t page = layout.blockTable[b * layout.maxBlocks + block];
      if (page < 0 || page >= layout.pages)
        return fail("block table [" + std::to_string(b) + ", " +
                    std::to_string(block) + "] = " + std::to_string(page) +
                    " is not a page in [0, " + std::to_string(layout.pages) +
                    ")");
    }
  }
  return true;
}

} // namespace lowbit::kv

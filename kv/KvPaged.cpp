//===- KvPaged.cpp - The paged KV-cache layout ----------------------------===//

#include "kv/KvPaged.h"

namespace lowbit::kv {

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

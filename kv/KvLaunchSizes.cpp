//===- KvLaunchSizes.cpp - KV kernels' launch sizes for given buffers -----===//

#include "kv/KvLaunchSizes.h"

#include <charconv>

namespace lowbit::kv {

namespace {

/// The number at the start of `text`, and the rest after `separator`.
bool readIndex(std::string_view &text, char separator, size_t &value) {
  const char *end = text.data() + text.size();
  auto [next, status] = std::from_chars(text.data(), end, value);
  if (status != std::errc() || (next != end && *next != separator))
    return false;
  text.remove_prefix(next - text.data() + (next != end ? 1 : 0));
  return true;
}

} // namespace

std::optional<std::string>
substituteKvLaunchDims(std::string_view expression,
                       const std::vector<std::vector<int64_t>> &shapes,
                       std::string *error) {
  std::string out;
  size_t start = 0;
  while (start < expression.size()) {
    size_t end = expression.find(' ', start);
    if (end == std::string_view::npos)
      end = expression.size();
    std::string_view token = expression.substr(start, end - start);
    std::string replaced(token);
    if (token.starts_with("dim:")) {
      std::string_view rest = token.substr(4);
      size_t param = 0, dim = 0;
      if (!readIndex(rest, ':', param) || !readIndex(rest, ' ', dim) ||
          !rest.empty() || param >= shapes.size() ||
          dim >= shapes[param].size()) {
        if (error)
          *error = "launch size " + replaced + " names no buffer dimension";
        return std::nullopt;
      }
      replaced = std::to_string(shapes[param][dim]);
    }
    if (!out.empty())
      out += ' ';
    out += replaced;
    start = end + 1;
  }
  return out;
}

} // namespace lowbit::kv

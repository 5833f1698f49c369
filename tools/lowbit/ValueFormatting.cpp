//===- ValueFormatting.cpp - How lowbit prints values and codes -----------===//

#include "tools/lowbit/ValueFormatting.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

/// Names the values that have no digits; "-nan" is avoided because the sign
/// of a NaN carries no meaning lowbit preserves.
std::optional<std::string> specialValueName(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  return std::nullopt;
}

} // namespace

std::string formatValue(double value) {
  if (auto name = specialValueName(value))
    return *name;
  // fmt's default for a double is the shortest decimal that round-trips.
  return fmt::format("{}", value);
}

std::string formatHexValue(double value) {
  if (auto name = specialValueName(value))
    return *name;
  return fmt::format("{:a}", value);
}

std::string formatCode(const Format &format, uint32_t code) {
  int byteCount = (format.bits() + 7) / 8;
  return fmt::format("0x{:0{}x}", code, 2 * byteCount);
}

std::string formatCodeList(const Format &format, std::vector<uint32_t> codes) {
  std::sort(codes.begin(), codes.end());
  if (codes.empty())
    return "-";
  std::string list;
  for (size_t first = 0; first < codes.size();) {
    size_t last = first;
    while (last + 1 < codes.size() && codes[last + 1] == codes[last] + 1)
      ++last;
    if (!list.empty())
      list += ',';
    list += formatCode(format, codes[first]);
    if (last != first)
      list += "-" + formatCode(format, codes[last]);
    first = last + 1;
  }
  return list;
}

} // namespace lowbit::cli

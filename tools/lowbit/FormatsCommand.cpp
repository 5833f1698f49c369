//===- FormatsCommand.cpp - `lowbit formats` ------------------------------===//
//
// Prints what the format model knows; every number comes from Format and
// Scheme, never from a table here.
//
//===----------------------------------------------------------------------===//

#include "format/Format.h"
#include "format/Scheme.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"
#include "tools/lowbit/ValueFormatting.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsage =
    "usage: lowbit formats\n\n"
    "Lists every named format (bits, exponent bias, largest finite value,\n"
    "smallest normal and subnormal, inf and NaN codes; '-' where there are\n"
    "none) and every named scheme. Values are exact, as the shortest decimal\n"
    "that reads back as the same number.\n";

using Row = std::vector<std::string>;

/// Left-aligned columns, two spaces apart, sized to their widest cell.
void printTable(const std::vector<Row> &rows) {
  std::vector<size_t> widths;
  for (const Row &row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t column = 0; column < row.size(); ++column)
      widths[column] = std::max(widths[column], row[column].size());
  }
  for (const Row &row : rows) {
    std::string line;
    for (size_t column = 0; column < row.size(); ++column) {
      if (column + 1 == row.size()) {
        line += row[column];
        break;
      }
      line += fmt::format("{:<{}}  ", row[column], widths[column]);
    }
    fmt::print("{}\n", line);
  }
}

Row formatRow(const Format &format) {
  // Bias and the normal/subnormal split are float notions; integer formats
  // show '-' there rather than the model's placeholder values.
  if (format.isInt())
    return {format.name(), std::to_string(format.bits()),
            "-",           formatValue(format.maxValue()),
            "-",           "-",
            "-",           "-"};
  return {format.name(),
          std::to_string(format.bits()),
          std::to_string(format.floatParams().bias),
          formatValue(format.maxValue()),
          formatValue(format.minNormal()),
          format.hasSubnormals() ? formatValue(format.minSubnormal()) : "-",
          formatCodeList(format, format.infCodes()),
          formatCodeList(format, format.nanCodes())};
}

std::string granularityText(const ScaleSpec &scale) {
  std::string name(granularityName(scale.granularity));
  switch (scale.granularity) {
  case Granularity::Group:
    return fmt::format("{}({})", name, scale.groupSize);
  case Granularity::Block:
    return fmt::format("{}({}x{})", name, scale.blockRows, scale.blockCols);
  case Granularity::PerChannel:
    return fmt::format("{}(axis {})", name, scale.axis);
  default:
    return name;
  }
}

/// What sets a scheme apart beyond the columns: zero point, second-level
/// scale, scale layout, packing.
std::string schemeNotes(const Scheme &scheme) {
  std::vector<std::string> notes;
  if (scheme.scale.zeroPoint)
    notes.push_back("zero point");
  if (scheme.scale.globalScale != GlobalScale::None)
    notes.push_back(fmt::format("global scale {}",
                                globalScaleName(scheme.scale.globalScale)));
  if (scheme.scale.layout != ScaleLayout::RowMajor)
    notes.push_back(
        fmt::format("layout {}", scaleLayoutName(scheme.scale.layout)));
  notes.push_back(fmt::format("packing {}", packingName(scheme.packing)));
  return fmt::format("{}", fmt::join(notes, ", "));
}

} // namespace

void printFormatsTable() {
  std::vector<Row> rows = {{"name", "bits", "bias", "max", "min normal",
                            "min subnormal", "inf codes", "nan codes"}};
  for (const Format &format : namedFormats())
    rows.push_back(formatRow(format));
  printTable(rows);
}

void printSchemesList() {
  std::vector<Row> rows = {
      {"scheme", "element", "granularity", "scale", "rule", "notes"}};
  for (const Scheme &scheme : namedSchemes())
    rows.push_back(
        {scheme.name, scheme.element.name(), granularityText(scheme.scale),
         std::string(scaleTypeName(scheme.scale.type)),
         std::string(scaleRuleName(scheme.scale.rule)), schemeNotes(scheme)});
  printTable(rows);
}

CommandResult runFormats(Arguments args) {
  CommandResult done;
  auto parsed = parseCommandLineOrHelp("formats", args, {}, kUsage, &done);
  if (!parsed)
    return done;
  if (!parsed->operands.empty())
    return fail(fmt::format("'formats' takes no arguments, got '{}'",
                            parsed->operands.front()));
  fmt::print("Formats\n");
  printFormatsTable();
  fmt::print("\nSchemes\n");
  printSchemesList();
  return std::nullopt;
}

} // namespace lowbit::cli

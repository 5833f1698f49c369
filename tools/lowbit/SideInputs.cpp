//===- SideInputs.cpp - --side NAME=FILE: a prologue's side tensors -------===//

#include "tools/lowbit/SideInputs.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace lowbit::cli {

namespace {

/// A side tensor's accepted shapes: [rows, cols]; a [1, cols] vector also
/// as [cols]; a [rows, cols] tensor of an N-D input also in the input's
/// form, [leading..., cols].
bool fitsShape(const std::vector<int64_t> &shape, Shape2D expected,
               std::span<const int64_t> leading) {
  if (shape == std::vector<int64_t>{expected.rows, expected.cols})
    return true;
  if (expected.rows == 1 && shape == std::vector<int64_t>{expected.cols})
    return true;
  if (leading.empty() || expected.rows == 1 ||
      shape.size() != leading.size() + 1 || shape.back() != expected.cols)
    return false;
  return std::equal(leading.begin(), leading.end(), shape.begin());
}

/// In numpy's notation, as npy::Array::shapeText writes the file's shape.
std::string shapeText(Shape2D shape) {
  return shape.rows == 1
             ? fmt::format("({},) or (1, {})", shape.cols, shape.cols)
             : fmt::format("({}, {})", shape.rows, shape.cols);
}

bool fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return false;
}

} // namespace

std::optional<std::vector<std::vector<uint8_t>>>
readSideInputs(const ParsedCommandLine &parsed,
               std::span<const SideInput> sides, npy::DType dtype,
               std::span<const int64_t> leading, std::string *error) {
  std::map<std::string, std::string, std::less<>> given;
  for (const std::string &side : parsed.list("side")) {
    size_t equals = side.find('=');
    if (equals == std::string::npos || equals == 0 ||
        equals + 1 == side.size()) {
      fail(error, fmt::format("--side '{}': expected NAME=FILE", side));
      return std::nullopt;
    }
    std::string name = side.substr(0, equals);
    if (!given.emplace(name, side.substr(equals + 1)).second) {
      fail(error, fmt::format("--side {} given more than once", name));
      return std::nullopt;
    }
  }
  std::vector<std::string> names;
  for (const SideInput &side : sides)
    names.push_back(side.name);
  std::string expected =
      names.empty() ? std::string("its prologues read no side tensor")
                    : fmt::format("it reads {}", fmt::join(names, ", "));
  for (const auto &[name, path] : given)
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      fail(error, fmt::format("--side {}: the spec takes no side input "
                              "'{}'; {}",
                              name, name, expected));
      return std::nullopt;
    }
  for (const std::string &name : names)
    if (!given.contains(name)) {
      fail(error, fmt::format("missing --side {}=FILE: {}", name, expected));
      return std::nullopt;
    }

  std::vector<std::vector<uint8_t>> reads;
  for (const SideInput &side : sides) {
    const std::string &path = given.find(side.name)->second;
    std::optional<npy::Array> array =
        npy::readNpy(path, error, npy::kMaxNpyRank);
    if (!array)
      return std::nullopt;
    if (array->dtype != dtype) {
      fail(error, fmt::format("{}: side input '{}' is {}; the input is {}",
                              path, side.name, npy::dtypeName(array->dtype),
                              npy::dtypeName(dtype)));
      return std::nullopt;
    }
    if (!fitsShape(array->shape, side.shape, leading)) {
      fail(error,
           fmt::format("{}: side input '{}' has shape {}, expected {}", path,
                       side.name, array->shapeText(), shapeText(side.shape)));
      return std::nullopt;
    }
    reads.push_back(std::move(array->bytes));
  }
  return reads;
}

std::vector<std::string> sideInputFiles(const ParsedCommandLine &parsed) {
  std::vector<std::string> files;
  for (const std::string &side : parsed.list("side"))
    files.push_back(side.substr(side.find('=') + 1));
  return files;
}

} // namespace lowbit::cli

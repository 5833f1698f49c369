//===- Npy.cpp - Reading and writing NumPy .npy files ---------------------===//
//
// Layout (numpy.lib.format): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (uint16 for 1.0, uint32 for 2.0), then a
// Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}
// padded with spaces to a multiple of 64 bytes and ended by '\n', then the
// data.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Npy.h"

#include "runtime/core/AtomicFile.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>

namespace lowbit::npy {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

struct DTypeInfo {
  DType dtype;
  std::string_view descr, name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "<f4", "float32", 4}, {DType::F16, "<f2", "float16", 2},
    {DType::U16, "<u2", "uint16", 2},  {DType::U8, "|u1", "uint8", 1},
    {DType::I8, "|i1", "int8", 1},     {DType::I32, "<i4", "int32", 4},
};

const DTypeInfo &infoOf(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info;
  return kDTypes[0];
}

/// A parser for the header's dict literal: string keys, and string, bool
/// or tuple-of-int values. Nothing else appears in a valid header.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text(text) {}

  std::optional<std::string> descr;
  std::optional<bool> fortranOrder;
  std::optional<std::vector<int64_t>> shape;

  bool parse(std::string *error) {
    skipSpace();
    if (!consume('{'))
      return fail(error, "the header is not a dict");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::optional<std::string> key = parseString();
      if (!key)
        return fail(error, "expected a quoted key in the header");
      skipSpace();
      if (!consume(':'))
        return fail(error, "expected ':' after '" + *key + "' in the header");
      skipSpace();
      if (!parseValue(*key, error))
        return false;
      skipSpace();
      if (consume('}'))
        break;
      if (!consume(','))
        return fail(error, "expected ',' or '}' in the header");
    }
    skipSpace();
    if (position != text.size())
      return fail(error, "unexpected text after the header dict");
    if (!descr || !fortranOrder || !shape)
      return fail(error, "the header lacks 'descr', 'fortran_order' or "
                         "'shape'");
    return true;
  }

private:
  std::string_view text;
  size_t position = 0;

  static bool fail(std::string *error, std::string message) {
    setError(error, std::move(message));
    return false;
  }
  void skipSpace() {
    while (position < text.size() &&
           std::isspace(static_cast<unsigned char>(text[position])))
      ++position;
  }
  bool consume(char expected) {
    if (position < text.size() && text[position] == expected) {
      ++position;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view word) {
    if (text.substr(position, word.size()) != word)
      return false;
    position += word.size();
    return true;
  }
  std::optional<std::string> parseString() {
    if (position >= text.size() ||
        (text[position] != '\'' && text[position] != '"'))
      return std::nullopt;
    char quote = text[position++];
    size_t end = text.find(quote, position);
    if (end == std::string_view::npos)
      return std::nullopt;
    std::string value(text.substr(position, end - position));
    position = end + 1;
    return value;
  }
  std::optional<int64_t> parseInt() {
    size_t start = position;
    int64_t value = 0;
    while (position < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[position]))) {
      int digit = text[position++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return std::nullopt;
      value = value * 10 + digit;
    }
    // Python 2 era writers append 'L' to longs.
    if (position > start && position < text.size() && text[position] == 'L')
      ++position;
    return position > start ? std::optional<int64_t>(value) : std::nullopt;
  }
  bool parseValue(const std::string &key, std::string *error) {
    if (key == "descr") {
      if (descr)
        return fail(error, "'descr' appears twice in the header");
      descr = parseString();
      return descr ? true
                   : fail(error, "'descr' is not a simple dtype string "
                                 "(structured dtypes are not "
                                 "supported)");
    }
    if (key == "fortran_order") {
      if (fortranOrder)
        return fail(error, "'fortran_order' appears twice in the header");
      if (consumeWord("True"))
        fortranOrder = true;
      else if (consumeWord("False"))
        fortranOrder = false;
      else
        return fail(error, "'fortran_order' is not True or False");
      return true;
    }
    if (key == "shape") {
      if (shape)
        return fail(error, "'shape' appears twice in the header");
      if (!consume('('))
        return fail(error, "'shape' is not a tuple");
      std::vector<int64_t> dims;
      while (true) {
        skipSpace();
        if (consume(')'))
          break;
        std::optional<int64_t> dim = parseInt();
        if (!dim)
          return fail(error, "'shape' holds something other than "
                             "non-negative integers");
        dims.push_back(*dim);
        skipSpace();
        if (consume(')'))
          break;
        if (!consume(','))
          return fail(error, "expected ',' or ')' in 'shape'");
      }
      shape = std::move(dims);
      return true;
    }
    return fail(error, "unexpected key '" + key + "' in the header");
  }
};

uint32_t readLittleEndian(std::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t index = 0; index < width; ++index)
    value |= uint32_t(static_cast<unsigned char>(bytes[offset + index]))
             << (8 * index);
  return value;
}

/// Elements of `shape`, or nullopt if the count overflows.
std::optional<int64_t> countElements(const std::vector<int64_t> &shape,
                                     size_t itemSize) {
  int64_t count = 1;
  int64_t limit = std::numeric_limits<int64_t>::max() / int64_t(itemSize);
  for (int64_t dim : shape) {
    if (dim < 0 || (dim != 0 && count > limit / dim))
      return std::nullopt;
    count *= dim;
  }
  return count;
}

std::string shapeToText(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t index = 0; index < shape.size(); ++index) {
    if (index)
      text += ", ";
    text += std::to_string(shape[index]);
  }
  if (shape.size() == 1)
    text += ",";
  return text + ")";
}

} // namespace

std::string_view dtypeDescr(DType dtype) { return infoOf(dtype).descr; }
std::string_view dtypeName(DType dtype) { return infoOf(dtype).name; }
size_t dtypeSize(DType dtype) { return infoOf(dtype).size; }

std::optional<DType> parseDescr(std::string_view descr) {
  for (const DTypeInfo &info : kDTypes)
    if (info.descr == descr)
      return info.dtype;
  return std::nullopt;
}

int64_t Array::elementCount() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::string Array::shapeText() const { return shapeToText(shape); }

std::optional<Array> parseNpy(std::string_view contents, std::string *error,
                              int maxRank) {
  if (contents.substr(0, kMagic.size()) != kMagic) {
    setError(error, "not a .npy file (bad magic)");
    return std::nullopt;
  }
  if (contents.size() < kMagic.size() + 2) {
    setError(error, "truncated header (no version)");
    return std::nullopt;
  }
  int major = static_cast<unsigned char>(contents[6]);
  int minor = static_cast<unsigned char>(contents[7]);
  if ((major != 1 && major != 2) || minor != 0) {
    setError(error, "unsupported .npy version " + std::to_string(major) + "." +
                        std::to_string(minor) + " (1.0 and 2.0 are supported)");
    return std::nullopt;
  }
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t prefix = 8 + lengthWidth;
  if (contents.size() < prefix) {
    setError(error, "truncated header (no header length)");
    return std::nullopt;
  }
  size_t headerLength = readLittleEndian(contents, 8, lengthWidth);
  if (contents.size() - prefix < headerLength) {
    setError(error, "truncated header: it claims " +
                        std::to_string(headerLength) + " bytes, the file has " +
                        std::to_string(contents.size() - prefix));
    return std::nullopt;
  }
  // The header is an ASCII dict literal: anything else is refused here, so
  // no message below quotes binary bytes (or a terminal escape) back.
  std::string_view headerText = contents.substr(prefix, headerLength);
  for (size_t index = 0; index < headerText.size(); ++index) {
    unsigned char byte = static_cast<unsigned char>(headerText[index]);
    if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte > 0x7e) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", byte);
      setError(error, "malformed header: byte " + std::string(hex) +
                          " at offset " + std::to_string(prefix + index) +
                          " is not printable ASCII");
      return std::nullopt;
    }
  }
  HeaderParser header(headerText);
  std::string reason;
  if (!header.parse(&reason)) {
    setError(error, "malformed header: " + reason);
    return std::nullopt;
  }
  std::optional<DType> dtype = parseDescr(*header.descr);
  if (!dtype) {
    setError(error, "unsupported dtype '" + *header.descr +
                        "' (supported: <f4, <f2, <u2, |u1, |i1, <i4)");
    return std::nullopt;
  }
  if (*header.fortranOrder) {
    setError(error, "Fortran-order arrays are not supported (save a C-order "
                    "array, e.g. with numpy.ascontiguousarray)");
    return std::nullopt;
  }
  maxRank = std::clamp(maxRank, 2, kMaxNpyRank);
  if (header.shape->empty() || int(header.shape->size()) > maxRank) {
    setError(error, (maxRank == 2 ? std::string("only 1-D and 2-D arrays are")
                                  : "only arrays of rank 1 to " +
                                        std::to_string(maxRank) + " are") +
                        " supported, got shape " + shapeToText(*header.shape));
    return std::nullopt;
  }
  std::optional<int64_t> count =
      countElements(*header.shape, dtypeSize(*dtype));
  if (!count) {
    setError(error, "shape " + shapeToText(*header.shape) + " is too large");
    return std::nullopt;
  }
  size_t dataBytes = contents.size() - prefix - headerLength;
  size_t wanted = size_t(*count) * dtypeSize(*dtype);
  if (dataBytes != wanted) {
    setError(error, std::string(dataBytes < wanted ? "truncated data"
                                                   : "trailing data") +
                        ": shape " + shapeToText(*header.shape) + " of " +
                        std::string(dtypeName(*dtype)) + " needs " +
                        std::to_string(wanted) + " bytes, the file has " +
                        std::to_string(dataBytes));
    return std::nullopt;
  }
  Array array;
  array.dtype = *dtype;
  array.shape = *header.shape;
  std::string_view data = contents.substr(prefix + headerLength);
  array.bytes.assign(data.begin(), data.end());
  return array;
}

std::optional<Array> readNpy(const std::string &path, std::string *error,
                             int maxRank) {
  std::string contents;
  if (!runtime::readFile(path, contents, error))
    return std::nullopt;
  std::string reason;
  std::optional<Array> array = parseNpy(contents, &reason, maxRank);
  if (!array)
    setError(error, path + ": " + reason);
  return array;
}

std::optional<std::string> serializeNpy(const Array &array,
                                        std::string *error) {
  if (array.shape.empty() || int(array.shape.size()) > kMaxNpyRank) {
    setError(error, "only arrays of rank 1 to " + std::to_string(kMaxNpyRank) +
                        " can be written, got shape " + array.shapeText());
    return std::nullopt;
  }
  std::optional<int64_t> count =
      countElements(array.shape, dtypeSize(array.dtype));
  if (!count || size_t(*count) * dtypeSize(array.dtype) != array.bytes.size()) {
    setError(error, "shape " + array.shapeText() + " does not match " +
                        std::to_string(array.bytes.size()) + " bytes of data");
    return std::nullopt;
  }
  std::string dict =
      "{'descr': '" + std::string(dtypeDescr(array.dtype)) +
      "', 'fortran_order': False, 'shape': " + array.shapeText() + ", }";
  // NumPy pads so that the data starts on a 64-byte boundary.
  bool version1 = dict.size() + 1 + 10 <= 65535;
  size_t prefix = version1 ? 10 : 12;
  size_t padded = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(padded - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string contents(kMagic);
  contents += char(version1 ? 1 : 2);
  contents += char(0);
  for (size_t index = 0; index < prefix - 8; ++index)
    contents += char((dict.size() >> (8 * index)) & 0xFF);
  contents += dict;
  contents.append(reinterpret_cast<const char *>(array.bytes.data()),
                  array.bytes.size());
  return contents;
}

bool writeNpy(const std::string &path, const Array &array, std::string *error) {
  std::optional<std::string> contents = serializeNpy(array, error);
  return contents && runtime::writeFileAtomically(path, *contents, error);
}

} // namespace lowbit::npy

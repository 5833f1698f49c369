//===- SafeTensors.cpp - Read, check and write safetensors files ----------===//

#include "checkpoint/SafeTensors.h"

#include "runtime/core/Json.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <tuple>

// The format is little-endian; views of the mapping are handed out as is.
static_assert(std::endian::native == std::endian::little,
              "lowbit reads safetensors on little-endian hosts only");

namespace lowbit::checkpoint {

namespace {

struct DTypeEntry {
  DType dtype;
  std::string_view name;
  int bits;
};

constexpr std::array<DTypeEntry, 20> kDTypes = {{
    {DType::Bool, "BOOL", 8},       {DType::F4, "F4", 4},
    {DType::F6_E2M3, "F6_E2M3", 6}, {DType::F6_E3M2, "F6_E3M2", 6},
    {DType::U8, "U8", 8},           {DType::I8, "I8", 8},
    {DType::F8_E5M2, "F8_E5M2", 8}, {DType::F8_E4M3, "F8_E4M3", 8},
    {DType::F8_E8M0, "F8_E8M0", 8}, {DType::I16, "I16", 16},
    {DType::U16, "U16", 16},        {DType::F16, "F16", 16},
    {DType::BF16, "BF16", 16},      {DType::I32, "I32", 32},
    {DType::U32, "U32", 32},        {DType::F32, "F32", 32},
    {DType::C64, "C64", 64},        {DType::F64, "F64", 64},
    {DType::I64, "I64", 64},        {DType::U64, "U64", 64},
}};

const DTypeEntry &entryOf(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)];
}

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, std::move(message));
}

constexpr std::string_view kMetadataKey = "__metadata__";

/// A JSON number as a non-negative integer, or nullopt (negative, fraction,
/// exponent or past int64).
std::optional<uint64_t> nonNegative(const json::JsonValue &value) {
  std::optional<int64_t> number = value.asInt();
  if (!number || *number < 0)
    return std::nullopt;
  return static_cast<uint64_t>(*number);
}

Expected<TensorInfo> parseTensor(const std::string &name,
                                 const json::JsonValue &entry) {
  auto fail = [&](std::string what) {
    return invalid("safetensors header: tensor '" + name + "': " + what);
  };
  if (!entry.isObject())
    return fail("is not an object");
  const json::JsonValue *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
  for (const auto &[key, value] : entry.members()) {
    if (key == "dtype")
      dtype = &value;
    else if (key == "shape")
      shape = &value;
    else if (key == "data_offsets")
      offsets = &value;
    else
      return fail("unknown field '" + key + "'");
  }
  if (!dtype || !shape || !offsets)
    return fail("needs 'dtype', 'shape' and 'data_offsets'");

  TensorInfo info;
  info.name = name;
  if (!dtype->isString())
    return fail("'dtype' is not a string");
  std::optional<DType> known = dtypeFromName(dtype->text());
  if (!known)
    return fail("unknown dtype '" + dtype->text() + "'");
  info.dtype = *known;

  if (!shape->isArray())
    return fail("'shape' is not an array");
  for (const json::JsonValue &extent : shape->items()) {
    std::optional<uint64_t> value = nonNegative(extent);
    if (!value)
      return fail("'shape' holds '" + extent.serialize() +
                  "', not a non-negative integer");
    info.shape.push_back(static_cast<int64_t>(*value));
  }

  if (!offsets->isArray() || offsets->items().size() != 2)
    return fail("'data_offsets' is not [begin, end]");
  std::optional<uint64_t> begin = nonNegative(offsets->items()[0]);
  std::optional<uint64_t> end = nonNegative(offsets->items()[1]);
  if (!begin || !end)
    return fail("'data_offsets' are not non-negative integers");
  if (*end < *begin)
    return fail("'data_offsets' [" + std::to_string(*begin) + ", " +
                std::to_string(*end) + "] end before they begin");
  info.begin = *begin;
  info.end = *end;

  Expected<uint64_t> bytes = tensorByteSize(info.dtype, info.shape, name);
  if (!bytes)
    return std::move(bytes).takeError();
  if (*bytes != info.byteSize())
    return fail("shape and dtype " + std::string(dtypeName(info.dtype)) +
                " need " + std::to_string(*bytes) + " bytes, 'data_offsets' [" +
                std::to_string(info.begin) + ", " + std::to_string(info.end) +
                "] hold " + std::to_string(info.byteSize()));
  return info;
}

Status parseMetadata(const json::JsonValue &value, Header &header) {
  if (!value.isObject())
    return invalid("safetensors header: '__metadata__' is not an object");
  for (const auto &[key, text] : value.members()) {
    if (!text.isString())
      return invalid("safetensors header: '__metadata__' value of '" + key +
                     "' is not a string");
    header.metadata.emplace_back(key, text.text());
  }
  return Status::success();
}

/// The spec's rule: the ranges, in order, tile the buffer from 0 to its
/// end, each starting where the one before ended. So no two overlap, no
/// byte is unaccounted for, and none lies past the end.
Status checkTiling(const std::vector<TensorInfo> &tensors, uint64_t dataBytes) {
  uint64_t covered = 0;
  const TensorInfo *previous = nullptr;
  for (const TensorInfo &tensor : tensors) {
    if (tensor.begin != covered) {
      std::string where = "tensor '" + tensor.name + "' begins at byte " +
                          std::to_string(tensor.begin) +
                          " of the data buffer, ";
      if (tensor.begin < covered)
        return invalid("safetensors header: " + where + "inside tensor '" +
                       (previous ? previous->name : std::string()) +
                       "' (which ends at " + std::to_string(covered) +
                       "): ranges overlap");
      return invalid("safetensors header: " + where + "leaving bytes " +
                     std::to_string(covered) + ".." +
                     std::to_string(tensor.begin) +
                     " to no tensor: the ranges must cover the buffer");
    }
    covered = tensor.end;
    previous = &tensor;
  }
  if (covered > dataBytes)
    return invalid("safetensors header: tensor '" +
                   (previous ? previous->name : std::string()) +
                   "' ends at byte " + std::to_string(covered) +
                   ", past the end of the " + std::to_string(dataBytes) +
                   "-byte data buffer (a truncated file?)");
  if (covered < dataBytes)
    return invalid("safetensors header: the tensors cover " +
                   std::to_string(covered) + " bytes of the " +
                   std::to_string(dataBytes) +
                   "-byte data buffer: the ranges must cover the buffer");
  return Status::success();
}

uint64_t readLittleEndian64(const std::byte *bytes) {
  uint64_t value = 0;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

} // namespace

std::string_view dtypeName(DType dtype) { return entryOf(dtype).name; }

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const DTypeEntry &entry : kDTypes)
    if (entry.name == name)
      return entry.dtype;
  return std::nullopt;
}

int dtypeBits(DType dtype) { return entryOf(dtype).bits; }

int64_t TensorInfo::elementCount() const {
  // Unsigned: the running product of a checked shape fits 64 bits, not
  // always 63 ([2^62, 2, 0]); the result is at most 2^63 / 4.
  uint64_t count = 1;
  for (int64_t extent : shape)
    count *= static_cast<uint64_t>(extent);
  return static_cast<int64_t>(count);
}

const TensorInfo *Header::find(std::string_view name) const {
  for (const TensorInfo &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

Expected<uint64_t> tensorByteSize(DType dtype, std::span<const int64_t> shape,
                                  std::string_view name) {
  // The element count first, then bits (so that F4 and F6 are exact),
  // each product refused before it can wrap, as the reference does: an
  // empty tensor may have any extents whose running product fits.
  uint64_t elements = 1, bits = 0;
  for (int64_t extent : shape) {
    if (extent < 0)
      return invalid("tensor '" + std::string(name) + "': negative extent " +
                     std::to_string(extent));
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(extent),
                               &elements))
      return invalid("tensor '" + std::string(name) +
                     "': its shape's size overflows");
  }
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dtypeBits(dtype)),
                             &bits) ||
      bits > (uint64_t(1) << 63))
    return invalid("tensor '" + std::string(name) +
                   "': its shape's size overflows");
  if (bits % 8 != 0)
    return invalid("tensor '" + std::string(name) +
                   "': " + std::to_string(bits) + " bits of " +
                   std::string(dtypeName(dtype)) + " do not fill whole bytes");
  return bits / 8;
}

Expected<Header> parseHeader(std::string_view json, uint64_t dataBytes) {
  // The spec: the header is a JSON object (it may end in spaces, the
  // writers' padding).
  if (json.empty() || json.front() != '{')
    return invalid("safetensors header: does not start with '{'");
  std::string error;
  std::optional<json::JsonValue> document = json::parseJson(json, &error);
  if (!document)
    // The reader refuses a key given twice ("duplicate key"): two tensors
    // of one name.
    return invalid("safetensors header: " + error);
  if (!document->isObject())
    return invalid("safetensors header: not a JSON object");

  Header header;
  for (const auto &[name, entry] : document->members()) {
    if (name == kMetadataKey) {
      if (Status status = parseMetadata(entry, header); !status)
        return std::move(status).takeError();
      continue;
    }
    Expected<TensorInfo> tensor = parseTensor(name, entry);
    if (!tensor)
      return std::move(tensor).takeError();
    header.tensors.push_back(std::move(*tensor));
  }
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const TensorInfo &a, const TensorInfo &b) {
              return std::tie(a.begin, a.end, a.name) <
                     std::tie(b.begin, b.end, b.name);
            });
  if (Status status = checkTiling(header.tensors, dataBytes); !status)
    return std::move(status).takeError();
  return header;
}

Expected<Header> parseFileBytes(std::span<const std::byte> file,
                                uint64_t *dataOffset) {
  if (file.size() < 8)
    return invalid("safetensors: the file has " + std::to_string(file.size()) +
                   " bytes, fewer than the 8 of the header length (a "
                   "truncated file?)");
  uint64_t headerBytes = readLittleEndian64(file.data());
  uint64_t available = file.size() - 8;
  if (headerBytes > kMaxHeaderBytes)
    return invalid("safetensors: header length " + std::to_string(headerBytes) +
                   " is past the limit of " + std::to_string(kMaxHeaderBytes) +
                   " bytes");
  if (headerBytes > available)
    return invalid("safetensors: header length " + std::to_string(headerBytes) +
                   " runs past the end of the file (" +
                   std::to_string(available) +
                   " bytes follow the length; a truncated file?)");
  std::string_view json(reinterpret_cast<const char *>(file.data() + 8),
                        headerBytes);
  Expected<Header> header = parseHeader(json, available - headerBytes);
  if (header && dataOffset)
    *dataOffset = 8 + headerBytes;
  return header;
}

Expected<SafeTensorsFile> SafeTensorsFile::open(const std::string &path) {
  Expected<MappedFile> mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.error();
  SafeTensorsFile file;
  file.filePath = path;
  file.mapped = std::move(*mapped);
  Expected<Header> header =
      parseFileBytes(file.mapped.bytes(), &file.dataOffset);
  if (!header)
    return invalid("'" + path + "': " + header.error().message);
  file.parsed = std::move(*header);
  return file;
}

std::span<const std::byte>
SafeTensorsFile::data(const TensorInfo &tensor) const {
  // parseHeader checked that every range lies inside the mapped buffer.
  return mapped.bytes().subspan(dataOffset + tensor.begin, tensor.byteSize());
}

Expected<std::span<const std::byte>>
SafeTensorsFile::data(std::string_view name) const {
  const TensorInfo *tensor = parsed.find(name);
  if (!tensor)
    return invalid("'" + filePath + "' has no tensor '" + std::string(name) +
                   "'");
  return data(*tensor);
}

Expected<std::string>
serializeHeader(std::span<const TensorSpec> tensors,
                std::span<const std::pair<std::string, std::string>> metadata) {
  json::JsonValue document = json::JsonValue::object();
  if (!metadata.empty()) {
    json::JsonValue map = json::JsonValue::object();
    for (const auto &[key, value] : metadata)
      map.set(key, json::JsonValue::string(value));
    document.set(std::string(kMetadataKey), std::move(map));
  }
  uint64_t offset = 0;
  for (const TensorSpec &tensor : tensors) {
    if (tensor.name == kMetadataKey || document.get(tensor.name))
      return invalid("safetensors: tensor name '" + tensor.name +
                     "' is reserved or given twice");
    Expected<uint64_t> bytes =
        tensorByteSize(tensor.dtype, tensor.shape, tensor.name);
    if (!bytes)
      return std::move(bytes).takeError();
    json::JsonValue entry = json::JsonValue::object();
    entry.set("dtype",
              json::JsonValue::string(std::string(dtypeName(tensor.dtype))));
    json::JsonValue shape = json::JsonValue::array();
    for (int64_t extent : tensor.shape)
      shape.push(json::JsonValue::number(extent));
    entry.set("shape", std::move(shape));
    json::JsonValue offsets = json::JsonValue::array();
    offsets.push(json::JsonValue::number(static_cast<int64_t>(offset)));
    offsets.push(
        json::JsonValue::number(static_cast<int64_t>(offset + *bytes)));
    entry.set("data_offsets", std::move(offsets));
    document.set(tensor.name, std::move(entry));
    offset += *bytes;
  }
  std::string header = document.serialize();
  // Pad to 8 so the buffer (and every 8-byte-aligned range in it) starts
  // aligned in a mapping, as the reference writer does.
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

Expected<std::string>
serializeHeader(std::span<const TensorData> tensors,
                std::span<const std::pair<std::string, std::string>> metadata) {
  std::vector<TensorSpec> specs;
  for (const TensorData &tensor : tensors) {
    Expected<uint64_t> bytes =
        tensorByteSize(tensor.dtype, tensor.shape, tensor.name);
    if (!bytes)
      return std::move(bytes).takeError();
    if (*bytes != tensor.bytes.size())
      return invalid("safetensors: tensor '" + tensor.name + "' has " +
                     std::to_string(tensor.bytes.size()) +
                     " bytes, its shape and dtype need " +
                     std::to_string(*bytes));
    specs.push_back({tensor.name, tensor.dtype, tensor.shape});
  }
  return serializeHeader(std::span<const TensorSpec>(specs), metadata);
}

namespace {

/// The 8-byte little-endian length, then the header.
std::string withLengthField(const std::string &header) {
  std::string file(8, '\0');
  uint64_t length = header.size();
  std::memcpy(file.data(), &length, sizeof(length));
  file += header;
  return file;
}

} // namespace

Expected<std::string> serializeFileHeader(
    std::span<const TensorSpec> tensors,
    std::span<const std::pair<std::string, std::string>> metadata) {
  Expected<std::string> header = serializeHeader(tensors, metadata);
  if (!header)
    return std::move(header).takeError();
  return withLengthField(*header);
}

Expected<std::string>
serializeFile(std::span<const TensorData> tensors,
              std::span<const std::pair<std::string, std::string>> metadata) {
  Expected<std::string> header = serializeHeader(tensors, metadata);
  if (!header)
    return std::move(header).takeError();
  std::string file = withLengthField(*header);
  for (const TensorData &tensor : tensors)
    file.append(reinterpret_cast<const char *>(tensor.bytes.data()),
                tensor.bytes.size());
  return file;
}

Status writeSafeTensors(
    const std::string &path, std::span<const TensorData> tensors,
    std::span<const std::pair<std::string, std::string>> metadata) {
  return writeFileAtomically(path, serializeFile(tensors, metadata));
}

} // namespace lowbit::checkpoint

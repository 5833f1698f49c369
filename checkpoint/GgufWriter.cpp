//===- GgufWriter.cpp - Whole GGUF files, written -------------------------===//

#include "checkpoint/GgufWriter.h"


#include <bit>
#include <set>

namespace lowbit::checkpoint {

namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, "gguf: " + std::move(message));
}

void put(std::string &out, uint64_t bits, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    out.push_back(char(bits >> (8 * i)));
}

void putString(std::string &out, const std::string &text) {
  put(out, text.size(), 8);
  out += text;
}

Status putValue(std::string &out, const GgufValue &value,
                const std::string &key, bool inArray) {
  if (uint32_t(value.type) > uint32_t(GgufValueType::F64))
    return invalid("'" + key + "' has an unknown value type");
  if (size_t bytes = ggufScalarBytes(value.type)) {
    if (value.type == GgufValueType::Bool && value.bits > 1)
      return invalid("'" + key + "' is a bool of value " +
                     std::to_string(value.bits));
    put(out, value.bits, bytes);
    return Status::success();
  }
  if (value.type == GgufValueType::String) {
    putString(out, value.string);
    return Status::success();
  }
  if (inArray || value.elementType == GgufValueType::Array)
    return invalid("'" + key + "' is an array of arrays");
  put(out, uint32_t(value.elementType), 4);
  put(out, value.elements.size(), 8);
  for (const GgufValue &element : value.elements) {
    if (element.type != value.elementType)
      return invalid("'" + key + "' mixes element types");
    if (Status status = putValue(out, element, key, true); !status)
      return status;
  }
  return Status::success();
}

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

} // namespace

Expected<std::string>
serializeGguf(std::span<const std::pair<std::string, GgufValue>> metadata,
              std::span<const GgufTensorData> tensors) {
  uint64_t alignment = kGgufDefaultAlignment;
  std::string out = "GGUF";
  put(out, 3, 4);
  put(out, tensors.size(), 8);
  put(out, metadata.size(), 8);
  std::set<std::string, std::less<>> keys;
  for (const auto &[key, value] : metadata) {
    if (!keys.insert(key).second)
      return invalid("key '" + key + "' is given twice");
    if (key == "general.alignment") {
      if (value.type != GgufValueType::U32 || value.bits == 0 ||
          !std::has_single_bit(value.bits))
        return invalid("general.alignment must be a u32 power of two");
      alignment = value.bits;
    }
    putString(out, key);
    put(out, uint32_t(value.type), 4);
    if (Status status = putValue(out, value, key, false); !status)
      return std::move(status).takeError();
  }
  std::set<std::string, std::less<>> names;
  uint64_t offset = 0;
  for (const GgufTensorData &tensor : tensors) {
    if (!names.insert(tensor.name).second)
      return invalid("tensor '" + tensor.name + "' is given twice");
    const GgmlType *type = ggmlType(tensor.type);
    if (!type)
      return invalid("tensor '" + tensor.name + "' has unknown ggml type " +
                     std::to_string(tensor.type));
    if (tensor.extents.empty() || tensor.extents.size() > 4)
      return invalid("tensor '" + tensor.name + "' needs 1 to 4 extents");
    // Bounded like the reader: each extent and the count below 2^62.
    uint64_t elements = 1;
    for (int64_t extent : tensor.extents) {
      if (extent < 0 || uint64_t(extent) > (uint64_t(1) << 62) / elements)
        return invalid("tensor '" + tensor.name + "' has a bad extent");
      elements *= uint64_t(extent);
    }
    if (tensor.extents[0] % type->blockSize != 0)
      return invalid("tensor '" + tensor.name +
                     "': ne[0] = " + std::to_string(tensor.extents[0]) +
                     " is not a multiple of " + std::string(type->name) +
                     "'s block of " + std::to_string(type->blockSize));
    uint64_t bytes =
        elements / uint64_t(type->blockSize) * uint64_t(type->blockBytes);
    if (bytes != tensor.bytes.size())
      return invalid("tensor '" + tensor.name + "' has " +
                     std::to_string(tensor.bytes.size()) + " bytes, " +
                     std::string(type->name) + " of its extents needs " +
                     std::to_string(bytes));
    putString(out, tensor.name);
    put(out, tensor.extents.size(), 4);
    for (int64_t extent : tensor.extents)
      put(out, uint64_t(extent), 8);
    put(out, tensor.type, 4);
    put(out, offset, 8);
    offset = alignUp(offset + bytes, alignment);
  }
  out.resize(alignUp(out.size(), alignment), '\0');
  for (const GgufTensorData &tensor : tensors) {
    out.append(reinterpret_cast<const char *>(tensor.bytes.data()),
               tensor.bytes.size());
    out.resize(alignUp(out.size(), alignment), '\0');
  }
  return out;
}

Status writeGguf(const std::string &path,
                 std::span<const std::pair<std::string, GgufValue>> metadata,
                 std::span<const GgufTensorData> tensors) {
  return writeFileAtomically(path, serializeGguf(metadata, tensors));
}

} // namespace lowbit::checkpoint

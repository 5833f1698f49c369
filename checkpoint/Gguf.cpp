//===- Gguf.cpp - Read and check GGUF files -------------------------------===//

#include "checkpoint/Gguf.h"

#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

static_assert(std::endian::native == std::endian::little,
              "lowbit reads GGUF on little-endian hosts only");

namespace lowbit::checkpoint {

namespace {

Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidArgument, "GGUF: " + std::move(message));
}

// ggml's type traits (ggml.c type_traits: blck_size, type_size) for every
// type a GGUF file may hold; ids 4, 5 (removed Q4_2, Q4_3) and 31-33, 36-38
// (removed or repacked-only types) are not file types.
constexpr std::array<GgmlType, 34> kGgmlTypes = {{
    {0, "F32", 1, 4},         {1, "F16", 1, 2},
    {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},
    {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},
    {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136},
    {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},
    {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18},
}};

/// The reference reader's limit on n_dims (GGML_MAX_DIMS).
constexpr uint32_t kMaxDims = 4;

/// Reads the file front to back; every read checks what remains first.
class Reader {
public:
  explicit Reader(std::span<const std::byte> bytes) : file(bytes) {}

  uint64_t position() const { return offset; }
  uint64_t remaining() const { return file.size() - offset; }

  Expected<uint64_t> read(size_t bytes, std::string_view what) {
    if (remaining() < bytes)
      return invalid(std::string(what) + " at byte " + std::to_string(offset) +
                     " runs past the end of the file (" +
                     std::to_string(remaining()) +
                     " bytes left; a truncated file?)");
    uint64_t value = 0;
    std::memcpy(&value, file.data() + offset, bytes);
    offset += bytes;
    return value;
  }

  Expected<std::string> string(std::string_view what) {
    Expected<uint64_t> length = read(8, what);
    if (!length)
      return length.error();
    if (*length > remaining())
      return invalid(std::string(what) + " at byte " +
                     std::to_string(offset - 8) + " has length " +
                     std::to_string(*length) + ", past the end of the file (" +
                     std::to_string(remaining()) + " bytes left)");
    std::string text(reinterpret_cast<const char *>(file.data() + offset),
                     size_t(*length));
    offset += *length;
    return text;
  }

private:
  std::span<const std::byte> file;
  uint64_t offset = 0;
};

Expected<GgufValueType> valueType(Reader &reader, const std::string &key) {
  Expected<uint64_t> raw = reader.read(4, "the type of '" + key + "'");
  if (!raw)
    return raw.error();
  if (*raw > uint64_t(GgufValueType::F64))
    return invalid("'" + key + "' has an unknown value type " +
                   std::to_string(*raw));
  return GgufValueType(*raw);
}

Expected<GgufValue> readValue(Reader &reader, GgufValueType type,
                              const std::string &key, bool inArray) {
  GgufValue value;
  value.type = type;
  if (size_t bytes = ggufScalarBytes(type)) {
    Expected<uint64_t> bits = reader.read(bytes, "the value of '" + key + "'");
    if (!bits)
      return bits.error();
    if (type == GgufValueType::Bool && *bits > 1)
      return invalid("'" + key + "' is a bool of value " +
                     std::to_string(*bits));
    value.bits = *bits;
    return value;
  }
  if (type == GgufValueType::String) {
    Expected<std::string> text = reader.string("the string of '" + key + "'");
    if (!text)
      return text.error();
    value.string = std::move(*text);
    return value;
  }
  if (inArray)
    return invalid("'" + key +
                   "' is an array of arrays, which GGUF "
                   "readers do not take");
  Expected<GgufValueType> elementType = valueType(reader, key);
  if (!elementType)
    return elementType.error();
  value.elementType = *elementType;
  Expected<uint64_t> count = reader.read(8, "the length of '" + key + "'");
  if (!count)
    return count.error();
  // Every element takes at least one byte (a string its 8-byte length):
  // a count past that is refused before anything is allocated.
  size_t minimum = *elementType == GgufValueType::String ? 8
                   : *elementType == GgufValueType::Array
                       ? 12
                       : ggufScalarBytes(*elementType);
  if (*count > reader.remaining() / minimum)
    return invalid("'" + key + "' is an array of " + std::to_string(*count) +
                   " elements, more than the " +
                   std::to_string(reader.remaining()) +
                   " bytes left in the file hold");
  value.elements.reserve(size_t(*count));
  for (uint64_t index = 0; index < *count; ++index) {
    Expected<GgufValue> element = readValue(reader, *elementType, key, true);
    if (!element)
      return element.error();
    value.elements.push_back(std::move(*element));
  }
  return value;
}

/// Reads one tensor info and checks its extents and type.
Expected<GgufTensorInfo> readTensorInfo(Reader &reader, uint64_t index) {
  GgufTensorInfo tensor;
  std::string where = "tensor info " + std::to_string(index);
  Expected<std::string> name = reader.string("the name of " + where);
  if (!name)
    return name.error();
  tensor.name = std::move(*name);
  where = "tensor '" + tensor.name + "'";
  Expected<uint64_t> dims = reader.read(4, "the rank of " + where);
  if (!dims)
    return dims.error();
  if (*dims == 0 || *dims > kMaxDims)
    return invalid(where + " has " + std::to_string(*dims) +
                   " dimensions; GGUF takes 1 to " + std::to_string(kMaxDims));
  // The element count, checked as it grows: each extent is below 2^63 and
  // so is the product.
  uint64_t elements = 1;
  for (uint64_t dim = 0; dim < *dims; ++dim) {
    Expected<uint64_t> extent = reader.read(8, "an extent of " + where);
    if (!extent)
      return extent.error();
    if (*extent > uint64_t(std::numeric_limits<int64_t>::max()) ||
        (*extent != 0 &&
         elements > uint64_t(std::numeric_limits<int64_t>::max()) / *extent))
      return invalid(where + " has extent " + std::to_string(*extent) +
                     " at dimension " + std::to_string(dim) +
                     ": the element count overflows 2^63");
    elements *= *extent;
    tensor.extents.push_back(int64_t(*extent));
  }
  Expected<uint64_t> typeId = reader.read(4, "the type of " + where);
  if (!typeId)
    return typeId.error();
  tensor.type = ggmlType(uint32_t(*typeId));
  if (!tensor.type)
    return invalid(where + " has an unknown ggml type " +
                   std::to_string(*typeId));
  if (tensor.extents[0] % tensor.type->blockSize != 0)
    return invalid(where + " of type " + std::string(tensor.type->name) +
                   " has ne[0] = " + std::to_string(tensor.extents[0]) +
                   ", not a multiple of its block of " +
                   std::to_string(tensor.type->blockSize));
  // blocks * blockBytes <= elements * 292 / 256 or * 8: below 2^63 * 8
  // needs a check.
  uint64_t blocks = elements / uint64_t(tensor.type->blockSize);
  if (blocks >
      std::numeric_limits<uint64_t>::max() / uint64_t(tensor.type->blockBytes))
    return invalid(where + " is too large: " + std::to_string(elements) +
                   " elements of " + std::string(tensor.type->name));
  tensor.byteSize = blocks * uint64_t(tensor.type->blockBytes);
  Expected<uint64_t> offset = reader.read(8, "the offset of " + where);
  if (!offset)
    return offset.error();
  tensor.offset = *offset;
  return tensor;
}

/// `value` rounded up to a multiple of `alignment` (a power of two), or
/// nullopt when that overflows.
std::optional<uint64_t> alignUp(uint64_t value, uint64_t alignment) {
  if (value > std::numeric_limits<uint64_t>::max() - (alignment - 1))
    return std::nullopt;
  return (value + alignment - 1) & ~(alignment - 1);
}

} // namespace

std::string_view ggufValueTypeName(GgufValueType type) {
  static constexpr std::array<std::string_view, 13> names = {
      "u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
      "bool", "string", "array", "u64", "i64", "f64"};
  return names[size_t(type)];
}

size_t ggufScalarBytes(GgufValueType type) {
  switch (type) {
  case GgufValueType::U8:
  case GgufValueType::I8:
  case GgufValueType::Bool:
    return 1;
  case GgufValueType::U16:
  case GgufValueType::I16:
    return 2;
  case GgufValueType::U32:
  case GgufValueType::I32:
  case GgufValueType::F32:
    return 4;
  case GgufValueType::U64:
  case GgufValueType::I64:
  case GgufValueType::F64:
    return 8;
  case GgufValueType::String:
  case GgufValueType::Array:
    return 0;
  }
  return 0;
}

std::optional<uint64_t> GgufValue::asUnsigned() const {
  switch (type) {
  case GgufValueType::U8:
  case GgufValueType::U16:
  case GgufValueType::U32:
  case GgufValueType::U64:
    return bits;
  case GgufValueType::I8:
  case GgufValueType::I16:
  case GgufValueType::I32:
  case GgufValueType::I64: {
    size_t width = ggufScalarBytes(type) * 8;
    bool negative = (bits >> (width - 1)) & 1;
    if (negative)
      return std::nullopt;
    return bits;
  }
  default:
    return std::nullopt;
  }
}

GgufValue GgufValue::u32(uint32_t value) {
  GgufValue result;
  result.type = GgufValueType::U32;
  result.bits = value;
  return result;
}

GgufValue GgufValue::f32(float value) {
  GgufValue result;
  result.type = GgufValueType::F32;
  result.bits = std::bit_cast<uint32_t>(value);
  return result;
}

GgufValue GgufValue::text(std::string value) {
  GgufValue result;
  result.type = GgufValueType::String;
  result.string = std::move(value);
  return result;
}

GgufValue GgufValue::array(GgufValueType elementType,
                           std::vector<GgufValue> elements) {
  GgufValue result;
  result.type = GgufValueType::Array;
  result.elementType = elementType;
  result.elements = std::move(elements);
  return result;
}

const GgmlType *ggmlType(uint32_t id) {
  for (const GgmlType &type : kGgmlTypes)
    if (type.id == id)
      return &type;
  return nullptr;
}

const GgufValue *GgufHeader::find(std::string_view key) const {
  for (const auto &[name, value] : metadata)
    if (name == key)
      return &value;
  return nullptr;
}

const GgufTensorInfo *GgufHeader::findTensor(std::string_view name) const {
  for (const GgufTensorInfo &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

Expected<GgufHeader> parseGguf(std::span<const std::byte> file) {
  Reader reader(file);
  GgufHeader header;
  Expected<uint64_t> magic = reader.read(4, "the magic");
  if (!magic)
    return magic.error();
  if (*magic != 0x46554747) // "GGUF"
    return invalid("bad magic: the file does not start with 'GGUF'");
  Expected<uint64_t> version = reader.read(4, "the version");
  if (!version)
    return version.error();
  // Version 1 had 32-bit counts and lengths; a byte-swapped version is a
  // big-endian file.
  if (*version != 2 && *version != 3)
    return invalid("version " + std::to_string(*version) +
                   " is not supported (lowbit reads versions 2 and 3, "
                   "little-endian)");
  header.version = uint32_t(*version);
  Expected<uint64_t> tensorCount = reader.read(8, "the tensor count");
  if (!tensorCount)
    return tensorCount.error();
  Expected<uint64_t> kvCount = reader.read(8, "the metadata count");
  if (!kvCount)
    return kvCount.error();
  // A KV pair takes at least 13 bytes (key length, type, one byte), a
  // tensor info at least 32: counts past what the file holds are refused
  // before anything is allocated.
  if (*kvCount > reader.remaining() / 13)
    return invalid("the metadata count " + std::to_string(*kvCount) +
                   " is more than the " + std::to_string(reader.remaining()) +
                   " bytes left in the file hold");
  if (*tensorCount > reader.remaining() / 32)
    return invalid("the tensor count " + std::to_string(*tensorCount) +
                   " is more than the " + std::to_string(reader.remaining()) +
                   " bytes left in the file hold");

  std::set<std::string, std::less<>> keys;
  for (uint64_t index = 0; index < *kvCount; ++index) {
    Expected<std::string> key =
        reader.string("the key of metadata " + std::to_string(index));
    if (!key)
      return key.error();
    if (!keys.insert(*key).second)
      return invalid("the key '" + *key + "' is given twice");
    Expected<GgufValueType> type = valueType(reader, *key);
    if (!type)
      return type.error();
    Expected<GgufValue> value = readValue(reader, *type, *key, false);
    if (!value)
      return value.error();
    header.metadata.emplace_back(std::move(*key), std::move(*value));
  }
  if (const GgufValue *alignment = header.find("general.alignment")) {
    if (alignment->type != GgufValueType::U32 || alignment->bits == 0 ||
        !std::has_single_bit(alignment->bits))
      return invalid("general.alignment must be a u32 power of two, not a " +
                     std::string(ggufValueTypeName(alignment->type)) + " " +
                     std::to_string(alignment->bits));
    header.alignment = alignment->bits;
  }

  std::set<std::string, std::less<>> names;
  for (uint64_t index = 0; index < *tensorCount; ++index) {
    Expected<GgufTensorInfo> tensor = readTensorInfo(reader, index);
    if (!tensor)
      return tensor.error();
    if (!names.insert(tensor->name).second)
      return invalid("the tensor '" + tensor->name + "' is given twice");
    header.tensors.push_back(std::move(*tensor));
  }

  std::optional<uint64_t> dataOffset =
      alignUp(reader.position(), header.alignment);
  if (!dataOffset || (*dataOffset > file.size() && !header.tensors.empty()))
    return invalid("the data section (at byte " +
                   std::to_string(reader.position()) + " aligned to " +
                   std::to_string(header.alignment) +
                   ") starts past the end of the file (" +
                   std::to_string(file.size()) + " bytes; a truncated file?)");
  header.dataOffset = *dataOffset;
  uint64_t dataBytes = header.tensors.empty() ? 0 : file.size() - *dataOffset;
  // The reference reader's layout: each tensor starts where the previous
  // one ends, padded to the alignment. So ranges neither overlap nor leave
  // room for a hidden tensor, and each is checked against the file.
  uint64_t expected = 0;
  for (const GgufTensorInfo &tensor : header.tensors) {
    if (tensor.offset != expected)
      return invalid("tensor '" + tensor.name + "' has offset " +
                     std::to_string(tensor.offset) + ", expected " +
                     std::to_string(expected) +
                     " (the previous tensor's end aligned to " +
                     std::to_string(header.alignment) + ")");
    if (tensor.offset > dataBytes ||
        tensor.byteSize > dataBytes - tensor.offset)
      return invalid("tensor '" + tensor.name + "' (" +
                     std::to_string(tensor.byteSize) + " bytes at offset " +
                     std::to_string(tensor.offset) +
                     ") runs past the end of the data section (" +
                     std::to_string(dataBytes) + " bytes; a truncated file?)");
    std::optional<uint64_t> next =
        alignUp(tensor.offset + tensor.byteSize, header.alignment);
    expected = next.value_or(std::numeric_limits<uint64_t>::max());
  }
  return header;
}

Expected<GgufFile> GgufFile::open(const std::string &path) {
  Expected<MappedFile> mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.error();
  Expected<GgufHeader> header = parseGguf(mapped->bytes());
  if (!header)
    return makeError(ErrorCode::InvalidArgument,
                     "'" + path + "': " + header.error().message);
  GgufFile file;
  file.filePath = path;
  file.parsed = std::move(*header);
  file.mapped = std::move(*mapped);
  return file;
}

std::span<const std::byte> GgufFile::data(const GgufTensorInfo &tensor) const {
  // parseGguf checked that every tensor lies inside the data section.
  return mapped.bytes().subspan(parsed.dataOffset + tensor.offset,
                                tensor.byteSize);
}

} // namespace lowbit::checkpoint

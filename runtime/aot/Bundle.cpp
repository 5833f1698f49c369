//===- Bundle.cpp - AOT bundles: manifest model, reader, writer -----------===//

#include "runtime/aot/Bundle.h"

#include "runtime/core/AtomicFile.h"

#include <charconv>
#include <cstdint>
#include <limits>

namespace lowbit::aot {

namespace {

void setError(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
}

JsonValue stringArray(const std::array<std::string, 3> &values) {
  JsonValue array = JsonValue::array();
  for (const std::string &value : values)
    array.push(JsonValue::string(value));
  return array;
}

JsonValue shapeJson(const Shape &shape) {
  JsonValue array = JsonValue::array();
  array.push(JsonValue::number(shape[0]));
  array.push(JsonValue::number(shape[1]));
  return array;
}

JsonValue sizeJson(const SizeInstance &size) {
  JsonValue object = JsonValue::object();
  object.set("rows", JsonValue::number(size.rows));
  object.set("cols", JsonValue::number(size.cols));
  JsonValue shapes = JsonValue::array();
  for (const Shape &shape : size.shapes)
    shapes.push(shapeJson(shape));
  object.set("shapes", std::move(shapes));
  return object;
}

JsonValue resourcesJson(const Resources &r) {
  JsonValue object = JsonValue::object();
  object.set("registers", JsonValue::number(int64_t(r.registers)));
  object.set("spill_store_bytes",
             JsonValue::number(int64_t(r.spillStoreBytes)));
  object.set("spill_load_bytes", JsonValue::number(int64_t(r.spillLoadBytes)));
  object.set("stack_bytes", JsonValue::number(int64_t(r.stackBytes)));
  object.set("shared_bytes", JsonValue::number(int64_t(r.sharedBytes)));
  return object;
}

/// Reading: each accessor fails with the path of the missing field, so a
/// hand-edited manifest gets a message that points at the problem.
class Reader {
public:
  explicit Reader(std::string *error) : error(error) {}
  bool failed = false;

  const JsonValue *field(const JsonValue &object, std::string_view key,
                         const std::string &where) {
    const JsonValue *value = object.isObject() ? object.get(key) : nullptr;
    if (!value)
      fail(where + ": missing '" + std::string(key) + "'");
    return value;
  }
  std::string string(const JsonValue &object, std::string_view key,
                     const std::string &where, bool optional = false) {
    const JsonValue *value = object.isObject() ? object.get(key) : nullptr;
    if (!value || value->isNull()) {
      if (!optional)
        fail(where + ": missing '" + std::string(key) + "'");
      return {};
    }
    if (!value->isString())
      fail(where + "." + std::string(key) + ": not a string");
    return value->text();
  }
  /// An integer in [min, max]: parsed as int64 (JsonValue::asInt refuses
  /// what does not fit) and refused, never narrowed, outside the bounds.
  int64_t integer(const JsonValue &value, const std::string &where, int64_t min,
                  int64_t max) {
    std::optional<int64_t> result = value.asInt();
    if (!result) {
      fail(where + ": not a 64-bit integer ('" + value.text() + "')");
      return 0;
    }
    if (*result < min || *result > max) {
      fail(where + ": " + std::to_string(*result) + " is outside [" +
           std::to_string(min) + ", " + std::to_string(max) + "]");
      return 0;
    }
    return *result;
  }
  int64_t integer(const JsonValue &object, std::string_view key,
                  const std::string &where, int64_t min, int64_t max) {
    const JsonValue *value = field(object, key, where);
    return value ? integer(*value, where + "." + std::string(key), min, max)
                 : 0;
  }
  std::array<std::string, 3> triple(const JsonValue &object,
                                    std::string_view key,
                                    const std::string &where) {
    std::array<std::string, 3> result{"1", "1", "1"};
    const JsonValue *value = field(object, key, where);
    if (!value)
      return result;
    if (!value->isArray() || value->items().size() != 3) {
      fail(where + "." + std::string(key) + ": not 3 expressions");
      return result;
    }
    for (size_t i = 0; i < 3; ++i)
      result[i] = value->items()[i].text();
    return result;
  }
  SizeInstance size(const JsonValue &object, const std::string &where) {
    SizeInstance result;
    result.rows = integer(object, "rows", where, 0, kMaxDimension);
    result.cols = integer(object, "cols", where, 0, kMaxDimension);
    if (const JsonValue *shapes = field(object, "shapes", where))
      for (const JsonValue &shape : shapes->items()) {
        if (shape.items().size() != 2) {
          fail(where + ".shapes: not [rows, cols]");
          break;
        }
        Shape parsed = {
            integer(shape.items()[0], where + ".shapes", 0, kMaxDimension),
            integer(shape.items()[1], where + ".shapes", 0, kMaxDimension)};
        int64_t elements = 0;
        if (__builtin_mul_overflow(parsed[0], parsed[1], &elements) ||
            elements > kMaxElements) {
          fail(where + ".shapes: " + std::to_string(parsed[0]) + "x" +
               std::to_string(parsed[1]) + " is more than " +
               std::to_string(kMaxElements) + " elements");
          break;
        }
        result.shapes.push_back(parsed);
      }
    return result;
  }
  void fail(std::string message) {
    if (!failed)
      setError(error, "manifest: " + std::move(message));
    failed = true;
  }

private:
  std::string *error;
};

} // namespace

JsonValue toJson(const Manifest &manifest) {
  JsonValue root = JsonValue::object();
  root.set("format", JsonValue::string(std::string(kManifestFormat)));
  root.set("version", JsonValue::number(int64_t(kManifestVersion)));
  root.set("target", JsonValue::string(manifest.target));
  root.set("lowbit_version", JsonValue::string(manifest.lowbitVersion));
  JsonValue entries = JsonValue::array();
  for (const BundleEntry &entry : manifest.entries) {
    JsonValue object = JsonValue::object();
    object.set("name", JsonValue::string(entry.name));
    object.set("spec", JsonValue::string(entry.spec));
    object.set("key", JsonValue::string(entry.key));
    object.set("op", JsonValue::string(entry.op));
    object.set("scheme", JsonValue::string(entry.scheme));
    object.set("value_type", JsonValue::string(entry.valueType));
    object.set("ptx", JsonValue::string(entry.ptxFile));
    object.set("cubin", entry.cubinFile.empty()
                            ? JsonValue()
                            : JsonValue::string(entry.cubinFile));
    JsonValue params = JsonValue::array();
    for (const ParamInfo &param : entry.params) {
      JsonValue p = JsonValue::object();
      p.set("role", JsonValue::string(param.role));
      p.set("element", JsonValue::string(param.element));
      p.set("written", JsonValue::boolean(param.written));
      params.push(std::move(p));
    }
    object.set("params", std::move(params));
    JsonValue launches = JsonValue::array();
    for (const Launch &launch : entry.launches) {
      JsonValue l = JsonValue::object();
      l.set("entry", JsonValue::string(launch.entry));
      l.set("grid", stringArray(launch.grid));
      l.set("block", stringArray(launch.block));
      JsonValue operands = JsonValue::array();
      for (const Operand &operand : launch.operands) {
        JsonValue o = JsonValue::object();
        if (operand.memref >= 0)
          o.set("memref", JsonValue::number(int64_t(operand.memref)));
        else
          o.set("scalar", JsonValue::string(operand.scalar));
        operands.push(std::move(o));
      }
      l.set("operands", std::move(operands));
      l.set("resources", resourcesJson(launch.resources));
      launches.push(std::move(l));
    }
    object.set("launches", std::move(launches));
    if (entry.data) {
      JsonValue data = sizeJson(entry.data->size);
      JsonValue files = JsonValue::array();
      for (const std::string &file : entry.data->files)
        files.push(file.empty() ? JsonValue() : JsonValue::string(file));
      data.set("files", std::move(files));
      object.set("data", std::move(data));
    }
    if (entry.bench)
      object.set("bench", sizeJson(*entry.bench));
    entries.push(std::move(object));
  }
  root.set("entries", std::move(entries));
  return root;
}

std::optional<Manifest> manifestFromJson(const JsonValue &json,
                                         std::string *error) {
  Reader read(error);
  Manifest manifest;
  if (read.string(json, "format", "manifest") != kManifestFormat) {
    read.fail("not a lowbit AOT bundle manifest (format != " +
              std::string(kManifestFormat) + ")");
    return std::nullopt;
  }
  if (const JsonValue *version = read.field(json, "version", "manifest");
      version && version->asInt() != kManifestVersion) {
    read.fail("version " + version->text() + " is not " +
              std::to_string(kManifestVersion) + " (rebuild the bundle)");
    return std::nullopt;
  }
  manifest.target = read.string(json, "target", "manifest");
  manifest.lowbitVersion =
      read.string(json, "lowbit_version", "manifest", /*optional=*/true);
  const JsonValue *entries = read.field(json, "entries", "manifest");
  if (!entries)
    return std::nullopt;
  for (size_t i = 0; i < entries->items().size() && !read.failed; ++i) {
    const JsonValue &object = entries->items()[i];
    std::string where = "entries[" + std::to_string(i) + "]";
    BundleEntry entry;
    entry.name = read.string(object, "name", where);
    entry.spec = read.string(object, "spec", where);
    entry.key = read.string(object, "key", where, true);
    entry.op = read.string(object, "op", where);
    entry.scheme = read.string(object, "scheme", where, true);
    entry.valueType = read.string(object, "value_type", where, true);
    entry.ptxFile = read.string(object, "ptx", where);
    entry.cubinFile = read.string(object, "cubin", where, true);
    if (const JsonValue *params = read.field(object, "params", where))
      for (const JsonValue &p : params->items()) {
        const JsonValue *written = p.get("written");
        entry.params.push_back({read.string(p, "role", where + ".params"),
                                read.string(p, "element", where + ".params"),
                                written && written->asBool()});
      }
    if (const JsonValue *launches = read.field(object, "launches", where))
      for (const JsonValue &l : launches->items()) {
        std::string at = where + ".launches";
        Launch launch;
        launch.entry = read.string(l, "entry", at);
        launch.grid = read.triple(l, "grid", at);
        launch.block = read.triple(l, "block", at);
        if (const JsonValue *operands = read.field(l, "operands", at))
          for (const JsonValue &o : operands->items()) {
            Operand operand;
            if (const JsonValue *memref = o.get("memref"))
              operand.memref = int(
                  read.integer(*memref, at + ".memref", 0, kMaxParameters - 1));
            else
              operand.scalar = read.string(o, "scalar", at + ".operands");
            launch.operands.push_back(std::move(operand));
          }
        if (const JsonValue *r = l.get("resources")) {
          // -1 (unknown) or a count that fits an int.
          auto get = [&](std::string_view key) {
            const JsonValue *value = r->get(key);
            return value
                       ? int(read.integer(*value,
                                          at + ".resources." + std::string(key),
                                          -1, INT32_MAX))
                       : -1;
          };
          launch.resources = {get("registers"), get("spill_store_bytes"),
                              get("spill_load_bytes"), get("stack_bytes"),
                              get("shared_bytes")};
        }
        entry.launches.push_back(std::move(launch));
      }
    if (const JsonValue *data = object.get("data"); data && !data->isNull()) {
      BundleData bundleData;
      bundleData.size = read.size(*data, where + ".data");
      if (const JsonValue *files = read.field(*data, "files", where + ".data"))
        for (const JsonValue &file : files->items())
          bundleData.files.push_back(file.isNull() ? "" : file.text());
      if (bundleData.files.size() != entry.params.size() ||
          bundleData.size.shapes.size() != entry.params.size())
        read.fail(where + ".data: one file and one shape per parameter");
      entry.data = std::move(bundleData);
    }
    if (const JsonValue *bench = object.get("bench");
        bench && !bench->isNull()) {
      entry.bench = read.size(*bench, where + ".bench");
      if (entry.bench->shapes.size() != entry.params.size())
        read.fail(where + ".bench: one shape per parameter");
    }
    manifest.entries.push_back(std::move(entry));
  }
  if (read.failed)
    return std::nullopt;
  return manifest;
}

std::optional<Manifest> readManifest(const std::string &bundleDirectory,
                                     std::string *error) {
  std::string path = bundleDirectory + "/manifest.json";
  std::string bytes, reason;
  if (!runtime::readFile(path, bytes, &reason)) {
    setError(error, path + ": " + reason);
    return std::nullopt;
  }
  std::optional<JsonValue> json = parseJson(bytes, &reason);
  if (!json) {
    setError(error, path + ": " + reason);
    return std::nullopt;
  }
  std::optional<Manifest> manifest = manifestFromJson(*json, &reason);
  if (!manifest)
    setError(error, path + ": " + reason);
  return manifest;
}

namespace {

/// A recursive-descent evaluator of the prefix expressions (Bundle.h).
class Evaluator {
public:
  Evaluator(std::string_view text, std::span<const Shape> shapes)
      : text(text), shapes(shapes) {}

  std::optional<int64_t> run(std::string *error) {
    std::optional<int64_t> value = expression();
    skipSpace();
    if (value && position != text.size())
      fail("trailing characters");
    if (!message.empty()) {
      setError(error, "expression '" + std::string(text) + "': " + message);
      return std::nullopt;
    }
    return value;
  }

private:
  void fail(std::string what) {
    if (message.empty())
      message = std::move(what);
  }
  void skipSpace() {
    while (position < text.size() && text[position] == ' ')
      ++position;
  }
  std::string_view word() {
    skipSpace();
    size_t start = position;
    while (position < text.size() && text[position] != ' ' &&
           text[position] != '(' && text[position] != ')')
      ++position;
    return text.substr(start, position - start);
  }

  std::optional<int64_t> expression(int depth = 0) {
    // The GPU tail's expressions are a few levels deep; a limit keeps a
    // hostile manifest from overflowing the stack.
    if (depth > 64) {
      fail("nested deeper than 64 levels");
      return std::nullopt;
    }
    skipSpace();
    if (position >= text.size()) {
      fail("unexpected end");
      return std::nullopt;
    }
    if (text[position] != '(') {
      std::string_view literal = word();
      int64_t value = 0;
      auto [end, ec] = std::from_chars(literal.data(),
                                       literal.data() + literal.size(), value);
      if (literal.empty() || ec != std::errc() ||
          end != literal.data() + literal.size()) {
        fail("bad integer '" + std::string(literal) + "'");
        return std::nullopt;
      }
      return value;
    }
    ++position;
    std::string op(word());
    std::string predicate;
    if (op == "cmp")
      predicate = word();
    std::vector<int64_t> args;
    while (true) {
      skipSpace();
      if (position >= text.size()) {
        fail("missing ')'");
        return std::nullopt;
      }
      if (text[position] == ')') {
        ++position;
        break;
      }
      std::optional<int64_t> arg = expression(depth + 1);
      if (!arg)
        return std::nullopt;
      args.push_back(*arg);
    }
    return apply(op, predicate, args);
  }

  std::optional<int64_t> apply(const std::string &op,
                               const std::string &predicate,
                               const std::vector<int64_t> &args) {
    size_t want = op == "select" ? 3 : 2;
    if (args.size() != want) {
      fail("'" + op + "' takes " + std::to_string(want) + " operands");
      return std::nullopt;
    }
    int64_t a = args[0], b = args[1];
    uint64_t ua = uint64_t(a), ub = uint64_t(b);
    bool divides = op.find("div") != std::string::npos ||
                   op.find("rem") != std::string::npos;
    if (divides && b == 0) {
      fail("division by zero in '" + op + "'");
      return std::nullopt;
    }
    // INT64_MIN / -1 overflows (undefined in C++, poison in arith).
    if (divides && op.ends_with("si") &&
        a == std::numeric_limits<int64_t>::min() && b == -1) {
      fail("signed overflow in '" + op + "'");
      return std::nullopt;
    }
    if (op == "dim") {
      if (a < 0 || size_t(a) >= shapes.size() || b < 0 || b > 1) {
        fail("(dim " + std::to_string(a) + " " + std::to_string(b) +
             ") is out of range");
        return std::nullopt;
      }
      return shapes[size_t(a)][size_t(b)];
    }
    if (op == "add")
      return int64_t(ua + ub);
    if (op == "sub")
      return int64_t(ua - ub);
    if (op == "mul")
      return int64_t(ua * ub);
    if (op == "divsi")
      return a / b;
    if (op == "divui")
      return int64_t(ua / ub);
    if (op == "remsi")
      return a % b;
    if (op == "remui")
      return int64_t(ua % ub);
    if (op == "ceildivsi") {
      int64_t quotient = a / b;
      return quotient + ((a % b != 0) && ((a < 0) == (b < 0)) ? 1 : 0);
    }
    if (op == "ceildivui")
      return int64_t(ua / ub + (ua % ub != 0 ? 1 : 0));
    if (op == "floordivsi") {
      int64_t quotient = a / b;
      return quotient - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
    }
    if (op == "maxsi")
      return a > b ? a : b;
    if (op == "minsi")
      return a < b ? a : b;
    if (op == "maxui")
      return int64_t(ua > ub ? ua : ub);
    if (op == "minui")
      return int64_t(ua < ub ? ua : ub);
    if (op == "select")
      return a != 0 ? args[1] : args[2];
    if (op == "cmp") {
      if (predicate == "eq")
        return a == b;
      if (predicate == "ne")
        return a != b;
      if (predicate == "slt")
        return a < b;
      if (predicate == "sle")
        return a <= b;
      if (predicate == "sgt")
        return a > b;
      if (predicate == "sge")
        return a >= b;
      if (predicate == "ult")
        return ua < ub;
      if (predicate == "ule")
        return ua <= ub;
      if (predicate == "ugt")
        return ua > ub;
      if (predicate == "uge")
        return ua >= ub;
      fail("unknown predicate '" + predicate + "'");
      return std::nullopt;
    }
    fail("unknown operation '" + op + "'");
    return std::nullopt;
  }

  std::string_view text;
  std::span<const Shape> shapes;
  size_t position = 0;
  std::string message;
};

} // namespace

std::optional<int64_t> evaluateExpression(std::string_view expression,
                                          std::span<const Shape> shapes,
                                          std::string *error) {
  return Evaluator(expression, shapes).run(error);
}

size_t elementBytes(std::string_view element) {
  if (element == "f32")
    return 4;
  if (element == "f16" || element == "bf16")
    return 2;
  return 1;
}

std::optional<PackedArguments>
packArguments(const Launch &launch, std::span<const uint64_t> addresses,
              std::span<const Shape> shapes, std::string *error) {
  PackedArguments packed;
  for (const Operand &operand : launch.operands) {
    if (operand.memref >= 0) {
      size_t p = size_t(operand.memref);
      if (p >= addresses.size() || p >= shapes.size()) {
        setError(error, launch.entry + ": operand names parameter " +
                            std::to_string(p) + ", which does not exist");
        return std::nullopt;
      }
      // MLIR's expanded descriptor of a row-major rank-2 memref.
      const Shape &shape = shapes[p];
      uint64_t slots[7] = {
          addresses[p],       addresses[p],       0, uint64_t(shape[0]),
          uint64_t(shape[1]), uint64_t(shape[1]), 1};
      packed.slots.insert(packed.slots.end(), slots, slots + 7);
      continue;
    }
    std::optional<int64_t> value =
        evaluateExpression(operand.scalar, shapes, error);
    if (!value)
      return std::nullopt;
    packed.slots.push_back(uint64_t(*value));
  }
  // Pointers are taken after the vector stops growing.
  for (uint64_t &slot : packed.slots)
    packed.pointers.push_back(&slot);
  return packed;
}

std::optional<LaunchSizes> evaluateLaunch(const Launch &launch,
                                          std::span<const Shape> shapes,
                                          std::string *error) {
  LaunchSizes sizes;
  for (size_t i = 0; i < 3; ++i) {
    std::optional<int64_t> grid =
        evaluateExpression(launch.grid[i], shapes, error);
    std::optional<int64_t> block =
        evaluateExpression(launch.block[i], shapes, error);
    if (!grid || !block)
      return std::nullopt;
    if (*grid < 0 || *grid > 0x7fffffff || *block < 1 || *block > 1024) {
      setError(error, launch.entry + ": launch size out of range (grid " +
                          std::to_string(*grid) + ", block " +
                          std::to_string(*block) + ")");
      return std::nullopt;
    }
    sizes.grid[i] = *grid;
    sizes.block[i] = *block;
  }
  return sizes;
}

} // namespace lowbit::aot

//===- Bundle.cpp - AOT bundles: manifest model, reader, writer -----------===//

#include "runtime/aot/Bundle.h"

#include "runtime/aot/RankedLaunch.h"
#include "runtime/core/AtomicFile.h"
#include "target/Workspace.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <memory>

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

/// Names relative to the bundle, "" written as null.
JsonValue fileArray(const std::vector<std::string> &files) {
  JsonValue array = JsonValue::array();
  for (const std::string &file : files)
    array.push(file.empty() ? JsonValue() : JsonValue::string(file));
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
  if (!size.dims.empty()) {
    JsonValue dims = JsonValue::array();
    for (const std::vector<int64_t> &shape : size.dims) {
      JsonValue one = JsonValue::array();
      for (int64_t dim : shape)
        one.push(JsonValue::number(dim));
      dims.push(std::move(one));
    }
    object.set("dims", std::move(dims));
  }
  if (!size.inputs.empty())
    object.set("inputs", fileArray(size.inputs));
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
    if (const JsonValue *dims = object.get("dims"); dims && !dims->isNull()) {
      for (const JsonValue &shape : dims->items()) {
        if (shape.items().empty() || shape.items().size() > kMaxRank) {
          fail(where + ".dims: a shape of rank 1 to " +
               std::to_string(kMaxRank));
          break;
        }
        std::vector<int64_t> parsed;
        int64_t elements = 1;
        for (const JsonValue &dim : shape.items()) {
          parsed.push_back(integer(dim, where + ".dims", 0, kMaxDimension));
          if (__builtin_mul_overflow(elements, parsed.back(), &elements) ||
              elements > kMaxElements)
            elements = kMaxElements + 1;
        }
        if (elements > kMaxElements) {
          fail(where + ".dims: a shape of more than " +
               std::to_string(kMaxElements) + " elements");
          break;
        }
        result.dims.push_back(std::move(parsed));
      }
      // The rank-2 shape is the ranked one's bytes: a disagreement is a
      // hand edit that would size a buffer wrongly.
      for (size_t i = 0;
           !failed && i < result.dims.size() && i < result.shapes.size(); ++i) {
        const std::vector<int64_t> &d = result.dims[i];
        // A zero dimension makes the element count 0 while the leading
        // product of the others may still overflow: that is no valid
        // rank-2 shape either.
        int64_t leading = 1;
        bool overflow = false;
        for (size_t k = 0; k + 1 < d.size(); ++k)
          overflow |= __builtin_mul_overflow(leading, d[k], &leading);
        if (overflow || result.shapes[i] != Shape{leading, d.back()})
          fail(where + ".dims[" + std::to_string(i) +
               "]: does not match shapes[" + std::to_string(i) + "]");
      }
      if (!failed && result.dims.size() != result.shapes.size())
        fail(where + ".dims: one shape per parameter");
    }
    if (const JsonValue *inputs = object.get("inputs");
        inputs && !inputs->isNull()) {
      for (const JsonValue &file : inputs->items())
        result.inputs.push_back(file.isNull() ? "" : file.text());
      if (result.inputs.size() != result.shapes.size())
        fail(where + ".inputs: one file (or null) per parameter");
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
    object.set("kind", JsonValue::string(entry.kind));
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
    object.set("workspace_words", JsonValue::number(entry.workspaceWords));
    JsonValue launches = JsonValue::array();
    for (const Launch &launch : entry.launches) {
      JsonValue l = JsonValue::object();
      l.set("entry", JsonValue::string(launch.entry));
      l.set("grid", stringArray(launch.grid));
      l.set("block", stringArray(launch.block));
      l.set("shared", JsonValue::string(launch.shared));
      JsonValue operands = JsonValue::array();
      for (const Operand &operand : launch.operands) {
        JsonValue o = JsonValue::object();
        if (operand.memref >= 0) {
          o.set("memref", JsonValue::number(int64_t(operand.memref)));
        } else {
          o.set("scalar", JsonValue::string(operand.scalar));
          o.set("bits", JsonValue::number(int64_t(operand.bits)));
        }
        operands.push(std::move(o));
      }
      l.set("operands", std::move(operands));
      l.set("resources", resourcesJson(launch.resources));
      launches.push(std::move(l));
    }
    object.set("launches", std::move(launches));
    if (entry.data) {
      JsonValue data = sizeJson(entry.data->size);
      data.set("files", fileArray(entry.data->files));
      if (entry.data->relativeTolerance > 0)
        data.set("relative_tolerance",
                 JsonValue::number(entry.data->relativeTolerance));
      if (entry.data->float64Param >= 0) {
        JsonValue reference = JsonValue::object();
        reference.set("param",
                      JsonValue::number(int64_t(entry.data->float64Param)));
        reference.set("file", JsonValue::string(entry.data->float64File));
        data.set("float64_reference", std::move(reference));
      }
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
  const JsonValue *version = read.field(json, "version", "manifest");
  if (!version)
    return std::nullopt;
  std::optional<int64_t> versionNumber = version->asInt();
  if (!versionNumber || *versionNumber < kOldestManifestVersion) {
    read.fail("version " + version->text() +
              " is not 2 or 3: version 2 "
              "changed the launch expressions to the JIT's syntax and added "
              "the kernel workspace; rebuild the bundle with this lowbit's "
              "`lowbit aot`");
    return std::nullopt;
  }
  if (*versionNumber > kManifestVersion) {
    read.fail("version " + version->text() + " is newer than this reader's " +
              std::to_string(kManifestVersion) +
              "; use the runner of the lowbit that wrote the bundle");
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
    if (std::string kind = read.string(object, "kind", where, true);
        !kind.empty())
      entry.kind = kind;
    if (entry.kind != "scheme" && entry.kind != "kv" &&
        entry.kind != "attention")
      read.fail(where + ".kind: '" + entry.kind +
                "' is not scheme, kv or attention");
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
    entry.workspaceWords = read.integer(object, "workspace_words", where, 0,
                                        workspace_abi::kMaxWords);
    if (const JsonValue *launches = read.field(object, "launches", where))
      for (const JsonValue &l : launches->items()) {
        std::string at = where + ".launches";
        Launch launch;
        launch.entry = read.string(l, "entry", at);
        launch.grid = read.triple(l, "grid", at);
        launch.block = read.triple(l, "block", at);
        launch.shared = read.string(l, "shared", at);
        if (const JsonValue *operands = read.field(l, "operands", at))
          for (const JsonValue &o : operands->items()) {
            Operand operand;
            if (const JsonValue *memref = o.get("memref")) {
              operand.memref = int(
                  read.integer(*memref, at + ".memref", 0, kMaxParameters - 1));
            } else {
              operand.scalar = read.string(o, "scalar", at + ".operands");
              operand.bits =
                  int(read.integer(o, "bits", at + ".operands", 32, 64));
              if (operand.bits != 32 && operand.bits != 64)
                read.fail(at + ".operands.bits: " +
                          std::to_string(operand.bits) + " is not 32 or 64");
            }
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
        // Every expression compiles now, so a bad one is refused when the
        // manifest is read, naming where it is. A KV entry's expressions
        // name ranked dimensions: they are checked against its sizes below.
        if (!read.failed && entry.kind != "kv")
          if (Expected<launch::CompiledStep> compiled =
                  launch::compileStep(toLaunchStep(launch), entry.params.size(),
                                      entry.workspaceWords);
              !compiled)
            read.fail(at + ": " + compiled.error().message);
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
      if (const JsonValue *tolerance = data->get("relative_tolerance");
          tolerance && !tolerance->isNull()) {
        bundleData.relativeTolerance = tolerance->asDouble().value_or(0);
        if (!(bundleData.relativeTolerance > 0 &&
              bundleData.relativeTolerance < 1))
          read.fail(where + ".data.relative_tolerance: not in (0, 1)");
      }
      if (const JsonValue *reference = data->get("float64_reference");
          reference && !reference->isNull()) {
        std::string at = where + ".data.float64_reference";
        bundleData.float64Param = int(read.integer(
            *reference, "param", at, 0, int64_t(entry.params.size()) - 1));
        bundleData.float64File = read.string(*reference, "file", at);
        if (!read.failed &&
            !entry.params[size_t(bundleData.float64Param)].written)
          read.fail(at + ".param: not a written parameter");
      }
      entry.data = std::move(bundleData);
    }
    if (const JsonValue *bench = object.get("bench");
        bench && !bench->isNull()) {
      entry.bench = read.size(*bench, where + ".bench");
      if (entry.bench->shapes.size() != entry.params.size())
        read.fail(where + ".bench: one shape per parameter");
    }
    if (entry.kind == "kv" && !read.failed) {
      std::vector<const SizeInstance *> sizes;
      if (entry.data)
        sizes.push_back(&entry.data->size);
      if (entry.bench)
        sizes.push_back(&*entry.bench);
      for (const SizeInstance *size : sizes) {
        if (size->dims.empty())
          read.fail(where + ": a kv entry's sizes need dims");
        for (size_t l = 0; !read.failed && l < entry.launches.size(); ++l) {
          std::string reason;
          if (!evaluateLaunchFor(entry.launches[l], *size, &reason,
                                 entry.workspaceWords))
            read.fail(where + ".launches[" + std::to_string(l) +
                      "]: " + reason);
        }
      }
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

launch::LaunchStep toLaunchStep(const Launch &launch) {
  launch::LaunchStep step;
  step.kernelName = launch.entry;
  for (size_t i = 0; i < 3; ++i) {
    step.sizes[i] = launch.grid[i];
    step.sizes[3 + i] = launch.block[i];
  }
  step.sizes[6] = launch.shared;
  for (const Operand &operand : launch.operands)
    step.arguments.push_back(operand.memref >= 0
                                 ? "m:" + std::to_string(operand.memref)
                                 : "s" + std::to_string(operand.bits) + ":" +
                                       operand.scalar);
  return step;
}

std::optional<Launch> fromLaunchStep(const launch::LaunchStep &step,
                                     std::string *error) {
  Launch launch;
  launch.entry = step.kernelName;
  for (size_t i = 0; i < 3; ++i) {
    launch.grid[i] = step.sizes[i];
    launch.block[i] = step.sizes[3 + i];
  }
  launch.shared = step.sizes[6];
  for (const std::string &argument : step.arguments) {
    Operand operand;
    std::string_view text = argument;
    if (text.starts_with("m:")) {
      auto [end, ec] = std::from_chars(
          text.data() + 2, text.data() + text.size(), operand.memref);
      if (ec != std::errc() || end != text.data() + text.size() ||
          operand.memref < 0) {
        setError(error, step.kernelName + ": bad argument '" + argument + "'");
        return std::nullopt;
      }
    } else if (text.starts_with("s32:") || text.starts_with("s64:")) {
      operand.bits = text[1] == '3' ? 32 : 64;
      operand.scalar = std::string(text.substr(4));
    } else {
      setError(error, step.kernelName + ": bad argument '" + argument + "'");
      return std::nullopt;
    }
    launch.operands.push_back(std::move(operand));
  }
  return launch;
}

Expected<std::vector<Launch>> launchesFromPlan(const launch::LaunchPlan &plan) {
  if (!plan.unsupported.empty())
    return Error{ErrorCode::Unsupported,
                 "the launches cannot be described: " + plan.unsupported};
  std::vector<Launch> launches;
  launches.reserve(plan.steps.size());
  for (const launch::LaunchStep &step : plan.steps) {
    std::string error;
    std::optional<Launch> launch = fromLaunchStep(step, &error);
    if (!launch)
      return Error{ErrorCode::CorruptEntry, error};
    launches.push_back(std::move(*launch));
  }
  return launches;
}

std::optional<int64_t> evaluateExpression(std::string_view expression,
                                          std::span<const Shape> shapes,
                                          std::string *error) {
  Expected<launch::Expression> compiled =
      launch::Expression::compile(expression, shapes.size());
  Expected<int64_t> value = compiled ? compiled->evaluate(shapes)
                                     : Expected<int64_t>(compiled.error());
  if (!value) {
    setError(error, value.error().message);
    return std::nullopt;
  }
  return *value;
}

size_t elementBytes(std::string_view element) {
  if (element == "f32" || element == "i32")
    return 4;
  if (element == "f16" || element == "bf16")
    return 2;
  return 1;
}

Status resolveLaunchFor(const Launch &launch, const SizeInstance &size,
                        std::span<const uint64_t> addresses, uint64_t workspace,
                        int64_t workspaceWords, launch::ResolvedStep &out) {
  if (size.dims.empty()) {
    // Rank 2: the launch module compiles and resolves (the JIT's scheme
    // kernels too).
    Expected<launch::CompiledStep> compiled = launch::compileStep(
        toLaunchStep(launch), size.shapes.size(), workspaceWords);
    if (!compiled)
      return compiled.error();
    return launch::resolveStep(*compiled, size.shapes, addresses, workspace,
                               workspaceWords, out);
  }
  std::vector<size_t> ranks;
  for (const std::vector<int64_t> &dims : size.dims)
    ranks.push_back(dims.size());
  Expected<RankedLaunch> ranked =
      RankedLaunch::compile(launch, ranks, workspaceWords);
  if (!ranked)
    return ranked.error();
  // compile checked the count and the ranks against the arrays' bounds.
  std::array<RankedShape, kMaxRankedParams> shapes{};
  for (size_t param = 0; param < ranks.size(); ++param) {
    shapes[param].rank = ranks[param];
    std::copy(size.dims[param].begin(), size.dims[param].end(),
              shapes[param].dims.begin());
  }
  return ranked->resolve(std::span(shapes.data(), ranks.size()), addresses,
                         workspace, out);
}

namespace {

/// resolveLaunchFor into a new step, or nullptr and `error`.
std::unique_ptr<launch::ResolvedStep>
resolveOrSay(const Launch &launch, const SizeInstance &size,
             std::span<const uint64_t> addresses, uint64_t workspace,
             int64_t workspaceWords, std::string *error) {
  auto resolved = std::make_unique<launch::ResolvedStep>();
  if (Status status = resolveLaunchFor(launch, size, addresses, workspace,
                                       workspaceWords, *resolved);
      !status) {
    setError(error, status.error().message);
    return nullptr;
  }
  return resolved;
}

SizeInstance rank2Size(std::span<const Shape> shapes) {
  SizeInstance size;
  size.shapes.assign(shapes.begin(), shapes.end());
  return size;
}

} // namespace

std::optional<LaunchSizes> evaluateLaunchFor(const Launch &launch,
                                             const SizeInstance &size,
                                             std::string *error,
                                             int64_t workspaceWords) {
  // Sizes only: every memref operand resolves to address 0.
  std::vector<uint64_t> addresses(
      size.dims.empty() ? size.shapes.size() : size.dims.size(), 0);
  std::unique_ptr<launch::ResolvedStep> resolved =
      resolveOrSay(launch, size, addresses, 0, workspaceWords, error);
  if (!resolved)
    return std::nullopt;
  LaunchSizes sizes;
  for (size_t i = 0; i < 3; ++i) {
    sizes.grid[i] = resolved->sizes[i];
    sizes.block[i] = resolved->sizes[3 + i];
  }
  sizes.sharedBytes = resolved->sizes[6];
  return sizes;
}

std::optional<PackedArguments>
packArgumentsFor(const Launch &launch, std::span<const uint64_t> addresses,
                 const SizeInstance &size, std::string *error,
                 uint64_t workspace, int64_t workspaceWords) {
  std::unique_ptr<launch::ResolvedStep> resolved =
      resolveOrSay(launch, size, addresses, workspace, workspaceWords, error);
  if (!resolved)
    return std::nullopt;
  PackedArguments packed;
  packed.slots.assign(resolved->slots.begin(),
                      resolved->slots.begin() + resolved->slotCount);
  // Pointers are taken after the vector stops growing.
  for (uint64_t &slot : packed.slots)
    packed.pointers.push_back(&slot);
  return packed;
}

std::optional<PackedArguments>
packArguments(const Launch &launch, std::span<const uint64_t> addresses,
              std::span<const Shape> shapes, std::string *error,
              uint64_t workspace, int64_t workspaceWords) {
  return packArgumentsFor(launch, addresses, rank2Size(shapes), error,
                          workspace, workspaceWords);
}

std::optional<LaunchSizes> evaluateLaunch(const Launch &launch,
                                          std::span<const Shape> shapes,
                                          std::string *error,
                                          int64_t workspaceWords) {
  return evaluateLaunchFor(launch, rank2Size(shapes), error, workspaceWords);
}

} // namespace lowbit::aot

//===- CpuBackendTest.cpp - JIT kernels vs the reference quantizer --------===//
//
// Every named scheme (and a few user schemes) x input dtype x static/dynamic
// x ragged shapes: the CPU kernel's codes, scales, zero points and global
// scale must equal format/Quantize.h's bit for bit, and its dequantize must
// equal the reference dequantize. Kernels have dynamic shapes, so one
// compiled kernel per spec serves every shape (compiled once, cached).
//
//===----------------------------------------------------------------------===//

#include "format/Codec.h"
#include "format/Quantize.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/spec/KernelSpec.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <random>

using namespace lowbit;
using namespace lowbit::compiler;

namespace {

const std::pair<int64_t, int64_t> kShapes[] = {
    {1, 1}, {3, 37}, {17, 1000}, {128, 4096}};

CpuKernel &kernelFor(const KernelSpec &spec) {
  // Leaked on purpose: JIT engines torn down during static destruction, after
  // LLVM's own statics are gone, crash the process at exit.
  static auto &cache = *new std::map<std::string, std::unique_ptr<CpuKernel>>;
  std::string key = printKernelSpec(spec);
  auto found = cache.find(key);
  if (found != cache.end())
    return *found->second;
  auto kernel = compileForCpu(spec);
  if (!kernel) {
    std::string message = llvm::toString(kernel.takeError());
    FAIL("compiling '" << key << "': " << message);
  }
  return *(cache[key] = std::move(*kernel));
}

/// Seeded inputs with the cases that break kernels: zeros, an all-zero
/// group, NaN, inf, subnormals, huge and tiny values.
std::vector<float> makeInput(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> values(size_t(rows * cols));
  for (float &value : values)
    value = std::ldexp(normal(rng), exponent(rng) / 4);
  size_t count = values.size();
  // An all-zero stretch at the start of row 0 (a whole group for every
  // named scheme when the row is long enough).
  for (int64_t col = 0; col < std::min<int64_t>(cols, 128); ++col)
    values[size_t(col)] = 0.0f;
  if (count > 200) {
    std::uniform_int_distribution<size_t> at(0, count - 1);
    values[at(rng)] = std::numeric_limits<float>::quiet_NaN();
    values[at(rng)] = -0.0f;
    values[at(rng)] = 1e-40f;  // subnormal
    values[at(rng)] = -3e-39f; // subnormal
    values[at(rng)] = 6.5e4f;
    values[at(rng)] = -1e30f;
    if (seed % 2)
      values[at(rng)] = std::numeric_limits<float>::infinity();
    // A row of tiny values only: scales near the bottom of the range.
    if (rows > 2)
      for (int64_t col = 0; col < cols; ++col)
        values[size_t(2 * cols + col)] = std::ldexp(normal(rng), -130);
  }
  return values;
}

HalfType halfTypeOf(ValueType type) {
  return type == ValueType::F16 ? HalfType::F16 : HalfType::BF16;
}

uint16_t narrow(ValueType type, float value) {
  return type == ValueType::F16 ? floatToHalf(value) : floatToBFloat16(value);
}

/// Host storage for one kernel parameter.
struct Storage {
  std::vector<uint8_t> bytes;
  int64_t rows = 0, cols = 0;
  HostBuffer buffer() { return {bytes.data(), rows, cols}; }
};

size_t elementBytes(const std::string &type) {
  if (type == "f32")
    return 4;
  if (type == "f16" || type == "bf16")
    return 2;
  return 1;
}

/// Scale codes (QuantizedTensor's representation) <-> scale buffer bytes.
void writeScales(Storage &storage, const std::vector<uint32_t> &codes,
                 size_t bytesPerScale) {
  for (size_t i = 0; i < codes.size(); ++i)
    std::memcpy(storage.bytes.data() + i * bytesPerScale, &codes[i],
                bytesPerScale); // little endian: the low bytes
}
std::vector<uint32_t> readScales(const Storage &storage, size_t bytesPerScale) {
  std::vector<uint32_t> codes(storage.bytes.size() / bytesPerScale, 0);
  for (size_t i = 0; i < codes.size(); ++i)
    std::memcpy(&codes[i], storage.bytes.data() + i * bytesPerScale,
                bytesPerScale);
  return codes;
}

struct Reference {
  std::vector<float> widened; // the f32 values the reference quantizes
  std::vector<uint16_t> halves;
};

Reference makeValues(ValueType type, const std::vector<float> &input) {
  Reference ref;
  if (type == ValueType::F32) {
    ref.widened = input;
    return ref;
  }
  for (float value : input)
    ref.halves.push_back(narrow(type, value));
  ref.widened = widenToFloat(halfTypeOf(type), ref.halves);
  return ref;
}

/// Runs one quantize kernel and the reference; returns "" or a mismatch.
std::string checkQuantize(const KernelSpec &spec, int64_t rows, int64_t cols,
                          uint32_t seed) {
  Reference values = makeValues(spec.valueType, makeInput(rows, cols, seed));
  const Scheme &scheme = spec.scheme;
  std::string error;

  // Static scales (and a given global scale) come from a dynamic reference
  // run on the same data, as a calibrated scale would.
  StaticScales given;
  Scheme dynamicScheme = scheme;
  dynamicScheme.scale.mode = ScaleMode::Dynamic;
  std::optional<QuantizedTensor> calibration =
      quantize(dynamicScheme, values.widened, rows, cols, &error);
  if (!calibration)
    return "reference (calibration): " + error;
  if (spec.isStatic()) {
    given.scaleCodes = calibration->scaleCodes;
    if (scheme.scale.zeroPoint)
      given.zeros = calibration->zeros;
  }
  if (spec.hasGlobal() &&
      (spec.isStatic() || spec.globalSource == GlobalSource::Given)) {
    // Not the computed value, so that a kernel that recomputes it fails.
    float scaled = calibration->globalScale * 1.5f;
    given.globalScale =
        std::isfinite(scaled) ? scaled : calibration->globalScale;
  }
  std::optional<QuantizedTensor> expected =
      quantize(scheme, values.widened, rows, cols, given, &error);
  if (!expected)
    return "reference: " + error;

  std::vector<KernelParam> params = kernelParams(spec);
  std::vector<Shape2D> shapes = bufferShapes(spec, rows, cols);
  std::vector<Storage> storage(params.size());
  size_t scaleBytes = size_t(scaleStorageBits(scheme.scale.type) / 8);
  for (size_t i = 0; i < params.size(); ++i) {
    Storage &s = storage[i];
    s.rows = shapes[i].rows;
    s.cols = shapes[i].cols;
    s.bytes.assign(size_t(s.rows * s.cols) *
                       elementBytes(params[i].elementType),
                   0xA5); // garbage: the kernel must write every byte
    if (params[i].isResult)
      continue;
    switch (params[i].role) {
    case KernelParam::Role::Input:
      if (spec.valueType == ValueType::F32)
        std::memcpy(s.bytes.data(), values.widened.data(), s.bytes.size());
      else
        std::memcpy(s.bytes.data(), values.halves.data(), s.bytes.size());
      break;
    case KernelParam::Role::Scales:
      writeScales(s, *given.scaleCodes, scaleBytes);
      break;
    case KernelParam::Role::Zeros:
      std::memcpy(s.bytes.data(), given.zeros->data(), s.bytes.size());
      break;
    case KernelParam::Role::Global:
      std::memcpy(s.bytes.data(), &*given.globalScale, 4);
      break;
    default:
      break;
    }
  }
  std::vector<HostBuffer> buffers;
  for (Storage &s : storage)
    buffers.push_back(s.buffer());
  if (llvm::Error runError = kernelFor(spec).run(buffers))
    return "run: " + llvm::toString(std::move(runError));

  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].isResult)
      continue;
    const Storage &s = storage[i];
    switch (params[i].role) {
    case KernelParam::Role::Codes:
      for (size_t at = 0; at < s.bytes.size(); ++at)
        if (s.bytes[at] != expected->codes[at])
          return "code byte " + std::to_string(at) + ": kernel " +
                 std::to_string(s.bytes[at]) + ", reference " +
                 std::to_string(expected->codes[at]) + " (input " +
                 std::to_string(
                     values.widened[spec.scheme.packing == Packing::Nibble
                                        ? 2 * at
                                        : at]) +
                 ")";
      break;
    case KernelParam::Role::Scales: {
      std::vector<uint32_t> codes = readScales(s, scaleBytes);
      for (size_t at = 0; at < codes.size(); ++at)
        if (codes[at] != expected->scaleCodes[at])
          return "scale " + std::to_string(at) + ": kernel " +
                 std::to_string(codes[at]) + ", reference " +
                 std::to_string(expected->scaleCodes[at]);
      break;
    }
    case KernelParam::Role::Zeros:
      for (size_t at = 0; at < s.bytes.size(); ++at)
        if (s.bytes[at] != expected->zeros[at])
          return "zero point " + std::to_string(at) + " differs";
      break;
    case KernelParam::Role::Global: {
      float global;
      std::memcpy(&global, s.bytes.data(), 4);
      if (floatBits(global) != floatBits(expected->globalScale))
        return "global scale: kernel " + std::to_string(global) +
               ", reference " + std::to_string(expected->globalScale);
      break;
    }
    default:
      break;
    }
  }
  return "";
}

/// Dequantizes the reference's quantized tensor with the kernel.
std::string checkDequantize(const KernelSpec &spec, int64_t rows, int64_t cols,
                            uint32_t seed) {
  std::string error;
  Scheme dynamicScheme = spec.scheme;
  dynamicScheme.scale.mode = ScaleMode::Dynamic;
  std::optional<QuantizedTensor> tensor =
      quantize(dynamicScheme, makeInput(rows, cols, seed), rows, cols, &error);
  if (!tensor)
    return "reference: " + error;
  tensor->scheme = spec.scheme;
  std::vector<uint32_t> expectedBits;
  if (spec.valueType == ValueType::F32) {
    auto values = dequantize(*tensor, &error);
    if (!values)
      return "reference dequantize: " + error;
    for (float value : *values)
      expectedBits.push_back(floatBits(value));
  } else {
    auto values = dequantizeHalf(*tensor, halfTypeOf(spec.valueType), &error);
    if (!values)
      return "reference dequantize: " + error;
    expectedBits.assign(values->begin(), values->end());
  }

  std::vector<KernelParam> params = kernelParams(spec);
  std::vector<Shape2D> shapes = bufferShapes(spec, rows, cols);
  std::vector<Storage> storage(params.size());
  size_t scaleBytes = size_t(scaleStorageBits(spec.scheme.scale.type) / 8);
  for (size_t i = 0; i < params.size(); ++i) {
    Storage &s = storage[i];
    s.rows = shapes[i].rows;
    s.cols = shapes[i].cols;
    s.bytes.assign(
        size_t(s.rows * s.cols) * elementBytes(params[i].elementType), 0xA5);
    switch (params[i].role) {
    case KernelParam::Role::Codes:
      std::memcpy(s.bytes.data(), tensor->codes.data(), s.bytes.size());
      break;
    case KernelParam::Role::Scales:
      writeScales(s, tensor->scaleCodes, scaleBytes);
      break;
    case KernelParam::Role::Zeros:
      std::memcpy(s.bytes.data(), tensor->zeros.data(), s.bytes.size());
      break;
    case KernelParam::Role::Global:
      std::memcpy(s.bytes.data(), &tensor->globalScale, 4);
      break;
    default:
      break;
    }
  }
  std::vector<HostBuffer> buffers;
  for (Storage &s : storage)
    buffers.push_back(s.buffer());
  if (llvm::Error runError = kernelFor(spec).run(buffers))
    return "run: " + llvm::toString(std::move(runError));
  const Storage &output = storage.back();
  size_t width = elementBytes(params.back().elementType);
  for (size_t at = 0; at < expectedBits.size(); ++at) {
    uint32_t bits = 0;
    std::memcpy(&bits, output.bytes.data() + at * width, width);
    if (bits == expectedBits[at])
      continue;
    // NaN payloads are not part of the contract; NaN-ness is.
    float got = width == 4 ? bitsToFloat(bits)
                : spec.valueType == ValueType::F16
                    ? halfToFloat(uint16_t(bits))
                    : bfloat16ToFloat(uint16_t(bits));
    float want = width == 4 ? bitsToFloat(expectedBits[at])
                 : spec.valueType == ValueType::F16
                     ? halfToFloat(uint16_t(expectedBits[at]))
                     : bfloat16ToFloat(uint16_t(expectedBits[at]));
    if (std::isnan(got) && std::isnan(want))
      continue;
    return "value " + std::to_string(at) + ": kernel " + std::to_string(got) +
           ", reference " + std::to_string(want);
  }
  return "";
}

std::string shapeText(int64_t rows, int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

void checkSpecAllShapes(const KernelSpec &spec, const char *label,
                        std::vector<std::pair<int64_t, int64_t>> shapes) {
  for (auto [rows, cols] : shapes) {
    std::string error;
    if (!validateSchemeForShape(spec.scheme, rows, cols, &error))
      continue;
    std::string mismatch =
        spec.op == KernelOp::Quantize
            ? checkQuantize(spec, rows, cols, uint32_t(rows * 31 + cols))
            : checkDequantize(spec, rows, cols, uint32_t(rows * 31 + cols));
    INFO(printKernelSpec(spec) << " " << shapeText(rows, cols));
    CHECK(mismatch == "");
    if (mismatch.empty())
      std::cout << "cpu-backend: " << label << " "
                << valueTypeName(spec.valueType) << " "
                << (spec.op == KernelOp::Dequantize
                        ? "dequantize"
                        : scaleModeName(spec.scheme.scale.mode))
                << " " << shapeText(rows, cols)
                << (spec.op == KernelOp::Quantize ? ": codes/scales bit-exact\n"
                                                  : ": values bit-exact\n");
  }
}

std::vector<std::pair<int64_t, int64_t>> defaultShapes() {
  return {std::begin(kShapes), std::end(kShapes)};
}

} // namespace

TEST_CASE("cpu backend: named schemes quantize bit-exact", "[cpu]") {
  for (const Scheme &scheme : namedSchemes()) {
    for (ValueType type : {ValueType::F32, ValueType::F16, ValueType::BF16})
      for (ScaleMode mode : {ScaleMode::Dynamic, ScaleMode::Static}) {
        KernelSpec spec;
        spec.scheme = scheme;
        spec.scheme.scale.mode = mode;
        spec.valueType = type;
        checkSpecAllShapes(spec, scheme.name.c_str(), defaultShapes());
      }
  }
}

TEST_CASE("cpu backend: nvfp4 with a given global scale", "[cpu]") {
  KernelSpec spec;
  spec.scheme = *lookupScheme("nvfp4");
  spec.globalSource = GlobalSource::Given;
  checkSpecAllShapes(spec, "nvfp4 global=given", defaultShapes());
  spec.scheme.scale.globalScale = GlobalScale::EncodeReciprocal;
  spec.scheme.scale.layout = ScaleLayout::Swizzle128x4;
  spec.valueType = ValueType::BF16;
  checkSpecAllShapes(spec, "nvfp4 encode swizzle global=given",
                     defaultShapes());
  spec.globalSource = GlobalSource::Computed;
  checkSpecAllShapes(spec, "nvfp4 encode swizzle", defaultShapes());
}

TEST_CASE("cpu backend: named schemes dequantize bit-exact", "[cpu]") {
  for (const Scheme &scheme : namedSchemes())
    for (ValueType type : {ValueType::F32, ValueType::F16, ValueType::BF16}) {
      KernelSpec spec;
      spec.op = KernelOp::Dequantize;
      spec.scheme = scheme;
      spec.valueType = type;
      checkSpecAllShapes(spec, scheme.name.c_str(), defaultShapes());
    }
}

TEST_CASE("cpu backend: user schemes", "[cpu]") {
  auto user = [](const char *text) {
    std::string error;
    std::optional<Scheme> scheme = parseSchemeText(text, &error);
    INFO(text << ": " << error);
    REQUIRE(scheme);
    return *scheme;
  };
  struct Case {
    const char *label, *scheme;
  } cases[] = {
      {"block 2x64 e4m3",
       "scheme(format=e4m3,scale=block(2x64),tail=true,type=f32)"},
      {"block 3x5 e2m1 nibble",
       "scheme(format=e2m1,scale=block(3x5),tail=true,type=bf16,"
       "packing=nibble)"},
      {"per_channel axis 0 int8",
       "scheme(format=int8,scale=per_channel(axis=0),type=f16)"},
      {"per_channel axis 1 int8",
       "scheme(format=int8,scale=per_channel(axis=1))"},
      {"per_token int4 nibble",
       "scheme(format=int4,scale=per_token,packing=nibble)"},
      {"group 16 axis 0 e4m3 bf16 scale",
       "scheme(format=e4m3,scale=group(16;axis=0),tail=true,type=bf16)"},
      {"group 32 axis 0 e2m1 rceil nibble",
       "scheme(format=e2m1,scale=group(32;axis=0),tail=true,type=e8m0,"
       "rule=rceil,packing=nibble)"},
      {"mxfp8 rceil no tail",
       "scheme(format=e4m3,scale=group(32;axis=1),tail=false,type=e8m0,"
       "rule=rceil)"},
      {"mxfp4 swizzle",
       "scheme(format=e2m1,scale=group(32;axis=1),tail=true,type=e8m0,"
       "rule=floor,layout=swizzle_128x4,packing=nibble)"},
      {"uint8 asym per_token bf16 scale",
       "scheme(format=uint8,scale=per_token,type=bf16,rule=minmax,"
       "zero_point=true)"},
  };
  for (const Case &c : cases)
    for (ValueType type : {ValueType::F32, ValueType::BF16})
      for (ScaleMode mode : {ScaleMode::Dynamic, ScaleMode::Static}) {
        KernelSpec spec;
        spec.scheme = user(c.scheme);
        spec.scheme.scale.mode = mode;
        spec.valueType = type;
        checkSpecAllShapes(spec, c.label,
                           {{1, 1}, {3, 37}, {17, 1000}, {64, 256}});
        if (mode == ScaleMode::Dynamic) {
          KernelSpec dequant = spec;
          dequant.op = KernelOp::Dequantize;
          checkSpecAllShapes(dequant, c.label, {{3, 37}, {17, 1000}});
        }
      }
}

TEST_CASE("cpu backend: static shapes compiled in", "[cpu]") {
  for (const char *text :
       {"quantize mxfp4 from=f16 scale=dynamic rows=3 cols=37",
        "quantize nvfp4 from=bf16 scale=dynamic rows=17 cols=1000",
        "quantize int4_g128 from=f32 scale=static rows=17 cols=1000",
        "dequantize mxfp4 to=bf16 scale=dynamic rows=3 cols=37",
        "dequantize int4_g128 to=f16 scale=dynamic rows=17 cols=1000"}) {
    std::string error;
    std::optional<KernelSpec> spec = parseKernelSpec(text, &error);
    INFO(text << ": " << error);
    REQUIRE(spec);
    checkSpecAllShapes(*spec, text, {{spec->rows, spec->cols}});
  }
}

TEST_CASE("compiler: refusals come back as errors", "[cpu]") {
  std::string error;
  std::optional<KernelSpec> spec = parseKernelSpec(
      "quantize scheme(format=e4m3,scale=group(32;axis=1),type=e8m0,"
      "rule=floor) rows=4 cols=64",
      &error);
  REQUIRE(spec);
  spec->cols = 40; // not a multiple of 32, and the scheme allows no tail
  auto kernel = compileForCpu(*spec);
  REQUIRE(!static_cast<bool>(kernel));
  CHECK_THAT(llvm::toString(kernel.takeError()),
             Catch::Contains("does not divide"));
}

TEST_CASE("compiler: emit stages", "[cpu]") {
  std::optional<KernelSpec> spec = parseKernelSpec("quantize mxfp4 from=bf16");
  REQUIRE(spec);
  auto mlirText = emit(*spec, Stage::Mlir);
  REQUIRE(static_cast<bool>(mlirText));
  CHECK_THAT(*mlirText, Catch::Contains("lowbit.quantize"));
  auto loops = emit(*spec, Stage::Loops);
  REQUIRE(static_cast<bool>(loops));
  CHECK_THAT(*loops, Catch::Contains("scf.parallel"));
  CHECK_THAT(*loops, Catch::Contains("lowbit.encode"));
  auto llvmIr = emit(*spec, Stage::Llvm);
  REQUIRE(static_cast<bool>(llvmIr));
  CHECK_THAT(*llvmIr, Catch::Contains("_mlir_ciface_kernel"));
}

TEST_CASE("compiler: the GPU tail seam", "[ptx]") {
  // No GPU is needed: PTX is produced in process, for every named kernel,
  // including the per-tensor reductions (their own kernels).
  std::string error;
  std::optional<Target> target = parseTarget("sm_90a", &error);
  REQUIRE(target);
  std::optional<KernelSpec> mxfp4 = parseKernelSpec("quantize mxfp4 from=bf16");
  REQUIRE(mxfp4);
  auto ptx = compileToPtx(*mxfp4, *target);
  if (!ptx)
    FAIL(llvm::toString(ptx.takeError()));
  CHECK_THAT(ptx->ptx, Catch::Contains(".entry"));
  for (const Scheme &scheme : namedSchemes())
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize})
      for (ScaleMode mode : {ScaleMode::Dynamic, ScaleMode::Static}) {
        if (op == KernelOp::Dequantize && mode == ScaleMode::Static)
          continue;
        KernelSpec spec;
        spec.op = op;
        spec.scheme = scheme;
        spec.scheme.scale.mode = mode;
        auto result = compileToPtx(spec, *target);
        std::string outcome =
            result ? std::string("ptx")
                   : "refused: " + llvm::toString(result.takeError());
        std::cout << "gpu-tail sm_90a: " << printKernelSpec(spec) << ": "
                  << outcome << "\n";
        INFO(printKernelSpec(spec) << ": " << outcome);
        CHECK(outcome == "ptx");
      }
  Target cpu;
  auto wrongTarget = compileToPtx(*mxfp4, cpu);
  REQUIRE(!static_cast<bool>(wrongTarget));
  llvm::consumeError(wrongTarget.takeError());
}

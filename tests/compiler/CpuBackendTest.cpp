//===- CpuBackendTest.cpp - JIT kernels vs the reference quantizer --------===//
//
// Every named scheme (and a few user schemes) x input dtype x static/dynamic
// x ragged shapes: the CPU kernel's codes, scales, zero points and global
// scale must equal format/Quantize.h's bit for bit, and its dequantize must
// equal the reference dequantize. Kernels have dynamic shapes, so one
// compiled kernel per spec serves every shape (compiled once, cached).
//
//===----------------------------------------------------------------------===//

#include "format/Quantize.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/spec/KernelSpec.h"
#include "tests/compiler/BackendCheck.h"

#include <catch2/catch.hpp>

#include <iostream>

using namespace lowbit;
using namespace lowbit::compiler;

namespace {

const std::pair<int64_t, int64_t> kShapes[] = {
    {1, 1}, {3, 37}, {17, 1000}, {128, 4096}};

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
            ? testing::checkQuantize(spec, rows, cols,
                                     uint32_t(rows * 31 + cols),
                                     testing::runOnCpuJit)
            : testing::checkDequantize(spec, rows, cols,
                                       uint32_t(rows * 31 + cols),
                                       testing::runOnCpuJit);
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

//===- KvKernelSignatureTest.cpp - The built kernels match their ABI ------===//
//
// runtime/compiler/KvKernelSignature.h is the one list of each KV kernel's
// parameters (`lowbit aot` writes it into bundles, the CPU kernels check
// buffers against it). For specs of every kind, the @kernel function the
// compiler builds must take exactly those parameters: one memref each, of
// the listed element type, with the listed static sizes and a dynamic size
// for each CallDim; and the parameters listed as written must be the ones
// the kernel's op writes (through views, for decode attention's
// destinations), read-only ones never written.
//
//===----------------------------------------------------------------------===//

#include "runtime/compiler/KvKernelSignature.h"
#include "runtime/compiler/KiviAttentionCompiler.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvCompiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

using namespace lowbit;

namespace {

std::string typeText(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  type.print(stream);
  return text;
}

/// Whether an op writes `value`'s memory, directly or through a view of it.
bool isWritten(mlir::Value value) {
  std::vector<mlir::Value> views = {value};
  for (size_t next = 0; next < views.size(); ++next)
    for (mlir::Operation *user : views[next].getUsers()) {
      if (mlir::hasEffect<mlir::MemoryEffects::Write>(user, views[next]))
        return true;
      if (auto view = llvm::dyn_cast<mlir::ViewLikeOpInterface>(user))
        if (view.getViewSource() == views[next])
          for (mlir::Value result : user->getResults())
            views.push_back(result);
    }
  return false;
}

/// Checks the @kernel of `module` against `params`; returns the number of
/// parameters checked.
size_t checkKernel(
    mlir::ModuleOp module, const std::vector<compiler::KvKernelParam> &params,
    const std::function<bool(const compiler::KvKernelParam &)> &readOnly) {
  auto kernel = module.lookupSymbol<mlir::func::FuncOp>("kernel");
  REQUIRE(kernel);
  REQUIRE(kernel.getNumArguments() == params.size());
  for (size_t index = 0; index < params.size(); ++index) {
    const compiler::KvKernelParam &param = params[index];
    INFO("parameter " << index << " (" << param.name << ")");
    mlir::Value argument = kernel.getArgument(index);
    auto type = llvm::dyn_cast<mlir::MemRefType>(argument.getType());
    REQUIRE(type);
    CHECK(typeText(type.getElementType()) == param.elementType);
    REQUIRE(type.getRank() == int64_t(param.shape.size()));
    for (size_t axis = 0; axis < param.shape.size(); ++axis) {
      INFO("dimension " << axis);
      if (compiler::isCallDim(param.shape[axis]))
        CHECK(type.isDynamicDim(axis));
      else
        CHECK(type.getDimSize(axis) == param.shape[axis]);
    }
    // The op's declared effects say what it writes; `readOnly` names the
    // operands it declares written that this kernel only reads.
    if (readOnly(param))
      CHECK_FALSE(param.isResult);
    else
      CHECK(param.isResult == isWritten(argument));
  }
  return params.size();
}

template <typename Spec, typename Parse, typename Build, typename Params>
size_t
checkSpecs(const std::vector<std::string> &texts, Parse parse, Build build,
           Params paramsOf,
           std::function<bool(const Spec &, const compiler::KvKernelParam &)>
               readOnly = nullptr) {
  mlir::MLIRContext context;
  size_t checked = 0;
  for (const std::string &text : texts) {
    INFO(text);
    std::string error;
    std::optional<Spec> spec = parse(text, &error);
    INFO(error);
    REQUIRE(spec);
    auto module = build(context, *spec);
    if (!module)
      FAIL(llvm::toString(module.takeError()));
    checked += checkKernel(**module, paramsOf(*spec),
                           [&](const compiler::KvKernelParam &param) {
                             return readOnly && readOnly(*spec, param);
                           });
  }
  return checked;
}

} // namespace

TEST_CASE("kv_append and kv_dequantize take kvKernelParams", "[kvsignature]") {
  size_t checked = checkSpecs<kv::KvKernelSpec>(
      {"kv_append kv_int8_g64 heads=8 head_dim=128",
       "kv_append kv_int8_g7 convention=divisor from=bf16 layout=paged "
       "heads=2 head_dim=40",
       "kv_append kv_fp8_e4m3 scale=per_head layout=paged heads=4 head_dim=64",
       "kv_append kv_fp8_e5m2 heads=3 head_dim=72",
       "kv_dequantize kv_int8_g32 to=f16 layout=paged heads=2 head_dim=64",
       "kv_dequantize kv_fp8_e4m3 scale=per_head to=bf16 heads=2 head_dim=64",
       "kv_dequantize kv_fp8_e5m2 heads=1 head_dim=16"},
      kv::parseKvKernelSpec, compiler::buildKvModule, compiler::kvKernelParams,
      // kv_append declares its scales written (kv_int8's are); kv_fp8's
      // static scales are only read.
      [](const kv::KvKernelSpec &spec, const compiler::KvKernelParam &param) {
        return !spec.scheme.isInt8() && param.name == "scales";
      });
  CHECK(checked == 4 + 5 + 5 + 4 + 5 + 4 + 4);
}

TEST_CASE("kivi_append and kivi_dequantize take kiviKernelParams",
          "[kvsignature]") {
  size_t checked = checkSpecs<kv::KiviKernelSpec>(
      {"kivi_append kv_kivi_int4 group=8 residual=16 per_channel heads=2 "
       "head_dim=40",
       "kivi_append kv_kivi_int2 group=5 residual=3 per_token from=bf16 "
       "layout=paged heads=2 head_dim=13",
       "kivi_append kv_kivi_int4 group=32 residual=128 per_channel "
       "layout=paged heads=2 head_dim=40",
       "kivi_dequantize kv_kivi_int2 group=8 residual=16 per_token to=f16 "
       "layout=paged heads=2 head_dim=40",
       "kivi_dequantize kv_kivi_int4 group=8 residual=0 per_channel heads=2 "
       "head_dim=13"},
      kv::parseKiviKernelSpec, compiler::buildKiviModule,
      compiler::kiviKernelParams);
  CHECK(checked == 6 + 7 + 7 + 8 + 7);
}

TEST_CASE("kv_attend takes kvAttentionParams", "[kvsignature]") {
  size_t checked = checkSpecs<kv::KvAttentionSpec>(
      {"kv_attend kv_fp8_e4m3 scale=per_head q=bf16 q_heads=4 kv_heads=2 "
       "head_dim=64",
       "kv_attend kv_fp8_e5m2 q_heads=2 kv_heads=2 head_dim=32",
       "kv_attend kv_int8_g64 layout=paged q_heads=4 kv_heads=2 head_dim=64 "
       "split=64",
       "kv_attend kv_int8_g32 q=f16 q_heads=8 kv_heads=2 head_dim=64"},
      kv::parseKvAttentionSpec, compiler::buildKvAttentionModule,
      compiler::kvAttentionParams);
  CHECK(checked == 8 + 8 + 9 + 8);
}

TEST_CASE("kivi_attend takes kiviAttentionParams", "[kvsignature]") {
  size_t checked = checkSpecs<kv::KiviAttentionSpec>(
      {"kivi_attend kv_kivi_int4 group=32 residual=128 cache=f16 q=f32 "
       "layout=contiguous q_heads=8 kv_heads=2 head_dim=72 split=64",
       "kivi_attend kv_kivi_int4 group=5 residual=3 cache=bf16 q=bf16 "
       "layout=paged q_heads=2 kv_heads=2 head_dim=13 split=64",
       "kivi_attend kv_kivi_int4 group=5 residual=0 keys=per_token cache=f16 "
       "q=f16 layout=contiguous q_heads=8 kv_heads=2 head_dim=13 split=64"},
      kv::parseKiviAttentionSpec, compiler::buildKiviAttentionModule,
      compiler::kiviAttentionParams);
  CHECK(checked == 12 + 13 + 12);
}

TEST_CASE("kv_attend's concrete shapes bind its signature", "[kvsignature]") {
  // kvAttentionShapes (what a call passes) must fit the kernel's static
  // sizes, for both layouts.
  for (const char *text :
       {"kv_attend kv_fp8_e4m3 scale=per_head q_heads=4 kv_heads=2 "
        "head_dim=64",
        "kv_attend kv_int8_g48 layout=paged q_heads=6 kv_heads=3 head_dim=96 "
        "split=32"}) {
    INFO(text);
    std::string error;
    auto spec = kv::parseKvAttentionSpec(text, &error);
    REQUIRE(spec);
    compiler::KvAttentionSizes sizes{3, 100, 20, 7};
    auto shapes = compiler::kvAttentionShapes(*spec, sizes);
    auto params = compiler::kvAttentionParams(*spec);
    REQUIRE(shapes.size() == params.size());
    for (size_t i = 0; i < params.size(); ++i)
      for (size_t axis = 0; axis < 2; ++axis)
        if (!compiler::isCallDim(params[i].shape[axis]))
          CHECK(shapes[i][axis] == params[i].shape[axis]);
    CHECK(shapes.front()[0] == 3 * spec->qHeads);
  }
}

//===- OptLevelTest.cpp - lowbit's LLVM pass list gives O3's PTX ----------===//
//
// The GPU tail runs lowbit's own LLVM pass list (lowering/NvptxCodegen.h)
// on pooled TargetMachines at O2's codegen level instead of LLVM's whole O3
// pipeline (and O3's codegen) on a new machine per compile, claiming O3's
// middle-end PTX (docs/pipeline.md). This checks that claim byte for byte
// against gpu-module-to-binary's O3 (new machine, O3's pipeline) at the same
// codegen level for every named scheme's quantize and dequantize kernels on
// sm_90a (H100/H200) and sm_100a (B200), and for the KV cache, KIVI,
// decode-attention and matmul kernels, so a change to the kernels or to LLVM
// that makes the list emit different code fails here instead of silently
// shipping slower kernels. O1 must differ from O3 for some kernel, and O3's
// codegen from O2's, or the comparison could not see a difference.
//
//===----------------------------------------------------------------------===//

#include "GpuTestSupport.h"

#include "format/Scheme.h"
#include "kv/KiviAttentionSpec.h"
#include "kv/KvAttentionSpec.h"
#include "kv/KvKernelSpec.h"
#include "kv/KvKiviKernelSpec.h"
#include "lowering/GpuTail.h"
#include "lowering/NvptxCodegen.h"
#include "matmul/MatmulSpec.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/KiviAttentionCompiler.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvCompiler.h"
#include "runtime/compiler/KvFamilyCompile.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "target/Target.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/Error.h"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace lowbit;

namespace {

/// LLVM's whole pipeline at `level`, with lowbit's codegen level unless
/// `codegenLevel` names another.
PtxOptions stockAt(int level, int codegenLevel = kPtxCodegenLevel) {
  PtxOptions options;
  options.optLevel = level;
  options.codegenLevel = codegenLevel;
  return options;
}

/// The PTX of a loops-level module (cloned, so the caller can reuse it):
/// lowbit's pass list when `level` is empty, else LLVM's whole pipeline at
/// that level (stockAt).
PtxModule ptxAt(mlir::ModuleOp loops, const char *arch,
                std::optional<int> level, int codegenLevel = kPtxCodegenLevel) {
  mlir::OwningOpRef<mlir::ModuleOp> copy(loops.clone());
  std::string error;
  PtxOptions options;
  if (level)
    options = stockAt(*level, codegenLevel);
  mlir::FailureOr<PtxModule> ptx =
      lowerToPtx(*copy, *parseTarget(arch, nullptr), error, options);
  INFO(error);
  REQUIRE(mlir::succeeded(ptx));
  return std::move(*ptx);
}

Target targetOf(const char *arch) {
  std::optional<Target> target = parseTarget(arch, nullptr);
  REQUIRE(target);
  return *target;
}

/// A compile entry's PTX with lowbit's list and with O3's pipeline.
template <typename Compile>
void checkSameAsO3(const std::string &what, Compile compile) {
  INFO(what);
  auto listed = compile(PtxOptions());
  if (!listed)
    FAIL(llvm::toString(listed.takeError()));
  auto reference = compile(stockAt(3));
  if (!reference)
    FAIL(llvm::toString(reference.takeError()));
  CHECK(listed->ptx == reference->ptx);
}

} // namespace

TEST_CASE("lowbit's LLVM pass list gives O3's PTX for every named kernel",
          "[ptx][optlevel]") {
  compiler::ContextLease context = compiler::borrowContext();
  size_t compared = 0, differentAtO1 = 0;
  for (const Scheme &scheme : namedSchemes()) {
    for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize}) {
      KernelSpec spec;
      spec.op = op;
      spec.scheme = scheme;
      std::string what =
          scheme.name +
          (op == KernelOp::Quantize ? " quantize" : " dequantize");
      INFO(what);
      std::string error;
      mlir::OwningOpRef<mlir::ModuleOp> module =
          test::gpuLoopsModule(*context, spec, error);
      if (!module)
        FAIL(error);
      for (const char *arch : {"sm_90a", "sm_100a"}) {
        INFO(arch);
        std::string reference = ptxAt(*module, arch, 3).ptx;
        PtxModule listed = ptxAt(*module, arch, std::nullopt);
        CHECK(listed.ptx == reference);
        CHECK(listed.optLevel == kPtxOptLevel);
        ++compared;
        // One kernel is enough to show that a difference is seen.
        if (differentAtO1 == 0 && ptxAt(*module, arch, 1).ptx != reference)
          ++differentAtO1;
      }
    }
  }
  CHECK(compared == namedSchemes().size() * 2 * 2);
  CHECK(differentAtO1 > 0);
  // The list's compiles returned their machines: later ones reuse them.
  CHECK(idleNvptxMachines() > 0);
  std::printf("opt-level: lowbit's pass list PTX == O3 PTX for %zu named "
              "kernels\n",
              compared);
}

TEST_CASE("lowbit's LLVM pass list gives O3's PTX for the KV, KIVI and "
          "decode-attention kernels",
          "[ptx][optlevel]") {
  Target target = targetOf("sm_90a");
  std::string error;
  for (const char *text :
       {"kv_append kv_int8_g64 convention=multiplier layout=paged heads=8 "
        "head_dim=128 from=bf16",
        "kv_dequantize kv_fp8_e4m3 scale=per_head layout=contiguous heads=8 "
        "head_dim=128 to=f16",
        "kv_append kv_fp8_e5m2 scale=per_tensor layout=contiguous heads=8 "
        "head_dim=128 from=bf16"}) {
    std::optional<kv::KvKernelSpec> spec = kv::parseKvKernelSpec(text, &error);
    REQUIRE(spec);
    checkSameAsO3(text, [&](const PtxOptions &options) {
      return compiler::compileKvFamilyToPtx(*spec, target, options);
    });
  }
  for (const char *text :
       {"kivi_append kv_kivi_int4 group=32 residual=128 per_channel from=bf16 "
        "layout=paged heads=8 head_dim=128",
        "kivi_dequantize kv_kivi_int2 group=32 residual=128 per_token "
        "from=bf16 to=f16 layout=contiguous heads=8 head_dim=128"}) {
    std::optional<kv::KiviKernelSpec> spec =
        kv::parseKiviKernelSpec(text, &error);
    REQUIRE(spec);
    checkSameAsO3(text, [&](const PtxOptions &options) {
      return compiler::compileKvFamilyToPtx(*spec, target, options);
    });
  }
  const char *kivi = "kivi_attend kv_kivi_int4 group=32 residual=128 "
                     "cache=f16 q=f32 layout=contiguous q_heads=8 kv_heads=2 "
                     "head_dim=72 split=64";
  std::optional<kv::KiviAttentionSpec> kiviSpec =
      kv::parseKiviAttentionSpec(kivi, &error);
  REQUIRE(kiviSpec);
  checkSameAsO3(kivi, [&](const PtxOptions &options) {
    return compiler::compileKvFamilyToPtx(*kiviSpec, target, options);
  });
  // The FlashDecoding kernel: its GPU-form module through the GPU tail.
  const char *attend = "kv_attend kv_int8_g64 convention=multiplier q=bf16 "
                       "layout=paged q_heads=32 kv_heads=8 head_dim=128";
  std::optional<kv::KvAttentionSpec> attendSpec =
      kv::parseKvAttentionSpec(attend, &error);
  REQUIRE(attendSpec);
  llvm::Expected<std::string> gpuText =
      compiler::kvAttentionGpuText(*attendSpec);
  if (!gpuText)
    FAIL(llvm::toString(gpuText.takeError()));
  compiler::ContextLease context = compiler::borrowContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(*gpuText, context.get());
  REQUIRE(module);
  INFO(attend);
  CHECK(ptxAt(*module, "sm_90a", std::nullopt).ptx ==
        ptxAt(*module, "sm_90a", 3).ptx);
}

// The matmul modules are the largest lowbit compiles, where codegen's level
// matters most (O3's GVN was 11% of the W4A16 compile): the GEMV and GEMM
// of the weight-only matmul, the W8A8 GEMMs and both FP4 GEMMs (the bf16
// fallback on sm_90a, the block-scaled mma on sm_120a).
TEST_CASE("lowbit's LLVM pass list gives O3's PTX for the matmul kernels",
          "[ptx][optlevel]") {
  compiler::ContextLease context = compiler::borrowContext();
  size_t compared = 0, differentAtO3Codegen = 0;
  for (auto [text, arch] :
       std::initializer_list<std::pair<const char *, const char *>>{
           {"matmul int4_g128 from=bf16", "sm_90a"},
           {"matmul mxfp4 from=f16 to=f32 bias", "sm_80"},
           {"matmul w=fp8_e4m3 a=fp8_e4m3 from=bf16", "sm_90a+ptx84"},
           {"matmul w=scheme(format=int8,scale=per_token) "
            "a=scheme(format=int8,scale=per_token) from=bf16",
            "sm_90a"},
           {"matmul w=nvfp4 a=nvfp4 from=bf16", "sm_90a"},
           {"matmul w=nvfp4 a=nvfp4 from=bf16", "sm_120a"},
           {"matmul w=mxfp4 a=mxfp4 from=bf16", "sm_120a"}}) {
    INFO(text << " on " << arch);
    std::string error;
    std::optional<matmul::MatmulSpec> spec =
        matmul::parseMatmulSpec(text, &error);
    INFO(error);
    REQUIRE(spec);
    Target target = targetOf(arch);
    llvm::Expected<std::string> gpuText =
        compiler::matmulGpuText(*spec, &target);
    if (!gpuText)
      FAIL(llvm::toString(gpuText.takeError()));
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(*gpuText, context.get());
    REQUIRE(module);
    std::string listed = ptxAt(*module, arch, std::nullopt).ptx;
    CHECK(listed == ptxAt(*module, arch, 3).ptx);
    ++compared;
    // O3's codegen changes these modules' PTX (not their registers or SASS
    // count: docs/pipeline.md), so the reference's level is seen to matter.
    if (differentAtO3Codegen == 0 && ptxAt(*module, arch, 3, 3).ptx != listed)
      ++differentAtO3Codegen;
  }
  CHECK(compared == 7);
  CHECK(differentAtO3Codegen > 0);
}

TEST_CASE("an LLVM level outside 0..3 is an error, not an abort",
          "[ptx][optlevel]") {
  compiler::ContextLease context = compiler::borrowContext();
  KernelSpec spec;
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      test::gpuLoopsModule(*context, spec, error);
  if (!module)
    FAIL(error);
  for (int level : {-1, 4}) {
    PtxOptions options;
    options.optLevel = level;
    mlir::FailureOr<PtxModule> ptx =
        lowerToPtx(*module, *parseTarget("sm_90a", nullptr), error, options);
    CHECK(mlir::failed(ptx));
    CHECK_THAT(error, Catch::Contains("must be 0..3"));
    // The same for the reference's codegen level.
    ptx = lowerToPtx(*module, *parseTarget("sm_90a", nullptr), error,
                     stockAt(3, level));
    CHECK(mlir::failed(ptx));
    CHECK_THAT(error,
               Catch::Contains("must be 0..3, got " + std::to_string(level)));
  }
}

//===- KvFamilyCompile.cpp - The KV family's one GPU compile entry --------===//

#include "runtime/compiler/KvFamilyCompile.h"

#include "runtime/compiler/KernelCompileSupport.h"
#include "runtime/compiler/KiviAttentionCompiler.h"
#include "runtime/compiler/KiviCompiler.h"
#include "runtime/compiler/KvAttentionCompiler.h"
#include "runtime/compiler/KvCompiler.h"

namespace lowbit::compiler {

using namespace mlir;

namespace {

/// Each family's module where the GPU tail starts, and its name in errors.
struct GpuLoops {
  MLIRContext &context;

  llvm::Expected<OwningOpRef<ModuleOp>>
  operator()(const kv::KvKernelSpec &spec) const {
    return lowerModule(buildKvModule(context, spec), lowerKvForGpu);
  }
  llvm::Expected<OwningOpRef<ModuleOp>>
  operator()(const kv::KiviKernelSpec &spec) const {
    return buildKiviLoops(context, spec);
  }
  llvm::Expected<OwningOpRef<ModuleOp>>
  operator()(const kv::KvAttentionSpec &spec) const {
    return lowerModule(buildKvAttentionModule(context, spec),
                       lowerKvAttentionForGpu);
  }
  llvm::Expected<OwningOpRef<ModuleOp>>
  operator()(const kv::KiviAttentionSpec &spec) const {
    return buildKiviAttentionLoops(context, spec);
  }
};

const char *familyName(const KvFamilySpec &spec) {
  constexpr const char *kNames[] = {"KV kernel PTX", "KIVI kernel PTX",
                                    "decode attention PTX",
                                    "KIVI decode attention PTX"};
  static_assert(std::size(kNames) == std::variant_size_v<KvFamilySpec>);
  return kNames[spec.index()];
}

} // namespace

llvm::Expected<GpuCompilation>
compileKvFamilyToPtx(const KvFamilySpec &spec, const Target &target,
                     const PtxOptions &options) {
  return loopsToGpu(
      [&](MLIRContext &context) {
        return std::visit(GpuLoops{context}, spec);
      },
      target, options, familyName(spec));
}

} // namespace lowbit::compiler

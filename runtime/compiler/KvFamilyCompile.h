//===- KvFamilyCompile.h - The KV family's one GPU compile entry -*- C++ -*-===//
//
// The KV-cache kernels (kv_append, kv_dequantize), KIVI's (kivi_append,
// kivi_dequantize) and the two decode attentions (kv_attend, kivi_attend)
// reach PTX through one entry: each family builds its module at the loops
// stage for the GPU (its own lowering), then the one GPU compile
// (runtime/compiler/GpuCompile.h) takes it. The JIT (runtime/jit's
// compileKvSpecForGpu), `lowbit aot`, `lowbit report` and the tests call
// this instead of one entry per family.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_COMPILER_KVFAMILYCOMPILE_H
#define LOWBIT_RUNTIME_COMPILER_KVFAMILYCOMPILE_H

#include "kv/KiviAttentionSpec.h"
#include "kv/KvAttentionSpec.h"
#include "kv/KvKernelSpec.h"
#include "kv/KvKiviKernelSpec.h"
#include "lowering/GpuTail.h"
#include "runtime/compiler/GpuCompile.h"
#include "target/Target.h"

#include "llvm/Support/Error.h"

#include <variant>

namespace lowbit::compiler {

/// A kernel of the KV family, by its spec.
using KvFamilySpec = std::variant<kv::KvKernelSpec, kv::KiviKernelSpec,
                                  kv::KvAttentionSpec, kv::KiviAttentionSpec>;

/// The kernels for an NVIDIA `target` (PTX, launch plan, workspace words).
/// Errors name the family ("decode attention PTX needs an NVIDIA target")
/// or carry its lowering's message (a spec with no GPU kernel).
llvm::Expected<GpuCompilation>
compileKvFamilyToPtx(const KvFamilySpec &spec, const Target &target,
                     const PtxOptions &options = {});

} // namespace lowbit::compiler

#endif // LOWBIT_RUNTIME_COMPILER_KVFAMILYCOMPILE_H

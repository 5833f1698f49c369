//===- CachedCompile.cpp - `lowbit compile` from the disk cache -----------===//
//
// The front end's half of `lowbit compile`: PTX that lowbit::Jit compiled
// before is read from the disk cache with no compiler loaded. The key is
// the one Jit::get() computes (runtime/jit/KernelSignature.h, MLIR-free);
// the entry is validated as on every read (checksums, receipt). Anything
// else (a miss, an unusable entry, another stage, LOWBIT_DUMP_DIR, a bad
// argument) goes to the compiler library's `compile`, which reports,
// compiles and replaces as before, so both paths print the same bytes.
//
//===----------------------------------------------------------------------===//

#include "runtime/cache/GpuPayload.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/jit/KernelSignature.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"

#include <cstdlib>

#include <fmt/format.h>

namespace lowbit::cli {

bool runCachedCompile(Arguments args) {
  std::string error;
  std::optional<ParsedCommandLine> parsed =
      parseCommandLine("compile", args, kCompileOptions, &error);
  if (!parsed || parsed->help || parsed->operands.size() != 1)
    return false;
  const std::string *emit = parsed->value("emit");
  const std::string *targetText = parsed->value("target");
  if ((emit && *emit != "ptx") || !targetText || std::getenv("LOWBIT_DUMP_DIR"))
    return false;
  std::optional<KernelSpec> spec =
      parseKernelSpec(parsed->operands.front(), &error);
  if (!spec || !validateKernelSpec(*spec, &error))
    return false;
  std::optional<Target> target = parseTarget(*targetText, &error);
  if (!target || !target->isNvidia() || !validateTarget(*target, &error))
    return false;

  Expected<runtime::CacheOptions> options =
      runtime::CacheOptions::fromEnvironment();
  if (!options || options->mode == runtime::CacheMode::Off)
    return false;
  auto signature =
      runtime::prepareSignature(jit::kernelSignature(*spec, *target, ""));
  if (!signature)
    return false;
  // Look only: must-hit never compiles, writes or takes a lock; a miss or
  // an unusable entry is the compiler library's to handle.
  runtime::CacheOptions lookOnly = *options;
  lookOnly.mode = runtime::CacheMode::MustHit;
  runtime::KernelCache cache(lookOnly);
  auto noCompile =
      [](const runtime::KernelKey &) -> Expected<runtime::CompiledKernel> {
    return makeError(ErrorCode::CacheMiss, "not in the cache");
  };
  auto entry =
      cache.getOrCompile(jit::primaryKernelKey(*spec, *signature), noCompile);
  if (!entry ||
      (*entry)->kernel.payloadFormat != runtime::PayloadFormat::JitGpu)
    return false;
  Expected<runtime::GpuPayload> payload =
      runtime::decodeGpuPayload((*entry)->kernel.binary);
  if (!payload)
    return false;
  fmt::print("{}", payload->ptx);
  if (!payload->ptx.empty() && payload->ptx.back() != '\n')
    fmt::print("\n");
  return true;
}

} // namespace lowbit::cli

//===- JitLoaderProbe.cpp - lowbit::Jit without MLIR, for the lit test ----===//
//
// An engine in miniature: links lowbit::Jit through LowbitJitLoader (no
// MLIR, no LLVM) and gets one kernel. A disk hit must load neither; a miss
// loads liblowbit-compiler.so and compiles (tests/lit/cli/jit-loader.test
// reads the dynamic loader's log).
//
//   lowbit-jit-probe SPEC TARGET
//
// A KV spec (its first word kv_* or kivi_*) goes to Jit::getKv.
//
// Prints "origin=disk|compiled kind=cubin|ptx workspace=W ptx=XXH64" and
// exits 0, or "lowbit-jit-probe: error: MESSAGE" and exits 1.
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"
#include "runtime/cache/Hash.h"

#include <cstdio>
#include <string>

int main(int argc, char **argv) {
  auto fail = [](const std::string &message) {
    std::fprintf(stderr, "lowbit-jit-probe: error: %s\n", message.c_str());
    return 1;
  };
  if (argc != 3)
    return fail("usage: lowbit-jit-probe SPEC TARGET");
  std::string error;
  std::optional<lowbit::Target> target = lowbit::parseTarget(argv[2], &error);
  if (!target)
    return fail("target: " + error);
  lowbit::JitOptions options;
  options.target = *target;
  auto jit = lowbit::Jit::create(options);
  if (!jit)
    return fail(jit.error().message);
  auto report = [&](const auto &kernel) {
    if (!kernel)
      return fail(kernel.error().message);
    std::string_view ptx = kernel->ptx();
    std::printf("origin=%s kind=%s workspace=%lld ptx=%s\n",
                kernel->loadedFromDisk() ? "disk" : "compiled",
                kernel->resources().registers >= 0 ? "cubin" : "ptx",
                static_cast<long long>(kernel->workspaceWords()),
                lowbit::runtime::toHex64(
                    lowbit::runtime::xxh64(ptx.data(), ptx.size(), 0))
                    .c_str());
    return 0;
  };
  std::string_view spec = argv[1];
  if (spec.starts_with("kv_") || spec.starts_with("kivi_"))
    return report((*jit)->getKv(spec, *target));
  return report((*jit)->get(spec));
}

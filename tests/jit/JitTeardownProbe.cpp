//===- JitTeardownProbe.cpp - Destroying a Jit at any time ----------------===//
//
// An engine in miniature that holds CPU kernels (a quantize kernel and the
// KV kernels kv_append and kivi_append) and destroys its lowbit::Jit at one
// of the times an engine may: `static` (a static Jit destroyed after main
// returns), `atexit` (from an atexit handler), `main` (during main, the
// kernels still referenced, then dropped after main), `twice` (two Jits
// made and destroyed in a row). tests/lit/cli/jit-teardown.test runs each
// mode as its own process and checks a clean exit: LLVM must never abort
// the process, however late its JIT engines are torn down.
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace lowbit;

namespace {

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "jit-teardown-probe: %s\n", what.c_str());
  std::exit(2);
}

std::unique_ptr<Jit> makeJit() {
  JitOptions options;
  options.cacheMode = runtime::CacheMode::Off;
  auto jit = Jit::create(options);
  if (!jit.ok())
    fail(jit.error().message);
  return std::move(jit).value();
}

/// Runs a static-scale fp8 quantize of a 2x64 tensor of ones.
void runQuantize(const Kernel &kernel) {
  auto signature = kernel.signature(2, 64);
  if (!signature.ok())
    fail(signature.error().message);
  std::vector<std::vector<float>> storage;
  std::vector<void *> pointers;
  for (const ArgumentInfo &argument : *signature) {
    storage.emplace_back(argument.shape[0] * argument.shape[1], 1.0f);
    pointers.push_back(storage.back().data());
  }
  if (Status status = kernel.run(pointers, 2, 64); !status.ok())
    fail(status.error().message);
}

/// Runs a KV kernel on zeroed buffers (4 bytes per element: enough for
/// any), every call-fixed size 2 (positions 0: the new tokens go first in
/// a cache of 2 tokens).
void runKv(const KvKernel &kernel) {
  std::vector<std::vector<uint8_t>> storage;
  std::vector<KvTensor> tensors;
  for (const KvParamInfo &param : kernel.params()) {
    KvTensor tensor;
    tensor.element = param.element;
    tensor.rank = param.shape.size();
    size_t bytes = 4; // At least one element's bytes.
    for (size_t axis = 0; axis < tensor.rank; ++axis) {
      tensor.shape[axis] = param.shape[axis] < 0 ? 2 : param.shape[axis];
      bytes *= tensor.shape[axis];
    }
    storage.emplace_back(bytes, 0);
    tensor.data = storage.back().data();
    tensors.push_back(tensor);
  }
  if (Status status = kernel.run(tensors); !status.ok())
    fail(kernel.spec() + ": " + status.error().message);
}

KvKernel getKv(Jit &jit, const std::string &spec) {
  auto kernel = jit.getKv(spec, Target{});
  if (!kernel.ok())
    fail(kernel.error().message);
  return *kernel;
}

/// A CPU quantize kernel and two CPU KV kernels (int8 groups, KIVI).
struct Kernels {
  std::optional<Kernel> quantize;
  std::optional<KvKernel> append, kivi;

  void run() const {
    runQuantize(*quantize);
    runKv(*append);
    runKv(*kivi);
  }
};

/// Compiles the kernels with `jit` and runs them once.
Kernels runAll(Jit &jit) {
  Kernels kernels;
  auto quantize = jit.get("quantize fp8_e4m3 scale=static", Target{});
  if (!quantize.ok())
    fail(quantize.error().message);
  kernels.quantize = *quantize;
  kernels.append = getKv(jit, "kv_append kv_int8_g32 heads=2 head_dim=64");
  kernels.kivi = getKv(jit, "kivi_append kv_kivi_int2 group=8 residual=16 "
                            "per_token heads=2 head_dim=64");
  kernels.run();
  return kernels;
}

std::unique_ptr<Jit> staticJit;
Kernels staticKernels;
std::unique_ptr<Jit> atexitJit;

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    fail("usage: lowbit-jit-teardown-probe static|atexit|main|twice");
  std::string mode = argv[1];
  if (mode == "static") {
    staticJit = makeJit();
    runAll(*staticJit);
  } else if (mode == "atexit") {
    atexitJit = makeJit();
    runAll(*atexitJit);
    std::atexit([] { atexitJit.reset(); });
  } else if (mode == "main") {
    auto jit = makeJit();
    staticKernels = runAll(*jit);
    jit.reset();
    // The kernels outlive their Jit: they still run, and are dropped after
    // main returns.
    staticKernels.run();
  } else if (mode == "twice") {
    for (int round = 0; round < 2; ++round) {
      auto jit = makeJit();
      runAll(*jit);
    }
  } else {
    fail("unknown mode " + mode);
  }
  std::printf("jit-teardown-probe %s: ran\n", mode.c_str());
  return 0;
}

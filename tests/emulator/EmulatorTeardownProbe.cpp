//===- EmulatorTeardownProbe.cpp - Destroying emulated kernels any time ---===//
//
// Compiles a GPU kernel for the emulator (quantize fp8_e4m3, static scale,
// sm_90a), runs it once on a 2x64 tensor and destroys it at one of the
// times a test or an engine may: `static` (a static program destroyed
// after main returns), `atexit` (from an atexit handler), `twice` (two
// programs compiled and destroyed in a row during main). The emulator's
// host code is JIT-compiled by the CPU tail's HostExecutable (ORC without
// a platform), whose teardown compiles nothing; mlir::ExecutionEngine's,
// which the emulator used before, ran LLVM's code generator on statics
// already freed at exit. tests/emulator/CMakeLists.txt runs each mode as
// its own process and wants exit code 0 and no "LLVM ERROR".
//
//===----------------------------------------------------------------------===//

#include "runtime/compiler/Compiler.h"
#include "runtime/emulator/EmulatedProgram.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using namespace lowbit;

namespace {

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "emulator-teardown-probe: %s\n", what.c_str());
  std::exit(2);
}

/// The kernel for the emulator, run once over buffers of ones.
std::unique_ptr<emulator::EmulatedProgram> compileAndRun() {
  std::string error;
  std::optional<KernelSpec> spec =
      parseKernelSpec("quantize fp8_e4m3 scale=static", &error);
  std::optional<Target> target = parseTarget("sm_90a", &error);
  if (!spec || !target)
    fail(error);
  auto program = emulator::EmulatedProgram::compile(*spec, *target);
  if (!program)
    fail(program.error().message);
  std::vector<std::vector<float>> storage;
  std::vector<emulator::ShapedBuffer> buffers;
  for (const Shape2D &shape : compiler::bufferShapes(*spec, 2, 64)) {
    storage.emplace_back(size_t(shape.rows * shape.cols), 1.0f);
    buffers.push_back({storage.back().data(), shape.rows, shape.cols});
  }
  emulator::Device device;
  if (Status status = (*program)->runSpec(device, buffers); !status)
    fail(status.error().message);
  return std::move(*program);
}

std::unique_ptr<emulator::EmulatedProgram> staticProgram;
std::unique_ptr<emulator::EmulatedProgram> atexitProgram;

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    fail("usage: lowbit-emulator-teardown-probe static|atexit|twice");
  std::string mode = argv[1];
  if (mode == "static") {
    staticProgram = compileAndRun();
  } else if (mode == "atexit") {
    atexitProgram = compileAndRun();
    std::atexit([] { atexitProgram.reset(); });
  } else if (mode == "twice") {
    for (int round = 0; round < 2; ++round)
      compileAndRun();
  } else {
    fail("unknown mode " + mode);
  }
  std::printf("emulator-teardown-probe %s: ran\n", mode.c_str());
  return 0;
}

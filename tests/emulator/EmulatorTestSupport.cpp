//===- EmulatorTestSupport.cpp - Helpers of the GPU emulator tests --------===//

#include "tests/emulator/EmulatorTestSupport.h"

#include <catch2/catch.hpp>

namespace lowbit::testing {

Target targetNamed(const char *name) {
  std::string error;
  std::optional<Target> target = parseTarget(name, &error);
  INFO(name << ": " << error);
  REQUIRE(target);
  return *target;
}

KernelRunner emulatorRunner(const emulator::EmulatedProgram &program,
                            emulator::Device &device) {
  return [&program, &device](const KernelSpec &spec,
                             std::vector<compiler::HostBuffer> &buffers) {
    std::vector<emulator::ShapedBuffer> shaped;
    for (const compiler::HostBuffer &buffer : buffers)
      shaped.push_back({buffer.data, buffer.rows, buffer.cols});
    (void)spec; // the program was compiled from it
    Status status = program.runSpec(device, shaped);
    return status ? std::string() : status.error().message;
  };
}

std::string runI32Kernel(const char *moduleText, const char *targetName,
                         std::vector<I32Buffer> buffers,
                         const emulator::ModuleMutation &mutate) {
  auto program = emulator::EmulatedProgram::compileText(
      moduleText, targetNamed(targetName), mutate);
  if (!program)
    return "compile: " + program.error().message;
  std::vector<emulator::EmulatorBuffer> described;
  for (size_t i = 0; i < buffers.size(); ++i)
    described.push_back({buffers[i].values->data(), 1,
                         int64_t(buffers[i].values->size()), 4,
                         buffers[i].writable, "buffer " + std::to_string(i)});
  emulator::Device device;
  Status status = (*program)->run(device, described);
  return status ? std::string() : status.error().message;
}

} // namespace lowbit::testing

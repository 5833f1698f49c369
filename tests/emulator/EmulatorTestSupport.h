//===- EmulatorTestSupport.h - Helpers of the GPU emulator tests -*- C++
//-*-===//

#ifndef LOWBIT_TESTS_EMULATOR_EMULATORTESTSUPPORT_H
#define LOWBIT_TESTS_EMULATOR_EMULATORTESTSUPPORT_H

#include "runtime/emulator/EmulatedProgram.h"
#include "target/Target.h"
#include "tests/compiler/BackendCheck.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lowbit::testing {

/// The target of that name (a test failure if it does not parse).
Target targetNamed(const char *name);

/// Runs a spec's kernels in the emulator (for checkQuantize/Dequantize).
KernelRunner emulatorRunner(const emulator::EmulatedProgram &program,
                            emulator::Device &device);

/// One i32 buffer of a hand-written kernel (1 x size) and whether the
/// kernel may write it.
struct I32Buffer {
  std::vector<int32_t> *values;
  bool writable;
};

/// Compiles `moduleText` (tests/emulator/HandWrittenKernels.h) for
/// `targetName` through lowerToNvvm, runs its plan over `buffers`; "" or the
/// compile or run error. `mutate` may break the module first.
std::string runI32Kernel(const char *moduleText, const char *targetName,
                         std::vector<I32Buffer> buffers,
                         const emulator::ModuleMutation &mutate = {});

} // namespace lowbit::testing

#endif // LOWBIT_TESTS_EMULATOR_EMULATORTESTSUPPORT_H

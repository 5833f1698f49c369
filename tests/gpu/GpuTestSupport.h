//===- GpuTestSupport.h - Helpers for the GPU-tail tests --------*- C++ -*-===//

#ifndef LOWBIT_TESTS_GPU_GPUTESTSUPPORT_H
#define LOWBIT_TESTS_GPU_GPUTESTSUPPORT_H

#include <string>

namespace lowbit::test {

/// A loops-level function `@<name>` that encodes (or decodes) a memref
/// element-wise inside one scf.parallel, the shape lowbit-to-loops emits.
std::string encodeFunction(const std::string &name,
                           const std::string &formatName, bool saturate,
                           const std::string &rounding);
std::string decodeFunction(const std::string &name,
                           const std::string &formatName);

/// Lowers `moduleText` to PTX for `targetText` in process. Returns true and
/// the PTX, or false and the error.
bool compileToPtx(const std::string &moduleText, const std::string &targetText,
                  std::string &ptxOrError);

/// Path of ptxas, or empty when the CUDA toolkit is absent.
std::string ptxasPath();
/// Runs `ptxas -arch=<arch>` on `ptx`; returns true when it assembles, else
/// false and ptxas' output in `log`.
bool ptxAssembles(const std::string &ptx, const std::string &arch,
                  std::string &log);

} // namespace lowbit::test

#endif // LOWBIT_TESTS_GPU_GPUTESTSUPPORT_H

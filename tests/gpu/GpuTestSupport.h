//===- GpuTestSupport.h - Helpers for the GPU-tail tests --------*- C++ -*-===//

#ifndef LOWBIT_TESTS_GPU_GPUTESTSUPPORT_H
#define LOWBIT_TESTS_GPU_GPUTESTSUPPORT_H

#include "lowering/GpuTail.h"
#include "runtime/spec/KernelSpec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lowbit::test {

/// A loops-level function `@<name>` that encodes (or decodes) a memref
/// element-wise inside one scf.parallel, the shape lowbit-to-loops emits.
std::string encodeFunction(const std::string &name,
                           const std::string &formatName, bool saturate,
                           const std::string &rounding);
std::string decodeFunction(const std::string &name,
                           const std::string &formatName);

/// `moduleText` parsed into `context`, or null and "parse failed: " with
/// the parser's diagnostics in `error`.
mlir::OwningOpRef<mlir::ModuleOp> parseTestModule(mlir::MLIRContext &context,
                                                  const std::string &moduleText,
                                                  std::string &error);

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

/// `spec`'s kernel module after runtime/compiler's buildKernelModule and
/// lowerForGpu (the loops level the GPU tail takes), or null and the error.
mlir::OwningOpRef<mlir::ModuleOp> gpuLoopsModule(mlir::MLIRContext &context,
                                                 const KernelSpec &spec,
                                                 std::string &error);

/// One arch's result of ptxForArchs.
struct ArchPtx {
  const char *arch;
  std::optional<PtxModule> ptx; ///< empty: the tail refused; `error` says why
  std::string error;
};
/// Lowers `loops` (cloned for each arch, so it stays reusable) to PTX for
/// each of `archs` with the default options.
std::vector<ArchPtx> ptxForArchs(mlir::ModuleOp loops,
                                 std::span<const char *const> archs);

/// ptxAssembles as a Catch2 check: fails the test with ptxas' log when
/// `ptx` does not assemble for `arch`; returns whether it did.
bool checkAssembles(const std::string &ptx, const std::string &arch);

} // namespace lowbit::test

#endif // LOWBIT_TESTS_GPU_GPUTESTSUPPORT_H

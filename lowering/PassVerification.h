//===- PassVerification.h - Verify after every pass, or not -----*- C++ -*-===//
//
// MLIR's PassManager verifies the whole module after every pass. For a
// one-kernel module that is ~3 ms of a ~10 ms spec -> PTX compile, and it
// only catches bugs in lowbit's own passes, which the tests exist to find.
// So release builds (NDEBUG) skip it, and debug builds and the tests keep
// it: LOWBIT_VERIFY_PASSES=1 (tools/run-tests and lit set it) or
// setVerifyAfterEachPass(true) turn it on, LOWBIT_VERIFY_PASSES=0 off. The
// kernel module is still verified once when it is built
// (compiler::buildKernelModule) and once before the GPU tail hands it to
// LLVM (lowerToNvvm), so malformed IR never reaches a translation that
// could abort the process.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_LOWERING_PASSVERIFICATION_H
#define LOWBIT_LOWERING_PASSVERIFICATION_H

#include <optional>

namespace mlir {
class PassManager;
} // namespace mlir

namespace lowbit {

/// Whether the compiler's PassManagers verify after every pass: the
/// override of setVerifyAfterEachPass, else LOWBIT_VERIFY_PASSES (read
/// once), else on in debug builds and off in release builds.
bool verifyAfterEachPass();

/// Overrides the default for the whole process; std::nullopt restores it.
void setVerifyAfterEachPass(std::optional<bool> enabled);

/// Applies verifyAfterEachPass() to `pm`. Every PassManager the compiler
/// runs goes through this.
void configureVerifier(mlir::PassManager &pm);

} // namespace lowbit

#endif // LOWBIT_LOWERING_PASSVERIFICATION_H

//===- PipelineTest.cpp - The compiler's context pool and verifier switch -===//
//
// docs/pipeline.md: compiles borrow long-lived contexts from a pool (reused,
// one thread each, retired after kContextUses), and the PassManagers verify
// after every pass only when asked (debug builds, LOWBIT_VERIFY_PASSES=1,
// setVerifyAfterEachPass).
//
//===----------------------------------------------------------------------===//

#include "lowering/PassVerification.h"
#include "runtime/compiler/Compiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

using namespace lowbit;

TEST_CASE("a returned context is reused by the next compile",
          "[pipeline][pool]") {
  mlir::MLIRContext *first = nullptr;
  {
    compiler::ContextLease lease = compiler::borrowContext();
    // One that retires now (earlier tests in this process used it up) is
    // not returned; the next lease's context is.
    if (lease.useCount() < compiler::ContextLease::kContextUses)
      first = lease.get();
  }
  if (!first) {
    compiler::ContextLease lease = compiler::borrowContext();
    first = lease.get();
  }
  compiler::ContextLease again = compiler::borrowContext();
  CHECK(again.get() == first);
  // While one lease is out, another borrower gets a different context.
  compiler::ContextLease other = compiler::borrowContext();
  CHECK(other.get() != again.get());
}

TEST_CASE("a context is retired after kContextUses leases",
          "[pipeline][pool]") {
  // Drain the pool to one context, then lease it until it must retire.
  std::set<mlir::MLIRContext *> seen;
  mlir::MLIRContext *current = nullptr;
  unsigned sameInARow = 0;
  for (unsigned i = 0; i < 3 * compiler::ContextLease::kContextUses; ++i) {
    compiler::ContextLease lease = compiler::borrowContext();
    sameInARow = lease.get() == current ? sameInARow + 1 : 1;
    current = lease.get();
    seen.insert(current);
    CHECK(sameInARow <= compiler::ContextLease::kContextUses);
  }
  CHECK(seen.size() >= 2);
}

TEST_CASE("concurrent compiles each get their own context and all succeed",
          "[pipeline][pool]") {
  constexpr int kThreads = 4, kRounds = 3;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  const char *specs[] = {"quantize mxfp4", "dequantize nvfp4",
                         "quantize fp8_e4m3 scale=static", "quantize int8"};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        std::string error;
        auto spec = parseKernelSpec(specs[(t + round) % 4], &error);
        auto ptx =
            compiler::compileToPtx(*spec, *parseTarget("sm_90a", nullptr));
        if (!ptx) {
          llvm::consumeError(ptx.takeError());
          ++failures;
        } else if (ptx->ptx.find(".entry") == std::string::npos) {
          ++failures;
        }
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  CHECK(failures == 0);
}

namespace {

/// Leaves the function without its terminator: IR that does not verify.
struct BreakIrPass
    : public mlir::PassWrapper<BreakIrPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BreakIrPass)
  void runOnOperation() override {
    getOperation()->walk([](mlir::func::ReturnOp ret) { ret->erase(); });
  }
};

/// Runs BreakIrPass through a PassManager configured by configureVerifier.
bool brokenIrIsCaught() {
  compiler::ContextLease context = compiler::borrowContext();
  context->loadDialect<mlir::func::FuncDialect>();
  mlir::OpBuilder b(context.get());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  auto function = mlir::func::FuncOp::create(b, b.getUnknownLoc(), "f",
                                             b.getFunctionType({}, {}));
  b.setInsertionPointToStart(function.addEntryBlock());
  mlir::func::ReturnOp::create(b, b.getUnknownLoc());
  mlir::ScopedDiagnosticHandler quiet(
      context.get(), [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::PassManager pm(context.get());
  configureVerifier(pm);
  pm.addPass(std::make_unique<BreakIrPass>());
  return mlir::failed(pm.run(*module));
}

} // namespace

TEST_CASE("the verifier runs after every pass only when asked",
          "[pipeline][verifier]") {
  setVerifyAfterEachPass(true);
  CHECK(verifyAfterEachPass());
  CHECK(brokenIrIsCaught());
  setVerifyAfterEachPass(false);
  CHECK_FALSE(verifyAfterEachPass());
  CHECK_FALSE(brokenIrIsCaught());
  setVerifyAfterEachPass(std::nullopt);
}

TEST_CASE("without the per-pass verifier the GPU tail still verifies once",
          "[pipeline][verifier]") {
  // A kernel compiles the same way with the verifier off (release) and on
  // (tests): the switch changes checking, never the output.
  std::string error;
  auto spec = parseKernelSpec("quantize mxfp4", &error);
  setVerifyAfterEachPass(false);
  auto unchecked =
      compiler::compileToPtx(*spec, *parseTarget("sm_90a", nullptr));
  setVerifyAfterEachPass(true);
  auto checked = compiler::compileToPtx(*spec, *parseTarget("sm_90a", nullptr));
  setVerifyAfterEachPass(std::nullopt);
  if (!unchecked)
    FAIL(llvm::toString(unchecked.takeError()));
  if (!checked)
    FAIL(llvm::toString(checked.takeError()));
  CHECK(unchecked->ptx == checked->ptx);
}

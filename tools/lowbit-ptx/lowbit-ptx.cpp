//===- lowbit-ptx.cpp - Run the GPU tail on a loops-level module ----------===//
//
// A test driver for lowering/GpuTail: reads a loops-level .mlir file (the
// output of lowbit-to-loops, or a hand-written one), lowers it to PTX for
// --target and prints the PTX. Errors go to stderr with exit code 1.
//
//   lowbit-ptx --target=sm_90a input.mlir
//   lowbit-ptx --target=sm_89+ptx81 --list-native
//
//===----------------------------------------------------------------------===//

#include "lowering/GpuTail.h"
#include "lowering/Passes.h"
#include "target/NativeConversionTable.h"
#include "target/Target.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"));
static cl::opt<std::string> targetText("target",
                                       cl::desc("sm_90a, sm_89+ptx81, ..."),
                                       cl::init("sm_90a"));
static cl::opt<bool>
    listNative("list-native",
               cl::desc("print the target's native conversions and exit"));
static cl::opt<bool> printKernels("print-kernels",
                                  cl::desc("print kernel names to stderr"));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "lowbit GPU tail driver\n");

  std::string error;
  std::optional<lowbit::Target> target =
      lowbit::parseTarget(targetText, &error);
  if (!target || !lowbit::validateTarget(*target, &error)) {
    llvm::errs() << "lowbit-ptx: " << error << "\n";
    return 1;
  }
  if (listNative) {
    llvm::outs() << target->str() << "\n";
    for (const std::string &line : lowbit::describeNativeConversions(*target))
      llvm::outs() << "  " << line << "\n";
    return 0;
  }

  mlir::DialectRegistry registry;
  lowbit::registerGpuTailDependencies(registry);
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  auto file = mlir::openInputFile(inputFile, &error);
  if (!file) {
    llvm::errs() << "lowbit-ptx: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  mlir::FailureOr<lowbit::PtxModule> ptx =
      lowbit::lowerToPtx(*module, *target, error);
  if (mlir::failed(ptx)) {
    llvm::errs() << "lowbit-ptx: " << error << "\n";
    return 1;
  }
  if (printKernels)
    for (const std::string &name : ptx->kernelNames)
      llvm::errs() << "kernel: " << name << "\n";
  llvm::outs() << ptx->ptx;
  return 0;
}

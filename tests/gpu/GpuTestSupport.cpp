//===- GpuTestSupport.cpp - Helpers for the GPU-tail tests ----------------===//

#include "GpuTestSupport.h"
#include "CpuJit.h"

#include "format/Format.h"
#include "lowering/GpuTail.h"
#include "runtime/compiler/Compiler.h"
#include "target/Target.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace lowbit::test {

namespace {

std::string codeType(const std::string &formatName) {
  std::optional<Format> format = lookupFormat(formatName);
  return format && format->bits() > 8 ? "i16" : "i8";
}

std::string elementwise(const std::string &name, const std::string &inType,
                        const std::string &outType, const std::string &op) {
  return "func.func @" + name + "(%in: memref<?x" + inType +
         ">, %out: memref<?x" + outType +
         ">) {\n"
         "  %c0 = arith.constant 0 : index\n"
         "  %c1 = arith.constant 1 : index\n"
         "  %n = memref.dim %in, %c0 : memref<?x" +
         inType +
         ">\n"
         "  scf.parallel (%i) = (%c0) to (%n) step (%c1) {\n"
         "    %x = memref.load %in[%i] : memref<?x" +
         inType + ">\n    %c = " + op +
         "\n"
         "    memref.store %c, %out[%i] : memref<?x" +
         outType +
         ">\n"
         "    scf.reduce\n"
         "  }\n"
         "  return\n"
         "}\n";
}

} // namespace

std::string encodeFunction(const std::string &name,
                           const std::string &formatName, bool saturate,
                           const std::string &rounding) {
  std::string code = codeType(formatName);
  return elementwise(
      name, "f32", code,
      "lowbit.encode %x {format = " + formatAttrText(formatName) +
          ", saturate = " + (saturate ? "true" : "false") + ", rounding = \"" +
          rounding + "\"} : f32 to " + code);
}

std::string decodeFunction(const std::string &name,
                           const std::string &formatName) {
  std::string code = codeType(formatName);
  return elementwise(
      name, code, "f32",
      "lowbit.decode %x {format = " + formatAttrText(formatName) +
          "} : " + code + " to f32");
}

mlir::OwningOpRef<mlir::ModuleOp> parseTestModule(mlir::MLIRContext &context,
                                                  const std::string &moduleText,
                                                  std::string &error) {
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    llvm::raw_string_ostream(diagnostics) << diag << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(moduleText, &context);
  if (!module)
    error = "parse failed: " + diagnostics;
  return module;
}

bool compileToPtx(const std::string &moduleText, const std::string &targetText,
                  std::string &ptxOrError) {
  std::optional<Target> target = parseTarget(targetText, &ptxOrError);
  if (!target)
    return false;
  mlir::DialectRegistry registry;
  registerGpuTailDependencies(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      parseTestModule(context, moduleText, ptxOrError);
  if (!module)
    return false;
  std::string error;
  mlir::FailureOr<PtxModule> ptx = lowerToPtx(*module, *target, error);
  if (mlir::failed(ptx)) {
    ptxOrError = error;
    return false;
  }
  ptxOrError = ptx->ptx;
  return true;
}

std::string ptxasPath() {
  const char *cudaHome = std::getenv("CUDA_HOME");
  std::string path =
      std::string(cudaHome ? cudaHome : "/usr/local/cuda") + "/bin/ptxas";
  return access(path.c_str(), X_OK) == 0 ? path : std::string();
}

bool ptxAssembles(const std::string &ptx, const std::string &arch,
                  std::string &log) {
  char ptxPath[] = "/tmp/lowbit-gpu-test-XXXXXX";
  int fd = mkstemp(ptxPath);
  if (fd < 0) {
    log = "cannot create a temp file";
    return false;
  }
  close(fd);
  std::ofstream(ptxPath) << ptx;
  std::string logPath = std::string(ptxPath) + ".log";
  std::string command = ptxasPath() + " -arch=" + arch + " " + ptxPath +
                        " -o /dev/null > " + logPath + " 2>&1";
  int status = std::system(command.c_str());
  std::ifstream logFile(logPath);
  std::stringstream logText;
  logText << logFile.rdbuf();
  log = logText.str();
  std::remove(ptxPath);
  std::remove(logPath.c_str());
  return status == 0;
}

mlir::OwningOpRef<mlir::ModuleOp> gpuLoopsModule(mlir::MLIRContext &context,
                                                 const KernelSpec &spec,
                                                 std::string &error) {
  auto module = compiler::buildKernelModule(context, spec);
  if (!module) {
    error = "buildKernelModule: " + llvm::toString(module.takeError());
    return {};
  }
  if (llvm::Error lowered = compiler::lowerForGpu(**module)) {
    error = "lowerForGpu: " + llvm::toString(std::move(lowered));
    return {};
  }
  return std::move(*module);
}

std::vector<ArchPtx> ptxForArchs(mlir::ModuleOp loops,
                                 std::span<const char *const> archs) {
  std::vector<ArchPtx> results;
  for (const char *arch : archs) {
    ArchPtx result{arch, std::nullopt, ""};
    std::optional<Target> target = parseTarget(arch, &result.error);
    if (target) {
      mlir::OwningOpRef<mlir::ModuleOp> copy(loops.clone());
      mlir::FailureOr<PtxModule> ptx = lowerToPtx(*copy, *target, result.error);
      if (mlir::succeeded(ptx))
        result.ptx = std::move(*ptx);
    }
    results.push_back(std::move(result));
  }
  return results;
}

bool checkAssembles(const std::string &ptx, const std::string &arch) {
  std::string log;
  bool assembles = ptxAssembles(ptx, arch, log);
  INFO(arch << ": " << log);
  CHECK(assembles);
  return assembles;
}

} // namespace lowbit::test

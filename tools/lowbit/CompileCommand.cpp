//===- CompileCommand.cpp - `lowbit compile`: a spec's kernel at a stage --===//
//
// Runs the compiler's stages one by one (rather than compiler::emit or
// compileToPtx; PTX through the one GPU compile, compileModuleForGpu,
// observing its stages) so that LOWBIT_DUMP_DIR can receive every stage the
// compile went through, as Triton's TRITON_DUMP_DIR does; a compile that
// fails at a later stage still leaves the earlier ones there to look at.
//
// The target is validated before any code generation: LLVM aborts the
// process on a PTX version too old for the chip, and this tool must not.
//
//===----------------------------------------------------------------------===//

#include "lowbit/Jit.h"
#include "lowering/CpuTail.h"
#include "lowering/GpuTail.h"
#include "runtime/cache/Hash.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/compiler/MatmulCompiler.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Commands.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace lowbit::cli {

namespace {

constexpr std::string_view kUsageText =
    "usage: lowbit compile SPEC [--target TARGET] [--emit "
    "mlir|loops|llvm|ptx]\n\n"
    "Prints the kernel SPEC describes at one stage of the compiler: the\n"
    "lowbit dialect (mlir), scf loops after lowbit-to-loops (loops), LLVM IR\n"
    "for the host CPU (llvm, --target cpu only) or PTX (ptx, NVIDIA targets\n"
    "only). SPEC is the one-line kernel spec, e.g.\n"
    "  \"quantize mxfp4 from=bf16 scale=dynamic\"\n"
    "or a matmul spec, \"matmul int4_g128 from=bf16\" (docs/matmul.md).\n"
    "TARGET is one of:\n"
    "{}\n"
    "A chip may name its PTX version: sm_89+ptx81. Defaults: --target cpu,\n"
    "--emit llvm for the CPU and ptx for NVIDIA targets.\n\n"
    "LOWBIT_DUMP_DIR=DIR also writes every stage the compile went through to\n"
    "DIR/<kernel>.<stage>.mlir|.ll|.ptx.\n";

/// The usage text, its target list read from the chip table
/// (lowering/Target.cpp), so that a new chip is listed without an edit here.
std::string compileUsage() {
  std::vector<std::string_view> names = {"cpu"};
  for (const ChipInfo &chip : knownChips())
    names.push_back(chip.name);
  std::string targets, line = " ";
  for (size_t index = 0; index < names.size(); ++index) {
    std::string word =
        " " + std::string(names[index]) + (index + 1 < names.size() ? "," : "");
    if (line.size() + word.size() > 76) {
      targets += line + "\n";
      line = " ";
    }
    line += word;
  }
  return fmt::format(kUsageText, targets + line);
}

enum class EmitStage { Mlir, Loops, Llvm, Ptx };

std::optional<EmitStage> parseEmitStage(std::string_view name) {
  if (name == "mlir")
    return EmitStage::Mlir;
  if (name == "loops")
    return EmitStage::Loops;
  if (name == "llvm")
    return EmitStage::Llvm;
  if (name == "ptx")
    return EmitStage::Ptx;
  return std::nullopt;
}

std::string_view emitStageName(EmitStage stage) {
  switch (stage) {
  case EmitStage::Mlir:
    return "mlir";
  case EmitStage::Loops:
    return "loops";
  case EmitStage::Llvm:
    return "llvm";
  case EmitStage::Ptx:
    return "ptx";
  }
  return "?";
}

/// The dump files' common name: readable op, scheme and target, then a
/// hash of the canonical spec and target so that two custom schemes (or
/// two sizes of one) never overwrite each other's files.
std::string dumpBaseName(const KernelSpec &spec, const Target &target) {
  std::string canonical = printKernelSpec(spec) + "|" + target.str();
  std::string name = fmt::format(
      "{}_{}_{}", spec.op == KernelOp::Quantize ? "quantize" : "dequantize",
      spec.scheme.name.empty() ? "custom" : spec.scheme.name,
      target.isCpu() ? "cpu" : target.chip);
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  uint64_t hash = runtime::xxh64(canonical.data(), canonical.size(), 0);
  return name + "_" + runtime::toHex64(hash).substr(0, 8);
}

/// Collects the stages' text and writes each to LOWBIT_DUMP_DIR if set.
class StageDumper {
public:
  StageDumper(const char *directory, std::string baseName)
      : directory(directory ? directory : ""), baseName(std::move(baseName)) {}

  bool record(std::string_view stage, std::string_view extension,
              const std::string &text, std::string *error) {
    if (directory.empty())
      return true;
    std::error_code code;
    std::filesystem::create_directories(directory, code);
    if (code) {
      *error = fmt::format("LOWBIT_DUMP_DIR: cannot create '{}': {}", directory,
                           code.message());
      return false;
    }
    std::string path = (std::filesystem::path(directory) /
                        fmt::format("{}.{}.{}", baseName, stage, extension))
                           .string();
    std::string reason;
    if (!runtime::writeFileAtomically(path, text, &reason)) {
      *error = "LOWBIT_DUMP_DIR: " + reason;
      return false;
    }
    return true;
  }

private:
  std::string directory, baseName;
};

std::string printModule(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  module.print(stream);
  return text;
}

/// Runs the stages up to `last`; returns the text of `last`.
std::optional<std::string> compileStages(const KernelSpec &spec,
                                         const Target &target, EmitStage last,
                                         StageDumper &dumper,
                                         std::string *error) {
  std::unique_ptr<mlir::MLIRContext> context = compiler::makeContext();
  // Whatever a pass reports goes into the error, not onto stderr beside it.
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(
      context.get(), [&](mlir::Diagnostic &diagnostic) {
        diagnostics += (diagnostics.empty() ? "" : "\n") + diagnostic.str();
        return mlir::success();
      });
  auto module = compiler::buildKernelModule(*context, spec);
  if (!module) {
    *error = llvm::toString(module.takeError());
    return std::nullopt;
  }
  std::string text = printModule(**module);
  if (!dumper.record("mlir", "mlir", text, error))
    return std::nullopt;
  if (last == EmitStage::Mlir)
    return text;

  // PTX is the one GPU compile (compiler::compileModuleForGpu: the GPU
  // mapping, lowbit-to-gpu then loops for the rest, and the GPU tail); the
  // loops stage itself stays target independent.
  if (target.isNvidia() && last == EmitStage::Ptx) {
    bool lowered = false, dumpFailed = false;
    compiler::GpuCompileOptions options;
    options.last = compiler::GpuStage::Ptx;
    options.observe = [&](compiler::GpuStage stage,
                          mlir::ModuleOp module) -> llvm::Error {
      if (stage != compiler::GpuStage::Loops)
        return llvm::Error::success();
      lowered = true;
      std::string dumpError;
      if (dumper.record("loops", "mlir", printModule(module), &dumpError))
        return llvm::Error::success();
      dumpFailed = true;
      return llvm::createStringError(dumpError);
    };
    llvm::Expected<compiler::GpuCompilation> compiled =
        compiler::compileModuleForGpu(**module, compiler::lowerForGpu, target,
                                      options);
    if (!compiled) {
      std::string reason = llvm::toString(compiled.takeError());
      // The GPU tail's refusals name the target; the lowering's and the
      // dump's errors stand alone.
      *error = lowered && !dumpFailed ? fmt::format("cannot compile for {}: {}",
                                                    target.chip, reason)
                                      : reason;
      return std::nullopt;
    }
    if (!dumper.record("ptx", "ptx", compiled->ptx, error))
      return std::nullopt;
    return std::move(compiled->ptx);
  }

  if (llvm::Error lowerError = compiler::lowerToLoops(**module)) {
    *error = llvm::toString(std::move(lowerError));
    return std::nullopt;
  }
  text = printModule(**module);
  if (!dumper.record("loops", "mlir", text, error))
    return std::nullopt;
  if (last == EmitStage::Loops)
    return text;

  if (llvm::Error lowerError = lowerLoopsToLlvm(**module)) {
    *error = llvm::toString(std::move(lowerError));
    return std::nullopt;
  }
  auto llvmIr = translateToLlvmIr(**module);
  if (!llvmIr) {
    *error = llvm::toString(llvmIr.takeError());
    return std::nullopt;
  }
  if (!dumper.record("llvm", "ll", *llvmIr, error))
    return std::nullopt;
  return std::move(*llvmIr);
}

/// `lowbit compile 'matmul ...'`: the matmul's module (compiler::
/// buildMatmulModule) at `last`. PTX comes from the one GPU compile
/// (compileMatmulToPtx), through lowbit::Jit and its cache (getKv) unless
/// the stages are dumped.
std::optional<std::string>
compileMatmulStages(const matmul::MatmulSpec &spec, const Target &target,
                    EmitStage last, bool throughCache, std::string *error) {
  std::string canonical = matmul::printMatmulSpec(spec);
  uint64_t hash = runtime::xxh64(canonical.data(), canonical.size(), 0);
  StageDumper dumper(std::getenv("LOWBIT_DUMP_DIR"),
                     fmt::format("matmul_{}_{}",
                                 target.isCpu() ? "cpu" : target.chip,
                                 runtime::toHex64(hash).substr(0, 8)));
  auto fromError = [&](llvm::Error failure) -> std::optional<std::string> {
    *error = llvm::toString(std::move(failure));
    return std::nullopt;
  };
  if (last == EmitStage::Ptx) {
    if (throughCache) {
      JitOptions jitOptions;
      jitOptions.deferCubin = true;
      Expected<std::unique_ptr<Jit>> jit = Jit::create(jitOptions);
      if (!jit) {
        *error = jit.error().message;
        return std::nullopt;
      }
      Expected<KvKernel> kernel = (*jit)->getKv(canonical, target);
      if (!kernel) {
        *error = kernel.error().message;
        return std::nullopt;
      }
      return std::string(kernel->ptx());
    }
    llvm::Expected<compiler::GpuCompilation> compiled =
        compiler::compileMatmulToPtx(spec, target);
    if (!compiled)
      return fromError(compiled.takeError());
    if (!dumper.record("ptx", "ptx", compiled->ptx, error))
      return std::nullopt;
    return std::move(compiled->ptx);
  }
  if (last == EmitStage::Loops) {
    llvm::Expected<std::string> text = compiler::matmulLoopsText(spec);
    if (!text)
      return fromError(text.takeError());
    if (!dumper.record("loops", "mlir", *text, error))
      return std::nullopt;
    return std::move(*text);
  }
  std::unique_ptr<mlir::MLIRContext> context = compiler::makeContext();
  auto module = compiler::buildMatmulModule(*context, spec);
  if (!module)
    return fromError(module.takeError());
  std::string text = printModule(**module);
  if (!dumper.record("mlir", "mlir", text, error))
    return std::nullopt;
  if (last == EmitStage::Mlir)
    return text;
  if (llvm::Error lowerError = compiler::lowerMatmulToLoops(**module))
    return fromError(std::move(lowerError));
  if (llvm::Error lowerError = lowerLoopsToLlvm(**module))
    return fromError(std::move(lowerError));
  auto llvmIr = translateToLlvmIr(**module);
  if (!llvmIr)
    return fromError(llvmIr.takeError());
  if (!dumper.record("llvm", "ll", *llvmIr, error))
    return std::nullopt;
  return std::move(*llvmIr);
}

/// Prints `text` as the command's output, ending in one newline.
void printEndingLine(std::string_view text) {
  fmt::print("{}", text);
  if (!text.empty() && text.back() != '\n')
    fmt::print("\n");
}

} // namespace

CommandResult runCompile(Arguments args) {
  std::string error;
  CommandResult done;
  auto parsed = parseCommandLineOrHelp("compile", args, kCompileOptions,
                                       compileUsage(), &done);
  if (!parsed)
    return done;
  if (parsed->operands.size() != 1)
    return fail(parsed->operands.empty()
                    ? "'compile' needs a kernel spec, e.g. "
                      "\"quantize mxfp4 from=f32\""
                    : fmt::format("'compile' takes one kernel spec; quote "
                                  "it as one argument (got '{}' after it)",
                                  parsed->operands[1]));

  std::optional<KernelSpec> spec;
  std::optional<matmul::MatmulSpec> matmulSpec;
  std::string_view specText = parsed->operands.front();
  if (specText.starts_with("matmul")) {
    matmulSpec = matmul::parseMatmulSpec(specText, &error);
    if (!matmulSpec)
      return fail(fmt::format("bad matmul spec: {}", error));
  } else {
    spec = parseKernelSpec(specText, &error);
    if (!spec)
      return fail(fmt::format("bad kernel spec: {}", error));
    if (!validateKernelSpec(*spec, &error))
      return fail(fmt::format("bad kernel spec: {}", error));
  }

  const std::string *targetText = parsed->value("target");
  std::optional<Target> target =
      parseTarget(targetText ? *targetText : "cpu", &error);
  if (!target)
    return fail(fmt::format("--target: {}", error));
  if (!validateTarget(*target, &error))
    return fail(fmt::format("--target: {}", error));

  EmitStage stage = target->isCpu() ? EmitStage::Llvm : EmitStage::Ptx;
  if (const std::string *emit = parsed->value("emit")) {
    std::optional<EmitStage> requested = parseEmitStage(*emit);
    if (!requested)
      return fail(fmt::format(
          "unknown --emit '{}': expected mlir, loops, llvm or ptx", *emit));
    stage = *requested;
  }
  if (stage == EmitStage::Ptx && target->isCpu())
    return fail("--emit ptx needs an NVIDIA --target (sm_80, sm_89, sm_90a, "
                "sm_100a, sm_120a)");
  if (stage == EmitStage::Llvm && target->isNvidia())
    return fail(fmt::format("--emit llvm is the CPU tail's LLVM IR; for {} "
                            "use --emit ptx (or mlir, loops)",
                            target->chip));

  // LOWBIT_CACHE is checked whatever the stage, so a typo is an error here
  // as everywhere. Only PTX is cached; under must-hit every other stage
  // (and a PTX compile that dumps its stages) would compile, so it is
  // refused like a miss.
  Expected<runtime::CacheOptions> cacheOptions =
      runtime::CacheOptions::fromEnvironment();
  if (!cacheOptions)
    return fail(cacheOptions.error().message);
  bool throughCache =
      stage == EmitStage::Ptx && !std::getenv("LOWBIT_DUMP_DIR");
  if (!throughCache && cacheOptions->mode == runtime::CacheMode::MustHit)
    return fail(fmt::format(
        "LOWBIT_CACHE=must-hit: only PTX is served from the cache; --emit {}"
        "{} would compile",
        emitStageName(stage),
        std::getenv("LOWBIT_DUMP_DIR") ? " with LOWBIT_DUMP_DIR" : ""));

  // PTX goes through lowbit::Jit and its cache (LOWBIT_CACHE_DIR,
  // LOWBIT_CACHE), unless every stage is to be dumped. It never needs
  // nvJitLink: a miss caches the PTX with its cubin deferred, which the
  // first Jit that links completes (JitOptions::deferCubin).
  if (matmulSpec) {
    std::optional<std::string> text =
        compileMatmulStages(*matmulSpec, *target, stage, throughCache, &error);
    if (!text)
      return fail(error);
    printEndingLine(*text);
    return std::nullopt;
  }

  if (throughCache) {
    JitOptions jitOptions;
    jitOptions.deferCubin = true;
    Expected<std::unique_ptr<Jit>> jit = Jit::create(jitOptions);
    if (!jit)
      return fail(jit.error().message);
    Expected<Kernel> kernel = (*jit)->get(*spec, *target);
    if (!kernel)
      return fail(kernel.error().message);
    printEndingLine(kernel->ptx());
    return std::nullopt;
  }

  StageDumper dumper(std::getenv("LOWBIT_DUMP_DIR"),
                     dumpBaseName(*spec, *target));
  std::optional<std::string> text =
      compileStages(*spec, *target, stage, dumper, &error);
  if (!text)
    return fail(error);
  printEndingLine(*text);
  return std::nullopt;
}

} // namespace lowbit::cli

//===- CompileLatencyBench.cpp - spec -> PTX and spec -> cubin latency ----===//
//
// What a caller waits for when lowbit compiles a kernel, for every named
// scheme, next to NVRTC (+ nvJitLink) on the same scheme's CUDA C++
// reference kernel (runtime/nvrtc), all in the same run:
//
//   ptx cold    spec -> PTX, the first compile in a fresh process (a child
//               process runs just that compile and reports its time: the
//               context, dialect loading and LLVM's NVPTX setup included;
//               loading the process's libraries is not: that is the
//               whole-process CLI timing's business);
//   ptx warm    the same compile again in a warm process (pooled context);
//   cubin cold  spec -> PTX -> cubin (jit::buildGpuKernel + nvJitLink, what
//               lowbit::Jit does on a cache miss) in a fresh child process:
//               nvJitLink's dlopen and first-use setup included, which
//               buildGpuKernel starts on a background thread;
//   cubin warm  the same in a warm process;
//   nvrtc       the reference kernel by NVRTC to PTX, and NVRTC + nvJitLink
//               to a cubin, warm;
//   old ptx     spec -> PTX as before the pipeline changes (a new context
//               with every dialect loaded, the per-pass verifier, LLVM's
//               whole O3 pipeline on a new TargetMachine): the
//               same-run yardstick of what the changes save.
// --warmed: the cold columns are the first compile in a fresh process
// after what JitOptions::warmUpCompiler runs on its thread at Jit::create
// (untimed, finished): what an engine's first miss costs when it created
// its Jit a moment earlier.
// Every number is a median of `runs` (>= 7 by default); cold numbers are
// medians over `runs` child processes. Ratios are against the peer in the
// same run (the machine is shared and noisy).
//
// --levels: spec -> PTX at LLVM O1, O2 and O3 (warm medians) and whether
// each level's PTX is byte-identical to O3's, for every named scheme's
// quantize and dequantize kernels (LLVM's whole pipeline at each level;
// the GPU tail's default is lowbit's pass list with O3's PTX,
// lowering/NvptxCodegen.h).
//
// --phases: spec -> cubin split by phase (context, module, gpu loops, nvvm,
// ptx, plan, link; jit::GpuBuildPhases), cold (child processes) and warm.
// --rusage: the first spec -> PTX of a child process against its second,
// as wall, user and system CPU time and minor page faults (getrusage):
// where a first compile's extra time goes.
// --clock thread: the compiling thread's own CPU time, without the warm-up
// threads' (the measure least disturbed by a loaded machine).
//
// Numbers only: never a test, never pass/fail on timing.
//
// usage: lowbit-bench-latency [--runs N] [--chips sm_90a,sm_100a]
//                             [--ops quantize,dequantize] [--schemes A,B]
//                             [--no-cold] [--warmed]
//                             [--levels] [--phases] [--rusage]
//                             [--clock cpu|wall|thread]
//        lowbit-bench-latency --clock C --child ptx|cubin|rusage CHIP SPEC
//                             (one cold compile, internal)
//
//===----------------------------------------------------------------------===//

#include "format/Scheme.h"
#include "lowering/GpuTail.h"
#include "lowering/PassVerification.h"
#include "runtime/compiler/Compiler.h"
#include "runtime/compiler/GpuCompile.h"
#include "runtime/driver/NvJitLink.h"
#include "runtime/driver/Nvrtc.h"
#include "runtime/jit/CompilerBackend.h"
#include "runtime/jit/LaunchPlan.h"
#include "runtime/nvrtc/ReferenceKernels.h"
#include "runtime/spec/KernelSpec.h"
#include "target/Target.h"

#include "mlir/IR/MLIRContext.h"

#include "BenchTiming.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

using namespace lowbit;
using namespace lowbit::bench;

namespace {

/// --clock cpu (default): the process's CPU time, which a shared, loaded
/// machine disturbs far less than wall time (every compile here is one
/// thread, except nvJitLink's warm-up, whose CPU time is then counted
/// although it runs beside the lowering); --clock wall: elapsed time.
/// --clock thread (for --phases): the compiling thread's own CPU time,
/// without the warm-up threads'.
enum class ClockKind { Cpu, Wall, Thread };
ClockKind clockKind = ClockKind::Cpu;

const char *clockName() {
  switch (clockKind) {
  case ClockKind::Cpu:
    return "cpu";
  case ClockKind::Wall:
    return "wall";
  case ClockKind::Thread:
    return "thread";
  }
  return "cpu";
}

void setClock(const std::string &name) {
  clockKind = name == "wall"     ? ClockKind::Wall
              : name == "thread" ? ClockKind::Thread
                                 : ClockKind::Cpu;
}

double nowMillis() {
  if (clockKind == ClockKind::Wall)
    return std::chrono::duration<double, std::milli>(
               Clock::now().time_since_epoch())
        .count();
  timespec now;
  clock_gettime(clockKind == ClockKind::Thread ? CLOCK_THREAD_CPUTIME_ID
                                               : CLOCK_PROCESS_CPUTIME_ID,
                &now);
  return double(now.tv_sec) * 1e3 + double(now.tv_nsec) * 1e-6;
}

std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    if (end > start)
      parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

/// spec -> PTX, or spec -> PTX -> cubin; returns false with a reason.
bool compileOnce(const KernelSpec &spec, const Target &target, bool cubin,
                 std::string &reason) {
  if (!cubin) {
    auto ptx = compiler::compileToPtx(spec, target);
    if (!ptx) {
      reason = llvm::toString(ptx.takeError());
      return false;
    }
    return true;
  }
  Expected<jit::GpuBuild> build = jit::buildGpuKernel(spec, target);
  if (!build) {
    reason = build.error().message;
    return false;
  }
  Expected<runtime::Cubin> linked = runtime::linkPtx(build->ptx, target.chip);
  if (!linked) {
    reason = linked.error().message;
    return false;
  }
  return true;
}

/// spec -> PTX the way the pipeline ran before docs/pipeline.md's changes,
/// as far as switches reach: a new context with every dialect loaded, the
/// verifier after every pass, O3 (libdevice is not linked either way).
/// The same-run yardstick for the changes.
bool compileOldStyle(const KernelSpec &spec, const Target &target,
                     std::string &reason) {
  std::unique_ptr<mlir::MLIRContext> context = compiler::makeContext();
  context->loadAllAvailableDialects();
  setVerifyAfterEachPass(true);
  auto module = compiler::buildKernelModule(*context, spec);
  bool ok = false;
  if (!module) {
    reason = llvm::toString(module.takeError());
  } else if (llvm::Error error = compiler::lowerForGpu(**module)) {
    reason = llvm::toString(std::move(error));
  } else {
    PtxOptions options;
    options.optLevel = 3;
    ok = mlir::succeeded(lowerToPtx(**module, target, reason, options));
  }
  setVerifyAfterEachPass(std::nullopt);
  return ok;
}

double oldStyleMedian(const KernelSpec &spec, const Target &target, int runs,
                      std::string &reason) {
  std::vector<double> values;
  for (int run = 0; run < runs; ++run) {
    double start = nowMillis();
    if (!compileOldStyle(spec, target, reason))
      return -1;
    values.push_back(nowMillis() - start);
  }
  return median(values);
}

/// `chip` as a validated NVIDIA target, or nullopt with a message.
std::optional<Target> nvidiaTarget(const std::string &chip) {
  std::string error;
  std::optional<Target> target = parseTarget(chip, &error);
  if (!target || !validateTarget(*target, &error) || !target->isNvidia()) {
    std::fprintf(stderr, "bad chip '%s': %s\n", chip.c_str(), error.c_str());
    return std::nullopt;
  }
  return target;
}

/// Whether --schemes (`only`, empty: all) selects `scheme`.
bool selected(const std::vector<std::string> &only, const Scheme &scheme) {
  return only.empty() ||
         std::find(only.begin(), only.end(), scheme.name) != only.end();
}

/// Names of the phases --phases reports: buildGpuKernel's (GpuBuildPhases)
/// and nvJitLink's link.
const std::vector<std::string> &phaseNames() {
  static const std::vector<std::string> names = {
      "context", "module", "gpu loops", "nvvm", "ptx", "plan", "link"};
  return names;
}

/// One spec -> cubin with its phases' wall milliseconds, in phaseNames()
/// order; empty on failure (the reason in `reason`).
std::vector<double> phasesOnce(const KernelSpec &spec, const Target &target,
                               std::string &reason) {
  jit::GpuBuildPhases phases;
  phases.now = nowMillis;
  Expected<jit::GpuBuild> build =
      jit::buildGpuKernel(spec, target, /*startLinker=*/true, &phases);
  if (!build) {
    reason = build.error().message;
    return {};
  }
  double start = nowMillis();
  Expected<runtime::Cubin> linked = runtime::linkPtx(build->ptx, target.chip);
  if (!linked) {
    reason = linked.error().message;
    return {};
  }
  std::vector<double> millis;
  for (auto &[name, took] : phases.millis)
    millis.push_back(took);
  millis.push_back(nowMillis() - start);
  if (millis.size() != phaseNames().size()) {
    reason = "buildGpuKernel reported " + std::to_string(phases.millis.size()) +
             " phases";
    return {};
  }
  return millis;
}

/// The --phases child: the first spec -> cubin of a process, its phases'
/// milliseconds on one line.
int runPhasesChild(const KernelSpec &spec, const Target &target) {
  std::string reason;
  std::vector<double> millis = phasesOnce(spec, target, reason);
  if (millis.empty()) {
    std::fprintf(stderr, "%s\n", reason.substr(0, reason.find('\n')).c_str());
    return 1;
  }
  for (double took : millis)
    std::printf("%.3f ", took);
  std::printf("\n");
  std::fflush(stdout);
  std::_Exit(0);
}

/// What one compile cost the process: wall, user and system CPU
/// milliseconds and minor page faults.
struct CompileCost {
  double wall = 0, user = 0, system = 0, faults = 0;
};

bool measuredCompile(const KernelSpec &spec, const Target &target,
                     CompileCost &cost, std::string &error) {
  auto millis = [](timeval t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  double start = nowMillis();
  if (!compileOnce(spec, target, /*cubin=*/false, error))
    return false;
  cost.wall = nowMillis() - start;
  getrusage(RUSAGE_SELF, &after);
  cost.user = millis(after.ru_utime) - millis(before.ru_utime);
  cost.system = millis(after.ru_stime) - millis(before.ru_stime);
  cost.faults = double(after.ru_minflt - before.ru_minflt);
  return true;
}

/// The --rusage child: the first spec -> PTX of a process and the one
/// right after it, each as wall, user, system and faults on one line.
int runRusageChild(const KernelSpec &spec, const Target &target) {
  std::string error;
  CompileCost first, second;
  if (!measuredCompile(spec, target, first, error) ||
      !measuredCompile(spec, target, second, error)) {
    std::fprintf(stderr, "%s\n", error.substr(0, error.find('\n')).c_str());
    return 1;
  }
  for (const CompileCost &cost : {first, second})
    std::printf("%.3f %.3f %.3f %.0f ", cost.wall, cost.user, cost.system,
                cost.faults);
  std::printf("\n");
  std::fflush(stdout);
  std::_Exit(0);
}

/// The child: one cold compile, its milliseconds on stdout. Modes `ptx`
/// and `cubin`; `ptx+w` and `cubin+w` first run what
/// JitOptions::warmUpCompiler runs on its thread (untimed, and nvJitLink's
/// warm-up waited for): the first compile of a Jit created a moment before.
int runChild(std::string mode, const std::string &chip,
             const std::string &specText) {
  std::string error;
  std::optional<Target> target = parseTarget(chip, &error);
  std::optional<KernelSpec> spec = parseKernelSpec(specText, &error);
  if (!target || !spec) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  if (mode == "phases")
    return runPhasesChild(*spec, *target);
  if (mode == "rusage")
    return runRusageChild(*spec, *target);
  if (mode.ends_with("+w")) {
    mode.resize(mode.size() - 2);
    if (Status warmed = jit::linkedCompilerBackend().warmUp(*target); !warmed) {
      std::fprintf(stderr, "warm-up: %s\n", warmed.error().message.c_str());
      return 1;
    }
    runtime::waitForNvJitLinkWarmup();
  }
  double start = nowMillis();
  if (!compileOnce(*spec, *target, mode == "cubin", error)) {
    std::fprintf(stderr, "%s\n", error.substr(0, error.find('\n')).c_str());
    return 1;
  }
  std::printf("%.3f\n", nowMillis() - start);
  std::fflush(stdout);
  // Skip the teardown: only the compile is measured.
  std::_Exit(0);
}

/// Runs this program as a child; what it printed, or "" on failure.
std::string childOutput(const std::string &mode, const std::string &chip,
                        const std::string &spec) {
  int pipeEnds[2];
  if (pipe(pipeEnds) != 0)
    return "";
  pid_t pid = fork();
  if (pid < 0)
    return "";
  if (pid == 0) {
    dup2(pipeEnds[1], 1);
    close(pipeEnds[0]);
    close(pipeEnds[1]);
    execl("/proc/self/exe", "lowbit-bench-latency", "--clock", clockName(),
          "--child", mode.c_str(), chip.c_str(), spec.c_str(), (char *)nullptr);
    _exit(127);
  }
  close(pipeEnds[1]);
  std::string output;
  char buffer[256];
  ssize_t got;
  while ((got = read(pipeEnds[0], buffer, sizeof buffer)) > 0)
    output.append(buffer, size_t(got));
  close(pipeEnds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "";
  return output;
}

/// Runs this program as a child; its printed milliseconds, or -1.
double childMillis(const std::string &mode, const std::string &chip,
                   const std::string &spec) {
  std::string output = childOutput(mode, chip, spec);
  return output.empty() ? -1 : std::atof(output.c_str());
}

/// Cold compiles, each followed at once by a warm one in this process, so
/// that both halves of a pair see the same load on a shared machine (a
/// warm median taken seconds apart from the cold one can differ by 1.5x
/// on this machine with nothing changed).
struct ColdMeasures {
  double median = -1;    ///< of the `runs` cold child processes
  double pairRatio = -1; ///< median of the pairs' cold / warm
};

ColdMeasures coldAgainstWarm(const std::string &mode, const KernelSpec &spec,
                             const Target &target, const std::string &chip,
                             const std::string &specText, bool cubin, int runs,
                             std::string &reason) {
  std::vector<double> colds, ratios;
  for (int run = 0; run < runs; ++run) {
    double cold = childMillis(mode, chip, specText);
    double start = nowMillis();
    if (cold <= 0 || !compileOnce(spec, target, cubin, reason))
      return {};
    colds.push_back(cold);
    ratios.push_back(cold / (nowMillis() - start));
  }
  return {median(colds), median(ratios)};
}

double warmMedian(const KernelSpec &spec, const Target &target, bool cubin,
                  int runs, std::string &reason) {
  if (!compileOnce(spec, target, cubin, reason)) // warms the process
    return -1;
  std::vector<double> values;
  for (int run = 0; run < runs; ++run) {
    double start = nowMillis();
    if (!compileOnce(spec, target, cubin, reason))
      return -1;
    values.push_back(nowMillis() - start);
  }
  return median(values);
}

std::string cell(double value, const char *format = "%.1f") {
  if (value < 0)
    return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string ratio(double numerator, double denominator) {
  if (numerator <= 0 || denominator <= 0)
    return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", numerator / denominator);
  return text;
}

/// spec -> PTX at `level` on a pooled context: the PTX and the time.
bool ptxAtLevel(const KernelSpec &spec, const Target &target, int level,
                std::string &ptx, double &millis, std::string &reason) {
  double start = nowMillis();
  compiler::ContextLease context = compiler::borrowContext();
  auto module = compiler::buildKernelModule(*context, spec);
  if (!module) {
    reason = llvm::toString(module.takeError());
    return false;
  }
  if (llvm::Error error = compiler::lowerForGpu(**module)) {
    reason = llvm::toString(std::move(error));
    return false;
  }
  PtxOptions options;
  options.optLevel = level;
  mlir::FailureOr<PtxModule> result =
      lowerToPtx(**module, target, reason, options);
  if (mlir::failed(result))
    return false;
  millis = nowMillis() - start;
  ptx = std::move(result->ptx);
  return true;
}

int runLevels(const std::vector<std::string> &chips, int runs) {
  std::printf("spec -> PTX by LLVM level (warm medians of %d, %s ms); "
              "'=' PTX byte-identical to O3's, '!' different\n",
              runs, clockName());
  std::printf("%-8s %-24s %9s %9s %9s\n", "chip", "kernel", "O1", "O2", "O3");
  for (const std::string &chip : chips) {
    std::string error;
    std::optional<Target> target = nvidiaTarget(chip);
    if (!target)
      return 1;
    for (const Scheme &scheme : namedSchemes()) {
      for (KernelOp op : {KernelOp::Quantize, KernelOp::Dequantize}) {
        KernelSpec spec;
        spec.op = op;
        spec.scheme = scheme;
        std::string label =
            scheme.name + (op == KernelOp::Quantize ? " q" : " dq");
        std::map<int, std::string> ptx;
        std::map<int, double> millis;
        bool ok = true;
        for (int level : {3, 2, 1}) {
          std::vector<double> times;
          for (int run = 0; run <= runs && ok; ++run) {
            double took = 0;
            ok = ptxAtLevel(spec, *target, level, ptx[level], took, error);
            if (run > 0)
              times.push_back(took);
          }
          millis[level] = ok ? median(times) : -1;
        }
        if (!ok) {
          std::printf("%-8s %-24s refused: %s\n", chip.c_str(), label.c_str(),
                      error.substr(0, error.find('\n')).c_str());
          continue;
        }
        auto mark = [&](int level) {
          return cell(millis[level]) + (ptx[level] == ptx[3] ? " =" : " !");
        };
        std::printf("%-8s %-24s %9s %9s %9s\n", chip.c_str(), label.c_str(),
                    mark(1).c_str(), mark(2).c_str(), mark(3).c_str());
      }
    }
  }
  return 0;
}

/// --rusage: the first spec -> PTX of a process against the second, in
/// the same child process (so on the same load), as wall, user and system
/// CPU milliseconds and minor page faults; medians over `runs` children.
int runRusage(const std::vector<std::string> &chips,
              const std::vector<std::string> &only, int runs) {
  std::printf("spec -> PTX, first compile of a process against the second "
              "(same child); medians over %d child processes; ms, faults\n",
              runs);
  std::printf("%-8s %-22s %8s %8s %8s %7s | %8s %8s %8s %7s | %6s %6s\n",
              "chip", "kernel", "1st wall", "1st user", "1st sys", "faults",
              "2nd wall", "2nd user", "2nd sys", "faults", "wall", "user");
  for (const std::string &chip : chips) {
    for (const Scheme &scheme : namedSchemes()) {
      if (!selected(only, scheme))
        continue;
      std::string specText = "quantize " + scheme.name;
      std::vector<std::vector<double>> columns(8);
      for (int run = 0; run < runs; ++run) {
        std::istringstream line(childOutput("rusage", chip, specText));
        for (std::vector<double> &column : columns) {
          double value;
          if (line >> value)
            column.push_back(value);
        }
      }
      if (columns.back().size() != size_t(runs)) {
        std::printf("%-8s %-22s the child failed\n", chip.c_str(),
                    specText.c_str());
        continue;
      }
      std::vector<double> medians;
      for (std::vector<double> &column : columns)
        medians.push_back(median(column));
      std::printf("%-8s %-22s %8.1f %8.1f %8.1f %7.0f | %8.1f %8.1f %8.1f "
                  "%7.0f | %6s %6s\n",
                  chip.c_str(), specText.c_str(), medians[0], medians[1],
                  medians[2], medians[3], medians[4], medians[5], medians[6],
                  medians[7], ratio(medians[0], medians[4]).c_str(),
                  ratio(medians[1], medians[5]).c_str());
      std::fflush(stdout);
    }
  }
  std::printf("wall, user = 1st / 2nd (target <= 1.5x); user and sys are "
              "the process's CPU time (getrusage), faults its minor page "
              "faults during the compile\n");
  return 0;
}

/// --phases: where spec -> cubin's time goes, cold (medians over `runs`
/// child processes) and warm (medians of `runs` in this process), wall ms.
int runPhases(const std::vector<std::string> &chips,
              const std::vector<std::string> &only, int runs) {
  std::printf("spec -> cubin by phase (buildGpuKernel, then nvJitLink), "
              "%s ms; cold: medians over %d child processes, warm: "
              "medians of %d\n",
              clockName(), runs, runs);
  std::printf("%-8s %-22s %-5s", "chip", "kernel", "");
  for (const std::string &name : phaseNames())
    std::printf(" %9s", name.c_str());
  std::printf(" %9s\n", "total");
  for (const std::string &chip : chips) {
    std::string error;
    std::optional<Target> target = nvidiaTarget(chip);
    if (!target)
      return 1;
    for (const Scheme &scheme : namedSchemes()) {
      if (!selected(only, scheme))
        continue;
      std::string specText = "quantize " + scheme.name;
      std::optional<KernelSpec> spec = parseKernelSpec(specText, &error);
      if (!spec) {
        std::fprintf(stderr, "bad spec '%s': %s\n", specText.c_str(),
                     error.c_str());
        return 1;
      }
      size_t count = phaseNames().size();
      std::vector<std::vector<double>> cold(count), warm(count);
      for (int run = 0; run < runs; ++run) {
        std::string output = childOutput("phases", chip, specText);
        std::vector<double> values;
        char *cursor = output.data();
        for (size_t i = 0; i < count; ++i) {
          char *end = nullptr;
          double value = std::strtod(cursor, &end);
          if (end == cursor)
            break;
          values.push_back(value);
          cursor = end;
        }
        if (values.size() != count) {
          std::printf("%-8s %-22s the cold child failed\n", chip.c_str(),
                      specText.c_str());
          return 1;
        }
        for (size_t i = 0; i < count; ++i)
          cold[i].push_back(values[i]);
      }
      for (int run = 0; run <= runs; ++run) {
        std::vector<double> values = phasesOnce(*spec, *target, error);
        if (values.empty()) {
          std::printf("%-8s %-22s refused: %s\n", chip.c_str(),
                      specText.c_str(),
                      error.substr(0, error.find('\n')).c_str());
          return 1;
        }
        for (size_t i = 0; run > 0 && i < count; ++i)
          warm[i].push_back(values[i]);
      }
      for (auto [label, samples] :
           {std::pair{"cold", &cold}, std::pair{"warm", &warm}}) {
        std::printf("%-8s %-22s %-5s", chip.c_str(), specText.c_str(), label);
        double total = 0;
        for (const std::vector<double> &phase : *samples) {
          total += median(phase);
          std::printf(" %9s", cell(median(phase)).c_str());
        }
        std::printf(" %9s\n", cell(total).c_str());
      }
      std::fflush(stdout);
    }
  }
  std::printf("total = the sum of the phase medians\n");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 7 && std::string(argv[3]) == "--child") {
    setClock(argv[2]);
    return runChild(argv[4], argv[5], argv[6]);
  }
  int runs = 7;
  std::vector<std::string> chips = {"sm_90a", "sm_100a"};
  std::vector<std::string> ops = {"quantize"};
  std::vector<std::string> only; // scheme names; empty: every named scheme
  bool cold = true, levels = false, phases = false, rusageMode = false;
  // --warmed: the "cold" columns are the first compile after the Jit's
  // warm-up (JitOptions::warmUpCompiler), child modes ptx+w and cubin+w.
  bool warmed = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--chips" && i + 1 < argc)
      chips = splitCommas(argv[++i]);
    else if (arg == "--ops" && i + 1 < argc)
      ops = splitCommas(argv[++i]);
    else if (arg == "--schemes" && i + 1 < argc)
      only = splitCommas(argv[++i]);
    else if (arg == "--no-cold")
      cold = false;
    else if (arg == "--warmed")
      warmed = true;
    else if (arg == "--levels")
      levels = true;
    else if (arg == "--phases")
      phases = true;
    else if (arg == "--rusage")
      rusageMode = true;
    else if (arg == "--clock" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "cpu" ||
              std::string(argv[i + 1]) == "wall" ||
              std::string(argv[i + 1]) == "thread"))
      setClock(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: lowbit-bench-latency [--runs N] [--chips A,B] "
                   "[--ops quantize,dequantize] [--schemes A,B] [--no-cold] "
                   "[--warmed] [--levels] [--phases] [--rusage] "
                   "[--clock cpu|wall|thread]\n");
      return 2;
    }
  }
  for (const std::string &name : only)
    if (std::none_of(
            namedSchemes().begin(), namedSchemes().end(),
            [&](const Scheme &scheme) { return scheme.name == name; })) {
      std::fprintf(stderr, "--schemes: '%s' is not a named scheme\n",
                   name.c_str());
      return 2;
    }
  if (levels)
    return runLevels(chips, runs);
  if (phases)
    return runPhases(chips, only, runs);
  if (rusageMode)
    return runRusage(chips, only, runs);

  auto nvrtc = runtime::nvrtcLibrary();
  auto linker = runtime::nvJitLinkLibrary();
  if (!linker) {
    std::fprintf(stderr, "nvJitLink is needed for spec -> cubin: %s\n",
                 linker.error().message.c_str());
    return 1;
  }
  std::printf("spec -> PTX and spec -> cubin, f32 input, dynamic scales; "
              "medians of %d (cold: %d child processes%s); %s ms\n",
              runs, runs,
              warmed ? ", each after the Jit's compiler warm-up" : "",
              clockName());
  std::printf("peer: NVRTC (PTX) and NVRTC + nvJitLink (cubin) on the "
              "scheme's reference kernel, warm%s\n",
              nvrtc ? "" : " (NVRTC not available)");
  std::printf("%-8s %-22s %8s %8s %6s %6s %9s %9s %6s %6s %9s %10s %9s %9s "
              "%8s %7s\n",
              "chip", "kernel", "ptx cold", "ptx warm", "c/w", "pair",
              "cubin cld", "cubin wrm", "c/w", "pair", "nvrtc ptx",
              "nvrtc+link", "nvrtc/ptx", "peer/cubin", "old ptx", "old/new");
  std::map<std::pair<std::string, std::string>, std::pair<double, double>>
      peers; // (chip, scheme) -> (nvrtc, nvrtc + link)
  for (const std::string &chip : chips) {
    std::string error;
    std::optional<Target> target = nvidiaTarget(chip);
    if (!target)
      return 1;
    for (const Scheme &scheme : namedSchemes()) {
      if (!selected(only, scheme))
        continue;
      for (const std::string &opName : ops) {
        std::string specText = opName + " " + scheme.name;
        std::optional<KernelSpec> spec = parseKernelSpec(specText, &error);
        if (!spec) {
          std::fprintf(stderr, "%s: %s\n", specText.c_str(), error.c_str());
          return 1;
        }
        std::string reason;
        double ptxWarm = warmMedian(*spec, *target, false, runs, reason);
        double cubinWarm =
            ptxWarm < 0 ? -1 : warmMedian(*spec, *target, true, runs, reason);
        double oldWarm =
            ptxWarm < 0 ? -1 : oldStyleMedian(*spec, *target, runs, reason);
        if (ptxWarm < 0 || cubinWarm < 0) {
          std::printf("%-8s %-22s refused: %s\n", chip.c_str(),
                      specText.c_str(),
                      reason.substr(0, reason.find('\n')).c_str());
          continue;
        }
        const std::string suffix = warmed ? "+w" : "";
        ColdMeasures ptxCold, cubinCold;
        if (cold) {
          ptxCold = coldAgainstWarm("ptx" + suffix, *spec, *target, chip,
                                    specText, false, runs, reason);
          cubinCold = coldAgainstWarm("cubin" + suffix, *spec, *target, chip,
                                      specText, true, runs, reason);
        }

        auto &peer = peers[{chip, scheme.name}];
        if (nvrtc && peer.first == 0) {
          peer = {-1, -1};
          auto source = runtime::referenceKernelSource(scheme.name, "f32");
          std::vector<double> ptxTimes, cubinTimes;
          for (int run = 0; source && run <= runs; ++run) {
            double start = nowMillis();
            auto ptxOnly =
                runtime::buildReferenceKernel(**nvrtc, nullptr, *source, chip);
            double middle = nowMillis();
            auto build =
                runtime::buildReferenceKernel(**nvrtc, *linker, *source, chip);
            double end = nowMillis();
            if (!ptxOnly || !build)
              break;
            if (run == 0)
              continue; // NVRTC's own first use
            ptxTimes.push_back(middle - start);
            cubinTimes.push_back(end - middle);
          }
          if (!ptxTimes.empty())
            peer = {median(ptxTimes), median(cubinTimes)};
        }
        std::printf(
            "%-8s %-22s %8s %8s %6s %6s %9s %9s %6s %6s %9s %10s %9s %9s %8s "
            "%7s\n",
            chip.c_str(), specText.c_str(), cell(ptxCold.median).c_str(),
            cell(ptxWarm).c_str(), ratio(ptxCold.median, ptxWarm).c_str(),
            ratio(ptxCold.pairRatio, 1).c_str(), cell(cubinCold.median).c_str(),
            cell(cubinWarm).c_str(), ratio(cubinCold.median, cubinWarm).c_str(),
            ratio(cubinCold.pairRatio, 1).c_str(), cell(peer.first).c_str(),
            cell(peer.second).c_str(), ratio(peer.first, ptxWarm).c_str(),
            ratio(peer.second, cubinWarm).c_str(), cell(oldWarm).c_str(),
            ratio(oldWarm, ptxWarm).c_str());
        std::fflush(stdout);
      }
    }
  }
  std::printf("c/w = cold / warm (target <= 1.5x), the two medians above; "
              "pair = the median of cold / warm over %d pairs, each a cold "
              "child and at once a warm compile here (the same load on "
              "both); nvrtc/ptx and "
              "peer/cubin = the peer's time / lowbit's warm time (above 1: "
              "lowbit is faster); old ptx = spec -> PTX with a new context "
              "(all dialects loaded), the per-pass verifier and O3, "
              "old/new = old ptx / ptx warm\n",
              runs);
  return 0;
}

//===- Commands.h - lowbit's subcommands ------------------------*- C++ -*-===//
//
// Each subcommand takes the words after its name and returns an error as a
// value; main() owns the exit code. A command checks all of its arguments
// before it prints anything, so a failed run leaves stdout empty.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_COMMANDS_H
#define LOWBIT_TOOLS_LOWBIT_COMMANDS_H

#include "runtime/spec/KernelSpec.h"
#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/Diagnostics.h"

#include <array>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowbit::cli {

using Arguments = std::span<const std::string_view>;

CommandResult runFormats(Arguments args);
CommandResult runCompile(Arguments args);
CommandResult runEncode(Arguments args);
CommandResult runDecode(Arguments args);
CommandResult runDemo(Arguments args);
CommandResult runQuantize(Arguments args);
CommandResult runDequantize(Arguments args);
CommandResult runMatmul(Arguments args);
CommandResult runEval(Arguments args);
CommandResult runAot(Arguments args);
CommandResult runCache(Arguments args);
CommandResult runReport(Arguments args);
CommandResult runKv(Arguments args);
/// `lowbit checkpoint ls`: a safetensors checkpoint's tensors.
CommandResult runCheckpoint(Arguments args);
/// `lowbit eval --kv`: the KV schemes' error table.
CommandResult runEvalKv(Arguments args);
/// `lowbit eval --matmul` (EvalMatmulCommand.cpp).
CommandResult runEvalMatmul(Arguments args);
/// `lowbit eval --fused`: fused kernels against the unfused pair (in the
/// compiler library).
CommandResult runEvalFused(Arguments args);

/// `compile`'s options, shared by the front end's cache lookup.
inline constexpr std::array<OptionSpec, 2> kCompileOptions = {{
    {"target", true},
    {"emit", true},
}};
/// `compile` answered from the disk cache without the compiler library:
/// PTX of a kernel lowbit::Jit wrote before. Prints it and returns true;
/// false (printing nothing) when the command needs the compiler: a miss,
/// an unusable entry, another stage, LOWBIT_DUMP_DIR, or any argument
/// error (the library reports those).
bool runCachedCompile(Arguments args);

/// "ROWSxCOLS" with both positive (lowbit aot, lowbit report).
bool parseRowsByCols(std::string_view text, int64_t maxElements, int64_t &rows,
                     int64_t &cols, std::string &error);
/// The largest benchmark tensor: 2^32 elements (16 GiB of f32 input), which
/// the GPU runner allocates on the device.
constexpr int64_t kMaxBenchElements = int64_t(1) << 32;
/// `--all`: every named scheme, quantize and dequantize, f32, dynamic.
std::vector<KernelSpec> allNamedSchemeSpecs();

/// The formats table and the schemes list; `lowbit demo` prints them too.
void printFormatsTable();
void printSchemesList();

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_COMMANDS_H

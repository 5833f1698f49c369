//===- EmulatorBackend.h - `--backend gpu-emulator` -------------*- C++ -*-===//
//
// The CLI's GPU emulator backend: the spec's GPU kernels for an NVIDIA
// target, as they leave the GPU tail, run on the CPU with CUDA's semantics
// (docs/emulator.md). It plugs into JitBackend's buffer handling as a
// KernelRunner, so quantize, dequantize and demo write the same files as
// the CPU and reference backends.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_EMULATORBACKEND_H
#define LOWBIT_TOOLS_LOWBIT_EMULATORBACKEND_H

#include "tools/lowbit/JitBackend.h"

#include <optional>
#include <string>
#include <string_view>

namespace lowbit::cli {

/// The target --backend gpu-emulator runs when --target is not given.
inline constexpr std::string_view kEmulatorDefaultTarget = "sm_90a";

/// A runner executing each spec's GPU kernels for `target` in the emulator
/// (compiled once per spec, cached for the process). nullopt and a message
/// for a target that is not an NVIDIA chip lowbit supports.
std::optional<KernelRunner> gpuEmulatorRunner(std::string_view target,
                                              std::string *error);

/// The --target option for --backend gpu-emulator: `target` if given, else
/// the default; an error if --target comes with another backend.
std::optional<std::string> emulatorTargetOption(const std::string &backend,
                                                const std::string *target,
                                                std::string *error);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_EMULATORBACKEND_H

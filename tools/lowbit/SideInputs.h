//===- SideInputs.h - --side NAME=FILE: a prologue's side tensors -*- C++
//-*-===//
//
// `lowbit quantize --spec` and `lowbit matmul --act` take the side tensors
// their prologues read (an RMSNorm weight, a smoothing vector, a residual;
// docs/fusion.md) as --side NAME=FILE, named as the kernel ABI names them.
// One reader for both: every name given once, nothing else, each file of
// the input's dtype and the parameter's shape.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_SIDEINPUTS_H
#define LOWBIT_TOOLS_LOWBIT_SIDEINPUTS_H

#include "format/Quantize.h"
#include "runtime/core/Npy.h"
#include "tools/lowbit/CommandLine.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lowbit::cli {

/// A side tensor a kernel reads: its --side name and [rows, cols].
struct SideInput {
  std::string name;
  Shape2D shape;
};

/// The bytes of each of `sides`, in order, from the --side options of
/// `parsed`: each name given once, no other name; each file an array of
/// `dtype` (the input's) shaped [rows, cols], a [1, cols] vector also as
/// [cols], and a [rows, cols] tensor of an N-D input also as [leading...,
/// cols]. nullopt and a message naming the option or file otherwise.
std::optional<std::vector<std::vector<uint8_t>>>
readSideInputs(const ParsedCommandLine &parsed,
               std::span<const SideInput> sides, npy::DType dtype,
               std::span<const int64_t> leading, std::string *error);

/// The files the --side options name (for CommandPaths' aliasing checks).
std::vector<std::string> sideInputFiles(const ParsedCommandLine &parsed);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_SIDEINPUTS_H

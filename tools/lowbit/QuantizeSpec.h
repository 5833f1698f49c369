//===- QuantizeSpec.h - `lowbit quantize --spec` ---------------*- C++ -*-===//
//
// `lowbit quantize --spec 'rmsnorm(eps=1e-6) | quantize nvfp4' --input x.npy
// --side weight=w.npy --out DIR` quantizes with a kernel spec, prologues
// included (docs/fusion.md): the side tensors its prologues read are given
// by name, and add_rmsnorm's updated residual goes to --residual-out.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_QUANTIZESPEC_H
#define LOWBIT_TOOLS_LOWBIT_QUANTIZESPEC_H

#include "tools/lowbit/CommandLine.h"
#include "tools/lowbit/EmulatorBackend.h"

#include <string>

namespace lowbit::cli {

/// The usage lines of --spec, --side and --residual-out, with each
/// prologue's side tensor names (from the prologue model).
std::string quantizeSpecUsage();

/// Runs `lowbit quantize` with --spec (the command line is parsed and the
/// backend options checked). Every input is read and checked (a missing,
/// extra, repeated or mis-shaped side input, a dtype other than the
/// spec's) before anything is computed or written.
CommandResult runQuantizeSpec(const ParsedCommandLine &parsed,
                              const BackendChoice &choice);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_QUANTIZESPEC_H

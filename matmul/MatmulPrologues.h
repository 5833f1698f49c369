//===- MatmulPrologues.h - Prologues in front of X's quantize ---*- C++ -*-===//
//
// What the matmul's kernels take of a prologue chain in front of the
// activations' quantize (`rmsnorm | matmul w=... a=...`; docs/matmul.md,
// "Prologues in front of X's quantize"): which prologues, and the names of
// their side tensors in the kernel ABI. The ordered reference
// (QuantizedOrder.h) runs every prologue. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_MATMUL_MATMULPROLOGUES_H
#define LOWBIT_MATMUL_MATMULPROLOGUES_H

#include "format/Prologue.h"

#include <span>
#include <string>
#include <vector>

namespace lowbit::matmul {

/// Why the matmul's kernels cannot run `chain` in front of X's quantize
/// (empty when they can): they keep X's width K and write only Y, so
/// silu_mul (X would be [M, 2K]) and add_rmsnorm (it writes the updated
/// residual) have none.
std::string matmulPrologueRefusal(std::span<const Prologue> chain);

/// The kernel parameter names of the chain's side tensors, in chain order
/// (each [1, K] in X's dtype): weight (rmsnorm), smooth (smooth); a name
/// two prologues read is numbered from the second on (weight, weight2), as
/// `lowbit quantize --side` names them.
std::vector<std::string> matmulSideInputNames(std::span<const Prologue> chain);

} // namespace lowbit::matmul

#endif // LOWBIT_MATMUL_MATMULPROLOGUES_H

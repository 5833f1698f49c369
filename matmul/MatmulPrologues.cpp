//===- MatmulPrologues.cpp - Prologues in front of X's quantize -----------===//

#include "matmul/MatmulPrologues.h"

#include <map>

namespace lowbit::matmul {

std::string matmulPrologueRefusal(std::span<const Prologue> chain) {
  for (const Prologue &prologue : chain) {
    if (prologue.kind == PrologueKind::SiluMul)
      return "silu_mul halves X's width (X would be [M, 2K]); the matmul's "
             "kernels take X as [M, K]";
    if (prologueWritesResidual(prologue.kind))
      return "'" + printPrologue(prologue) +
             "' writes the updated residual, an output the matmul's kernels "
             "do not have";
  }
  return "";
}

std::vector<std::string> matmulSideInputNames(std::span<const Prologue> chain) {
  std::vector<std::string> names;
  std::map<std::string, int, std::less<>> seen;
  for (const Prologue &prologue : chain)
    for (PrologueOperand operand : prologueOperands(prologue.kind)) {
      // The names of runtime/spec/KernelAbi.h's side parameters (only
      // weight and smooth reach here: add_rmsnorm is refused).
      std::string name = operand == PrologueOperand::Weight   ? "weight"
                         : operand == PrologueOperand::Smooth ? "smooth"
                                                              : "residual";
      int count = ++seen[name];
      names.push_back(count == 1 ? name : name + std::to_string(count));
    }
  return names;
}

} // namespace lowbit::matmul

//===- DemoMatmul.h - `lowbit demo`'s matmul rows ---------------*- C++ -*-===//
//
// One row per weight scheme of docs/matmul.md: the CPU kernel of
// Y = X . dequant(W)^T checked bit for bit against the ordered reference,
// the GPU kernels in the emulator, and the bytes per weight against bf16.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_TOOLS_LOWBIT_DEMOMATMUL_H
#define LOWBIT_TOOLS_LOWBIT_DEMOMATMUL_H

#include <cstdint>
#include <string_view>

namespace lowbit::cli {

/// Prints the section; `chip` is the emulator's target.
void runMatmulDemoSection(uint32_t seed, std::string_view chip);

} // namespace lowbit::cli

#endif // LOWBIT_TOOLS_LOWBIT_DEMOMATMUL_H

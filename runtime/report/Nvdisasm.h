//===- Nvdisasm.h - The SASS of a cubin, through nvdisasm -------*- C++ -*-===//
//
// The report reads the machine code ptxas produced when it can
// (docs/gpu-report.md, "SASS"). The CUDA toolkit of this project's machine
// has no nvdisasm; tools/python-requirements.txt installs NVIDIA's
// nvidia-cuda-nvdisasm package into the build's Python environment, and the
// tests point LOWBIT_NVDISASM at it. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_REPORT_NVDISASM_H
#define LOWBIT_RUNTIME_REPORT_NVDISASM_H

#include "lowbit/Expected.h"

#include <string>
#include <string_view>

namespace lowbit::report {

/// The nvdisasm to run: $LOWBIT_NVDISASM when set (an empty value turns
/// SASS off), else `nvdisasm` on PATH, else $CUDA_HOME/bin/nvdisasm
/// (CUDA_HOME defaults to /usr/local/cuda). An error names where it looked.
Expected<std::string> findNvdisasm();

/// nvdisasm's text (`-c`: code sections only) of a cubin's bytes. An error
/// says why there is none: no disassembler, or it failed (its first line).
Expected<std::string> disassembleCubin(std::string_view cubin);

} // namespace lowbit::report

#endif // LOWBIT_RUNTIME_REPORT_NVDISASM_H

#!/usr/bin/env bash
# Builds tools/gpu-runner standalone, as tools/gpu-check does on the GPU
# machine (no MLIR, no lowbit build): with cmake and nvcc as the C++
# compiler's driver where possible, else plain nvcc on the sources.
set -euo pipefail
source_dir=$1 nvcc=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
sources=(tools/gpu-runner/main.cpp runtime/aot/Bundle.cpp
  runtime/aot/LaunchProgram.cpp runtime/aot/Workspace.cpp
  runtime/core/AtomicFile.cpp runtime/core/FileIo.cpp runtime/core/Json.cpp
  runtime/core/Npy.cpp
  runtime/driver/CudaDriver.cpp runtime/driver/DynamicLibrary.cpp
  runtime/driver/NvJitLink.cpp runtime/driver/Nvrtc.cpp
  runtime/nvrtc/ReferenceKernels.cpp)
cd "$source_dir"
"$nvcc" -std=c++20 -O2 -I. -Iruntime/include "${sources[@]}" -ldl \
  -o "$out/lowbit-gpu-runner-nvcc"
cmake -S tools/gpu-runner -B "$out/cmake" -DLOWBIT_SOURCE_DIR="$source_dir" >/dev/null
cmake --build "$out/cmake" -j2 >/dev/null
test -x "$out/cmake/lowbit-gpu-runner"
"$out/lowbit-gpu-runner-nvcc" 2>&1 | grep -q usage || true
echo PASS

#!/usr/bin/env bash
# Builds tools/gpu-runner standalone, as tools/gpu-check does on the GPU
# machine (no MLIR, no lowbit build): with cmake (Release, as gpu-check
# builds it) and with plain nvcc as the C++ compiler's driver.
#
# MODE quick (the default run): nvcc compiles the sources at -O0, one
# process a source, as many at once as there are cores, then links; the
# cmake build goes through ccache when it is installed. MODE full (the
# `sweep` label): nvcc builds at -O2 in one invocation, as before.
# Both modes compile every source with both drivers and run the result.
set -euo pipefail
source_dir=$1 nvcc=$2 out=$3 mode=${4:-quick}
rm -rf "$out" && mkdir -p "$out"
sources=(tools/gpu-runner/main.cpp runtime/aot/Bundle.cpp
  runtime/aot/LaunchProgram.cpp runtime/aot/RankedLaunch.cpp
  runtime/aot/WorkspacePool.cpp
  runtime/core/AtomicFile.cpp runtime/core/FileIo.cpp
  runtime/core/InterruptCleanup.cpp runtime/core/Json.cpp
  runtime/core/Npy.cpp
  runtime/driver/CudaDriver.cpp runtime/driver/DynamicLibrary.cpp
  runtime/driver/NvJitLink.cpp runtime/driver/Nvrtc.cpp
  runtime/nvrtc/ReferenceKernels.cpp)
cd "$source_dir"
launcher=()
case "$mode" in
quick)
  mkdir -p "$out/objects"
  printf '%s\n' "${sources[@]}" |
    xargs -P "$(nproc)" -I{} sh -c \
      'exec "$0" -std=c++20 -O0 -I. -Iruntime/include -c "$1" -o "$2/$(echo "$1" | tr / _).o"' \
      "$nvcc" {} "$out/objects"
  "$nvcc" "$out"/objects/*.o -ldl -o "$out/lowbit-gpu-runner-nvcc"
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  ;;
full)
  "$nvcc" -std=c++20 -O2 -I. -Iruntime/include "${sources[@]}" -ldl \
    -o "$out/lowbit-gpu-runner-nvcc"
  ;;
*)
  echo "runner-standalone.sh: unknown mode '$mode' (quick or full)" >&2
  exit 2
  ;;
esac
cmake -S tools/gpu-runner -B "$out/cmake" -DLOWBIT_SOURCE_DIR="$source_dir" \
  "${launcher[@]}" >/dev/null
cmake --build "$out/cmake" -j"$(nproc)" >/dev/null
test -x "$out/cmake/lowbit-gpu-runner"
# Both binaries start and print their usage (no bundle given).
for runner in "$out/lowbit-gpu-runner-nvcc" "$out/cmake/lowbit-gpu-runner"; do
  output=$("$runner" 2>&1 || true)
  grep -q '^usage: lowbit-gpu-runner' <<<"$output" ||
    { echo "runner-standalone.sh: $runner printed no usage" >&2; exit 1; }
done
echo PASS

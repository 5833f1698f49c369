#!/usr/bin/env bash
# Installs what lowbit needs on a fresh Debian 12 machine of this kind, then
# configures and builds. Sourced by tools/run-demo and tools/run-tests.
# BUILD_DIR (default: build) and LOWBIT_JOBS (default: nproc) may be set;
# tools/run-sanitizers also sets LOWBIT_EXTRA_PACKAGES and LOWBIT_CMAKE_ARGS
# (space-separated, used when the build directory is first configured).
set -euo pipefail

LOWBIT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$LOWBIT_ROOT/build}"
PACKAGES=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools catch2
          libfmt-dev ninja-build lld cmake g++ python3-venv python3-dev ccache
          ${LOWBIT_EXTRA_PACKAGES:-})

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "lowbit: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The tests' Python packages live in the build's own environment, so the
# result never depends on what happens to be installed in the python3 on
# PATH (which may be a bare interpreter: .ci/run checks exactly that). The
# stamp holds the requirements' text, so a changed pin reinstalls.
PYENV="$BUILD_DIR/pyenv"
requirements="$LOWBIT_ROOT/tools/python-requirements.txt"
if ! cmp -s "$requirements" "$PYENV/.lowbit-requirements" 2>/dev/null; then
  mkdir -p "$BUILD_DIR"
  rm -rf "$PYENV"
  # A Debian python3 without ensurepip cannot make a venv with pip; the
  # system interpreter with python3-venv (installed above) can.
  python3 -m venv "$PYENV" 2>/dev/null || /usr/bin/python3 -m venv "$PYENV"
  echo "lowbit: installing the tests' Python packages into $PYENV" >&2
  "$PYENV/bin/python" -m pip install -q --disable-pip-version-check \
    -r "$requirements"
  cp "$requirements" "$PYENV/.lowbit-requirements"
fi

export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Paths under the tree are hashed relative to the build directory, so the
# wheel test's build of a copy of the tree (tests/python/wheel_build.py,
# under build/) is served from this build's objects instead of compiling
# the compiler library again (about 18 minutes on 2 cores).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$LOWBIT_ROOT}"
# LOWBIT_WERROR (default ON here; LOWBIT_WERROR=OFF to turn it off): warnings
# in lowbit's own sources are errors, so the build stays quiet.
werror="${LOWBIT_WERROR:-ON}"
if [ ! -f "$BUILD_DIR/build.ninja" ] ||
   ! grep -qxE "Python3_EXECUTABLE:[A-Z]+=$PYENV/bin/python" \
     "$BUILD_DIR/CMakeCache.txt" ||
   ! grep -qx "LOWBIT_WERROR:BOOL=$werror" "$BUILD_DIR/CMakeCache.txt"; then
  cmake -S "$LOWBIT_ROOT" -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DLOWBIT_WERROR="$werror" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_DIR=/usr/lib/llvm-22/lib/cmake/llvm \
    -DPython3_EXECUTABLE="$PYENV/bin/python" \
    "${launcher[@]}" ${LOWBIT_CMAKE_ARGS:-} >/dev/null
fi
# LOWBIT_BUILD_TARGETS (space-separated): build only these (run-sanitizers
# --mlir-free); everything by default.
cmake --build "$BUILD_DIR" -j "${LOWBIT_JOBS:-$(nproc)}" \
  ${LOWBIT_BUILD_TARGETS:+--target $LOWBIT_BUILD_TARGETS}

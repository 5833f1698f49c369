"""Run by wheel_build.py with the python of a venv the wheel was installed
into: the installed package imports without loading the compiler, and a
quantize of numpy arrays, a fused spec and a KV append give the reference's
results; the kernels' compiles load the compiler library from the
package's own directory. argv[1]: a kernel cache directory (left empty by
the caller). Plain asserts: the venv has numpy and lowbit only."""

import os
import sys

import numpy as np

import lowbit

CACHE = sys.argv[1]
PACKAGE = os.path.dirname(os.path.realpath(lowbit.__file__))


def mapped_libraries():
    """The shared objects mapped into this process (/proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        return {line.split()[-1] for line in maps
                if line.rstrip().endswith(".so") or ".so." in line}


def compiler_libraries():
    return sorted(path for path in mapped_libraries()
                  if os.path.basename(path).startswith(
                      ("libMLIR", "libLLVM", "liblowbit-compiler")))


def same_bits(a, b):
    return (a.shape == b.shape and a.dtype == b.dtype
            and a.tobytes() == b.tobytes())


# The package is this venv's, not a source or build tree's.
assert PACKAGE.startswith(os.path.realpath(sys.prefix)), PACKAGE
assert compiler_libraries() == [], compiler_libraries()
# The typed interface came along (the package's every file does).
for name in ("__init__.pyi", "py.typed"):
    assert os.path.exists(os.path.join(PACKAGE, name)), name

# A quantize of numpy arrays with the reference quantizer: values e2m1
# holds exactly, amax 6, so MXFP4's scale is 2^0 (e8m0 code 127) and each
# code is the value's index in e2m1's table (+8 for a negative), two per
# byte, element 0 in the low nibble.
# The negatives include -0.0 (code 8).
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
indices = np.arange(64) % 16
values = np.array([-E2M1[i - 8] if i >= 8 else E2M1[i] for i in indices],
                  np.float32).reshape(2, 32)
q = lowbit.quantize(values, "mxfp4")
codes = (indices[0::2] | (indices[1::2] << 4)).astype(np.uint8).reshape(2, 16)
assert same_bits(q.codes, codes), q.codes
assert q.scales.tolist() == [[127], [127]], q.scales
assert same_bits(lowbit.dequantize(q), values)
# The reference path loads no compiler either.
assert compiler_libraries() == [], compiler_libraries()

# A fused spec, JIT-compiled for this CPU: smooth | quantize equals the
# reference quantizer on x / s (numpy's f32 division is IEEE, as the
# prologue's, docs/fusion.md).
rng = np.random.default_rng(3)
x = rng.standard_normal((4, 64)).astype(np.float32)
s = np.linspace(0.25, 4, 64, dtype=np.float32).reshape(1, 64)
fused = lowbit.jit("smooth | quantize nvfp4 dynamic", cache_dir=CACHE)
fused_codes, fused_scales, fused_global = fused(x, s)
reference = lowbit.quantize(x / s, "nvfp4")
assert same_bits(fused_codes, reference.codes)
assert same_bits(fused_scales, reference.scales)
assert fused_global.tobytes() == reference.global_scale.tobytes()

# The compile loaded the compiler library the wheel carries.
compilers = [path for path in compiler_libraries()
             if os.path.basename(path) == "liblowbit-compiler.so"]
assert compilers == [os.path.join(PACKAGE, "liblowbit-compiler.so")], (
    compilers)

# A KV append of values e4m3 holds exactly: their e4m3 codes at the given
# position, the other rows untouched; dequantize reads them back.
kv = np.array([[1, 0.5, -2, 0], [4, -0.5, 1.5, 448]], np.float32)
e4m3 = np.array([[0x38, 0x30, 0xC0, 0x00], [0x48, 0xB0, 0x3C, 0x7E]],
                np.uint8)
append = lowbit.kv_jit("kv_append kv_fp8_e4m3 from=f16 heads=1 head_dim=4",
                       cache_dir=CACHE)
cache = np.zeros((1, 1, 4, 4), np.int8)
scales = np.ones(1, np.float32)
positions = np.array([1], np.int32)
append(kv.astype(np.float16).reshape(1, 1, 2, 4), cache, scales, positions)
assert same_bits(cache.view(np.uint8)[0, 0, 1:3], e4m3), cache
assert not cache[0, 0, 0].any() and not cache[0, 0, 3].any()
back = np.zeros((1, 1, 2, 4), np.float32)
lowbit.kv_jit("kv_dequantize kv_fp8_e4m3 to=f32 heads=1 head_dim=4",
              cache_dir=CACHE)(cache, scales, positions, back)
assert same_bits(back.reshape(2, 4), kv)

print(f"wheel check: lowbit {lowbit.__version__} from {PACKAGE}: ok")

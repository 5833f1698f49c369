"""The Python module with numpy: bit for bit against the CLI's reference
quantizer (`lowbit quantize --backend reference`), known values, DLPack,
the JIT, and every error path's code and message."""

import json
import os
import subprocess

import numpy as np
import pytest

import lowbit
from producers import OnlyDlpack

CLI = os.environ["LOWBIT_CLI"]


def cli_quantize(tmp_path, x, scheme):
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "q"
    subprocess.run([CLI, "quantize", "--scheme", scheme, "--input",
                    str(tmp_path / "x.npy"), "--out", str(out), "--backend",
                    "reference"], check=True, capture_output=True)
    subprocess.run([CLI, "dequantize", "--in", str(out), "--out",
                    str(tmp_path / "y.npy")], check=True, capture_output=True)
    files = {name: np.load(out / f"{name}.npy")
             for name in ("q", "scales", "zeros", "global_scale")
             if (out / f"{name}.npy").exists()}
    return files, np.load(tmp_path / "y.npy")


def same_bits(a, b):
    return (a.shape == b.shape and a.dtype == b.dtype
            and a.tobytes() == b.tobytes())


def data(rows, cols, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x *= np.exp2(rng.integers(-8, 8, size=(rows, 1))).astype(np.float32)
    return x


# One MXFP4 block of values exact in e2m1 (codes 0-7, negatives 8-15),
# amax 6: scale 2^0 (e8m0 code 127); element 0 in the low nibble.
KNOWN_INPUT = np.array([[0, .5, 1, 1.5, 2, 3, 4, 6] * 2 * 2], np.float32)
KNOWN_INPUT[0, 8:16] *= -1
KNOWN_INPUT[0, 24:32] *= -1
KNOWN_CODES = bytes([0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe] * 2)


def test_names():
    assert {"nvfp4", "mxfp4", "fp8_e4m3", "int4_g128"} <= set(lowbit.schemes())
    assert {"e4m3", "e2m1", "e8m0"} <= set(lowbit.formats())
    assert lowbit.__version__ == "0.1.0"


@pytest.mark.parametrize("scheme", ["nvfp4", "mxfp4", "fp8_e4m3", "int4_g128",
                                    "int8_g64", "mxfp6_e2m3"])
def test_matches_cli_bit_for_bit(tmp_path, scheme):
    x = data(3, 256, seed=len(scheme))
    files, y = cli_quantize(tmp_path, x, scheme)
    q = lowbit.quantize(x, scheme)
    assert same_bits(q.codes, files["q"])
    assert same_bits(q.scales, files["scales"])
    assert (q.zeros is None) == ("zeros" not in files)
    if q.zeros is not None:
        assert same_bits(q.zeros, files["zeros"])
    assert (q.global_scale is None) == ("global_scale" not in files)
    if q.global_scale is not None:
        assert same_bits(q.global_scale, files["global_scale"])
    assert same_bits(lowbit.dequantize(q), y)
    # The keyword form gives the same values.
    again = lowbit.dequantize(q.codes, scheme, scales=q.scales, zeros=q.zeros,
                              global_scale=q.global_scale, shape=x.shape)
    assert same_bits(again, y)


def test_known_values():
    q = lowbit.quantize(KNOWN_INPUT, "mxfp4")
    assert isinstance(q.codes, np.ndarray) and q.codes.dtype == np.uint8
    assert q.codes.tobytes() == KNOWN_CODES
    assert q.scales.tolist() == [[127]]
    assert q.zeros is None and q.global_scale is None
    assert same_bits(lowbit.dequantize(q), KNOWN_INPUT)
    # Static scales: 2^1 halves each value (1.5 -> 0.75 -> 1.0 by RNE).
    halved = lowbit.quantize(KNOWN_INPUT, "mxfp4",
                             scales=np.array([[128]], np.uint8))
    assert halved.codes[0, 1] == 0x21 and halved.codes[0, 3] == 0x54


def test_half_input_widens_exactly():
    x = data(2, 64, seed=7).astype(np.float16)
    for scheme in ("nvfp4", "fp8_e4m3"):
        half, single = (lowbit.quantize(x, scheme),
                        lowbit.quantize(x.astype(np.float32), scheme))
        assert same_bits(half.codes, single.codes)
        assert same_bits(half.scales, single.scales)
    y = lowbit.dequantize(lowbit.quantize(x, "fp8_e4m3"), dtype="float16")
    assert y.dtype == np.float16 and y.shape == x.shape


def test_strided_nd_and_dlpack_inputs():
    x = data(4, 128, seed=3)
    expected = lowbit.quantize(np.ascontiguousarray(x[::2, ::2]), "mxfp4")
    strided = lowbit.quantize(x[::2, ::2], "mxfp4")
    assert same_bits(strided.codes, expected.codes)

    # N-D: [2, 2, 128] is viewed as [4, 128].
    nd = lowbit.quantize(x.reshape(2, 2, 128), "mxfp4")
    assert same_bits(nd.codes, lowbit.quantize(x, "mxfp4").codes)
    assert lowbit.dequantize(nd).shape == (2, 2, 128)

    via = lowbit.quantize(OnlyDlpack(x), "nvfp4")
    assert isinstance(via.codes, np.ndarray)
    assert same_bits(via.codes, lowbit.quantize(x, "nvfp4").codes)
    # And out again: numpy results go anywhere through DLPack.
    assert same_bits(np.from_dlpack(via.codes), via.codes)


def test_jit_kernel_matches_reference():
    x = data(5, 96, seed=11)
    reference = lowbit.quantize(x, "mxfp4")
    kernel = lowbit.jit("quantize mxfp4 dynamic", target="cpu")
    assert kernel.spec.startswith("quantize mxfp4") and kernel.ptx == ""
    codes, scales = kernel(x)
    assert same_bits(codes, reference.codes)
    assert same_bits(scales, reference.scales)
    # Every argument given: written in place.
    codes[...] = 0
    assert kernel.run(x, codes, scales) is None
    assert same_bits(codes, reference.codes)
    dequantize = lowbit.jit("dequantize mxfp4 dynamic")
    y = np.empty_like(x)
    dequantize.run(codes, scales, y)
    assert same_bits(y, lowbit.dequantize(reference))


def expect_error(code, text, call, *args, **kwargs):
    with pytest.raises(lowbit.LowbitError) as raised:
        call(*args, **kwargs)
    assert raised.value.code == code
    assert text in raised.value.message, raised.value.message


def test_error_paths():
    x = data(2, 64, seed=1)
    expect_error("invalid-argument", "scheme 'nosuch'", lowbit.quantize, x,
                 "nosuch")
    expect_error("invalid-argument", "input has dtype int32",
                 lowbit.quantize, x.astype(np.int32), "mxfp4")
    expect_error("invalid-argument", "0-D", lowbit.quantize,
                 np.float32(1.0), "mxfp4")
    expect_error("invalid-argument", "scales has shape [3, 2], expected [2, 2]",
                 lowbit.quantize, x, "mxfp4", scales=np.ones((3, 2), np.uint8))
    expect_error("invalid-argument", "zeros given without scales",
                 lowbit.quantize, x, "mxfp4", zeros=np.ones((2, 2), np.uint8))
    expect_error("invalid-argument", "the scheme has no global scale",
                 lowbit.quantize, x, "mxfp4",
                 global_scale=np.ones(1, np.float32))
    q = lowbit.quantize(x, "mxfp4")
    expect_error("invalid-argument", "numpy has no bfloat16",
                 lowbit.dequantize, q, dtype="bfloat16")
    expect_error("invalid-argument", "dtype 'int8'", lowbit.dequantize, q,
                 dtype="int8")
    expect_error("invalid-argument", "needs scheme, scales and shape",
                 lowbit.dequantize, q.codes)
    nan_scales = q.scales.copy()
    nan_scales[0, 0] = 255  # e8m0's NaN
    expect_error("invalid-argument", "scale", lowbit.dequantize,
                 q._replace(scales=nan_scales))

    expect_error("invalid-argument", "kernel spec", lowbit.jit,
                 "quantize nosuch")
    expect_error("invalid-argument", "target 'sm_1'", lowbit.jit,
                 "quantize mxfp4", target="sm_1")
    expect_error("invalid-argument", "cache_mode 'sometimes'", lowbit.jit,
                 "quantize mxfp4", cache_mode="sometimes")
    kernel = lowbit.jit("quantize mxfp4 dynamic")
    expect_error("invalid-argument", "or its 1 inputs; got 2", kernel.run, x,
                 x)
    expect_error("invalid-argument",
                 "argument 1 (codes) has dtype float32, expected uint8",
                 kernel.run, x, np.zeros((2, 32), np.float32),
                 np.zeros((2, 2), np.uint8))
    expect_error("invalid-argument", "lowbit_kernel_launch takes kDLCUDA",
                 kernel.launch, x)
    expect_error("invalid-argument", "its output included",
                 lowbit.jit("dequantize mxfp4 dynamic").run, q.codes)


def test_fused_kernels():
    # smooth | quantize equals the unfused pair bit for bit: numpy's f32
    # division (IEEE, as docs/fusion.md's arithmetic) then the reference.
    x = data(4, 64, seed=5)
    s = np.linspace(0.25, 4, 64, dtype=np.float32).reshape(1, 64)
    kernel = lowbit.jit("smooth | quantize mxfp4 dynamic")
    assert kernel.spec.startswith("smooth | quantize mxfp4")
    codes, scales = kernel(x, s)
    reference = lowbit.quantize(x / s, "mxfp4")
    assert same_bits(codes, reference.codes)
    assert same_bits(scales, reference.scales)
    # silu_mul reads [rows, 2 * cols]: the outputs are sized for cols.
    silu = lowbit.jit("silu_mul | quantize mxfp4 dynamic")
    gate_up = data(3, 128, seed=6)
    codes, scales = silu(gate_up)
    assert codes.shape == (3, 32) and scales.shape == (3, 2)
    # Every argument given: written in place, the same bits.
    again = [np.zeros_like(codes), np.zeros_like(scales)]
    assert silu.run(gate_up, *again) is None
    assert same_bits(again[0], codes) and same_bits(again[1], scales)
    expect_error("invalid-argument", "even number", silu, data(3, 127, seed=6))

"""lowbit.kv_jit: the KV-cache kernels from Python (through the C API):
an FP8 append of values e4m3 holds exactly gives e4m3's codes, and
dequantize reads them back exactly; the parameters' description; errors."""

import numpy as np
import pytest

import lowbit

APPEND = "kv_append kv_fp8_e4m3 from=f16 heads=1 head_dim=4"
DEQUANTIZE = "kv_dequantize kv_fp8_e4m3 to=f32 heads=1 head_dim=4"
VALUES = np.array([[1, 0.5, -2, 0], [4, -0.5, 1.5, 448]], dtype=np.float32)
# e4m3: 1 = 0x38, 0.5 = 0x30, -2 = 0xC0, 4 = 0x48, 1.5 = 0x3C, 448 = 0x7E.
CODES = np.array([[0x38, 0x30, 0xC0, 0x00], [0x48, 0xB0, 0x3C, 0x7E]],
                 dtype=np.uint8)


def test_append_then_dequantize_exact():
    append = lowbit.kv_jit(APPEND)
    dequantize = lowbit.kv_jit(DEQUANTIZE)
    assert append.spec.startswith("kv_append kv_fp8_e4m3")
    assert append.ptx == ""
    keys = VALUES.astype(np.float16).reshape(1, 1, 2, 4)
    codes = np.zeros((1, 1, 4, 4), dtype=np.int8)
    scales = np.ones(1, dtype=np.float32)
    positions = np.array([1], dtype=np.int32)
    append(keys, codes, scales, positions)
    assert (codes.view(np.uint8)[0, 0, 1:3] == CODES).all()
    assert (codes[0, 0, 0] == 0).all() and (codes[0, 0, 3] == 0).all()
    out = np.zeros((1, 1, 2, 4), dtype=np.float32)
    dequantize(codes, scales, positions, out)
    assert (out.reshape(2, 4) == VALUES).all()


def test_params():
    params = lowbit.kv_jit(
        "kv_append kv_int8_g32 layout=paged heads=2 head_dim=64").params()
    assert [p["name"] for p in params] == [
        "input", "codes", "scales", "positions", "block_table"]
    codes = params[1]
    assert codes["is_output"] and codes["dtype"] == {"code": 0, "bits": 8}
    assert codes["shape"][1:] == (2, 16, 64) and codes["shape"][0] < 0
    assert codes["dim_names"] == ("pages", "", "", "")
    assert params[4]["dim_names"] == ("batch", "max_blocks")


def test_errors():
    with pytest.raises(lowbit.LowbitError, match="is not a KV kernel"):
        lowbit.kv_jit("kv_shuffle kv_int8_g32 heads=2 head_dim=64")
    append = lowbit.kv_jit(APPEND)
    keys = np.zeros((1, 1, 2, 4), dtype=np.float16)
    wide = np.zeros((1, 1, 4, 5), dtype=np.int8)
    with pytest.raises(lowbit.LowbitError,
                       match="dimension 3 is 5; the kernel takes 4"):
        append(keys, wide, np.ones(1, np.float32), np.zeros(1, np.int32))
    with pytest.raises(lowbit.LowbitError, match="expected int8"):
        append(keys, np.zeros((1, 1, 4, 4), np.float32),
               np.ones(1, np.float32), np.zeros(1, np.int32))

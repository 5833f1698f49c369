"""lowbit.kv_jit("matmul ..."): the quantized-weight matmul from Python
(through the C API and Jit::getKv, docs/matmul.md). int8 codes with a
power-of-two per-tensor scale and integer X make every product and sum
exact, so Y equals numpy's float64 result exactly; the parameters'
description; a K mismatch is refused."""

import numpy as np
import pytest

import lowbit

SPEC = "matmul int8 from=f32 bias"
M, N, K = 3, 5, 40


def arrays():
    rng = np.random.default_rng(27)
    codes = rng.integers(-127, 128, (N, K)).astype(np.int8)
    scales = np.full((1, 1), 0.5, dtype=np.float32)
    x = rng.integers(-4, 5, (M, K)).astype(np.float32)
    bias = rng.integers(-8, 9, (1, N)).astype(np.float32)
    return x, codes, scales, bias


def test_exact_product():
    kernel = lowbit.kv_jit(SPEC)
    assert kernel.spec == "matmul int8 from=f32 to=f32 bias dynamic"
    x, codes, scales, bias = arrays()
    y = np.zeros((M, N), dtype=np.float32)
    kernel(x, codes, scales, bias, y)
    expected = x.astype(np.float64) @ (codes.astype(np.float64) * 0.5).T
    assert (y == expected + bias).all()


def test_params():
    params = lowbit.kv_jit(SPEC).params()
    assert [p["name"] for p in params] == ["x", "codes", "scales", "bias",
                                           "y"]
    assert params[0]["dim_names"] == ("m", "k")
    assert params[4]["is_output"] and params[4]["dim_names"] == ("m", "n")


def test_k_mismatch():
    kernel = lowbit.kv_jit(SPEC)
    x, codes, scales, bias = arrays()
    with pytest.raises(lowbit.LowbitError):
        kernel(x[:, :-1].copy(), codes, scales, bias,
               np.zeros((M, N), np.float32))

"""Every lowbit.torch custom op on CPU tensors, bit for bit against the
numpy path (lowbit.quantize / lowbit.jit / lowbit.kv_jit on numpy arrays)."""

import numpy as np
import pytest
torch = pytest.importorskip("torch")

import lowbit  # noqa: E402
import lowbit.torch as lt  # noqa: E402

VALUE_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _values(rows, cols, dtype, seed=0):
    """Values over a wide range, with zeros, ties and tiny blocks."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=generator)
    x = x * torch.logspace(-3, 3, cols)
    x[::3] = torch.round(x[::3] * 4) / 8  # exact halves: rounding ties
    x[0, :32] = 0
    return x.to(dtype)


def _numpy(x):
    """What the numpy path gets: float32/float16 as is; bfloat16 widened to
    float32 (numpy has no bfloat16), which lowbit reads exactly."""
    return (x.float() if x.dtype == torch.bfloat16 else x).numpy()


def _raw(tensor):
    """The bytes (or float scales) of a torch result, as numpy."""
    if tensor.dtype.itemsize == 1:
        tensor = tensor.view(torch.uint8)
    elif tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.uint16)
    return tensor.numpy()


@pytest.mark.parametrize("scheme", lowbit.schemes())
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
def test_quantize_dequantize_match_numpy(scheme, dtype):
    x = _values(6, 256, dtype)
    q = lt.quantize(x, scheme)
    reference = lowbit.quantize(_numpy(x), scheme)
    assert _raw(q.codes).tobytes() == reference.codes.tobytes()
    assert _raw(q.scales).tobytes() == reference.scales.tobytes()
    assert (q.zeros is None) == (reference.zeros is None)
    if q.zeros is not None:
        assert np.array_equal(q.zeros.numpy(), reference.zeros)
    assert (q.global_scale is None) == (reference.global_scale is None)
    if q.global_scale is not None:
        assert q.global_scale.numpy().tobytes() == \
            reference.global_scale.tobytes()
    values = lowbit.dequantize(reference)
    assert np.array_equal(lt.dequantize(q).numpy(), values)
    half = lt.dequantize(q, dtype=torch.float16)
    assert half.dtype == torch.float16
    assert np.array_equal(half.numpy(),
                          lowbit.dequantize(reference, dtype="float16"))


def test_nd_input_keeps_its_shape():
    x = _values(6, 64, torch.float32).reshape(2, 3, 64)
    q = lt.quantize(x, "mxfp4")
    assert q.codes.shape == (6, 32) and q.shape == (2, 3, 64)
    assert lt.dequantize(q).shape == (2, 3, 64)


@pytest.mark.parametrize("scheme", ["fp8_e4m3", "int8_g64", "int4_g128",
                                    "mxfp4", "nvfp4"])
def test_static_scales_match_numpy(scheme):
    calibration = lowbit.quantize(_numpy(_values(4, 128, torch.float32, 1)),
                                  scheme)
    x = _values(4, 128, torch.float32, 2)
    reference = lowbit.quantize(x.numpy(), scheme,
                                scales=calibration.scales,
                                zeros=calibration.zeros,
                                global_scale=calibration.global_scale)
    as_torch = [None if part is None else torch.from_numpy(part)
                for part in (calibration.scales, calibration.zeros,
                             calibration.global_scale)]
    # Scales in torch's dtype (e8m0, e4m3) and as the raw bytes both work.
    scales = as_torch[0].view(lt.storage_dtypes(scheme)[1]) \
        if as_torch[0].dtype == torch.uint8 else as_torch[0]
    for given in (scales, as_torch[0]):
        q = lt.quantize(x, scheme, scales=given, zeros=as_torch[1],
                        global_scale=as_torch[2])
        assert _raw(q.codes).tobytes() == reference.codes.tobytes()


def test_given_global_scale_matches_numpy():
    x = _values(4, 64, torch.bfloat16)
    global_scale = torch.tensor([0.02], dtype=torch.float32)
    q = lt.quantize(x, "nvfp4", global_scale=global_scale)
    reference = lowbit.quantize(_numpy(x), "nvfp4",
                                global_scale=global_scale.numpy())
    assert _raw(q.codes).tobytes() == reference.codes.tobytes()
    assert _raw(q.scales).tobytes() == reference.scales.tobytes()
    assert q.global_scale is global_scale


FUSED = [
    ("rmsnorm(eps=1e-6) | quantize nvfp4 from={dtype}", ["weight"]),
    ("add_rmsnorm(eps=1e-5) | quantize mxfp4 from={dtype}",
     ["residual", "weight"]),
    ("smooth | quantize fp8_e4m3 from={dtype}", ["smooth"]),
    ("silu_mul | quantize mxfp8 from={dtype}", []),
    ("hadamard(32) | quantize int8_g64 from={dtype} rows=4 cols=128", []),
]


@pytest.mark.parametrize("spec,sides", FUSED)
@pytest.mark.parametrize("dtype", VALUE_DTYPES)
def test_fused_matches_numpy_kernel(spec, sides, dtype):
    name = {torch.float32: "f32", torch.float16: "f16",
            torch.bfloat16: "bf16"}[dtype]
    spec = spec.format(dtype=name)
    rows, cols = 4, 128
    width = 2 * cols if spec.startswith("silu_mul") else cols
    x = _values(rows, width, dtype)
    side = []
    for index, kind in enumerate(sides):
        shape = (rows, cols) if kind == "residual" else (1, cols)
        side.append((torch.rand(shape, generator=torch.Generator()
                                .manual_seed(index)) + 0.5).to(dtype))
    outputs = lt.fused_quantize(spec, x, *side)
    # The same CPU kernel called with numpy arrays (torch tensors through
    # DLPack for bf16, which numpy lacks), not through the custom op.
    kernel = lowbit.jit(spec)
    if dtype == torch.bfloat16:
        expected = [_raw(out) for out in kernel(x, *side)]
    else:
        expected = kernel(x.numpy(), *[t.numpy() for t in side])
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert _raw(got).tobytes() == np.ascontiguousarray(want).tobytes()
    scheme = spec.split("|")[-1].split()[1]
    codes_dtype, scales_dtype = lt.storage_dtypes(scheme)
    assert outputs[0].dtype == codes_dtype
    assert outputs[1].dtype == scales_dtype


def test_kv_append_dequantize_attend_match_numpy():
    heads, dim = 2, 16
    append = f"kv_append kv_fp8_e4m3 from=f16 heads={heads} head_dim={dim}"
    read = f"kv_dequantize kv_fp8_e4m3 to=f32 heads={heads} head_dim={dim}"
    attend = (f"kv_attend kv_fp8_e4m3 q=f32 q_heads={2 * heads} "
              f"kv_heads={heads} head_dim={dim} split=16")
    keys = _values(heads * 5, dim, torch.float16).reshape(1, heads, 5, dim)
    torch_cache = torch.zeros(1, heads, 8, dim, dtype=torch.int8)
    numpy_cache = np.zeros((1, heads, 8, dim), dtype=np.int8)
    torch_scale = torch.full((1,), 0.05)
    numpy_scale = torch_scale.numpy().copy()
    positions = torch.tensor([2], dtype=torch.int32)
    lt.kv_append(append, keys, torch_cache, torch_scale, positions)
    lowbit.kv_jit(append)(keys.numpy(), numpy_cache, numpy_scale,
                          positions.numpy())
    assert np.array_equal(torch_cache.numpy(), numpy_cache)
    assert torch_cache.abs().sum() > 0  # the append wrote codes

    values = torch.zeros(1, heads, 5, dim)
    lt.kv_dequantize(read, torch_cache, torch_scale, positions, values)
    expected = np.zeros((1, heads, 5, dim), dtype=np.float32)
    lowbit.kv_jit(read)(numpy_cache, numpy_scale, positions.numpy(), expected)
    assert np.array_equal(values.numpy(), expected)

    # docs/decode-attention.md's 2-D parameters: query [B Hq, D], codes
    # [B Hkv T, D], one scale each, seq_lens [1, B], output [B Hq, D],
    # partials [B Hkv S G, D + 2] with S = ceil(T / split) = 1.
    arrays = [_values(2 * heads, dim, torch.float32, 3),
              torch_cache.reshape(heads * 8, dim), torch_scale.reshape(1, 1),
              torch_cache.reshape(heads * 8, dim), torch_scale.reshape(1, 1),
              torch.tensor([[7]], dtype=torch.int32),
              torch.zeros(2 * heads, dim), torch.zeros(heads * 2, dim + 2)]
    names = [param["name"] for param in lowbit.kv_jit(attend).params()]
    assert names == ["query", "key_codes", "key_scales", "value_codes",
                     "value_scales", "seq_lens", "output", "partials"]
    numpy_arrays = [a.numpy().copy() for a in arrays]
    lt.kv_attend(attend, *arrays)
    lowbit.kv_jit(attend)(*numpy_arrays)
    assert np.array_equal(arrays[6].numpy(), numpy_arrays[6])
    assert np.array_equal(arrays[7].numpy(), numpy_arrays[7])
    assert arrays[6].abs().sum() > 0


def test_errors_are_lowbit_errors():
    with pytest.raises(lowbit.LowbitError, match="mxfp9"):
        lt.quantize(torch.zeros(2, 32), "mxfp9")
    with pytest.raises(lowbit.LowbitError, match="torch.int32"):
        lt.quantize(torch.zeros(2, 32, dtype=torch.int32), "mxfp4")
    with pytest.raises(lowbit.LowbitError,
                       match="not a kv_append or kivi_append kernel"):
        lt.kv_append("kv_dequantize kv_fp8_e4m3 to=f32 heads=1 head_dim=4",
                     torch.zeros(1, 1, 4, 4, dtype=torch.int8),
                     torch.ones(1), torch.zeros(1, dtype=torch.int32),
                     torch.zeros(1, 1, 1, 4))

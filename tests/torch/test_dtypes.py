"""torch's low-bit dtypes in and out: the codes and scales lowbit.torch
returns mean, read as torch's own dtypes, the values lowbit dequantizes
to; tensors torch itself made in those dtypes go back in."""

import pytest
torch = pytest.importorskip("torch")

import lowbit  # noqa: E402
import lowbit.torch as lt  # noqa: E402

# e2m1's eight magnitudes (OCP MX), for unpacking float4_e2m1fn_x2, which
# torch cannot convert to float.
E2M1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6])


def _e2m1_values(packed):
    """[rows, cols / 2] float4_e2m1fn_x2 -> [rows, cols] float32 (element
    0 in the low nibble)."""
    raw = packed.view(torch.uint8)
    nibbles = torch.stack([raw & 0xF, raw >> 4], dim=-1).flatten(-2)
    values = E2M1[(nibbles & 7).long()]
    return torch.where(nibbles >= 8, -values, values)


def _x():
    generator = torch.Generator().manual_seed(7)
    return torch.randn(4, 64, generator=generator) * 3


@pytest.mark.parametrize("scheme,dtype", [("fp8_e4m3", torch.float8_e4m3fn),
                                          ("fp8_e5m2", torch.float8_e5m2)])
def test_fp8_codes_are_torch_fp8(scheme, dtype):
    q = lt.quantize(_x(), scheme)
    assert q.codes.dtype == dtype
    assert torch.equal(q.codes.float() * q.scales, lt.dequantize(q))


def test_mx_scales_are_e8m0():
    q = lt.quantize(_x(), "mxfp8")
    assert q.scales.dtype == torch.float8_e8m0fnu
    powers = torch.exp2(q.scales.view(torch.uint8).float() - 127)
    assert torch.equal(q.scales.float(), powers)
    values = q.codes.float() * q.scales.float().repeat_interleave(32, dim=1)
    assert torch.equal(values, lt.dequantize(q))


def test_nvfp4_is_float4_x2_with_e4m3_scales():
    q = lt.quantize(_x(), "nvfp4")
    assert (q.codes.dtype, q.codes.shape) == (torch.float4_e2m1fn_x2, (4, 32))
    assert q.scales.dtype == torch.float8_e4m3fn
    scales = q.scales.float().repeat_interleave(16, dim=1)
    # lowbit multiplies the code by the combined scale (s * g).
    values = _e2m1_values(q.codes) * (scales * q.global_scale)
    assert torch.equal(values, lt.dequantize(q))


def test_mxfp4_is_float4_x2():
    q = lt.quantize(_x(), "mxfp4")
    assert q.codes.dtype == torch.float4_e2m1fn_x2
    values = _e2m1_values(q.codes) * q.scales.float().repeat_interleave(
        32, dim=1)
    assert torch.equal(values, lt.dequantize(q))


def test_other_codes_are_bytes():
    for scheme, dtype in (("int4_g128", torch.uint8),
                          ("mxfp6_e2m3", torch.uint8),
                          ("int8", torch.int8)):
        q = lt.quantize(torch.randn(2, 128), scheme)
        assert q.codes.dtype == dtype, scheme


def test_torch_made_fp8_goes_in():
    """A tensor torch cast to float8_e4m3fn, with its scale, dequantizes
    through lowbit to what torch's own upcast gives."""
    x = _x()
    scale = x.abs().max().reshape(1, 1) / 448
    codes = (x / scale).to(torch.float8_e4m3fn)
    q = lowbit.QuantizedTensor(codes, scale, None, None, "fp8_e4m3",
                               tuple(x.shape))
    assert torch.equal(lt.dequantize(q), codes.float() * scale)
    # And lowbit's own quantize of x gives exactly those codes.
    assert torch.equal(lt.quantize(x, "fp8_e4m3").codes.view(torch.uint8),
                       codes.view(torch.uint8))


@pytest.mark.parametrize("scheme", lowbit.schemes())
def test_round_trip_through_dtypes_and_bytes(scheme):
    """Codes and scales in torch's dtypes, or as their raw bytes, give the
    same dequantized bits."""
    q = lt.quantize(torch.randn(3, 128), scheme)
    raw = q._replace(
        codes=q.codes.view(torch.uint8) if q.codes.dtype != torch.int8
        else q.codes,
        scales=q.scales.view(torch.uint8) if q.scales.dtype.itemsize == 1
        else q.scales)
    for dtype in (torch.float32, torch.bfloat16):
        assert torch.equal(lt.dequantize(q, dtype=dtype).view(torch.uint8),
                           lt.dequantize(raw, dtype=dtype).view(torch.uint8))

"""lowbit against torch's fp8 casts and torchao's MX and NVFP4 tensors on
the same inputs (wide-range values with zero blocks, rounding ties and
tiny blocks). What agrees and what differs is docs/embedding.md's table;
these checks are where its claims come from."""

import pytest
torch = pytest.importorskip("torch")

import lowbit.torch as lt  # noqa: E402

mx_tensor = pytest.importorskip("torchao.prototype.mx_formats.mx_tensor")
nvfp4_tensor = pytest.importorskip(
    "torchao.prototype.mx_formats.nvfp4_tensor")
constants = pytest.importorskip("torchao.prototype.mx_formats.constants")

DTYPES = [torch.float32, torch.bfloat16]


def _values(dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 256, generator=generator)
    x = x * torch.logspace(-3, 3, 256)
    x[::7] = torch.round(x[::7] * 4) / 8  # exact halves: rounding ties
    x[3] = 0
    x[5, :32] = 1e-30
    return x.to(dtype)


def _bytes(tensor):
    return tensor.view(torch.uint8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scheme,elem", [
    ("fp8_e4m3", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2)])
def test_fp8_equals_torch_cast(dtype, scheme, elem):
    """Per-tensor FP8: lowbit's scale is amax / max and its codes are
    torch's round-to-nearest-even cast of x / scale."""
    x = _values(dtype)
    q = lt.quantize(x, scheme)
    amax = x.float().abs().max()
    assert q.scales.item() == (amax / torch.finfo(elem).max).item()
    assert torch.equal(_bytes(q.codes), _bytes((x.float() / q.scales)
                                               .to(elem)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scheme,elem", [
    ("mxfp8", torch.float8_e4m3fn), ("mxfp4", torch.float4_e2m1fn_x2),
    ("mxfp6_e2m3", "fp6_e2m3"), ("mxfp6_e3m2", "fp6_e3m2")])
def test_mx_equals_torchao_to_mx(dtype, scheme, elem):
    """OCP MX with the floor scale rule: torchao's to_mx (FLOOR, its
    default) gives the same e8m0 scales and the same codes."""
    elem = {"fp6_e2m3": constants.DTYPE_FP6_E2M3,
            "fp6_e3m2": constants.DTYPE_FP6_E3M2}.get(elem, elem)
    x = _values(dtype)
    q = lt.quantize(x, scheme)
    scales, codes = mx_tensor.to_mx(x, elem, 32)
    assert torch.equal(_bytes(scales), _bytes(q.scales))
    assert torch.equal(_bytes(codes).reshape(q.codes.shape), _bytes(q.codes))


@pytest.mark.parametrize("dtype", DTYPES)
def test_nvfp4_against_torchao(dtype):
    """NVFP4: the same global scale (torchao's per_tensor_amax_to_scale),
    and the same block scales and codes wherever the block scale is an
    e4m3 normal. Where amax / (6 g) is below 2^-6, lowbit keeps the e4m3
    subnormal scale (codes 1-7) and torchao clamps it to 2^-6 (code 8);
    there lowbit's error is the smaller."""
    x = _values(dtype)
    q = lt.quantize(x, "nvfp4")
    amax = x.float().abs().max()
    assert torch.equal(q.global_scale.reshape(()),
                       nvfp4_tensor.per_tensor_amax_to_scale(amax))
    peer = nvfp4_tensor.NVFP4Tensor.to_nvfp4(
        x, per_tensor_scale=q.global_scale.reshape(()))
    ours, theirs = _bytes(q.scales), _bytes(peer.scale)
    differ = ours != theirs
    assert differ.any()  # this input has such blocks
    assert torch.equal(differ, ours < 8)
    assert (theirs[differ] == 8).all()
    block_codes = lambda t: _bytes(t).reshape(64, 16, 8)
    same_codes = (block_codes(q.codes) == block_codes(peer.qdata)).all(-1)
    assert same_codes[~differ].all()
    wide = differ.repeat_interleave(16, dim=1)
    error = lambda y: (y - x.float())[wide].abs().mean()
    assert error(lt.dequantize(q)) < error(peer.dequantize(torch.float32))

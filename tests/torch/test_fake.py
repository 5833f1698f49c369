"""The fake (meta) kernels: the shapes and dtypes they report are those of
the real results, and torch.library.opcheck finds the ops well declared
(schema, fake tensors, AOT dispatch)."""

import pytest
torch = pytest.importorskip("torch")
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import lowbit  # noqa: E402
import lowbit.torch as lt  # noqa: E402


def _same_meta(fake, real):
    assert len(fake) == len(real)
    for f, r in zip(fake, real):
        assert (f.shape, f.dtype) == (r.shape, r.dtype)


@pytest.mark.parametrize("scheme", lowbit.schemes())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_quantize_fake_matches_real(scheme, dtype):
    x = torch.randn(3, 2, 128).to(dtype)
    real = torch.ops.lowbit.quantize(x, scheme)
    with FakeTensorMode() as mode:
        fake = torch.ops.lowbit.quantize(mode.from_tensor(x), scheme)
    _same_meta(fake, real)
    q = lt.quantize(x, scheme)
    with FakeTensorMode() as mode:
        fake = torch.ops.lowbit.dequantize(
            *[None if t is None else mode.from_tensor(t)
              for t in (q.codes, q.scales, q.zeros, q.global_scale)],
            scheme, list(q.shape), torch.float16)
    assert (fake.shape, fake.dtype) == (x.shape, torch.float16)


@pytest.mark.parametrize("spec,side_shapes", [
    ("rmsnorm(eps=1e-6) | quantize nvfp4 from=f32", [(1, 64)]),
    ("add_rmsnorm | quantize mxfp4 from=f32", [(4, 64), (1, 64)]),
    ("silu_mul | quantize fp8_e4m3 from=f32", []),
])
def test_fused_fake_matches_real(spec, side_shapes):
    width = 128 if spec.startswith("silu_mul") else 64
    x = torch.randn(4, width)
    side = [torch.rand(shape) + 0.5 for shape in side_shapes]
    real = torch.ops.lowbit.fused_quantize(spec, x, side)
    with FakeTensorMode() as mode:
        fake = torch.ops.lowbit.fused_quantize(
            spec, mode.from_tensor(x), [mode.from_tensor(t) for t in side])
    _same_meta(fake, real)


# torch's schema check copies and multiplies results, which torch 2.14
# does not implement for float8 and float4 tensors on the CPU: schemes
# with such codes or scales run opcheck's other checks.
ALL_CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor",
              "test_aot_dispatch_dynamic")


@pytest.mark.parametrize("scheme", ["mxfp4", "nvfp4", "int4_g128",
                                    "int8_g64", "fp8_e5m2", "mxfp8"])
def test_opcheck_quantize_and_dequantize(scheme):
    low_bit = any(dtype.is_floating_point and dtype.itemsize == 1
                  for dtype in lt.storage_dtypes(scheme))
    checks = ALL_CHECKS[1:] if low_bit else ALL_CHECKS
    x = torch.randn(4, 64)
    torch.library.opcheck(torch.ops.lowbit.quantize.default, (x, scheme),
                          test_utils=checks)
    q = lt.quantize(x, scheme)
    torch.library.opcheck(
        torch.ops.lowbit.dequantize.default,
        (q.codes, q.scales, q.zeros, q.global_scale, scheme, [4, 64],
         torch.bfloat16), test_utils=checks)
    torch.library.opcheck(
        torch.ops.lowbit.quantize_static.default,
        (x, scheme, q.scales, q.zeros, q.global_scale), test_utils=checks)


def test_opcheck_fused_quantize():
    torch.library.opcheck(
        torch.ops.lowbit.fused_quantize.default,
        ("rmsnorm(eps=1e-6) | quantize int8_g64 from=f32",
         torch.randn(4, 64), [torch.ones(1, 64)]))


def test_opcheck_kv_append():
    spec = "kv_append kv_int8_g32 from=f16 heads=1 head_dim=32"
    keys = torch.randn(1, 1, 2, 32).half()
    codes = torch.zeros(1, 1, 4, 32, dtype=torch.int8)
    scales = torch.zeros(1, 1, 4, 1)
    positions = torch.tensor([0], dtype=torch.int32)
    names = [p["name"] for p in lowbit.kv_jit(spec).params()]
    assert names == ["input", "codes", "scales", "positions"]
    torch.library.opcheck(torch.ops.lowbit.kv_append.default,
                          (spec, [keys, positions], [codes, scales]))

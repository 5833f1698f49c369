"""torch tensors in, torch tensors out (ctest label `torch`; skipped where
torch is not installed)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import lowbit  # noqa: E402


def test_torch_in_torch_out():
    x = torch.randn(4, 64, dtype=torch.float32)
    q = lowbit.quantize(x, "nvfp4")
    assert all(isinstance(part, torch.Tensor)
               for part in (q.codes, q.scales, q.global_scale))
    reference = lowbit.quantize(x.numpy(), "nvfp4")
    assert q.codes.numpy().tobytes() == reference.codes.tobytes()
    assert q.scales.numpy().tobytes() == reference.scales.tobytes()
    y = lowbit.dequantize(q)
    assert isinstance(y, torch.Tensor)
    assert np.array_equal(y.numpy(), lowbit.dequantize(reference))


def test_bfloat16():
    x = torch.randn(2, 64, dtype=torch.bfloat16)
    q = lowbit.quantize(x, "mxfp4")
    assert q.codes.numpy().tobytes() == lowbit.quantize(
        x.float().numpy(), "mxfp4").codes.tobytes()
    assert lowbit.dequantize(q, dtype="bfloat16").dtype == torch.bfloat16


def test_cuda_tensors():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.randn(4, 64, device="cuda")
    with pytest.raises(lowbit.LowbitError) as raised:
        lowbit.quantize(x, "mxfp4")
    assert raised.value.code == "unsupported"
    kernel = lowbit.jit("quantize fp8_e4m3 dynamic", target="sm_90a")
    codes, scale = kernel.launch(x)
    torch.cuda.synchronize()
    reference = lowbit.quantize(x.cpu(), "fp8_e4m3")
    assert codes.cpu().numpy().tobytes() == reference.codes.numpy().tobytes()

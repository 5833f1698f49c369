"""The CUDA path. Without a GPU: the capture guard (against stand-ins for
torch.cuda's stream queries) and a launch through tests/jit's driver stub;
with one, the ops run on CUDA tensors bit for bit against the CPU path and
inside a CUDA graph."""

import os
import pathlib
import subprocess
import sys
import types

import pytest
torch = pytest.importorskip("torch")

import lowbit  # noqa: E402
import lowbit.torch as lt  # noqa: E402


class _Kernel:
    """A stand-in for a lowbit.Kernel: records the streams it launched on."""

    spec = "quantize mxfp4 from=f32 scale=dynamic"

    def __init__(self):
        self.streams = []

    def launch(self, *arrays, stream):
        self.streams.append(stream)
        return ()


def test_capture_needs_a_launch_on_that_stream_first(monkeypatch):
    capturing = [False]
    stream = types.SimpleNamespace(cuda_stream=0x1234)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: stream)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing",
                        lambda: capturing[0])
    kernel, tensor = _Kernel(), types.SimpleNamespace(
        device=torch.device("cuda", 0))
    capturing[0] = True
    with pytest.raises(lowbit.LowbitError, match="before a CUDA graph"):
        lt._launch(kernel, [tensor])
    assert kernel.streams == []  # refused before reaching the driver
    capturing[0] = False
    lt._launch(kernel, [tensor])
    capturing[0] = True
    lt._launch(kernel, [tensor])  # warmed on this stream: captured
    assert kernel.streams == [0x1234, 0x1234]
    stream.cuda_stream = 0x5678  # another stream: its workspace is new
    with pytest.raises(lowbit.LowbitError, match="before a CUDA graph"):
        lt._launch(kernel, [tensor])


def test_other_devices_are_refused():
    tensor = types.SimpleNamespace(device=torch.device("cuda", 1))
    with pytest.raises(lowbit.LowbitError, match="device 0"):
        lt._launch(_Kernel(), [tensor])


needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="no CUDA device")


def _bits(tensor):
    return tensor.cpu().contiguous().view(torch.uint8)


@needs_gpu
@pytest.mark.parametrize("scheme", ["fp8_e4m3", "mxfp8", "mxfp4", "nvfp4",
                                    "int8_g64"])
def test_cuda_matches_cpu(scheme):
    x = torch.randn(64, 256)
    cpu = lt.quantize(x, scheme)
    gpu = lt.quantize(x.cuda(), scheme)
    torch.cuda.synchronize()
    for ours, theirs in zip(gpu, cpu):
        if isinstance(ours, torch.Tensor):
            assert torch.equal(_bits(ours), _bits(theirs))
    assert torch.equal(_bits(lt.dequantize(gpu)), _bits(lt.dequantize(cpu)))


@needs_gpu
def test_cuda_graph_capture_and_replay():
    x = torch.randn(32, 128, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        lt.dequantize(lt.quantize(x, "mxfp4"))  # warm up on the stream
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        out = lt.dequantize(lt.quantize(x, "mxfp4"))
    x.copy_(torch.randn(32, 128))
    graph.replay()
    torch.cuda.synchronize()
    expected = lt.dequantize(lt.quantize(x.cpu(), "mxfp4"))
    assert torch.equal(_bits(out), _bits(expected))


@needs_gpu
def test_cuda_compile_fullgraph():
    spec = "rmsnorm(eps=1e-6) | quantize nvfp4 from=bf16"
    x = torch.randn(16, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(1, 64, device="cuda", dtype=torch.bfloat16)
    eager = lt.fused_quantize(spec, x, w)
    compiled = torch.compile(lambda a, b: lt.fused_quantize(spec, a, b),
                             fullgraph=True)(x, w)
    for a, b in zip(eager, compiled):
        assert torch.equal(_bits(a), _bits(b))


@pytest.mark.skipif("LOWBIT_CUDA_STUB" not in os.environ,
                    reason="LOWBIT_CUDA_STUB (tests/jit's driver stub) not "
                    "set; tools/run-torch-tests sets it")
def test_launch_reaches_the_driver_stub_on_torchs_stream():
    """stub_launch.py in its own process (lowbit loads its driver once per
    process): a real sm_90a fp8_e4m3 kernel (two launches: amax, then
    codes) launched by lowbit.torch on torch's current stream."""
    environment = dict(os.environ,
                       LOWBIT_LIBCUDA=os.environ["LOWBIT_CUDA_STUB"],
                       LOWBIT_LIBNVJITLINK="/nonexistent/libnvJitLink.so")
    result = subprocess.run(
        [sys.executable, str(pathlib.Path(__file__).with_name(
            "stub_launch.py"))],
        env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "capture before a launch: refused unsupported",
        "launches after the refusal: 0",
        "launches: 2 streams: ['0x5eed']",
        "launches after a captured launch: 4",
    ]

"""torch.compile(fullgraph=True) of a small block that uses the ops:
RMSNorm -> lowbit fused quantize -> dequantize. No graph break, the
lowbit ops stay ops in the graph, and the compiled block gives the same
bits as eager."""

import pytest
torch = pytest.importorskip("torch")

import lowbit  # noqa: E402
import lowbit.torch as lt  # noqa: E402


class FusedBlock(torch.nn.Module):
    """RMSNorm fused into lowbit's NVFP4 quantize, then dequantized and
    projected (a fake-quantized activation, as in QAT or an emulation)."""

    def __init__(self, cols, spec):
        super().__init__()
        self.spec = spec
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, cols)
                                         .reshape(1, cols))
        self.proj = torch.nn.Linear(cols, cols, bias=False)

    def forward(self, x):
        codes, scales, global_scale = lt.fused_quantize(
            self.spec, x, self.weight.to(x.dtype))
        q = lowbit.QuantizedTensor(codes, scales, None, global_scale,
                                   "nvfp4", tuple(x.shape))
        return self.proj(lt.dequantize(q, dtype=x.dtype))


class UnfusedBlock(torch.nn.Module):
    """torch's RMSNorm, then lowbit's quantize and dequantize ops. It
    returns the norm too: inductor's RMSNorm is not bit-equal to eager's
    (3 of 30 random [8, 128] inputs differ in a last bit on torch 2.14.1),
    so the lowbit part is checked on the norm the compiled block made."""

    def __init__(self, cols, scheme):
        super().__init__()
        self.scheme = scheme
        self.norm = torch.nn.RMSNorm(cols, eps=1e-6)

    def forward(self, x):
        normed = self.norm(x)
        q = lt.quantize(normed, self.scheme)
        return normed, lt.dequantize(q, dtype=x.dtype) * 2


def _bits(tensor):
    return tensor.detach().contiguous().view(torch.uint8)


def _no_breaks_and_ops_in_graph(block, x, op_names):
    explanation = torch._dynamo.explain(block)(x)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1
    code = explanation.graphs[0].code
    for name in op_names:
        assert f"torch.ops.lowbit.{name}" in code, code


@pytest.mark.parametrize("dtype,name", [(torch.float32, "f32"),
                                        (torch.bfloat16, "bf16")])
def test_fused_block_compiles_without_breaks_same_bits(dtype, name):
    torch._dynamo.reset()
    block = FusedBlock(64, f"rmsnorm(eps=1e-6) | quantize nvfp4 from={name}")
    block = block.to(dtype)
    compiled = torch.compile(block, fullgraph=True)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        _no_breaks_and_ops_in_graph(block, torch.randn(8, 64).to(dtype),
                                    ["fused_quantize", "dequantize"])
        for _ in range(5):
            x = torch.randn(8, 64, generator=generator).to(dtype)
            eager, result = block(x), compiled(x)
            assert result.dtype == eager.dtype
            assert torch.equal(_bits(result), _bits(eager))


@pytest.mark.parametrize("scheme", ["mxfp4", "nvfp4", "fp8_e4m3",
                                    "int4_g128"])
def test_unfused_block_compiles_without_breaks_same_bits(scheme):
    torch._dynamo.reset()
    block = UnfusedBlock(128, scheme)
    x = torch.randn(4, 128, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        _no_breaks_and_ops_in_graph(block, x, ["quantize", "dequantize"])
        normed, compiled = torch.compile(block, fullgraph=True)(x)
        eager = lt.dequantize(lt.quantize(normed, scheme)) * 2
    assert torch.equal(_bits(compiled), _bits(eager))
    # The quantize itself, compiled alone, gives lowbit's bytes.
    q = torch.compile(lambda t: lt.quantize(t, scheme), fullgraph=True)(x)
    reference = lowbit.quantize(x.numpy(), scheme)
    assert _bits(q.codes).numpy().tobytes() == reference.codes.tobytes()


def test_new_shape_recompiles_without_breaks():
    torch._dynamo.reset()
    block = FusedBlock(64, "rmsnorm(eps=1e-6) | quantize nvfp4 from=f32")
    compiled = torch.compile(block, fullgraph=True)
    with torch.no_grad():
        for rows in (2, 3, 5):
            x = torch.randn(rows, 64)
            assert torch.equal(_bits(compiled(x)), _bits(block(x)))


def test_plain_module_call_would_break_the_graph():
    """What the ops avoid: lowbit.quantize itself is a call into the
    extension module, which dynamo cannot trace (so the check above can
    fail)."""
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(
        lambda t: lowbit.quantize(t * 2, "mxfp4").codes)(torch.randn(2, 32))
    assert explanation.graph_break_count > 0


def test_kv_append_compiles_without_breaks_same_cache():
    """The KV ops mutate the caches they are given: compiled, the append
    writes the same codes as eager."""
    torch._dynamo.reset()
    spec = "kv_append kv_fp8_e4m3 from=f16 heads=2 head_dim=16"

    def step(keys, codes, scales, positions):
        lt.kv_append(spec, keys, codes, scales, positions)
        return codes.float().sum()

    keys = torch.randn(1, 2, 3, 16, generator=torch.Generator()
                       .manual_seed(4)).half()
    positions = torch.tensor([1], dtype=torch.int32)
    eager_codes = torch.zeros(1, 2, 8, 16, dtype=torch.int8)
    compiled_codes = eager_codes.clone()
    explanation = torch._dynamo.explain(step)(
        keys, eager_codes.clone(), torch.full((1,), 0.05), positions)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    step(keys, eager_codes, torch.full((1,), 0.05), positions)
    torch.compile(step, fullgraph=True)(keys, compiled_codes,
                                        torch.full((1,), 0.05), positions)
    assert eager_codes.abs().sum() > 0
    assert torch.equal(compiled_codes, eager_codes)

"""lowbit.torch: lowbit's kernels as PyTorch custom ops.

Imported on its own (``import lowbit.torch``), never by ``import lowbit``,
so lowbit works where torch is not installed. The ops live in the
``lowbit`` namespace of ``torch.ops`` and have fake (meta) kernels, so
``torch.compile(fullgraph=True)`` traces them without a graph break:

- ``lowbit::quantize``, ``lowbit::quantize_static``, ``lowbit::dequantize``
  (the reference quantizer on CPU tensors, the JIT's kernels on CUDA);
- ``lowbit::fused_quantize`` (a fused spec: ``rmsnorm(eps=1e-6) | quantize
  nvfp4``; the CPU JIT kernel, or the device's);
- ``lowbit::kv_append``, ``lowbit::kv_dequantize``, ``lowbit::kv_attend``
  (the KV-cache kernels of docs/kv-kernels.md; they update the caches and
  outputs they are given).

Codes and scales come out in torch's low-bit dtypes where torch has one:
e4m3 and ue4m3 as ``float8_e4m3fn``, e5m2 as ``float8_e5m2``, e8m0 as
``float8_e8m0fnu``, nibble-packed e2m1 as ``float4_e2m1fn_x2``, int8 as
``int8``; other codes stay ``uint8``. They are views of lowbit's bytes, so
the bits are those of the numpy path, and the ops take them back (or the
plain ``uint8`` bytes). docs/embedding.md, "PyTorch", has the details.
"""

import functools
from typing import List, Optional, Tuple

import torch
from torch import Tensor

import lowbit
from lowbit import LowbitError, LowbitValueError, QuantizedTensor, _lowbit

__all__ = [
    "dequantize",
    "fused_quantize",
    "kv_append",
    "kv_attend",
    "kv_dequantize",
    "quantize",
    "storage_dtypes",
]

# lowbit's element and scale formats that torch has a dtype for. ue4m3
# (NVFP4's scale) is e4m3 without its sign, so its codes are e4m3fn's.
_FORMAT_DTYPES = {
    "e4m3": torch.float8_e4m3fn,
    "ue4m3": torch.float8_e4m3fn,
    "e5m2": torch.float8_e5m2,
    "e8m0": torch.float8_e8m0fnu,
    "int8": torch.int8,
}
_FROM = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
# Empty stand-ins for the zero points and the global scale a scheme does
# not have: a custom op returns a fixed number of tensors.
_ABSENT = torch.Size([0])


def _checked(result):
    status, value = result
    lowbit._check(status)
    return value


@functools.lru_cache(maxsize=None)
def storage_dtypes(scheme):
    """(codes dtype, scales dtype) of `scheme`'s quantized tensor in torch:
    its formats' torch dtypes where torch has one, else uint8 codes and the
    scale's float dtype."""
    storage = _checked(_lowbit.scheme_storage(scheme))
    if storage["nibbles"]:
        codes = (torch.float4_e2m1fn_x2 if storage["element"] == "e2m1"
                 else torch.uint8)
    else:
        codes = _FORMAT_DTYPES.get(storage["element"], torch.uint8)
    scales = _FORMAT_DTYPES.get(storage["scale"])
    if scales is None:
        scales = {"f32": torch.float32, "f16": torch.float16,
                  "bf16": torch.bfloat16}[storage["scale"]]
    return codes, scales


def _bytes(tensor):
    """A low-bit tensor as the bytes lowbit reads (a view)."""
    if tensor.dtype.itemsize == 1 and tensor.dtype not in (torch.uint8,
                                                           torch.int8):
        return tensor.view(torch.uint8)
    return tensor


def _as(tensor, dtype):
    """lowbit's bytes (or float scales) as `dtype` (a view)."""
    return tensor if tensor.dtype == dtype else tensor.view(dtype)


def _rows_cols(shape):
    rows = 1
    for size in shape[:-1]:
        rows *= int(size)
    return rows, int(shape[-1])


# --- Device kernels --------------------------------------------------------

def _target(device):
    """lowbit's target for a CUDA device: sm_XY, with the 'a' features on
    sm_90 and later (the architecture-specific instructions lowbit uses)."""
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


@functools.lru_cache(maxsize=None)
def _kernel(spec, target):
    return lowbit.jit(spec, target)


@functools.lru_cache(maxsize=None)
def _kv_kernel(spec, target):
    return lowbit.kv_jit(spec, target)


# (kernel, stream) pairs that have launched once. A kernel's first launch
# loads its module, and a stream's first launch allocates and zeroes its
# workspace (docs/runtime.md, "Workspace"): neither may happen while a
# CUDA graph captures, so a capture is refused before it could fail inside
# the driver.
_launched = set()


def _launch(kernel, tensors):
    """Launches `kernel` on torch's current stream of the tensors' device,
    without a host synchronisation; outputs come from torch's caching
    allocator (the capture's pool while a CUDA graph captures)."""
    device = tensors[0].device
    if device.index not in (None, 0):
        raise LowbitError("unsupported",
                          f"a tensor on {device}: lowbit launches on CUDA "
                          "device 0")
    stream = torch.cuda.current_stream(device)
    key = (id(kernel), stream.cuda_stream)
    if key not in _launched and torch.cuda.is_current_stream_capturing():
        raise LowbitError(
            "unsupported",
            f"'{kernel.spec}' has not run on this stream before a CUDA graph "
            "capture: its first launch loads the module and allocates the "
            "stream's workspace; run it once on the capture stream first "
            "(torch.cuda.graph(graph, stream=...))")
    outputs = kernel.launch(*tensors, stream=stream.cuda_stream)
    _launched.add(key)
    return outputs


# --- quantize / dequantize -------------------------------------------------

def _check_values(x, what):
    if x.dtype not in _FROM:
        raise LowbitValueError(
            "invalid-argument",
            f"{what} is {x.dtype}: lowbit quantizes float32, "
            "float16 or bfloat16")


def _empty_absent(device, dtype):
    return torch.empty(_ABSENT, dtype=dtype, device=device)


@torch.library.custom_op("lowbit::quantize", mutates_args=())
def _quantize_op(x: Tensor, scheme: str,
                 global_scale: Optional[Tensor] = None
                 ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    _check_values(x, "the input")
    x = x.contiguous()
    codes_dtype, scales_dtype = storage_dtypes(scheme)
    if x.is_cuda:
        spec = f"quantize {scheme} from={_FROM[x.dtype]} scale=dynamic"
        inputs = [x]
        if global_scale is not None:
            spec += " global=given"
            inputs.append(global_scale.reshape(1, 1))
        kernel = _kernel(spec, _target(x.device))
        outputs = list(_launch(kernel, inputs))
        roles = [info["role"] for info in kernel.args(*_rows_cols(x.shape))
                 if info["is_output"]]
        parts = dict(zip(roles, outputs))
        codes, scales = parts[_ROLE_CODES], parts[_ROLE_SCALES]
        zeros, computed = parts.get(_ROLE_ZEROS), parts.get(_ROLE_GLOBAL)
    else:
        q = lowbit.quantize(x, scheme, global_scale=global_scale)
        codes, scales, zeros = q.codes, q.scales, q.zeros
        computed = q.global_scale if global_scale is None else None
    if zeros is None:
        zeros = _empty_absent(x.device, torch.uint8)
    computed = (_empty_absent(x.device, torch.float32) if computed is None
                else computed.reshape(1))
    return (_as(codes, codes_dtype), _as(scales, scales_dtype), zeros,
            computed)


@_quantize_op.register_fake
def _(x, scheme, global_scale=None):
    _check_values(x, "the input")
    layout = _checked(_lowbit.layout(scheme, *_rows_cols(x.shape)))
    codes_dtype, scales_dtype = storage_dtypes(scheme)
    zeros = (layout["scales_shape"] if layout["has_zeros"] else _ABSENT)
    computed = ((1,) if layout["has_global_scale"] and global_scale is None
                else _ABSENT)
    return (x.new_empty(layout["codes_shape"], dtype=codes_dtype),
            x.new_empty(layout["scales_shape"], dtype=scales_dtype),
            x.new_empty(zeros, dtype=torch.uint8),
            x.new_empty(computed, dtype=torch.float32))


@torch.library.custom_op("lowbit::quantize_static", mutates_args=())
def _quantize_static_op(x: Tensor, scheme: str, scales: Tensor,
                        zeros: Optional[Tensor] = None,
                        global_scale: Optional[Tensor] = None) -> Tensor:
    _check_values(x, "the input")
    x = x.contiguous()
    codes_dtype, _ = storage_dtypes(scheme)
    if x.is_cuda:
        spec = f"quantize {scheme} from={_FROM[x.dtype]} scale=static"
        inputs = [x, _bytes(scales).contiguous()]
        inputs += [] if zeros is None else [zeros.contiguous()]
        inputs += [] if global_scale is None else [global_scale.reshape(1, 1)]
        (codes,) = _launch(_kernel(spec, _target(x.device)), inputs)
    else:
        codes = lowbit.quantize(x, scheme, scales=_bytes(scales), zeros=zeros,
                                global_scale=global_scale).codes
    return _as(codes, codes_dtype)


@_quantize_static_op.register_fake
def _(x, scheme, scales, zeros=None, global_scale=None):
    _check_values(x, "the input")
    layout = _checked(_lowbit.layout(scheme, *_rows_cols(x.shape)))
    return x.new_empty(layout["codes_shape"], dtype=storage_dtypes(scheme)[0])


_TO = {torch.float32: "float32", torch.float16: "float16",
       torch.bfloat16: "bfloat16"}


@torch.library.custom_op("lowbit::dequantize", mutates_args=())
def _dequantize_op(codes: Tensor, scales: Tensor, zeros: Optional[Tensor],
                   global_scale: Optional[Tensor], scheme: str,
                   shape: List[int], dtype: torch.dtype) -> Tensor:
    if dtype not in _TO:
        raise LowbitValueError("invalid-argument",
                               f"dtype {dtype}: expected float32, float16 or "
                               "bfloat16")
    codes, scales = _bytes(codes), _bytes(scales)
    if not codes.is_cuda:
        return lowbit.dequantize(codes, scheme, scales=scales, zeros=zeros,
                                 global_scale=global_scale, shape=shape,
                                 dtype=_TO[dtype])
    rows, cols = _rows_cols(shape)
    output = torch.empty(shape, dtype=dtype, device=codes.device)
    spec = f"dequantize {scheme} to={_FROM[dtype]}"
    # A launch takes compact row-major buffers (docs/kernel-abi.md).
    arrays = [codes.contiguous(), scales.contiguous()]
    arrays += [] if zeros is None else [zeros.contiguous()]
    arrays += [] if global_scale is None else [global_scale.reshape(1, 1)]
    _launch(_kernel(spec, _target(codes.device)),
            arrays + [output.view(rows, cols)])
    return output


@_dequantize_op.register_fake
def _(codes, scales, zeros, global_scale, scheme, shape, dtype):
    return codes.new_empty(shape, dtype=dtype)


def quantize(x, scheme, *, scales=None, zeros=None, global_scale=None):
    """lowbit.quantize for torch tensors, through the custom ops (so
    torch.compile traces it): a QuantizedTensor whose codes and scales have
    storage_dtypes(scheme). Given `scales` (and `zeros`, `global_scale`)
    quantizes with those static scales; given `global_scale` alone, a
    dynamic scheme uses it (vLLM's NVFP4)."""
    shape = tuple(x.shape)
    if scales is not None:
        codes = torch.ops.lowbit.quantize_static(x, scheme, scales, zeros,
                                                 global_scale)
        return QuantizedTensor(codes, scales, zeros, global_scale, scheme,
                               shape)
    if zeros is not None:
        raise LowbitValueError("invalid-argument",
                               "zeros given without scales")
    codes, scales, zeros, computed = torch.ops.lowbit.quantize(
        x, scheme, global_scale)
    # Sizes are static here, so these are not data-dependent branches.
    return QuantizedTensor(
        codes, scales, zeros if zeros.numel() else None,
        computed if computed.numel() else global_scale, scheme, shape)


def dequantize(q, *, dtype=torch.float32):
    """Back to values of `dtype` (float32, float16 or bfloat16) from a
    QuantizedTensor (quantize()'s, or lowbit.quantize()'s on torch)."""
    return torch.ops.lowbit.dequantize(q.codes, q.scales, q.zeros,
                                       q.global_scale, q.scheme,
                                       list(q.shape), dtype)


# --- fused quantize --------------------------------------------------------

# lowbit's KernelParamRole (runtime/spec/KernelAbi.h), as kernel.args()
# reports it.
_ROLE_SCALES, _ROLE_ZEROS, _ROLE_GLOBAL, _ROLE_CODES = 1, 2, 3, 4


def _quantized_scheme(spec):
    """The scheme of a (fused) quantize spec: the word after 'quantize' in
    its last stage ("rmsnorm(eps=1e-6) | quantize nvfp4 from=bf16")."""
    words = spec.split("|")[-1].split()
    if len(words) < 2 or words[0] != "quantize":
        raise LowbitValueError("invalid-argument",
                               f"'{spec}' is not a (fused) quantize spec")
    return words[1]


def _fused_outputs(spec, target, x):
    """(role, dtype, shape) of each output of `spec`'s kernel for `x`."""
    kernel = _kernel(spec, target)
    rows, cols = _rows_cols(x.shape)
    if kernel.spec.startswith("silu_mul"):
        cols //= 2  # silu_mul reads [rows, 2 * cols] (lowbit.Kernel)
    codes_dtype, scales_dtype = storage_dtypes(_quantized_scheme(spec))
    outputs = []
    for info in kernel.args(rows, cols):
        if not info["is_output"]:
            continue
        role = info["role"]
        dtype = {_ROLE_CODES: codes_dtype, _ROLE_SCALES: scales_dtype,
                 _ROLE_ZEROS: torch.uint8,
                 _ROLE_GLOBAL: torch.float32}.get(role, x.dtype)
        shape = (1,) if role == _ROLE_GLOBAL else tuple(info["shape"])
        outputs.append((role, dtype, shape))
    return outputs


def _device_target(tensor):
    return _target(tensor.device) if tensor.is_cuda else "cpu"


@torch.library.custom_op("lowbit::fused_quantize", mutates_args=())
def _fused_quantize_op(spec: str, x: Tensor, side: List[Tensor]
                       ) -> List[Tensor]:
    target = _device_target(x)
    kernel = _kernel(spec, target)
    arrays = [x.contiguous()] + [tensor.contiguous() for tensor in side]
    if x.is_cuda:
        results = _launch(kernel, arrays)
    else:
        results = kernel.run(*arrays)
    return [_as(result.reshape(shape), dtype) for result, (_, dtype, shape)
            in zip(results, _fused_outputs(spec, target, x))]


@_fused_quantize_op.register_fake
def _(spec, x, side):
    return [x.new_empty(shape, dtype=dtype)
            for _, dtype, shape in _fused_outputs(spec, _device_target(x), x)]


def fused_quantize(spec, x, *side):
    """Runs the fused quantize kernel of `spec` ("rmsnorm(eps=1e-6) |
    quantize nvfp4 from=bf16") on `x` and the prologues' side tensors in
    chain order (docs/kernel-abi.md); returns its outputs in order (codes,
    scales, ..., add_rmsnorm's updated residual last), codes and scales in
    storage_dtypes(scheme)."""
    return tuple(torch.ops.lowbit.fused_quantize(spec, x, list(side)))


# --- KV-cache kernels ------------------------------------------------------

def _kv_run(kind, spec, inputs, outputs):
    """Runs the KV kernel of `spec` on its parameters, `inputs` (read) and
    `outputs` (written in place), each in the kernel's order."""
    target = _device_target((inputs or outputs)[0])
    kernel = _kv_kernel(spec, target)
    if not kernel.spec.split()[0].endswith(kind):
        raise LowbitValueError("invalid-argument",
                               f"'{spec}' is not a kv_{kind} or kivi_{kind} "
                               "kernel")
    reads, writes = iter(inputs), iter(outputs)
    arrays = [_bytes(next(writes) if param["is_output"] else next(reads))
              for param in kernel.params()]
    if target == "cpu":
        kernel.run(*arrays)
    else:
        _launch(kernel, arrays)


for _kind in ("append", "dequantize", "attend"):
    def _make(kind):
        def impl(spec: str, inputs: List[Tensor],
                 outputs: List[Tensor]) -> None:
            _kv_run(kind, spec, inputs, outputs)

        op = torch.library.custom_op(f"lowbit::kv_{kind}", impl,
                                     mutates_args=("outputs",))
        op.register_fake(lambda spec, inputs, outputs: None)
        return op

    _make(_kind)


@torch.compiler.assume_constant_result
def _kv_written(spec, device):
    """Whether the KV kernel of `spec` writes each of its parameters, in
    order: a constant to torch.compile, so the wrappers trace."""
    target = _target(device) if device.type == "cuda" else "cpu"
    return tuple(param["is_output"]
                 for param in _kv_kernel(spec, target).params())


def _kv_call(kind, spec, arrays):
    """Splits `arrays` (one per parameter, docs/kv-kernels.md's order) into
    what the kernel reads and what it writes, and calls the op."""
    written = _kv_written(spec, arrays[0].device)
    if len(arrays) != len(written):
        raise LowbitValueError("invalid-argument",
                               f"'{spec}' takes {len(written)} tensors, got "
                               f"{len(arrays)}")
    inputs = [a for a, w in zip(arrays, written) if not w]
    outputs = [a for a, w in zip(arrays, written) if w]
    getattr(torch.ops.lowbit, f"kv_{kind}")(spec, inputs, outputs)


def kv_append(spec, *arrays):
    """Appends to a KV cache: `arrays` are the kernel's parameters in
    order (lowbit.kv_jit(spec).params()); the caches are updated in place.
    `spec` is a kv_append or kivi_append spec."""
    _kv_call("append", spec, arrays)


def kv_dequantize(spec, *arrays):
    """Reads a KV cache back into the `output` parameter (a kv_dequantize
    or kivi_dequantize spec)."""
    _kv_call("dequantize", spec, arrays)


def kv_attend(spec, *arrays):
    """Decode attention over a quantized KV cache (a kv_attend or
    kivi_attend spec), writing `output` and the `partials` scratch."""
    _kv_call("attend", spec, arrays)

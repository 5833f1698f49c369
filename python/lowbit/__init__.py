"""lowbit: quantization kernels and the reference quantizer for Python.

Arrays go in as numpy arrays, torch tensors or anything with ``__dlpack__``;
results come out as the same kind of array as the input (numpy for numpy
and other DLPack producers, torch for torch), allocated on the input's
device. Every failure raises :class:`LowbitError` with lowbit's message and
its error code; a bad argument raises its subclass :class:`LowbitTypeError`
(also a TypeError) or :class:`LowbitValueError` (also a ValueError).
docs/embedding.md has examples.
"""

import operator
from collections import namedtuple

from . import _lowbit

__all__ = [
    "LowbitError",
    "LowbitTypeError",
    "LowbitValueError",
    "QuantizedTensor",
    "Kernel",
    "KvKernel",
    "dequantize",
    "formats",
    "jit",
    "kv_jit",
    "quantize",
    "schemes",
]

__version__ = _lowbit.version()


class LowbitError(RuntimeError):
    """A lowbit call failed. ``code`` is lowbit's error code name
    ("invalid-argument", "unsupported", "library-not-found", ...)."""

    def __init__(self, code, message):
        super().__init__(f"{message} [{code}]")
        self.code = code
        self.message = message


class LowbitTypeError(LowbitError, TypeError):
    """An argument of the wrong kind (code "invalid-argument"): not a str
    where lowbit takes a name, not an array, not an integer."""


class LowbitValueError(LowbitError, ValueError):
    """An argument of the right kind whose value lowbit refuses (code
    "invalid-argument"): an unknown scheme, a size out of range, a
    read-only output."""


def _check(result):
    status, message = result
    if status != 0:
        code = _lowbit.status_name(status)
        error = (LowbitValueError if code == "invalid-argument"
                 else LowbitError)
        raise error(code, message)


# The argument checks of every public call, before an argument reaches
# _lowbit: nanobind's own conversion errors name its internal signatures.
def _text(what, value):
    """`value` as a str that C reads whole (no NUL ends it early)."""
    if not isinstance(value, str):
        raise LowbitTypeError(
            "invalid-argument",
            f"{what} is a {type(value).__name__}; lowbit takes a str")
    if "\0" in value:
        raise LowbitValueError("invalid-argument",
                               f"{what} holds a NUL character")
    return value


def _optional_text(what, value):
    return None if value is None else _text(what, value)


_INT64_MAX = 2**63 - 1


def _integer(what, value, high=_INT64_MAX):
    """`value` as an int in [0, high] (Python ints and numpy integers; not
    bools)."""
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise LowbitTypeError(
            "invalid-argument",
            f"{what} is a {type(value).__name__}; lowbit takes an "
            "integer") from None
    if not 0 <= value <= high:
        raise LowbitValueError(
            "invalid-argument",
            f"{what} is {value}; lowbit takes 0 to {high}")
    return value


def _sizes(what, value):
    """A shape: a tuple or list of sizes."""
    if not isinstance(value, (tuple, list)):
        raise LowbitTypeError(
            "invalid-argument",
            f"{what} is a {type(value).__name__}; lowbit takes a tuple of "
            "sizes")
    return tuple(_integer(f"{what}[{index}]", size)
                 for index, size in enumerate(value))


def formats():
    """The named element formats ("e4m3", "e2m1", ...)."""
    return list(_lowbit.formats())


def schemes():
    """The named quantization schemes ("mxfp4", "nvfp4", ...)."""
    return list(_lowbit.schemes())


QuantizedTensor = namedtuple(
    "QuantizedTensor", "codes scales zeros global_scale scheme shape"
)
QuantizedTensor.__doc__ = """What quantize() returns: uint8 packed codes,
scales (their stored codes for e8m0/ue4m3), uint8 zero points or None, the
float32 global scale of shape (1,) or None, the scheme and the input shape."""

# DLPack dtype (code, bits) -> numpy / torch dtype name. numpy has no
# bfloat16: bf16 scales come out as their uint16 bit patterns there.
_NUMPY_NAMES = {(0, 8): "int8", (1, 8): "uint8", (1, 16): "uint16",
                (2, 16): "float16", (2, 32): "float32", (4, 16): "uint16"}
_TORCH_NAMES = {(0, 8): "int8", (1, 8): "uint8", (1, 16): "uint16",
                (2, 16): "float16", (2, 32): "float32", (4, 16): "bfloat16"}
_VALUE_DTYPES = {"float32": (2, 32), "float16": (2, 16), "bfloat16": (4, 16)}


def _is_torch(array):
    return _module_of(array) == "torch"


def _module_of(array):
    return type(array).__module__.split(".")[0]


def _array(what, array):
    """A required input array."""
    _check_arrays((what, array, False), optional=False)
    return array


def _check_arrays(*arguments, optional=True):
    """Each (what, array, written) of a call, before it converts them:
    anything but an array lowbit reads is a LowbitTypeError, and a read-only
    array lowbit would write a LowbitValueError, naming the argument. None
    is skipped where the arguments are `optional`, else refused."""
    for what, array, written in arguments:
        if array is None and optional:
            continue
        if array is None:
            raise LowbitTypeError("invalid-argument",
                                  f"{what} is None; lowbit takes an array")
        # bytes give a buffer, but no shape to quantize.
        kind = _lowbit.probe(array) if hasattr(array, "shape") else 0
        if kind == 0 and hasattr(array, "dtype") and hasattr(array, "shape"):
            raise LowbitTypeError(
                "invalid-argument",
                f"{what} is a {type(array).__name__} of dtype {array.dtype}, "
                "which lowbit cannot read: it takes numeric arrays in the "
                "machine's byte order")
        if kind == 0:
            raise LowbitTypeError(
                "invalid-argument",
                f"{what} is a {type(array).__name__}, which is not an array: "
                "lowbit takes numpy arrays, torch tensors (detached) and "
                "objects with __dlpack__")
        if written and kind == 1:
            raise LowbitValueError(
                "invalid-argument",
                f"{what} is read-only; lowbit writes its result there")


class _Allocator:
    """Allocates arrays of the kind and on the device of `like`: torch
    tensors for torch, CuPy arrays for CuPy (on the current device), numpy
    arrays for numpy and any other producer of host arrays. A device array
    of another producer (JAX's, say) gets no outputs made for it: its
    caller passes them."""

    def __init__(self, like):
        self.torch = _is_torch(like)
        if self.torch:
            import torch

            self.module = torch
            self.device = like.device
            return
        if _module_of(like) == "cupy":
            import cupy

            self.module = cupy
            return
        device = like.__dlpack_device__() if hasattr(
            like, "__dlpack_device__") else (1, 0)
        if device[0] != 1:  # kDLCPU
            raise LowbitValueError(
                "invalid-argument",
                f"a {type(like).__name__} on DLPack device {tuple(device)}: "
                "lowbit makes outputs only for numpy, torch and CuPy "
                "arrays and host DLPack producers; pass every argument")
        import numpy

        self.module = numpy

    def empty(self, shape, dtype):
        key = (dtype["code"], dtype["bits"])
        if self.torch:
            return self.module.empty(
                tuple(shape), dtype=getattr(self.module, _TORCH_NAMES[key]),
                device=self.device)
        return self.module.empty(tuple(shape), dtype=_NUMPY_NAMES[key])


def _shape(array):
    return tuple(int(size) for size in array.shape)


def _rows_cols(shape):
    if len(shape) == 0:
        raise LowbitValueError(
            "invalid-argument",
            "a 0-D array: lowbit quantizes [rows, cols] tensors")
    rows = 1
    for size in shape[:-1]:
        rows *= size
    return rows, shape[-1]


def quantize(x, scheme, *, scales=None, zeros=None, global_scale=None):
    """Quantizes `x` (float32, float16 or bfloat16; N-D arrays are viewed as
    [product of leading sizes, last size]) with the reference quantizer.

    Given `scales` (and `zeros`, `global_scale` where the scheme has them)
    quantize with those static scales. A dynamic scheme with a global scale
    takes a given `global_scale` alone (vLLM's NVFP4). Returns a
    QuantizedTensor of arrays of x's kind."""
    _array("x", x)
    _check_arrays(("scales", scales, False),
                  ("zeros", zeros, False),
                  ("global_scale", global_scale, False))
    scheme = _text("scheme", scheme)
    shape = _shape(x)
    rows, cols = _rows_cols(shape)
    status, layout = _lowbit.layout(scheme, rows, cols)
    _check(status)
    allocate = _Allocator(x)
    flags = 0
    if scales is not None:
        flags |= 1
    elif zeros is not None:
        raise LowbitValueError("invalid-argument",
                               "zeros given without scales")
    elif global_scale is not None:
        flags |= 2
    codes = allocate.empty(layout["codes_shape"], {"code": 1, "bits": 8})
    if scales is None:
        scales = allocate.empty(layout["scales_shape"], layout["scales_dtype"])
        if layout["has_zeros"]:
            zeros = allocate.empty(layout["scales_shape"],
                                   {"code": 1, "bits": 8})
    if layout["has_global_scale"] and global_scale is None:
        global_scale = allocate.empty((1,), {"code": 2, "bits": 32})
    _check(_lowbit.quantize(scheme, x, codes, scales, zeros, global_scale,
                            flags))
    return QuantizedTensor(codes, scales, zeros, global_scale, scheme, shape)


def dequantize(q, scheme=None, *, scales=None, zeros=None, global_scale=None,
               shape=None, dtype="float32"):
    """Back to values: `q` is a QuantizedTensor, or the codes with `scheme`,
    `scales`, `shape` (and `zeros`, `global_scale` where the scheme has
    them). `dtype`: "float32", "float16" or "bfloat16" (torch only)."""
    if isinstance(q, QuantizedTensor):
        codes, scales, zeros, global_scale = (q.codes, q.scales, q.zeros,
                                              q.global_scale)
        scheme, shape = q.scheme, q.shape
    else:
        codes = q
        if scheme is None or scales is None or shape is None:
            raise LowbitValueError(
                "invalid-argument",
                "dequantize(codes, ...) needs scheme, scales "
                "and shape")
    _array("codes", codes)
    _check_arrays(("scales", scales, False),
                  ("zeros", zeros, False),
                  ("global_scale", global_scale, False))
    scheme = _text("scheme", scheme)
    shape = _sizes("shape", shape)
    if _text("dtype", dtype) not in _VALUE_DTYPES:
        raise LowbitValueError(
            "invalid-argument",
            f"dtype '{dtype}': expected float32, float16 or "
            "bfloat16")
    allocate = _Allocator(codes)
    code, bits = _VALUE_DTYPES[dtype]
    if dtype == "bfloat16" and not allocate.torch:
        raise LowbitValueError(
            "invalid-argument",
            "numpy has no bfloat16: dequantize to float32 or "
            "float16, or use torch tensors")
    output = allocate.empty(shape, {"code": code, "bits": bits})
    _check(_lowbit.dequantize(scheme, codes, scales, zeros, global_scale,
                              output))
    return output


class _Compiled:
    """What Kernel and KvKernel share: the handle, the target, the
    canonical spec and the PTX."""

    def __init__(self, handle, target):
        self._handle = handle
        self.target = target

    @property
    def spec(self):
        """The canonical kernel spec."""
        return self._handle.spec

    @property
    def ptx(self):
        """The PTX of a GPU kernel ("" for a CPU kernel)."""
        return self._handle.ptx

    @staticmethod
    def _stream(arrays, stream):
        """`stream`, else torch's current stream where the arrays are CUDA
        torch tensors, else the default stream (0)."""
        if stream is not None:
            return _integer("stream", stream, 2**64 - 1)
        if arrays and _is_torch(arrays[0]) and arrays[0].is_cuda:
            import torch

            return torch.cuda.current_stream(arrays[0].device).cuda_stream
        return 0


class Kernel(_Compiled):
    """A compiled kernel (see jit()). Its arguments follow
    docs/kernel-abi.md: 2-D compact row-major arrays; the global scale may
    have shape (1,)."""

    _GLOBAL = 3

    def args(self, rows, cols):
        """The arguments for a [rows, cols] tensor: dicts with role,
        is_output, dtype and shape."""
        rows, cols = _integer("rows", rows), _integer("cols", cols)
        infos = []
        for index in range(self._handle.arg_count):
            status, info = self._handle.arg(index, rows, cols)
            _check(status)
            infos.append(info)
        return infos

    # Kernel::signature in C++, lowbit_kernel_arg in C.
    signature = args

    def _size(self, arrays, complete):
        """The [rows, cols] of the quantized tensor of a call: from a
        quantize kernel's input, or from a dequantize kernel's output (its
        last argument, so every argument must be given)."""
        count = self._handle.arg_count
        # The canonical spec of a fused quantize starts with its prologues
        # ("rmsnorm(eps=1e-06) | quantize ...").
        if self.spec.startswith("dequantize"):
            if not complete:
                raise LowbitValueError(
                    "invalid-argument",
                    f"the kernel takes {count} arguments (its "
                    f"output included), got {len(arrays)}")
            index = len(arrays) - 1
        else:
            index = 0
        _array(f"argument {index}", arrays[index])
        rows, cols = _rows_cols(_shape(arrays[index]))
        # silu_mul (only ever first) reads the gate and up halves of each
        # row: the quantized tensor has half the input's columns.
        if self.spec.startswith("silu_mul"):
            if cols % 2:
                raise LowbitValueError("invalid-argument",
                                       f"silu_mul's input has {cols} columns; "
                                       "it takes an even number (gate, up)")
            cols //= 2
        return rows, cols

    def _complete(self, arrays):
        """All arguments: `arrays` as given, or the inputs alone with the
        outputs allocated (returned as the second value). Every argument
        must be an array, and every output writable."""
        count = self._handle.arg_count
        if not arrays:
            raise LowbitValueError(
                "invalid-argument",
                f"the kernel takes {count} arguments, got 0")
        complete = len(arrays) == count
        infos = self.args(*self._size(arrays, complete))
        if complete:
            _check_arrays(*((f"argument {index}", array, info["is_output"])
                            for index, (array, info)
                            in enumerate(zip(arrays, infos))),
                          optional=False)
            return list(arrays), None
        inputs = [info for info in infos if not info["is_output"]]
        if len(arrays) != len(inputs):
            raise LowbitValueError(
                "invalid-argument",
                f"the kernel takes {count} arguments, or its "
                f"{len(inputs)} inputs; got {len(arrays)}")
        _check_arrays(*((f"argument {index}", array, False)
                        for index, array in enumerate(arrays)),
                      optional=False)
        allocate = _Allocator(arrays[0])
        outputs = [allocate.empty((1,) if info["role"] == self._GLOBAL
                                  else info["shape"], info["dtype"])
                   for info in infos if info["is_output"]]
        return list(arrays) + outputs, tuple(outputs)

    def run(self, *arrays):
        """Runs a CPU kernel on host arrays. Given every argument, writes
        the outputs in place and returns None; given a quantize kernel's
        inputs only, returns the outputs it allocated."""
        arrays, outputs = self._complete(arrays)
        _check(self._handle.run(arrays))
        return outputs

    __call__ = run

    def launch(self, *arrays, stream=None):
        """Launches a GPU kernel on CUDA arrays of device 0, on `stream`
        (an integer CUstream; None: torch's current stream where the
        arrays are torch tensors, else the default stream). Asynchronous."""
        arrays, outputs = self._complete(arrays)
        _check(self._handle.launch(self._stream(arrays, stream), arrays))
        return outputs


class KvKernel(_Compiled):
    """A compiled KV-cache kernel (see kv_jit()): kv_append, kv_dequantize,
    kivi_append, kivi_dequantize, kv_attend or kivi_attend. Its arguments
    are the N-D compact row-major arrays params() describes, every one
    given (caches are updated in place)."""

    def params(self):
        """The parameters, in order: dicts with name, is_output, dtype,
        shape (a negative size is fixed by the call) and dim_names (the
        name of each such size, "" for a static one)."""
        infos = []
        for index in range(self._handle.param_count):
            status, info = self._handle.param(index)
            _check(status)
            infos.append(info)
        return infos

    def _checked(self, arrays):
        """The arrays, one per parameter, each one an array and every
        output writable."""
        count = self._handle.param_count
        if len(arrays) != count:
            raise LowbitValueError("invalid-argument",
                                   f"the kernel takes {count} arguments, "
                                   f"got {len(arrays)}")
        _check_arrays(*((f"argument {index} ({param['name']})", array,
                         param["is_output"])
                        for index, (array, param)
                        in enumerate(zip(arrays, self.params()))),
                      optional=False)
        return list(arrays)

    def run(self, *arrays):
        """Runs a CPU kernel on host arrays, one per parameter."""
        _check(self._handle.run(self._checked(arrays)))

    __call__ = run

    def launch(self, *arrays, stream=None):
        """Launches a GPU kernel on CUDA arrays of device 0, on `stream`
        (as Kernel.launch). Asynchronous."""
        _check(self._handle.launch(self._stream(arrays, stream),
                                   self._checked(arrays)))


_default_jits = {}


def _jit_handle(cache_dir, cache_mode):
    key = (_optional_text("cache_dir", cache_dir),
           _optional_text("cache_mode", cache_mode))
    if key not in _default_jits:
        status, handle = _lowbit.Jit.create(cache_dir, cache_mode)
        _check(status)
        _default_jits[key] = handle
    return _default_jits[key]


def kv_jit(spec, target="cpu", *, cache_dir=None, cache_mode=None):
    """The KV-cache kernel of `spec` ("kv_append kv_int8_g64 heads=8
    head_dim=128", docs/kv-kernels.md) for `target`, from the same jit and
    caches as jit()."""
    handle = _jit_handle(cache_dir, cache_mode)
    status, kernel = handle.get_kv(_text("spec", spec),
                                   _text("target", target))
    _check(status)
    return KvKernel(kernel, target)


def jit(spec, target="cpu", *, cache_dir=None, cache_mode=None):
    """The kernel of `spec` ("quantize mxfp4 dynamic") for `target` ("cpu",
    "sm_90a", ...), compiled on first use or found in lowbit's cache
    (LOWBIT_CACHE_DIR, LOWBIT_CACHE unless given here)."""
    handle = _jit_handle(cache_dir, cache_mode)
    status, kernel = handle.get(_text("spec", spec), _text("target", target))
    _check(status)
    return Kernel(kernel, target)

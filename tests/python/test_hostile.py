"""Every public function of the lowbit package, fed hostile values in each
argument in turn: each call raises LowbitError (a LowbitTypeError or
LowbitValueError) in lowbit's words, never nanobind's TypeError with its
internal signatures, an AttributeError, or a crash; and a value that
misfits is never accepted (a scheme with an embedded NUL included)."""

import numpy as np
import pytest

import lowbit

X = np.random.default_rng(3).standard_normal((2, 64)).astype(np.float32)
KV_SPEC = "kv_dequantize kv_fp8_e4m3 to=f32 heads=1 head_dim=4"

HOSTILE = {
    "None": None,
    "list": [1.0, 2.0],
    "empty list": [],
    "tuple": (2, 64),
    "float": 1.5,
    "huge int": 2**70,
    "huge negative int": -(2**70),
    "negative int": -1,
    "bool": True,
    "NUL string": "mxfp4\0junk",
    "str": "mxfp4",
    "bytes": b"mxfp4",
    "object": object(),
    "dict": {},
    "big-endian array": np.zeros((2, 64), ">f4"),
    "object array": np.zeros((2, 64), object),
    "complex array": np.zeros((2, 64), np.complex64),
}

# Which hostile values each kind of argument accepts (and so are not
# hostile there).
FITS = {
    "array": set(),
    "optional array": {"None"},
    "str": {"str"},
    "optional str": {"None", "str"},
    "size": set(),
    "optional size": {"None"},
    "shape": {"tuple", "empty list"},
    "dtype": set(),
}

INTERNAL = ("nanobind", "incompatible function arguments", "std::",
            "ndarray<", "int64_t", "uintptr_t", "_lowbit", "Invoked with",
            "const ", "has no attribute")


def quantized():
    return lowbit.quantize(X, "nvfp4")


def kernel():
    return lowbit.jit("quantize mxfp4 dynamic")


def kv_kernel():
    return lowbit.kv_jit(KV_SPEC)


def kv_arrays():
    """A valid call of kv_kernel(): one sequence of 4 cached tokens, the
    first 2 dequantized."""
    return [np.zeros((1, 1, 4, 4), np.int8), np.ones(1, np.float32),
            np.array([2], np.int32), np.zeros((1, 1, 2, 4), np.float32)]


# (name, function, positional arguments, keyword arguments, the kind of
# each argument by position or keyword).
def _calls():
    q = quantized()
    codes, scales = kernel()(X)
    return [
        ("quantize", lowbit.quantize, [X, "mxfp4"], {},
         {0: "array", 1: "str"}),
        ("quantize static", lowbit.quantize, [X, "nvfp4"],
         {"scales": q.scales, "global_scale": q.global_scale},
         {"scales": "optional array", "global_scale": "optional array"}),
        ("quantize dynamic", lowbit.quantize, [X, "mxfp4"], {},
         {"scales": "optional array", "zeros": "optional array",
          "global_scale": "optional array"}),
        ("dequantize", lowbit.dequantize, [q], {},
         {0: "array", "dtype": "dtype"}),
        ("dequantize codes", lowbit.dequantize, [q.codes, "nvfp4"],
         {"scales": q.scales, "global_scale": q.global_scale,
          "shape": (2, 64)},
         {1: "str", "scales": "array", "global_scale": "array",
          "shape": "shape"}),
        ("jit", lowbit.jit, ["quantize mxfp4", "cpu"], {},
         {0: "str", 1: "str", "cache_dir": "optional str",
          "cache_mode": "optional str"}),
        ("kv_jit", lowbit.kv_jit, [KV_SPEC, "cpu"], {},
         {0: "str", 1: "str", "cache_dir": "optional str",
          "cache_mode": "optional str"}),
        ("Kernel.run", kernel().run, [X], {}, {0: "array"}),
        ("Kernel.run all", kernel().run, [X, codes, scales], {},
         {0: "array", 1: "array", 2: "array"}),
        ("Kernel.launch", kernel().launch, [X], {},
         {0: "array", "stream": "optional size"}),
        ("Kernel.args", kernel().args, [2, 64], {}, {0: "size", 1: "size"}),
        ("Kernel.signature", kernel().signature, [2, 64], {},
         {0: "size", 1: "size"}),
        ("KvKernel.run", kv_kernel().run, kv_arrays(), {},
         {0: "array", 1: "array", 2: "array", 3: "array"}),
        ("KvKernel.run few", kv_kernel().run, [X], {}, {0: "array"}),
        ("KvKernel.run many", kv_kernel().run, kv_arrays() + [X], {},
         {4: "array"}),
        ("KvKernel.launch", kv_kernel().launch, kv_arrays(), {},
         {0: "array", "stream": "optional size"}),
    ]


def _cases():
    for name, function, args, kwargs, kinds in _calls():
        for where, kind in kinds.items():
            for label, value in HOSTILE.items():
                if label in FITS[kind]:
                    continue
                yield pytest.param(function, args, kwargs, where, value,
                                   id=f"{name}-{where}-{label}")


def test_valid_calls_run():
    """The calls the hostile values are put into run as given (launch
    aside: no GPU here), so that each error comes from the value put in."""
    for name, function, args, kwargs, _ in _calls():
        if "launch" in name or "few" in name or "many" in name:
            continue
        function(*args, **kwargs)


@pytest.mark.parametrize("function,args,kwargs,where,value", list(_cases()))
def test_hostile_argument(function, args, kwargs, where, value):
    args, kwargs = list(args), dict(kwargs)
    if isinstance(where, int):
        args[where] = value
    else:
        kwargs[where] = value
    with pytest.raises(lowbit.LowbitError) as raised:
        function(*args, **kwargs)
    error = raised.value
    assert isinstance(error, (TypeError, ValueError)) or error.code != (
        "invalid-argument"), f"{type(error).__name__}: {error}"
    for word in INTERNAL:
        assert word not in error.message, error.message


def test_error_classes():
    assert issubclass(lowbit.LowbitTypeError, lowbit.LowbitError)
    assert issubclass(lowbit.LowbitTypeError, TypeError)
    assert issubclass(lowbit.LowbitValueError, lowbit.LowbitError)
    assert issubclass(lowbit.LowbitValueError, ValueError)
    with pytest.raises(TypeError):
        lowbit.jit(None)
    with pytest.raises(ValueError):
        lowbit.quantize(X, "mxfp4\0junk")
    with pytest.raises(ValueError):
        kernel().args(2**70, 64)

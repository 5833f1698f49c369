"""Arrays in through DLPack and the buffer protocol: what does not fit (a
non-array, a wrong dtype, non-contiguous strides where a kernel needs
compact ones, a tensor on another device, a read-only array lowbit would
write) is a LowbitError naming the argument, never a crash. The device
case uses a DLPack capsule made here with ctypes that says CUDA and points
at no memory: lowbit must refuse it without reading it."""

import ctypes

import numpy as np
import pytest

import lowbit
from dlpack_capsule import (KDL_CUDA, DLDataType, DLDevice, DLManagedTensor,
                            DLTensor, capsule)
from producers import OnlyDlpack


def expect_error(text, call, *args, **kwargs):
    with pytest.raises(lowbit.LowbitError) as raised:
        call(*args, **kwargs)
    assert raised.value.code == "invalid-argument"
    assert text in raised.value.message, raised.value.message


def read_only(array):
    array = array.copy()
    array.flags.writeable = False
    return array


class FakeCuda:
    """A tensor (float32 by default) on CUDA device 0 at an address no
    process maps: reading it would crash."""

    def __init__(self, shape, code=2, bits=32):
        self.shape = shape
        self.dtype = (code, bits)
        self.kept = []

    def __dlpack__(self, **kwargs):
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        managed = DLManagedTensor()
        managed.dl_tensor = DLTensor(
            ctypes.c_void_p(0x10), DLDevice(KDL_CUDA, 0), len(self.shape),
            DLDataType(self.dtype[0], self.dtype[1], 1), shape, None, 0)
        self.kept += [shape, managed]
        return capsule(managed)

    def __dlpack_device__(self):
        return (KDL_CUDA, 0)


X = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)


def test_not_an_array():
    expect_error("x is a list, which is not an array", lowbit.quantize,
                 X.tolist(), "mxfp4")
    expect_error("argument 0 is a str", lowbit.jit("quantize mxfp4"), "x")
    q = lowbit.quantize(X, "mxfp4")
    expect_error("scales is a int", lowbit.dequantize, q._replace(scales=3))


def test_dtype_and_strides_through_dlpack():
    expect_error("input has dtype int32", lowbit.quantize,
                 OnlyDlpack(X.astype(np.int32)), "mxfp4")
    kernel = lowbit.jit("quantize mxfp4 dynamic")
    expect_error("kernels take compact row-major tensors", kernel,
                 OnlyDlpack(np.zeros((2, 128), np.float32)[:, ::2]))
    expect_error("kernels take compact row-major tensors", kernel.run,
                 X[:, ::-1])
    # The reference quantizer reads any strides: the same bits.
    strided = OnlyDlpack(np.zeros((2, 128), np.float32)[:, ::2] + X)
    assert (lowbit.quantize(strided, "mxfp4").codes.tobytes()
            == lowbit.quantize(X, "mxfp4").codes.tobytes())


def test_read_only_outputs_are_refused():
    kernel = lowbit.jit("quantize mxfp4 dynamic")
    codes, scales = kernel(X)
    expect_error("argument 1 is read-only", kernel.run, X, read_only(codes),
                 scales)
    expect_error("argument 2 is read-only", kernel.run, X, codes,
                 read_only(scales))
    # Read-only inputs are fine, and so are given (static) scales.
    again = kernel(read_only(X))
    assert again[0].tobytes() == codes.tobytes()
    static = lowbit.quantize(read_only(X), "mxfp4", scales=read_only(scales))
    assert static.codes.tobytes() == codes.tobytes()
    dequantize = lowbit.jit("dequantize mxfp4 dynamic")
    expect_error("argument 2 is read-only", dequantize.run, codes, scales,
                 read_only(X))
    dequantize.run(read_only(codes), read_only(scales), np.empty_like(X))

    append = lowbit.kv_jit("kv_append kv_fp8_e4m3 from=f16 heads=1 "
                           "head_dim=4")
    keys = np.zeros((1, 1, 2, 4), np.float16)
    cache = read_only(np.zeros((1, 1, 4, 4), np.int8))
    expect_error("argument 1 (codes) is read-only", append, keys, cache,
                 np.ones(1, np.float32), np.zeros(1, np.int32))


def test_device_tensors_are_refused_unread():
    cuda = FakeCuda((2, 64))
    kernel = lowbit.jit("quantize mxfp4 dynamic")
    # lowbit makes no outputs for a device array it cannot allocate like.
    expect_error("on DLPack device (2, 0)", kernel, cuda)
    expect_error("on DLPack device (2, 0)", lowbit.quantize, cuda, "mxfp4")
    # Given every argument: the CPU kernel takes host tensors only.
    codes, scales = kernel(X)
    expect_error("lowbit_kernel_run takes kDLCPU", kernel.run, cuda, codes,
                 scales)
    # And a GPU launch takes device tensors only (a host one is refused
    # before any driver is needed).
    expect_error("lowbit_kernel_launch takes kDLCUDA", kernel.launch, X,
                 codes, scales)
    append = lowbit.kv_jit("kv_append kv_fp8_e4m3 from=f16 heads=1 "
                           "head_dim=4")
    expect_error("lowbit_kv_kernel_run takes kDLCPU", append,
                 np.zeros((1, 1, 2, 4), np.float16),
                 FakeCuda((1, 1, 4, 4), code=0, bits=8), np.ones(1, np.float32),
                 np.zeros(1, np.int32))

"""Run by test_cuda.py in a process of its own, with LOWBIT_LIBCUDA naming
tests/jit's driver stub (a libcuda stand-in whose device memory is host
memory): lowbit.torch's launch of a real sm_90a kernel, on "CUDA tensors"
that are host buffers handed over through DLPack as kDLCUDA, reaches
cuLaunchKernel on torch's current stream. Prints one line per check."""

import ctypes
import os
import sys
import types

import numpy as np
import torch

import lowbit
import lowbit.torch as lt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
from dlpack_capsule import (KDL_CUDA, DLDataType, DLDevice,  # noqa: E402
                            DLManagedTensor, DLTensor, capsule)


class StubCudaTensor:
    """A host array that says it is on CUDA device 0 (the stub's device
    memory is host memory), with the torch.device lowbit.torch reads."""

    device = torch.device("cuda", 0)

    def __init__(self, array):
        self.array = array
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        kind = {"f": 2, "u": 1, "i": 0}[array.dtype.kind]
        self.managed = DLManagedTensor(DLTensor(
            array.ctypes.data, DLDevice(KDL_CUDA, 0), array.ndim,
            DLDataType(kind, array.dtype.itemsize * 8, 1), self.shape, None,
            0), None, None)

    def __dlpack_device__(self):
        return (KDL_CUDA, 0)

    def __dlpack__(self, **kwargs):
        return capsule(self.managed)


class LaunchRecord(ctypes.Structure):
    _fields_ = [("stream", ctypes.c_void_p), ("params", ctypes.c_int)]


stub = ctypes.CDLL(os.environ["LOWBIT_LIBCUDA"])
stub.stub_launch_at.restype = ctypes.POINTER(LaunchRecord)
stub.stub_launch_count.restype = ctypes.c_long

capturing = [False]
stream = types.SimpleNamespace(cuda_stream=0x5EED)
torch.cuda.current_stream = lambda device: stream
torch.cuda.is_current_stream_capturing = lambda: capturing[0]

kernel = lowbit.jit("quantize fp8_e4m3 from=f32 scale=dynamic", "sm_90a")
x = np.linspace(-3, 3, 4 * 64, dtype=np.float32).reshape(4, 64)
arrays = [x] + [np.zeros(info["shape"], np.uint8 if info["dtype"]["bits"] == 8
                         else np.float32)
                for info in kernel.args(4, 64) if info["is_output"]]
tensors = [StubCudaTensor(array) for array in arrays]

capturing[0] = True
try:
    lt._launch(kernel, tensors)
    print("capture before a launch: not refused")
except lowbit.LowbitError as error:
    print("capture before a launch: refused", error.code)
print("launches after the refusal:", stub.stub_launch_count())

capturing[0] = False
lt._launch(kernel, tensors)
count = stub.stub_launch_count()
streams = {stub.stub_launch_at(i).contents.stream for i in range(count)}
print("launches:", count, "streams:", sorted(hex(s) for s in streams))
capturing[0] = True
lt._launch(kernel, tensors)
print("launches after a captured launch:", stub.stub_launch_count())

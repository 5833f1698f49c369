# The typed interface of lowbit/__init__.py, for editors and type checkers
# (py.typed marks the package as typed). tests/python/test_typing.py checks
# that every signature here is the module's own.
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple, Union

# A numpy array, a torch tensor, or anything with __dlpack__ (JAX, CuPy).
Array = Any
Shape = Tuple[int, ...]

__version__: str
__all__: List[str]

class LowbitError(RuntimeError):
    code: str
    message: str
    def __init__(self, code: str, message: str) -> None: ...

class LowbitTypeError(LowbitError, TypeError): ...
class LowbitValueError(LowbitError, ValueError): ...

class QuantizedTensor(NamedTuple):
    codes: Array
    scales: Array
    zeros: Optional[Array]
    global_scale: Optional[Array]
    scheme: str
    shape: Shape

def formats() -> List[str]: ...
def schemes() -> List[str]: ...
def quantize(
    x: Array,
    scheme: str,
    *,
    scales: Optional[Array] = None,
    zeros: Optional[Array] = None,
    global_scale: Optional[Array] = None,
) -> QuantizedTensor: ...
def dequantize(
    q: Union[QuantizedTensor, Array],
    scheme: Optional[str] = None,
    *,
    scales: Optional[Array] = None,
    zeros: Optional[Array] = None,
    global_scale: Optional[Array] = None,
    shape: Optional[Sequence[int]] = None,
    dtype: str = "float32",
) -> Array: ...

class _Compiled:
    target: str
    @property
    def spec(self) -> str: ...
    @property
    def ptx(self) -> str: ...

class Kernel(_Compiled):
    def args(self, rows: int, cols: int) -> List[dict]: ...
    def signature(self, rows: int, cols: int) -> List[dict]: ...
    def run(self, *arrays: Array) -> Optional[Tuple[Array, ...]]: ...
    def __call__(self, *arrays: Array) -> Optional[Tuple[Array, ...]]: ...
    def launch(
        self, *arrays: Array, stream: Optional[int] = None
    ) -> Optional[Tuple[Array, ...]]: ...

class KvKernel(_Compiled):
    def params(self) -> List[dict]: ...
    def run(self, *arrays: Array) -> None: ...
    def __call__(self, *arrays: Array) -> None: ...
    def launch(self, *arrays: Array, stream: Optional[int] = None) -> None: ...

def jit(
    spec: str,
    target: str = "cpu",
    *,
    cache_dir: Optional[str] = None,
    cache_mode: Optional[str] = None,
) -> Kernel: ...
def kv_jit(
    spec: str,
    target: str = "cpu",
    *,
    cache_dir: Optional[str] = None,
    cache_mode: Optional[str] = None,
) -> KvKernel: ...

"""The Python module is MLIR-free (it links the C API, runtime/capi):
`import lowbit` and a kernel from the disk cache, in a fresh interpreter,
load neither libMLIR nor libLLVM nor the compiler library; a miss loads
the compiler library from the module's directory. Read from the dynamic
loader's log (LD_DEBUG=libs)."""

import os
import re
import subprocess
import sys

import pytest

GET_KERNEL = """
import lowbit
kernel = lowbit.jit("quantize fp8_e4m3 dynamic", "sm_90a", cache_dir={cache!r})
print(len(kernel.ptx), [arg["shape"] for arg in kernel.args(4, 64)])
"""


def run_python(code, **environment):
    """Runs `code` in a fresh interpreter; returns its stdout and the
    basenames of the shared objects it loaded."""
    env = dict(os.environ, LD_DEBUG="libs", **environment)
    env.pop("LOWBIT_CACHE", None)
    run = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-4000:]
    loaded = {os.path.basename(path) for path in
              re.findall(r"calling init: (\S+)", run.stderr)}
    if not loaded:
        pytest.skip("LD_DEBUG=libs prints nothing here")
    return run.stdout, loaded


def heavy(loaded):
    return sorted(name for name in loaded
                  if name.startswith(("libMLIR", "libLLVM",
                                      "liblowbit-compiler")))


def test_import_loads_no_compiler():
    _, loaded = run_python("import lowbit; lowbit.formats()")
    assert any(name.startswith("_lowbit") for name in loaded)
    assert heavy(loaded) == []


def test_disk_hit_loads_no_compiler(tmp_path):
    code = GET_KERNEL.format(cache=str(tmp_path / "cache"))
    missed, loaded = run_python(code)
    # The miss compiles: it must load the compiler (so that this test
    # can tell a hit from a miss). libMLIR comes with it only where the
    # library is not linked statically (LOWBIT_STATIC_COMPILER).
    assert "liblowbit-compiler.so" in loaded
    hit, loaded = run_python(code, LOWBIT_CACHE="must-hit")
    assert heavy(loaded) == []
    assert hit == missed

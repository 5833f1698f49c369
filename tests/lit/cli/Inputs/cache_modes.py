"""Every cache mode against every path that compiles kernels (issue 32).

One table: the CLI's CPU JIT (quantize --backend cpu), the GPU emulator
(quantize and dequantize --backend gpu-emulator), the Jit's PTX path
(compile --emit ptx), the KV JIT (kv attend --jit) and Python's
lowbit.jit. Each runs against a fresh, empty cache directory under
LOWBIT_CACHE=must-hit, off, readonly and on, and one line per (path, mode)
reports the exit status, whether the message names must-hit, and how many
files the run left in the cache. The promises (docs/runtime.md):
must-hit never compiles and fails on a miss naming the mode; off and
readonly write nothing; on stores what the path caches.

Usage: cache_modes.py WORK_DIR LOWBIT_BIN_DIR
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

work, bin_dir = Path(sys.argv[1]), Path(sys.argv[2])
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
lowbit = str(bin_dir / "lowbit")
np.save(work / "x.npy", np.linspace(-3, 3, 4 * 64, dtype=np.float32).reshape(4, 64))
rng = np.random.default_rng(7)
np.save(work / "k.npy", rng.standard_normal((1, 2, 3, 64)).astype(np.float32))
np.save(work / "q.npy", rng.standard_normal((1, 2, 64)).astype(np.float32))

base = dict(os.environ, LOWBIT_CACHE="off", LOWBIT_DISABLE_CUDA="1",
            PYTHONPATH=str(bin_dir.parent / "python"))
# Inputs made without the kernel cache: a quantized set and a KV cache.
for args in (["quantize", "--scheme", "int8", "--input", "x.npy", "--out", "set",
              "--backend", "reference"],
             ["kv", "init", "--cache", "kv", "--scheme", "kv_int8", "--batch", "1",
              "--kv-heads", "2", "--head-dim", "64", "--capacity", "8"],
             ["kv", "append", "--cache", "kv", "--k", "k.npy", "--v", "k.npy"]):
    subprocess.run([lowbit] + args, cwd=work, env=base, check=True)

# Under the sanitizers, python3 needs their runtime preloaded (lit.cfg.py).
python_env = dict(item.split("=", 1) for item in
                  os.environ.get("LOWBIT_SANITIZER_PYTHON_ENV", "").split(";")
                  if item)
python_jit = ("import numpy as np, lowbit; "
              "lowbit.jit('quantize int8 dynamic')(np.load('x.npy'))")
paths = {
    "cpu-jit": ["quantize", "--scheme", "int8", "--input", "x.npy", "--out",
                "out", "--backend", "cpu"],
    "gpu-emulator-quantize": ["quantize", "--scheme", "int8", "--input", "x.npy",
                              "--out", "out", "--backend", "gpu-emulator"],
    "gpu-emulator-dequantize": ["dequantize", "--in", "set", "--out", "y.npy",
                                "--backend", "gpu-emulator"],
    "ptx-jit": ["compile", "quantize int8", "--target", "sm_90a", "--emit", "ptx"],
    "kv-jit": ["kv", "attend", "--cache", "kv", "--q", "q.npy", "--out", "o.npy",
               "--jit"],
    "python-jit": None,
}
for name, args in paths.items():
    for mode in ("must-hit", "off", "readonly", "on"):
        cache = work / f"cache-{name}-{mode}"
        env = dict(base, LOWBIT_CACHE=mode, LOWBIT_CACHE_DIR=str(cache))
        if args is None:
            env.update(python_env)
        command = ([sys.executable, "-c", python_jit] if args is None
                   else [lowbit] + args)
        result = subprocess.run(command, cwd=work, env=env, capture_output=True,
                                text=True)
        files = sum(1 for item in cache.rglob("*") if item.is_file()) \
            if cache.exists() else 0
        names = "must-hit" in (result.stderr + result.stdout)
        print(f"{name} {mode}: exit {'0' if result.returncode == 0 else 'nonzero'}"
              f", names must-hit {names}, cache files {'0' if files == 0 else 'some'}")
        if result.returncode != 0 and mode != "must-hit":
            print(result.stderr)

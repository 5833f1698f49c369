"""The IR a fused kernel's prologue chain compiles to grows linearly with
the chain (docs/fusion.md, the chain cap): the lines of the loops stage
and of the LLVM IR per prologue from 8 to 64 prologues (the cap) are at
most 5% more than from 1 to 8. Deterministic, unlike a timing: a stage
that re-emits earlier stages, or any per-prologue IR that grows with the
chain, fails it. (Compile time per prologue: bench/chain_compile_time.py.)

Usage: chain_growth.py LOWBIT
"""
import os
import subprocess
import sys


def lines(lowbit, length, stage):
    spec = " | ".join(["rmsnorm"] * length) + " | quantize int8 rows=4 cols=64"
    result = subprocess.run([lowbit, "compile", spec, "--emit", stage],
                            env=dict(os.environ, LOWBIT_CACHE="off"),
                            check=True, capture_output=True, text=True)
    return result.stdout.count("\n")


lowbit = sys.argv[1]
for stage in ("loops", "llvm"):
    one, eight, cap = (lines(lowbit, n, stage) for n in (1, 8, 64))
    early, late = (eight - one) / 7, (cap - eight) / 56
    assert early > 0 and late <= 1.05 * early, (stage, one, eight, cap)
    print(f"{stage}: linear, {early:.0f} lines per prologue up to 8, "
          f"{late:.0f} from 8 to 64")

#!/usr/bin/env python3
"""Compile cost of a fused kernel against its prologue chain's length.

    bench/chain_compile_time.py BUILD_DIR [--runs N] [--instructions]

For chains of 1, 2, 4, 8, 16, 32 and 64 rmsnorms in front of `quantize
int8 rows=4 cols=64` (64 is the cap, kMaxPrologues), prints the CPU time
(user + sys, the least of N runs) of `lowbit compile SPEC --emit llvm`
with the cache off, the lines of its loops stage and of its LLVM IR, and
the cost per prologue between successive lengths. CPU time, not wall
time: on a shared machine a process may get a tenth of a core, and wall
time then measures the load. With --instructions it also counts the
instructions executed (valgrind's callgrind, slow but deterministic),
the measure that shows whether the cost per prologue grows.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile

LENGTHS = (1, 2, 4, 8, 16, 32, 64)


def spec_of(length):
    return " | ".join(["rmsnorm"] * length) + " | quantize int8 rows=4 cols=64"


def cpu_seconds(command, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                 before.ru_stime)


def instructions(command, env):
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run(
            ["valgrind", "--tool=callgrind",
             "--callgrind-out-file=" + os.path.join(scratch, "out")] + command,
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, check=True)
    match = re.search(r"Collected : (\d+)", result.stderr)
    return int(match.group(1))


def lines(command, env):
    return subprocess.run(command, env=env, check=True, capture_output=True,
                          text=True).stdout.count("\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--instructions", action="store_true")
    args = parser.parse_args()
    lowbit = os.path.join(args.build, "bin", "lowbit")
    env = dict(os.environ, LOWBIT_CACHE="off")
    header = "prologues  cpu ms  ms/prologue  loops lines  llvm lines"
    if args.instructions:
        header += "  instructions (M)  M/prologue"
    print(header)
    previous = None
    for length in LENGTHS:
        command = [lowbit, "compile", spec_of(length), "--emit", "llvm"]
        cpu = min(cpu_seconds(command, env) for _ in range(args.runs)) * 1e3
        loops = lines([lowbit, "compile", spec_of(length), "--emit", "loops"],
                      env)
        llvm = lines(command, env)
        count = instructions(command, env) / 1e6 if args.instructions else 0
        row = f"{length:9d}  {cpu:6.1f}"
        if previous:
            step = length - previous[0]
            row += f"  {(cpu - previous[1]) / step:11.2f}"
        else:
            row += " " * 13
        row += f"  {loops:11d}  {llvm:10d}"
        if args.instructions:
            row += f"  {count:16.1f}"
            if previous:
                row += f"  {(count - previous[2]) / (length - previous[0]):10.2f}"
        print(row, flush=True)
        previous = (length, cpu, count)
    return 0


if __name__ == "__main__":
    sys.exit(main())

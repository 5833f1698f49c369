"""Whole-process time of the lowbit front end (docs/runtime.md, "The front
end"): a cached `lowbit compile`, against an empty main and against NVRTC
compiling the same scheme's reference kernel in a process of its own, all
measured in one run.

Usage: frontend_bench.py BUILD_DIR [--runs N] [--scheme S] [--chip C]
                         [--baseline LOWBIT]

Also timed: lowbit::Jit's disk hit in an engine (`lowbit-jit-probe`, linked
with the MLIR-free LowbitJitLoader) and `lowbit compile` with an empty
cache (LOWBIT_CACHE=off: the compiler library is loaded and compiles).

Each command runs N times (default 11) in turn, and the median wall time
is reported, with the median CPU time (user + system, from wait4) beside
it: on a shared machine the wall time waits for other processes, the CPU
time much less. --baseline times another lowbit executable's cached compile
too (an older, MLIR-linked build). Prints numbers only; the results are in
bench/RESULTS.md.
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time


def timed(command, environment):
    """Wall and CPU milliseconds of one run of `command`."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=environment,
                               stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit("{} exited with {}".format(command, process.returncode))
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--scheme", default="mxfp4")
    parser.add_argument("--chip", default="sm_90a")
    parser.add_argument("--baseline")
    args = parser.parse_args()
    binaries = os.path.join(args.build, "bin")
    spec = "quantize {} dynamic".format(args.scheme)
    with tempfile.TemporaryDirectory() as cache:
        environment = dict(os.environ, LOWBIT_CACHE_DIR=cache)
        environment.pop("LOWBIT_CACHE", None)
        commands = {
            "empty main": [os.path.join(binaries, "lowbit-bench-empty-main")],
            "lowbit formats": [os.path.join(binaries, "lowbit"), "formats"],
            "lowbit compile (cached)": [os.path.join(binaries, "lowbit"),
                                        "compile", spec, "--target", args.chip],
            "NVRTC peer (whole process)": [
                os.path.join(binaries, "lowbit-bench-nvrtc-process"),
                args.scheme, args.chip],
            # lowbit::Jit in an engine (LowbitJitLoader): a disk hit.
            "Jit disk hit (lowbit-jit-probe)": [
                os.path.join(binaries, "lowbit-jit-probe"), spec, args.chip],
            # An empty cache: every run compiles (LOWBIT_CACHE=off).
            "lowbit compile (empty cache)": [
                "env", "LOWBIT_CACHE=off", os.path.join(binaries, "lowbit"),
                "compile", spec, "--target", args.chip],
        }
        if args.baseline:
            commands["baseline lowbit compile (cached)"] = [
                args.baseline, "compile", spec, "--target", args.chip]
        # Fill the cache (each build has its own key) and warm the page cache.
        for command in commands.values():
            timed(command, environment)
        samples = {name: [] for name in commands}
        cpu = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, command in commands.items():
                wall, used = timed(command, environment)
                samples[name].append(wall)
                cpu[name].append(used)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    print("{} (median of {} runs, ms)".format(spec + " --target " + args.chip, args.runs))
    print("  {:<36} {:>8}  {:>8}  {:>8}".format("", "wall", "min", "cpu"))
    for name, value in medians.items():
        print("  {:<36} {:8.2f}  {:8.2f}  {:8.2f}".format(
            name, value, min(samples[name]), statistics.median(cpu[name])))
    cached = medians["lowbit compile (cached)"]
    print("  cached compile / NVRTC peer        {:8.3f}".format(
        cached / medians["NVRTC peer (whole process)"]))
    print("  cached compile - empty main        {:8.2f} ms".format(
        cached - medians["empty main"]))
    print("  empty-cache compile / NVRTC peer   {:8.3f}".format(
        medians["lowbit compile (empty cache)"] /
        medians["NVRTC peer (whole process)"]))
    if args.baseline:
        print("  baseline / cached compile          {:8.2f}x".format(
            medians["baseline lowbit compile (cached)"] / cached))


if __name__ == "__main__":
    main()

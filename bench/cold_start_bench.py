"""The cold start, measured side by side in one run (issue 31, item 5;
docs/pipeline.md, "The compiler library, linked statically").

Usage: cold_start_bench.py BUILD [--compare BUILD2] [--runs N] [--chip C]
                           [--threads T] [--parts 1,2,3]

For each build directory (BUILD, and BUILD2 if given: e.g. one configured
with -DLOWBIT_STATIC_COMPILER=ON and one with OFF), in one run:

1. The whole-process cold CLI: `lowbit compile "quantize S dynamic"
   --target C` on an empty cache directory (a new one every run: the
   compile and the cache write), against the NVRTC peer process
   (`lowbit-bench-nvrtc-process S C`: load NVRTC, compile the same
   scheme's CUDA C++ reference kernel to PTX). The commands run in turn,
   N rounds; medians of wall and CPU time, and the median of the per-round
   ratios to the peer.
2. In process (`lowbit-bench-cold-start warm`): loading the compiler
   library, each spec's first compile in the process and the median of N
   warm ones (spec -> PTX), next to NVRTC compiling the reference kernel
   in the same process.
3. Start-up: every kernel a Llama-3-8B deployment needs (one spec per
   distinct layer shape and scheme, MODEL_SPECS), compiled in parallel on
   T threads (default: the CPU count) into an empty cache, as PTX and as
   PTX + cubin (nvJitLink); the median of N runs, as wall time and as
   the process's CPU time (user + system, all threads: the figure a loaded
   machine disturbs least).

Prints numbers only; bench/RESULTS.md has them, with the date, machine and
commit.
"""

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time

# Schemes of the cold-CLI comparison: each has an NVRTC reference kernel.
CLI_SCHEMES = ["mxfp4", "fp8_e4m3", "nvfp4", "int8_g64"]

# Warm spec -> PTX: every named quantize scheme, a dequantize, decode
# attention over an FP8 KV cache and the W4A16 matmul (the heaviest).
WARM_SPECS = ["quantize {} dynamic".format(scheme) for scheme in [
    "fp8_e4m3", "fp8_e5m2", "mxfp8", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4",
    "nvfp4", "int4_g128", "int8", "int8_g64"]] + [
    "dequantize mxfp4 to=bf16",
    "kv_attend kv_fp8_e4m3 scale=per_head q=bf16 layout=paged q_heads=32 "
    "kv_heads=8 head_dim=128",
    "matmul int4_g128 from=bf16",
]

# Llama-3-8B (hidden 4096, intermediate 14336, 32 query heads, 8 KV heads
# of 128) laid out as vLLM serves it (fused qkv_proj and gate_up_proj):
# the four distinct weight shapes [N, K] of its quantized linear layers.
LLAMA3_8B_LINEAR = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]


def model_specs():
    """One spec per distinct layer shape and scheme, for two deployments:
    int4_g128 weights (W4A16) and nvfp4 weights with nvfp4 activations
    (W4A4). Per weight shape, the weights' quantize and dequantize kernels
    at that static shape, and the quantized matmul at that shape (the
    W4A16 GEMV/GEMM `matmul int4_g128`, the W4A4 `matmul w=nvfp4
    a=nvfp4`; docs/matmul-gpu.md); the activations' quantize (dynamic
    rows: one spec per scheme); an FP8 KV cache's append and decode
    attention."""
    specs = []
    matmuls = {"int4_g128": "matmul int4_g128 from=bf16",
               "nvfp4": "matmul w=nvfp4 a=nvfp4 from=bf16"}
    for scheme in ["int4_g128", "nvfp4"]:
        for n, k in LLAMA3_8B_LINEAR:
            specs += [
                "quantize {} from=bf16 rows={} cols={}".format(scheme, n, k),
                "dequantize {} to=bf16 rows={} cols={}".format(scheme, n, k),
                "{} n={} k={}".format(matmuls[scheme], n, k)]
    specs += [
        "quantize nvfp4 from=bf16",
        "quantize fp8_e4m3 from=bf16",
        "kv_append kv_fp8_e4m3 scale=per_head from=bf16 layout=paged "
        "heads=8 head_dim=128",
        "kv_attend kv_fp8_e4m3 scale=per_head q=bf16 layout=paged "
        "q_heads=32 kv_heads=8 head_dim=128",
    ]
    return specs


def timed(command, environment):
    """Wall and CPU (user + system) milliseconds of one run of `command`."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=environment,
                               stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status):
        raise SystemExit("{} failed".format(command))
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def linkage(build):
    """'static' or 'shared': how the build links its compiler library."""
    with open(os.path.join(build, "CMakeCache.txt")) as cache:
        for line in cache:
            if line.startswith("LOWBIT_STATIC_COMPILER:BOOL="):
                value = line.split("=", 1)[1].strip().upper()
                return "static" if value in ("ON", "1", "TRUE") else "shared"
    return "shared"


def cold_cli(builds, args, environment):
    binaries = {name: os.path.join(build, "bin")
                for name, build in builds.items()}
    peer_binary = os.path.join(next(iter(binaries.values())),
                               "lowbit-bench-nvrtc-process")
    print("1. Whole-process cold CLI against the NVRTC peer process "
          "({}, {} rounds; ms)".format(args.chip, args.runs))
    print("  {:<10} {:<24} {:>9} {:>9} {:>11} {:>11}".format(
        "scheme", "command", "wall", "cpu", "wall/peer", "round/peer"))
    with tempfile.TemporaryDirectory() as scratch:
        for scheme in CLI_SCHEMES:
            spec = "quantize {} dynamic".format(scheme)
            commands = {"NVRTC peer": [peer_binary, scheme, args.chip]}
            for name, directory in binaries.items():
                commands["lowbit ({})".format(name)] = [
                    os.path.join(directory, "lowbit"), "compile", spec,
                    "--target", args.chip]
            wall = {name: [] for name in commands}
            cpu = {name: [] for name in commands}
            for round_index in range(args.runs + 1):
                for index, (name, command) in enumerate(commands.items()):
                    # Empty for every run: no command finds what another
                    # wrote (both builds compute the same keys).
                    cache = os.path.join(scratch, "{}-{}-{}".format(
                        scheme, round_index, index))
                    sample = timed(command, dict(environment,
                                                 LOWBIT_CACHE_DIR=cache))
                    if round_index:  # the first round warms the page cache
                        wall[name].append(sample[0])
                        cpu[name].append(sample[1])
            peer = wall["NVRTC peer"]
            for name in commands:
                rounds = [mine / theirs for mine, theirs in zip(wall[name], peer)]
                print("  {:<10} {:<24} {:9.2f} {:9.2f} {:10.3f}x {:10.3f}x".format(
                    scheme, name, statistics.median(wall[name]),
                    statistics.median(cpu[name]),
                    statistics.median(wall[name]) / statistics.median(peer),
                    statistics.median(rounds)))


def children_cpu_ms():
    """User + system CPU milliseconds of the waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def run_bench(build, arguments, environment):
    output = subprocess.run(
        [os.path.join(build, "bin", "lowbit-bench-cold-start")] + arguments,
        env=environment, check=True, capture_output=True, text=True).stdout
    return output.splitlines()


def in_process(builds, args, environment):
    print("\n2. In process: first compile against warm (spec -> PTX, {}; "
          "warm = median of {}; ms)".format(args.chip, args.runs))
    for name, build in builds.items():
        lines = run_bench(build, ["warm", args.chip, str(args.runs)] +
                          WARM_SPECS, environment)
        load = float(lines[0].split()[1])
        print("  {}: loading the compiler library {:.2f} ms".format(name, load))
        print("  {:<46} {:>8} {:>8} {:>8} {:>8} {:>10}".format(
            "spec", "first", "warm", "1st/w", "nvrtc", "nvrtc/w"))
        for line in lines[1:]:
            spec, first, warm, nvrtc = line.split(" ", 1)[1].split("\t")
            first, warm = float(first), float(warm)
            peer = "-" if nvrtc == "-" else "{:8.2f}".format(float(nvrtc))
            ratio = "-" if nvrtc == "-" else "{:9.2f}x".format(
                float(nvrtc) / warm)
            print("  {:<46} {:8.2f} {:8.2f} {:7.2f}x {:>8} {:>10}".format(
                spec[:46], first, warm, first / warm, peer, ratio))


def startup(builds, args, environment):
    specs = model_specs()
    print("\n3. Start-up: the {} kernel specs of Llama-3-8B (int4_g128 and "
          "nvfp4 weights with their matmuls, FP8 KV cache), {} threads, "
          "empty cache; median of {} (ms)".format(len(specs), args.threads,
                                                  args.runs))
    for name, build in builds.items():
        for product in ["ptx", "cubin"]:
            walls, cpus = [], []
            for _ in range(args.runs):
                before = children_cpu_ms()
                line = run_bench(build, ["startup", args.chip,
                                         str(args.threads), product] + specs,
                                 environment)[-1]
                cpus.append(children_cpu_ms() - before)
                walls.append(float(line.split()[1]))
            print("  {:<8} {:<6} wall {:10.1f}   (min {:.1f}, max {:.1f})"
                  "   process cpu {:10.1f}".format(
                      name, product, statistics.median(walls), min(walls),
                      max(walls), statistics.median(cpus)))
    print("  specs:")
    for spec in specs:
        print("    " + spec)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--compare")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--chip", default="sm_90a")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--parts", default="1,2,3",
                        help="which of the three measures to run, e.g. 2,3")
    args = parser.parse_args()
    builds = {}
    for build in [args.build] + ([args.compare] if args.compare else []):
        name = linkage(build)
        if name in builds:
            name += "-" + os.path.basename(os.path.normpath(build))
        builds[name] = build
    environment = dict(os.environ)
    for variable in ["LOWBIT_CACHE", "LOWBIT_COMPILER_LIBRARY",
                     "LOWBIT_CUBIN", "LOWBIT_DUMP_DIR"]:
        environment.pop(variable, None)
    print("builds: " + ", ".join("{} = {}".format(name, build)
                                 for name, build in builds.items()))
    parts = set(args.parts.split(","))
    if "1" in parts:
        cold_cli(builds, args, environment)
    if "2" in parts:
        in_process(builds, args, environment)
    if "3" in parts:
        startup(builds, args, environment)


if __name__ == "__main__":
    main()

"""Triton's compile latency for the same jobs as lowbit's kernels.

The peer of `lowbit-bench-latency` (bench/CompileLatencyBench.cpp): the
Triton kernels of bench/triton/quant_kernels.py (per-token FP8 and MXFP4)
compiled for a GPUTarget, no GPU needed, with Triton's cache bypassed:
  cold - the first compile in a fresh Python process (a child), median of
         `runs` children; the import of triton is not timed;
  warm - later compiles in the same process, median of `runs`.
Triton compiles to PTX and then to a cubin (its bundled ptxas) in one call,
so its number is spec -> cubin; its PTX stage is timed from the compile's
own stage hooks where this Triton has them, else not reported.

Skipped (exit 0, a message) when `import triton` fails: Triton is a peer,
never a dependency of lowbit's tests or build.

usage: compile_latency.py [--runs N] [--arch 90|100]
       compile_latency.py --child KERNEL ARCH   (one cold compile, prints ms)
"""
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_millis():
    """CPU time of this process and its finished children (Triton runs
    ptxas as a child): the same clock as lowbit-bench-latency's default,
    which a shared, loaded machine disturbs far less than wall time."""
    t = os.times()
    return (t.user + t.system + t.children_user + t.children_system) * 1000


def compile_once(kernel, arch):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sys.path.insert(0, HERE)
    import quant_kernels

    if kernel == "fp8_e4m3 per-token":
        fn = quant_kernels.per_token_fp8_kernel
        signature = {"x_ptr": "*fp32", "q_ptr": "*fp8e4nv", "s_ptr": "*fp32",
                     "cols": "i32", "BLOCK": "constexpr"}
        constexprs = {"BLOCK": 1024}
    else:
        fn = quant_kernels.mxfp4_kernel
        signature = {"x_ptr": "*fp32", "q_ptr": "*u8", "s_ptr": "*u8",
                     "cols": "i32", "GROUPS": "constexpr"}
        constexprs = {"GROUPS": 32}
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    start = cpu_millis()
    compiled = triton.compile(source, target=GPUTarget("cuda", int(arch), 32))
    millis = cpu_millis() - start
    if not compiled.asm.get("cubin"):
        raise RuntimeError("no cubin")
    return millis


def child(kernel, arch):
    print("%.3f" % compile_once(kernel, arch))


def main():
    runs, arch = 7, "90"
    args = sys.argv[1:]
    if args[:1] == ["--child"]:
        return child(args[1], args[2])
    while args:
        if args[0] == "--runs":
            runs = max(1, int(args[1]))
            args = args[2:]
        elif args[0] == "--arch":
            arch = args[1]
            args = args[2:]
        else:
            print(__doc__)
            return 2
    try:
        import triton
    except Exception as error:  # any import failure: skip, never fail
        print("triton: skipped (import triton failed: %s)" % error)
        return 0
    # A fresh cache directory and TRITON_ALWAYS_COMPILE: every compile
    # compiles, none is a cache hit.
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="lowbit-triton-")
    print("Triton %s, GPUTarget cuda %s, spec -> cubin (Triton compiles "
          "through PTX in one call); medians of %d, process + ptxas CPU ms" %
          (triton.__version__, arch, runs))
    print("%-20s %9s %9s %6s" % ("kernel", "cold", "warm", "c/w"))
    for kernel in ("fp8_e4m3 per-token", "mxfp4"):
        colds = []
        for _ in range(runs):
            out = subprocess.run([sys.executable, __file__, "--child", kernel,
                                  arch], capture_output=True, text=True)
            if out.returncode != 0:
                print("%-20s failed: %s" % (kernel,
                                             out.stderr.strip()[-300:]))
                break
            colds.append(float(out.stdout.strip().splitlines()[-1]))
        compile_once(kernel, arch)
        warms = [compile_once(kernel, arch) for _ in range(runs)]
        cold = statistics.median(colds) if colds else float("nan")
        warm = statistics.median(warms)
        print("%-20s %9.1f %9.1f %5.2fx" % (kernel, cold, warm, cold / warm))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""torch and Triton peers of lowbit's kernels on the GPU check's bench size.

Each peer reads an f32 [rows, cols] tensor and writes its quantized form;
GB/s counts the bytes read and written, as lowbit-gpu-runner does. Times
are CUDA-event medians of >= 20 runs after warm-up, next to a
device-to-device copy of the same bytes.

The results file is rewritten (atomically) after every peer, so a run cut
short by a timeout or a crash keeps every result it had. A missing torch,
a torch without CUDA, a missing Triton or torchao, or a peer the installed
versions lack is reported as skipped with the reason, never as a failure:
the script exits 0 and the other peers still run.
"""
import argparse
import json
import os
import sys


def median_ms(fn, iterations):
    import torch
    for _ in range(3):
        fn()
    times = []
    for _ in range(iterations):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


class Recorder:
    """Holds the results and writes them to `path` after every change."""

    def __init__(self, path, rows, cols):
        self.path = path
        self.results = {"torch_version": None, "rows": rows, "cols": cols,
                        "peers": []}
        self.write()

    def write(self):
        temporary = f"{self.path}.tmp-{os.getpid()}"
        with open(temporary, "w") as f:
            json.dump(self.results, f, indent=2)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path)

    def add(self, entry):
        self.results["peers"].append(entry)
        self.write()
        print(entry["name"], entry.get("gbps", entry.get("skipped")),
              flush=True)

    def skip(self, name, scheme, reason):
        self.add({"name": name, "scheme": scheme, "skipped": reason})


def error_text(error):
    return f"{type(error).__name__}: {error}"


# (name, scheme) of every peer, so that a missing module skips them all by
# name and the table always has the same rows.
TORCH_PEERS = [("torch fp8 per-tensor", "fp8_e4m3"),
               ("torch fp8 per-token", "fp8_e4m3/token"),
               ("torch.compile fp8 per-tensor", "fp8_e4m3"),
               ("torchao MXFP4", "mxfp4")]
TRITON_PEERS = [("triton fp8 per-token", "fp8_e4m3/token"),
                ("triton mxfp4", "mxfp4")]
COPY_PEER = ("copy (d2d)", "ceiling")


def cuda_torch(recorder, peers):
    """torch with a CUDA device, or None after skipping every one of
    `peers` ((name, scheme) pairs) by name with the reason."""
    try:
        import torch
    except ImportError as error:
        for name, scheme in peers:
            recorder.skip(name, scheme, "torch not installed: " +
                          error_text(error))
        return None
    recorder.results["torch_version"] = torch.__version__
    if not torch.cuda.is_available():
        for name, scheme in peers:
            recorder.skip(name, scheme, "torch has no CUDA device")
        return None
    return torch


def load_triton_kernels():
    """bench/triton/quant_kernels.py by path ("triton" is also the package
    it imports); raises ImportError without Triton."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "triton",
                        "quant_kernels.py")
    spec = importlib.util.spec_from_file_location("lowbit_triton", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", default="8192x8192")
    parser.add_argument("--iterations", type=int, default=25)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    try:
        rows, cols = (int(v) for v in args.bench.split("x"))
    except ValueError:
        parser.error(f"--bench: expected ROWSxCOLS, got '{args.bench}'")
    recorder = Recorder(args.out, rows, cols)
    everything = TORCH_PEERS + TRITON_PEERS + [COPY_PEER]

    torch = cuda_torch(recorder, everything)
    if torch is None:
        return 0

    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
    n = rows * cols

    def record(name, scheme, fn, bytes_moved):
        entry = {"name": name, "scheme": scheme, "bytes": bytes_moved}
        try:
            ms = median_ms(fn, args.iterations)
            entry.update(median_ms=ms, gbps=bytes_moved / (ms * 1e6))
        except Exception as error:  # a peer the version lacks
            entry["skipped"] = error_text(error)
        recorder.add(entry)

    # torch: per-tensor dynamic FP8 (amax, scale, cast) as engines write it.
    def torch_fp8_per_tensor():
        scale = x.abs().amax().clamp(min=1e-12) / 448.0
        return (x / scale).clamp(-448, 448).to(torch.float8_e4m3fn), scale

    def torch_fp8_per_token():
        scale = x.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 448.0
        return (x / scale).clamp(-448, 448).to(torch.float8_e4m3fn), scale

    record("torch fp8 per-tensor", "fp8_e4m3", torch_fp8_per_tensor, n * 5)
    record("torch fp8 per-token", "fp8_e4m3/token", torch_fp8_per_token,
           n * 5 + rows * 4)
    try:
        compiled = torch.compile(torch_fp8_per_tensor)
        record("torch.compile fp8 per-tensor", "fp8_e4m3", compiled, n * 5)
    except Exception as error:
        recorder.skip("torch.compile fp8 per-tensor", "fp8_e4m3",
                      error_text(error))

    # torch's MX helpers, where the installed version has them.
    try:
        from torchao.prototype.mx_formats.mx_tensor import MXTensor
        record("torchao MXFP4", "mxfp4",
               lambda: MXTensor.to_mx(x, torch.float4_e2m1fn_x2, 32),
               n * 4 + n // 2 + n // 32)
    except Exception as error:
        recorder.skip("torchao MXFP4", "mxfp4", error_text(error))

    try:
        module = load_triton_kernels()
    except Exception as error:
        for name, scheme in TRITON_PEERS:
            recorder.skip(name, scheme, "Triton unavailable: " +
                          error_text(error))
    else:
        record("triton fp8 per-token", "fp8_e4m3/token",
               lambda: module.per_token_fp8(x), n * 5 + rows * 4)
        record("triton mxfp4", "mxfp4", lambda: module.mxfp4(x),
               n * 4 + n // 2 + n // 32)

    half = n * 4
    src = torch.empty(half, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    record("copy (d2d)", "ceiling", lambda: dst.copy_(src), 2 * half)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""torch and Triton peers of lowbit's kernels on the GPU check's bench size.

Each peer reads an f32 [rows, cols] tensor and writes its quantized form;
GB/s counts the bytes read and written, as lowbit-gpu-runner does. Times
are CUDA-event medians of >= 20 runs after warm-up, next to a
device-to-device copy of the same bytes. Peers the installed versions lack
are reported as skipped, never as failures.
"""
import argparse
import json


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", default="8192x8192")
    parser.add_argument("--iterations", type=int, default=25)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rows, cols = (int(v) for v in args.bench.split("x"))

    import torch
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
    n = rows * cols
    results = {"torch_version": torch.__version__, "rows": rows, "cols": cols,
               "peers": []}

    def record(name, scheme, fn, bytes_moved):
        entry = {"name": name, "scheme": scheme, "bytes": bytes_moved}
        try:
            ms = median_ms(fn, args.iterations)
            entry.update(median_ms=ms, gbps=bytes_moved / (ms * 1e6))
        except Exception as error:  # a peer the version lacks
            entry["skipped"] = f"{type(error).__name__}: {error}"
        results["peers"].append(entry)
        print(name, entry.get("gbps", entry.get("skipped")), flush=True)

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
        results["peers"].append({"name": "torch.compile fp8 per-tensor",
                                 "skipped": str(error)})

    # torch's MX helpers, where the installed version has them.
    try:
        from torchao.prototype.mx_formats.mx_tensor import MXTensor
        record("torchao MXFP4", "mxfp4",
               lambda: MXTensor.to_mx(x, torch.float4_e2m1fn_x2, 32),
               n * 4 + n // 2 + n // 32)
    except Exception as error:
        results["peers"].append({"name": "torchao MXFP4",
                                 "skipped": f"{type(error).__name__}: {error}"})

    # bench/triton/quant_kernels.py by path: "triton" is also the package.
    import importlib.util
    path = __file__.rsplit("/", 1)[0] + "/triton/quant_kernels.py"
    spec = importlib.util.spec_from_file_location("lowbit_triton", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    per_token_fp8, mxfp4 = module.per_token_fp8, module.mxfp4
    record("triton fp8 per-token", "fp8_e4m3/token", lambda: per_token_fp8(x),
           n * 5 + rows * 4)
    record("triton mxfp4", "mxfp4", lambda: mxfp4(x), n * 4 + n // 2 + n // 32)

    half = n * 4
    src = torch.empty(half, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    record("copy (d2d)", "ceiling", lambda: dst.copy_(src), 2 * half)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()

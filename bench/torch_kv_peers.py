#!/usr/bin/env python3
"""torch peers of lowbit's KV-cache and decode-attention kernels.

The shapes of the GPU check's KV bench (`lowbit aot --kv-bench BxN`, one
sequence of 32768 tokens by default), Llama-3-8B-like heads: 8 kv heads of
128, 32 query heads (GQA 4). Peers, all in torch itself:
  - FP8 append: new tokens f16 [B, 8, N, 128] / per-head scale, cast to
    torch.float8_e4m3fn (the cast saturates as cvt.rn.satfinite does not:
    torch's cast is not saturating, so values are clamped first);
  - FP8 dequantize: codes.to(f16) * per-head scale;
  - int8 dequantize (groups of 64): codes.to(f32) / scale, to f16;
  - decode attention: FP8 dequantize of K and V, then
    torch.nn.functional.scaled_dot_product_attention with enable_gqa
    (query [1, 32, 1, 128] bf16), the time of both.
GB/s counts the bytes the lowbit kernel of the same op reads and writes,
so the numbers compare with lowbit-gpu-runner's. Results go to --out
(rewritten after every peer); a missing torch or CUDA skips every peer by
name with the reason and exits 0, as bench/torch_peers.py does.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peers import (Recorder, cuda_torch, error_text,  # noqa: E402
                         median_ms)

KV_HEADS, Q_HEADS, HEAD_DIM, GROUP = 8, 32, 128, 64
PEERS = [("torch fp8 append (cast)", "kv_fp8_e4m3"),
         ("torch fp8 dequantize", "kv_fp8_e4m3"),
         ("torch int8_g64 dequantize", "kv_int8_g64"),
         ("torch fp8 dequant + sdpa (decode)", "kv_fp8_e4m3 attention")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kv-bench", default="1x32768")
    parser.add_argument("--iterations", type=int, default=25)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    try:
        batch, tokens = (int(v) for v in args.kv_bench.split("x"))
    except ValueError:
        parser.error(f"--kv-bench: expected BxN, got '{args.kv_bench}'")
    recorder = Recorder(args.out, batch, tokens)
    torch = cuda_torch(recorder, PEERS)
    if torch is None:
        return 0

    shape = (batch, KV_HEADS, tokens, HEAD_DIM)
    elements = batch * KV_HEADS * tokens * HEAD_DIM
    new = torch.randn(shape, device="cuda", dtype=torch.float16)
    scale = (new.abs().amax(dim=(0, 2, 3), keepdim=True).float() / 448.0)
    fp8 = getattr(torch, "float8_e4m3fn", None)

    def run(name, scheme, fn, bytes_moved):
        try:
            ms = median_ms(fn, args.iterations)
            recorder.add({"name": name, "scheme": scheme, "median_ms": ms,
                          "bytes": bytes_moved,
                          "gbps": bytes_moved / (ms * 1e6)})
        except Exception as error:  # a peer the installed torch lacks
            recorder.skip(name, scheme, error_text(error))

    if fp8 is None:
        for name, scheme in PEERS[:2] + PEERS[3:]:
            recorder.skip(name, scheme, "torch has no float8_e4m3fn")
    else:
        def append():
            return (new.float() / scale).clamp(-448.0, 448.0).to(fp8)
        codes = append()
        run(*PEERS[0], append, elements * 2 + elements)
        run(*PEERS[1], lambda: codes.to(torch.float16) * scale.half(),
            elements + elements * 2)
    int8 = torch.randint(-127, 128, shape, device="cuda", dtype=torch.int8)
    groups = torch.rand(shape[:-1] + (HEAD_DIM // GROUP,), device="cuda") + 1

    def int8_dequantize():
        values = int8.view(*shape[:-1], HEAD_DIM // GROUP, GROUP).float()
        return (values / groups.unsqueeze(-1)).view(shape).half()
    run(*PEERS[2], int8_dequantize,
        elements + groups.numel() * 4 + elements * 2)
    if fp8 is not None:
        query = torch.randn((batch, Q_HEADS, 1, HEAD_DIM), device="cuda",
                            dtype=torch.bfloat16)
        keys, values = codes, append()

        def decode():
            k = keys.to(torch.bfloat16) * scale.bfloat16()
            v = values.to(torch.bfloat16) * scale.bfloat16()
            return torch.nn.functional.scaled_dot_product_attention(
                query, k, v, enable_gqa=True)
        run(*PEERS[3], decode, 2 * elements + query.numel() * 2 * 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

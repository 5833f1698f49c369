"""Triton peers of lowbit's kernels, for the GPU check (bench/torch_peers.py).

- per_token_fp8: dynamic per-token (per-row) FP8 E4M3 quantization, the
  scale = amax / 448 as vLLM's `per_token_quant` computes it.
- mxfp4: OCP MXFP4 (E2M1 codes, one E8M0 scale per 32 elements, FLOOR
  rule: exponent of amax minus 2), two codes per byte, element 0 in the low
  nibble (docs/kernel-abi.md). RNE to E2M1 is done with a small table of
  boundaries, so it needs no FP4 hardware (H200 has none).
These are performance peers; lowbit's bit-exactness is checked against its
own CPU results, not against these.
"""
import triton
import triton.language as tl


@triton.jit
def per_token_fp8_kernel(x_ptr, q_ptr, s_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    amax = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        x = tl.load(x_ptr + row * cols + start + offsets, mask=mask, other=0.0)
        amax = tl.maximum(amax, tl.abs(x))
    scale = tl.maximum(tl.max(amax, axis=0) / 448.0, 1e-12)
    tl.store(s_ptr + row, scale)
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        x = tl.load(x_ptr + row * cols + start + offsets, mask=mask, other=0.0)
        y = tl.clamp(x / scale, -448.0, 448.0)
        tl.store(q_ptr + row * cols + start + offsets,
                 y.to(tl.float8e4nv), mask=mask)


@triton.jit
def _e2m1_code(v):
    # |v| already scaled; round to nearest even among 0,.5,1,1.5,2,3,4,6.
    a = tl.abs(v)
    code = tl.where(a <= 0.25, 0,
           tl.where(a < 0.75, 1,
           tl.where(a <= 1.25, 2,
           tl.where(a < 1.75, 3,
           tl.where(a <= 2.5, 4,
           tl.where(a < 3.5, 5,
           tl.where(a <= 5.0, 6, 7)))))))
    sign = tl.where(v < 0, 8, 0)
    return (code + sign).to(tl.uint8)


@triton.jit
def mxfp4_kernel(x_ptr, q_ptr, s_ptr, cols, GROUPS: tl.constexpr):
    # One program per (row, GROUPS groups of 32).
    row = tl.program_id(0)
    block = tl.program_id(1)
    g = tl.arange(0, GROUPS)
    pair = tl.arange(0, 16)
    base = block * GROUPS * 32 + g[:, None] * 32 + pair[None, :] * 2
    mask = base < cols
    even = tl.load(x_ptr + row * cols + base, mask=mask, other=0.0)
    odd = tl.load(x_ptr + row * cols + base + 1, mask=(base + 1) < cols,
                  other=0.0)
    amax = tl.maximum(tl.max(tl.abs(even), axis=1), tl.max(tl.abs(odd), axis=1))
    bits = amax.to(tl.int32, bitcast=True)
    exponent = ((bits >> 23) & 0xFF) - 2  # FLOOR: emax(e2m1) = 2
    exponent = tl.where(amax == 0, 0, tl.maximum(exponent, 0))
    scale = (exponent << 23).to(tl.float32, bitcast=True)
    scale = tl.where(exponent == 0, 2.0 ** -127, scale)
    lo = _e2m1_code(even / scale[:, None])
    hi = _e2m1_code(odd / scale[:, None])
    packed = lo | (hi << 4)
    tl.store(q_ptr + row * ((cols + 1) // 2) + base // 2, packed, mask=mask)
    group_index = block * GROUPS + g
    tl.store(s_ptr + row * tl.cdiv(cols, 32) + group_index,
             exponent.to(tl.uint8), mask=group_index * 32 < cols)


def per_token_fp8(x):
    import torch
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.float8_e4m3fn, device=x.device)
    s = torch.empty((rows,), dtype=torch.float32, device=x.device)
    per_token_fp8_kernel[(rows,)](x, q, s, cols, BLOCK=1024)
    return q, s


def mxfp4(x):
    import torch
    rows, cols = x.shape
    q = torch.empty((rows, (cols + 1) // 2), dtype=torch.uint8, device=x.device)
    s = torch.empty((rows, triton.cdiv(cols, 32)), dtype=torch.uint8,
                    device=x.device)
    groups = 8
    grid = (rows, triton.cdiv(cols, 32 * groups))
    mxfp4_kernel[grid](x, q, s, cols, GROUPS=groups)
    return q, s

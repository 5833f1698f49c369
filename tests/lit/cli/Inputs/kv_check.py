"""Inputs for kv.test, and an independent NumPy check of the kv_int8
contract: scale = 127 / max(amax, eps) per group of G along the last axis
(f32), q = clip(rint(x * scale), -127, 127), x^ = q / scale."""
import json
import sys
from pathlib import Path

import numpy as np


def make(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261201)
    # [batch 2, kv heads 3, 1 token, head_dim 8]: the [2, 3, 8] example.
    np.save(out / "k.npy", rng.standard_normal((2, 3, 1, 8)).astype(np.float32))
    np.save(out / "v.npy", rng.standard_normal((2, 3, 1, 8)).astype(np.float32))
    np.save(out / "k5.npy", rng.standard_normal((2, 3, 5, 8)).astype(np.float16))
    np.save(out / "q.npy", rng.standard_normal((2, 6, 8)).astype(np.float32))
    np.save(out / "q_bad.npy", rng.standard_normal((2, 4, 8)).astype(np.float32))
    np.save(out / "k_wrong.npy", rng.standard_normal((2, 3, 1, 7)).astype(np.float32))
    np.save(out / "table.npy", np.array([[2, 0], [1, -1]], dtype=np.int32))
    np.save(out / "table_bad.npy", np.array([[9, 0], [1, -1]], dtype=np.int32))
    np.save(out / "scales.npy", np.array([0.01, 0.02, 0.03], dtype=np.float32))


def check_contract(inputs, cache):
    inputs, cache = Path(inputs), Path(cache)
    x = np.load(inputs / "k.npy")
    meta = json.loads((cache / "meta.json").read_text())
    assert meta["lengths"] == [1, 1], meta["lengths"]
    # Storage holds `capacity` token rows; the first is the one appended.
    codes = np.load(cache / "k_codes.npy")[:, :, :1]
    scales = np.load(cache / "k_scales.npy")[:, :, :1]
    assert codes.dtype == np.int8, codes.dtype
    assert scales.shape == (2, 3, 1, 2), scales.shape
    groups = x.reshape(2, 3, 1, 2, 4)
    amax = np.maximum(np.abs(groups).max(axis=-1), np.float32(1e-8))
    want_scales = (np.float32(127) / amax).astype(np.float32)
    want = np.clip(np.rint(groups * want_scales[..., None]), -127, 127)
    assert np.array_equal(scales.view(np.uint32), want_scales.view(np.uint32))
    assert np.array_equal(codes, want.astype(np.int8).reshape(2, 3, 1, 8))
    back = np.load(inputs / "dk.npy")
    assert np.array_equal(
        back, (want / want_scales[..., None]).astype(np.float32).reshape(2, 3, 1, 8))
    print("contract ok:", meta["scheme"], "scales", scales.shape, "codes", codes.dtype)


def check_attention(inputs):
    inputs = Path(inputs)
    k = np.load(inputs / "dk.npy").astype(np.float64)
    v = np.load(inputs / "dv.npy").astype(np.float64)
    q = np.load(inputs / "q.npy").astype(np.float64)
    out = np.load(inputs / "o.npy")
    group = q.shape[1] // k.shape[1]
    kk = np.repeat(k, group, axis=1)
    vv = np.repeat(v, group, axis=1)
    logits = np.einsum("bhd,bhtd->bht", q, kk) / np.sqrt(q.shape[-1])
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    want = np.einsum("bht,bhtd->bhd", p, vv)
    err = np.abs(out - want).max() / np.abs(want).max()
    assert err < 1e-5, err
    print("attention ok: max error relative to max", f"{err:.1e}" if err else "0")


if __name__ == "__main__":
    {"make": make, "contract": check_contract, "attention": check_attention}[
        sys.argv[1]](*sys.argv[2:])

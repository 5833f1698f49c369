"""Inputs for quantize-nd.test and kv-nd.test, and their independent
checks:
- an N-D quantized set equals the set of the same array flattened to 2-D
  ([prod(shape[:-1]), shape[-1]]) array for array, except that it keeps the
  shape (q.npy, and scales/zeros with one row per row, get the leading axes;
  meta.json gets "shape");
- kv_int8 on a [2, 3, 8] tensor with G = 4: scale = 127 / max(amax, eps)
  per group (f32), q = clip(rint(x * scale), -127, 127), x^ = q / scale."""
import json
import sys
from pathlib import Path

import numpy as np


def make(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 5, 64)).astype(np.float32)
    x[0, 1, 2, 7] = 40.0  # one outlier, so the groups differ
    np.save(out / "x4.npy", x)
    np.save(out / "x4_flat.npy", x.reshape(-1, 64))
    np.save(out / "h3.npy", rng.standard_normal((4, 3, 33)).astype(np.float16))
    np.save(out / "h3_flat.npy", np.load(out / "h3.npy").reshape(-1, 33))
    np.save(out / "x9.npy", np.ones((1,) * 8 + (2,), np.float32))
    # The acceptance example: [2, 3, 8], G = 4, with a zero group and ties.
    t = rng.standard_normal((2, 3, 8)).astype(np.float32)
    t[1, 2, :4] = 0.0
    t[0, 0, :4] = [127.0, 0.5, -1.5, 2.5]
    np.save(out / "t.npy", t)


def same_set(nd, flat, rows_follow):
    nd, flat = Path(nd), Path(flat)
    meta_nd = json.loads((nd / "meta.json").read_text())
    meta_flat = json.loads((flat / "meta.json").read_text())
    shape = meta_nd.pop("shape")
    assert "shape" not in meta_flat
    assert meta_nd == meta_flat, (meta_nd, meta_flat)
    leading = shape[:-1]
    for name in ("q.npy", "scales.npy", "zeros.npy"):
        if not (flat / name).exists():
            assert not (nd / name).exists(), name
            continue
        a, b = np.load(nd / name), np.load(flat / name)
        assert a.dtype == b.dtype, name
        keeps = name == "q.npy" or rows_follow
        want = tuple(leading) + (b.shape[-1],) if keeps else b.shape
        assert a.shape == want, (name, a.shape, want)
        assert a.tobytes() == b.tobytes(), name
    print("same set:", meta_nd["scheme"], "shape", shape,
          "scales", np.load(nd / "scales.npy").shape)


def same_values(nd, flat):
    a, b = np.load(nd), np.load(flat)
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    print("same values:", a.shape, "from", b.shape)


def contract(inputs):
    inputs = Path(inputs)
    x = np.load(inputs / "t.npy")
    codes = np.load(inputs / "t_codes.npy")
    scales = np.load(inputs / "t_scales.npy")
    values = np.load(inputs / "t_values.npy")
    assert codes.dtype == np.int8 and codes.shape == (2, 3, 8), codes.shape
    assert scales.dtype == np.float32 and scales.shape == (2, 3, 2), scales.shape
    groups = x.reshape(2, 3, 2, 4)
    amax = np.maximum(np.abs(groups).max(axis=-1), np.float32(1e-8))
    want_scales = (np.float32(127) / amax).astype(np.float32)
    want_codes = np.clip(np.rint(groups * want_scales[..., None]), -127, 127)
    want_values = (want_codes / want_scales[..., None]).astype(np.float32)
    assert np.array_equal(scales.view(np.uint32), want_scales.view(np.uint32))
    assert np.array_equal(codes, want_codes.astype(np.int8).reshape(2, 3, 8))
    assert np.array_equal(values.view(np.uint32),
                          want_values.reshape(2, 3, 8).view(np.uint32))
    print("contract ok: codes", codes.dtype, codes.shape, "scales",
          scales.shape, "first group", codes[0, 0, :4].tolist(),
          "zero group", codes[1, 2, :4].tolist())


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "same-set":
        same_set(args[0], args[1], args[2] == "rows")
    else:
        {"make": make, "same-values": same_values, "contract": contract}[
            command](*args)

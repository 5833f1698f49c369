"""`lowbit quantize --spec ... --side NAME=FILE`: the CLI's fused quantize
writes, byte for byte, what the library's fused kernel (lowbit.jit, the
C API) returns, with every backend; a missing, extra or mis-shaped side
input is refused with a message, a non-zero exit and nothing written."""

import os
import subprocess

import numpy as np
import pytest

import lowbit

CLI = os.environ["LOWBIT_CLI"]


def same_bits(a, b):
    return (a.shape == b.shape and a.dtype == b.dtype
            and a.tobytes() == b.tobytes())


def data(shape, seed, low=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, low + 1, size=shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def cli(tmp_path, spec, arrays, *extra):
    """Runs quantize --spec with `arrays` ({"input": x, side name: array})
    saved as .npy files; returns the completed process."""
    args = [CLI, "quantize", "--spec", spec, "--out", str(tmp_path / "q")]
    for name, array in arrays.items():
        path = tmp_path / f"{name}.npy"
        np.save(path, array)
        args += (["--input", str(path)] if name == "input"
                 else ["--side", f"{name}={path}"])
    return subprocess.run(args + list(extra), capture_output=True, text=True)


@pytest.mark.parametrize("backend", ["reference", "cpu", "auto"])
def test_rmsnorm_matches_the_library(tmp_path, backend):
    spec = "rmsnorm(eps=1e-6) | quantize nvfp4"
    x, weight = data((4, 64), 1), data((64,), 2, low=0.5)
    run = cli(tmp_path, spec, {"input": x, "weight": weight}, "--backend",
              backend)
    assert run.returncode == 0, run.stderr
    codes, scales, global_scale = lowbit.jit(spec + " dynamic")(
        x, weight.reshape(1, 64))
    assert same_bits(np.load(tmp_path / "q" / "q.npy"), codes)
    assert same_bits(np.load(tmp_path / "q" / "scales.npy"), scales)
    assert (np.load(tmp_path / "q" / "global_scale.npy").tobytes()
            == global_scale.tobytes())


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_add_rmsnorm_writes_the_residual(tmp_path, backend):
    spec = "add_rmsnorm(eps=1e-5) | quantize mxfp4 from=f16"
    x = data((3, 64), 3).astype(np.float16)
    residual = data((3, 64), 4).astype(np.float16)
    weight = data((64,), 5, low=0.5).astype(np.float16)
    run = cli(tmp_path, spec, {"input": x, "residual": residual,
                               "weight": weight},
              "--residual-out", str(tmp_path / "r.npy"), "--backend", backend)
    assert run.returncode == 0, run.stderr
    codes, scales, updated = lowbit.jit(spec)(x, residual,
                                              weight.reshape(1, 64))
    assert same_bits(np.load(tmp_path / "q" / "q.npy"), codes)
    assert same_bits(np.load(tmp_path / "q" / "scales.npy"), scales)
    assert same_bits(np.load(tmp_path / "r.npy"), updated)


def test_side_names_in_help():
    run = subprocess.run([CLI, "quantize", "--help"], capture_output=True,
                         text=True)
    assert run.returncode == 0
    for text in ("--side NAME=FILE", "rmsnorm reads weight",
                 "add_rmsnorm reads residual and weight",
                 "smooth reads smooth"):
        assert text in run.stdout, run.stdout


X = data((2, 32), 6)
W = data((32,), 7, low=0.5)


@pytest.mark.parametrize("spec,arrays,extra,message", [
    # The example: rmsnorm reads no residual (add_rmsnorm does).
    ("rmsnorm(eps=1e-6) | quantize nvfp4",
     {"input": X, "weight": W, "residual": X}, [],
     "the spec takes no side input 'residual'; it reads weight"),
    ("rmsnorm(eps=1e-6) | quantize nvfp4", {"input": X}, [],
     "missing --side weight=FILE: it reads weight"),
    ("rmsnorm | quantize mxfp4", {"input": X, "weight": W[:16]}, [],
     "side input 'weight' has shape (16,), expected (32,) or (1, 32)"),
    ("rmsnorm | quantize mxfp4",
     {"input": X, "weight": W.astype(np.float16)}, [],
     "side input 'weight' is float16; the input is float32"),
    ("rmsnorm | quantize mxfp4 from=bf16", {"input": X, "weight": W}, [],
     "the input is float32; expected uint16 bf16 bits"),
    ("quantize mxfp4", {"input": X, "weight": W}, [],
     "its prologues read no side tensor"),
    ("add_rmsnorm | quantize mxfp4",
     {"input": X, "residual": X, "weight": W}, [],
     "give --residual-out FILE"),
    ("rmsnorm | quantize mxfp4", {"input": X, "weight": W},
     ["--scale", "static"], "--scale does not go with --spec"),
    ("rmsnorm | quantize mxfp4 scale=static", {"input": X, "weight": W}, [],
     "a dynamic scheme"),
])
def test_refused(tmp_path, spec, arrays, extra, message):
    run = cli(tmp_path, spec, arrays, *extra)
    assert run.returncode != 0
    assert message in run.stderr, run.stderr
    assert not (tmp_path / "q").exists()


def test_side_given_twice_or_without_spec(tmp_path):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "w.npy", W)
    base = [CLI, "quantize", "--input", str(tmp_path / "x.npy"), "--out",
            str(tmp_path / "q")]
    side = f"weight={tmp_path / 'w.npy'}"
    twice = subprocess.run(base + ["--spec", "rmsnorm | quantize mxfp4",
                                   "--side", side, "--side", side],
                           capture_output=True, text=True)
    assert twice.returncode != 0
    assert "--side weight given more than once" in twice.stderr
    bare = subprocess.run(base + ["--scheme", "mxfp4", "--side", side],
                          capture_output=True, text=True)
    assert bare.returncode != 0 and "--side goes with --spec" in bare.stderr
    assert not (tmp_path / "q").exists()

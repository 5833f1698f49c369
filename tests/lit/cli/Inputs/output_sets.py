"""Checks that `lowbit quantize --out DIR` replaces DIR as one unit.

Usage: output_sets.py faults|kills|concurrent|mixed WORK

Runs `lowbit` (from PATH) many times and prints one line per property, for
FileCheck:
  faults      LOWBIT_TEST_FAIL_AT=N fails each file system step of a
              write in turn: DIR must still hold the old set, complete and
              readable, nothing may be left behind (not even new parent
              directories), and the error must give the reason.
  kills       LOWBIT_TEST_FAIL_AT=N:kill kills the writer at each step:
              DIR holds the old or the new set, whole, and the next run
              sweeps the dead writer's temporary directory.
  interrupts  LOWBIT_TEST_FAIL_AT=N:SIGINT and N:SIGTERM interrupt quantize
              (a directory) and dequantize (a file) at each step: the
              process dies of the signal, leaves no temporary, DIR holds
              a whole set, and the next run of each command succeeds.
  concurrent  writers of different sets into one DIR at once, with
              readers: DIR always ends as one whole set, and no reader
              exits 0 with a result that is not one of the sets'.
  mixed       sets assembled from two runs' files: dequantize refuses each.
"""

import os
import shutil
import subprocess
import sys

import numpy as np

SET_FILES = ["q.npy", "scales.npy", "zeros.npy", "global_scale.npy", "meta.json",
             "manifest.json"]


def default_signals():
    """lit starts tests with SIGINT ignored, which a child inherits (and
    lowbit then keeps ignoring, as a background job must)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(args, env=None, check=False):
    full_env = dict(os.environ)
    full_env.update(env or {})
    result = subprocess.run(["lowbit"] + args, capture_output=True, text=True,
                            env=full_env, preexec_fn=default_signals)
    if check and result.returncode != 0:
        sys.exit(f"lowbit {' '.join(args)} failed: {result.stderr}")
    return result


def snapshot(directory):
    """The set in `directory` as {name: bytes}, or None if it is missing."""
    if not os.path.isdir(directory):
        return None
    return {name: open(os.path.join(directory, name), "rb").read()
            for name in sorted(os.listdir(directory))}


def leftovers(parent):
    return sorted(n for n in os.listdir(parent) if ".lowbit-tmp." in n or ".tmp." in n)


def make_inputs(work, count):
    rng = np.random.default_rng(7)
    paths = []
    for index in range(count):
        x = (rng.standard_normal((5, 70)) * (index + 1)).astype(np.float32)
        path = os.path.join(work, f"x{index}.npy")
        np.save(path, x)
        paths.append(path)
    return paths


def quantize_args(scheme, source, out):
    return ["quantize", "--scheme", scheme, "--input", source, "--out", out,
            "--backend", "reference"]


def count_steps(args):
    """The file system steps a successful run takes, from the trace."""
    result = run(args, env={"LOWBIT_TEST_TRACE_IO": "1"}, check=True)
    return [line.split(": ", 2)[2] for line in result.stderr.splitlines()
            if line.startswith("lowbit: io step ")]


def faults(work):
    x0, x1 = make_inputs(work, 2)
    out = os.path.join(work, "out")
    run(quantize_args("int8", x0, out), check=True)
    old = snapshot(out)
    expected_dir = os.path.join(work, "expected")
    run(quantize_args("nvfp4", x1, expected_dir), check=True)
    expected = snapshot(expected_dir)
    shutil.rmtree(expected_dir)
    args = quantize_args("nvfp4", x1, out)
    steps = count_steps(args)
    # The trace run replaced the set: put the old one back.
    shutil.rmtree(out)
    run(quantize_args("int8", x0, out), check=True)
    kinds = sorted({step.split(" ")[0] for step in steps})
    print(f"steps of a write: {len(steps)} ({', '.join(kinds)})")
    intact = reasons = readable = clean = 0
    for step in range(1, len(steps) + 1):
        result = run(args, env={"LOWBIT_TEST_FAIL_AT": str(step)})
        now = snapshot(out)
        if result.returncode == 0:
            # The swap happened; only the steps after it (sync, removal of
            # the old set) can fail without undoing it.
            ok = now == expected
            print(f"step {step} ({steps[step - 1]}) not failed: "
                  f"{'new set' if ok else 'WRONG'}")
            continue
        if now == old or now == expected:
            intact += 1
        else:
            print(f"step {step} ({steps[step - 1]}): DIR is mixed: {sorted(now or [])}")
        if "(injected by LOWBIT_TEST_FAIL_AT)" in result.stderr:
            reasons += 1
        if run(["dequantize", "--in", out, "--out", os.path.join(work, "y.npy"),
                "--backend", "reference"]).returncode == 0:
            readable += 1
        if not leftovers(work):
            clean += 1
        if now == expected:
            # A failure after the swap (the parent's fsync): restore.
            shutil.rmtree(out)
            run(quantize_args("int8", x0, out), check=True)
    total = len(steps)
    print(f"failed runs leaving a whole set: {intact}/{total}")
    print(f"failed runs naming the injected reason: {reasons}/{total}")
    print(f"failed runs leaving a readable set: {readable}/{total}")
    print(f"failed runs leaving no temporaries: {clean}/{total}")

    # A new --out under missing parents: a failure leaves none of them.
    deep = os.path.join(work, "a", "b", "c")
    deep_args = quantize_args("int8", x0, deep)
    deep_steps = count_steps(deep_args)
    shutil.rmtree(os.path.join(work, "a"))
    left = 0
    for step in range(1, len(deep_steps) + 1):
        result = run(deep_args, env={"LOWBIT_TEST_FAIL_AT": str(step)})
        if result.returncode == 0:
            shutil.rmtree(os.path.join(work, "a"))
            continue
        if os.path.exists(os.path.join(work, "a")):
            left += 1
            shutil.rmtree(os.path.join(work, "a"))
    print(f"failed runs into new parents leaving a directory: {left}")

    # A full disk: the first write fails with ENOSPC.
    first_write = next(i for i, s in enumerate(deep_steps, 1) if s.startswith("write "))
    result = run(deep_args, env={"LOWBIT_TEST_FAIL_AT": f"{first_write}:ENOSPC"})
    print(f"full disk: exit {result.returncode}: {result.stderr.strip()}")
    print(f"full disk leaves a directory: {os.path.exists(os.path.join(work, 'a'))}")

    # No RENAME_EXCHANGE (EINVAL from the file system): two renames instead.
    exchange = next(i for i, s in enumerate(steps, 1) if s.startswith("exchange "))
    result = run(args, env={"LOWBIT_TEST_FAIL_AT": f"{exchange}:EINVAL"})
    print(f"without RENAME_EXCHANGE: exit {result.returncode}, "
          f"{'new set' if snapshot(out) == expected else 'WRONG'}, "
          f"temporaries {len(leftovers(work))}")


def kills(work):
    x0, x1 = make_inputs(work, 2)
    out = os.path.join(work, "out")
    # Two sets of one scheme (the same steps), written over each other.
    sets = {}
    for source in (x0, x1):
        directory = os.path.join(work, "expected")
        run(quantize_args("nvfp4", source, directory), check=True)
        sets[source] = snapshot(directory)
        shutil.rmtree(directory)
    run(quantize_args("nvfp4", x0, out), check=True)
    steps = count_steps(quantize_args("nvfp4", x1, out))
    whole = killed = readable = 0
    current = x1  # what the trace run left
    for step in range(1, len(steps) + 1):
        other = x0 if current == x1 else x1
        result = run(quantize_args("nvfp4", other, out),
                     env={"LOWBIT_TEST_FAIL_AT": f"{step}:kill"})
        killed += result.returncode == -9
        now = snapshot(out)
        if now == sets[current] or now == sets[other]:
            whole += 1
        if now == sets[other]:
            current = other
        if run(["dequantize", "--in", out, "--out", os.path.join(work, "y.npy"),
                "--backend", "reference"]).returncode == 0:
            readable += 1
    print(f"killed writers: {killed}/{len(steps)}")
    print(f"sets whole after a kill: {whole}/{len(steps)}")
    print(f"sets readable after a kill: {readable}/{len(steps)}")
    print(f"temporaries of killed writers: {'some' if leftovers(work) else 'none'}")
    run(quantize_args("nvfp4", x0, out), check=True)
    print(f"temporaries after the next run: {leftovers(work)}")


def interrupts(work):
    import signal
    x0, x1 = make_inputs(work, 2)
    out = os.path.join(work, "out")
    y = os.path.join(work, "y.npy")
    run(quantize_args("nvfp4", x0, out), check=True)
    dequantize = ["dequantize", "--in", out, "--out", y, "--backend", "reference"]
    commands = {"quantize": quantize_args("nvfp4", x1, out),
                "dequantize": dequantize}
    for name, args in commands.items():
        steps = len(count_steps(args))
        for sig in (signal.SIGINT, signal.SIGTERM):
            died = clean = whole = 0
            for step in range(1, steps + 1):
                result = run(args, env={"LOWBIT_TEST_FAIL_AT":
                                        f"{step}:{sig.name}"})
                died += result.returncode == -sig
                clean += not leftovers(work)
                whole += run(dequantize).returncode == 0
            print(f"{name} {sig.name}: died of the signal {died}/{steps}, "
                  f"no temporaries {clean}/{steps}, readable set {whole}/{steps}")
    for name, args in commands.items():
        print(f"next {name}: exit {run(args).returncode}")
    print(f"temporaries at the end: {leftovers(work)}")


def concurrent(work, trials=8, writers=8, readers=3):
    inputs = make_inputs(work, writers)
    schemes = ["int8", "nvfp4", "mxfp4", "int4_g128", "fp8_e4m3", "mxfp6_e2m3",
               "int8_g64", "mxfp8"]
    sets, outputs = [], []
    for index, source in enumerate(inputs):
        directory = os.path.join(work, f"expected{index}")
        run(quantize_args(schemes[index], source, directory), check=True)
        sets.append(snapshot(directory))
        y = os.path.join(work, f"expected{index}.npy")
        run(["dequantize", "--in", directory, "--out", y, "--backend", "reference"],
            check=True)
        outputs.append(np.load(y))
    shared = os.path.join(work, "shared")
    run(quantize_args(schemes[0], inputs[0], shared), check=True)
    mixed = wrong_reads = good_reads = refused_reads = 0
    for trial in range(trials):
        procs = [subprocess.Popen(["lowbit"] + quantize_args(schemes[i], inputs[i], shared),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for i in range(writers)]
        read_procs = []
        for reader in range(readers):
            y = os.path.join(work, f"read{trial}-{reader}.npy")
            read_procs.append((y, subprocess.Popen(
                ["lowbit", "dequantize", "--in", shared, "--out", y,
                 "--backend", "reference"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
        codes = [p.wait() for p in procs]
        if any(codes):
            print(f"trial {trial}: writers failed: {[p.stderr.read() for p in procs]}")
        for y, proc in read_procs:
            if proc.wait() != 0:
                refused_reads += 1
                continue
            got = np.load(y)
            if any(got.shape == o.shape and np.array_equal(got, o, equal_nan=True)
                   for o in outputs):
                good_reads += 1
            else:
                wrong_reads += 1
        if snapshot(shared) not in sets:
            mixed += 1
        if run(["dequantize", "--in", shared, "--out", os.path.join(work, "y.npy"),
                "--backend", "reference"]).returncode:
            mixed += 1
    print(f"mixed sets: {mixed} of {trials} trials with {writers} writers")
    print(f"readers that exited 0 with a wrong result: {wrong_reads}")
    print(f"readers: {good_reads + refused_reads + wrong_reads} "
          f"(ok {'some' if good_reads else 'none'})")
    print(f"temporaries left: {leftovers(work)}")


def mixed(work):
    x0, x1 = make_inputs(work, 2)
    a, b = os.path.join(work, "a"), os.path.join(work, "b")
    run(quantize_args("int8", x0, a), check=True)
    run(quantize_args("int8", x1, b), check=True)
    accepted = 0
    # A file equal in both runs (meta.json here) does not mix anything.
    names = [n for n in sorted(os.listdir(a))
             if open(os.path.join(a, n), "rb").read() != open(os.path.join(b, n), "rb").read()]
    for name in names:
        m = os.path.join(work, "m-" + name)
        shutil.copytree(a, m)
        shutil.copyfile(os.path.join(b, name), os.path.join(m, name))
        result = run(["dequantize", "--in", m, "--out", os.path.join(work, "y.npy"),
                      "--backend", "reference"])
        if result.returncode == 0:
            accepted += 1
            print(f"accepted a set with {name} from another run")
    print(f"mixed sets accepted: {accepted} of {len(names)}")


def main():
    mode, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"faults": faults, "kills": kills, "interrupts": interrupts,
     "concurrent": concurrent,
     "mixed": mixed}[mode](work)


if __name__ == "__main__":
    main()

"""Interrupts `lowbit quantize-model` at every file system step and checks
that running the same command again finishes the same checkpoint, byte for
byte, as a run that was never interrupted.

Usage: quantize_model_resume.py LOWBIT HF_DIR REFERENCE_DIR WORK [ARG...]

Each step N of an uninterrupted run (counted with LOWBIT_TEST_TRACE_IO=1)
is interrupted in turn, odd steps by LOWBIT_TEST_FAIL_AT=N:kill (SIGKILL:
temporaries stay, the rerun sweeps them) and even ones by N:SIGINT (the
handler removes them). ARG are quantize-model's options besides --in and
--out.
"""

import os
import shutil
import signal
import subprocess
import sys


def tree(directory):
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, directory)] = f.read()
    return files


def temporaries(directory):
    return [name for _, _, names in os.walk(directory)
            for name in names if ".tmp." in name]


def main():
    lowbit, model, reference, work = sys.argv[1:5]
    options = sys.argv[5:]
    # lit starts tests with SIGINT ignored, which a child would inherit.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    out = os.path.join(work, "out")
    command = [lowbit, "quantize-model", "--in", model, "--out", out] + options

    shutil.rmtree(out, ignore_errors=True)
    traced = subprocess.run(command, capture_output=True, text=True,
                            env=dict(os.environ, LOWBIT_TEST_TRACE_IO="1"))
    steps = traced.stderr.count("lowbit: io step ")
    want = tree(reference)
    print(f"uninterrupted run: exit {traced.returncode}, same as the "
          f"reference: {tree(out) == want}")

    counts = {"kill": [0, 0, 0, 0], "SIGINT": [0, 0, 0, 0]}
    for step in range(1, steps + 1):
        how, code = (("kill", -signal.SIGKILL) if step % 2 else
                     ("SIGINT", -signal.SIGINT))
        shutil.rmtree(out, ignore_errors=True)
        stopped = subprocess.run(
            command, capture_output=True,
            env=dict(os.environ, LOWBIT_TEST_FAIL_AT=f"{step}:{how}"))
        count = counts[how]
        count[0] += 1
        count[1] += stopped.returncode == code
        if how == "SIGINT" and temporaries(out):
            print(f"step {step}: SIGINT left {temporaries(out)}")
        resumed = subprocess.run(command, capture_output=True, text=True)
        same = resumed.returncode == 0 and tree(out) == want
        count[2] += same
        count[3] += not temporaries(out)
        if not same:
            print(f"step {step} ({how}): rerun exit {resumed.returncode}: "
                  f"{resumed.stderr.strip()}")
    print(f"steps: {'many' if steps > 20 else steps}")
    for how, (runs, stopped, same, clean) in counts.items():
        print(f"{how}: stopped {stopped == runs}, resumed to the same "
              f"checkpoint {same == runs}, no temporaries left {clean == runs}")


if __name__ == "__main__":
    main()

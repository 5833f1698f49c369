"""Runs a command and checks its exit code exactly, and that stdout is empty.

Usage: expect-exit.py CODE COMMAND [ARG...]

The command's stderr is copied to this script's stdout, so a test can pipe
it into FileCheck. Exits 0 only if the command exited with CODE and wrote
nothing on stdout; lowbit promises both for a failed argument.
"""

import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: expect-exit.py CODE COMMAND [ARG...]")
    expected = int(sys.argv[1])
    result = subprocess.run(sys.argv[2:], capture_output=True, text=True)
    sys.stdout.write(result.stderr)
    ok = True
    if result.returncode != expected:
        print(f"expect-exit: expected exit code {expected}, got {result.returncode}")
        ok = False
    if result.stdout:
        print(f"expect-exit: unexpected stdout: {result.stdout!r}")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

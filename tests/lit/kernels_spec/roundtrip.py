"""Checks that lowbit-opt parses, verifies and round-trips every kernels_spec file.

For each .mlir file under the given directory: print(parse(file)) must
succeed, and printing it again must give the same text (the printed form is
a fixed point), both from the custom and from the generic op form, and
lowbit-opt's --verify-roundtrip (text and bytecode) must pass. Prints
one line per file and a count; exits non-zero on any problem.
"""

import argparse
import pathlib
import subprocess
import sys


def run(opt, args, text=None):
    result = subprocess.run(
        [opt, *args], input=text, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip() or f"exit code {result.returncode}")
    return result.stdout


def check(opt, path):
    first = run(opt, ["-split-input-file", str(path)])
    second = run(opt, ["-split-input-file", "-"], first)
    if first != second:
        raise RuntimeError("printing is not stable:\n" + first + "\nthen:\n" + second)
    generic = run(opt, ["-split-input-file", "-mlir-print-op-generic", str(path)])
    from_generic = run(opt, ["-split-input-file", "-"], generic)
    if from_generic != first:
        raise RuntimeError("the generic form does not round-trip:\n" + from_generic)
    # MlirOptMain's own check: text and bytecode round trips of every split.
    run(opt, ["-split-input-file", "--verify-roundtrip", str(path)])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--opt", default="lowbit-opt")
    parser.add_argument("directory", type=pathlib.Path)
    args = parser.parse_args()

    files = sorted(args.directory.rglob("*.mlir"))
    if not files:
        print(f"no .mlir files under {args.directory}", file=sys.stderr)
        return 1
    failures = 0
    for path in files:
        name = path.relative_to(args.directory)
        try:
            check(args.opt, path)
            print(f"ok {name}")
        except RuntimeError as error:
            failures += 1
            print(f"FAIL {name}: {error}", file=sys.stderr)
    print(f"checked {len(files)} files, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

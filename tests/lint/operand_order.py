#!/usr/bin/env python3
"""Finds MLIR op creations whose argument list creates two or more ops.

C++ leaves the order in which a call's arguments are evaluated unspecified:
GCC builds `AddIOp::create(b, MulIOp::create(...), DivUIOp::create(...))`'s
operands last to first, clang first to last. The IR, and so lit tests and
the kernel cache's PTX, then differ between compilers (found when the
clang-built sanitizer run failed lit kv/to-gpu.mlir). Such operands are
created into named values first, in a fixed order (docs/testing.md,
"Operand order").

  operand_order.py ROOT    checks the lowering sources under ROOT; exit 1
                           and one line per call when it finds any.

It sees only direct `X::create(` / `.create<...>(` calls in the arguments,
not helpers that create ops (idx, ceilDiv, ...), and skips lambdas, whose
bodies run later.
"""
import pathlib
import re
import sys

DIRECTORIES = ["lowering", "kv", "matmul", "dialect", "runtime/compiler"]
CREATE = re.compile(r"::create\s*\(|\.create<[^;]*?>\s*\(")


def strip_comments(text):
    # Line comments and string literals, kept the same length so that
    # offsets still give line numbers.
    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))
    return re.sub(r'//[^\n]*|"(?:\\.|[^"\\\n])*"', blank, text)


def top_level_arguments(text, open_paren):
    depth, start, arguments = 0, open_paren + 1, []
    for index in range(open_paren, len(text)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                arguments.append(text[start:index])
                return arguments
        elif char == "," and depth == 1:
            arguments.append(text[start:index])
            start = index + 1
    return arguments


def findings(root):
    for directory in DIRECTORIES:
        for path in sorted((root / directory).rglob("*.cpp")):
            text = strip_comments(path.read_text())
            for match in CREATE.finditer(text):
                arguments = top_level_arguments(text, match.end() - 1)
                creating = [a for a in arguments
                            if not a.lstrip().startswith("[")
                            and CREATE.search(a)]
                if len(creating) >= 2:
                    line = text.count("\n", 0, match.start()) + 1
                    yield f"{path.relative_to(root)}:{line}"


def main():
    if len(sys.argv) != 2:
        print("usage: operand_order.py ROOT", file=sys.stderr)
        return 2
    found = list(findings(pathlib.Path(sys.argv[1])))
    for location in found:
        print(f"{location}: an op creation whose arguments create two or "
              "more ops: create them into named values first, in order")
    print(f"operand order: {len(found)} unsequenced op creations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

"""Checks that every x2 encode cvt in a PTX file converts two real values.

Reads PTX on stdin. A cvt.*x2.f32 whose two sources are the same register,
or a register loaded with the constant 0.0 (the dummy second value of a
scalar encode), is reported. Prints 'x2 cvt: N, all with two inputs' and
exits 0, or prints the offending lines and exits 1. At least one such cvt
must exist (otherwise the check would pass vacuously).
"""
import re
import sys

ptx = sys.stdin.read()
zero_registers = set(
    re.findall(r"mov\.b32\s+(%r\d+),\s*0f00000000;", ptx))
cvt = re.compile(r"cvt\.\w+(?:\.\w+)*x2\.f32\s+[^,]+,\s*(%r\d+),\s*(%r\d+);")
count = 0
bad = []
for line in ptx.splitlines():
    match = cvt.search(line)
    if not match:
        continue
    count += 1
    first, second = match.groups()
    if first == second or first in zero_registers or second in zero_registers:
        bad.append(line.strip())
if count == 0:
    print("no x2 cvt found")
    sys.exit(1)
if bad:
    print("x2 cvt with a dummy or repeated input:", *bad, sep="\n")
    sys.exit(1)
print(f"x2 cvt: {count}, all with two inputs")

#!/usr/bin/env python3
"""Every fenced code block in the docs runs as a test, or says why not.

A code block is a fence with a language tag (```python, ```c, ...); an
untagged fence is text (program output, a file layout) and is not run. A
tagged block runs unless the line before its fence is a marker:

    <!-- doc-test: skip (REASON) -->     it cannot run here: a signature
                                        listing, a fragment, needs a GPU
                                        or torch; REASON is required
    <!-- doc-test: built (WHERE) -->    a test elsewhere builds and runs it
                                        (tests/capi: the C and C++ examples)

How each language runs (docs/testing.md, "Code blocks in the docs"):
    python  the page's runnable python blocks, in order, as one script
            (a later block may use an earlier one's names)
    json    parsed
    mlir    lowbit-opt parses and verifies it
    sh      bash -euo pipefail, with lowbit's bin/ on PATH, in a scratch
            directory
Any other tag must carry a marker.

Usage: doc_blocks.py check ROOT             every tagged block runs or has
                                            a marker
       doc_blocks.py run ROOT PAGE BIN_DIR  runs PAGE's runnable blocks
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!-- doc-test: (skip|built) \((.+)\) -->$")
RUNNERS = {"python", "json", "mlir", "sh"}


def pages(root):
    root = Path(root)
    return sorted(root.glob("docs/*.md")) + [root / "README.md"]


def blocks(page):
    """(line, language, marker kind or None, text) of each tagged block."""
    lines = Path(page).read_text().split("\n")
    found, index = [], 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        language = match.group(1)
        end = index + 1
        while end < len(lines) and not FENCE.match(lines[end]):
            end += 1
        previous = index - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        marker = MARKER.match(lines[previous]) if previous >= 0 else None
        if language:
            found.append((index + 1, language, marker.group(1) if marker
                          else None, "\n".join(lines[index + 1:end]) + "\n"))
        index = end + 1
    return found


def check(root):
    problems = []
    for page in pages(root):
        seen = set()
        for line, language, marker, _ in blocks(page):
            first = language not in seen
            seen.add(language)
            # lowbit_doc_example (cmake/LowbitDocExample.cmake) builds the
            # first block of a language: no other can claim to be built.
            if marker == "built" and not first:
                problems.append(
                    f"{page}:{line}: only the first ```{language} block of a "
                    "page is built (lowbit_doc_example)")
            if marker is None and language not in RUNNERS:
                problems.append(
                    f"{page}:{line}: a ```{language} block runs in no test: "
                    "make it runnable (python, json, mlir, sh) or mark it "
                    "<!-- doc-test: skip (why) --> or built (where)")
    for problem in problems:
        print(problem)
    print(f"doc blocks: {len(problems)} without a test or a marker")
    return 1 if problems else 0


def run(root, page, bin_dir):
    page = Path(root) / page
    runnable = [(line, language, text)
                for line, language, marker, text in blocks(page)
                if marker is None and language in RUNNERS]
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="lowbit-doc-") as scratch:
        python = "".join(text for _, language, text in runnable
                         if language == "python")
        steps = [(line, language, text) for line, language, text in runnable
                 if language != "python"]
        if python:
            steps.insert(0, (0, "python", python))
        for line, language, text in steps:
            where = f"{page.name}:{line}" if line else f"{page.name} (python)"
            source = Path(scratch) / f"block-{line}"
            source.write_text(text)
            if language == "json":
                try:
                    json.loads(text)
                    result = subprocess.CompletedProcess([], 0, "", "")
                except ValueError as error:
                    result = subprocess.CompletedProcess([], 1, "", str(error))
            else:
                command = {
                    "python": [sys.executable, str(source)],
                    "mlir": [str(Path(bin_dir) / "lowbit-opt"), str(source)],
                    "sh": ["bash", "-euo", "pipefail", str(source)],
                }[language]
                result = subprocess.run(command, cwd=scratch, env=env,
                                        capture_output=True, text=True,
                                        timeout=600)
            status = "ok" if result.returncode == 0 else "FAILED"
            print(f"{where}: {language}: {status}")
            if result.returncode != 0:
                failures += 1
                print(result.stdout + result.stderr)
    print(f"doc blocks of {page.name}: {len(runnable)} run, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) == 5 and sys.argv[1] == "run":
        sys.exit(run(*sys.argv[2:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)

"""docs/embedding.md's torch example, run as the page shows it."""

import contextlib
import io
import pathlib
import re

import pytest

pytest.importorskip("torch")

DOC = pathlib.Path(__file__).parents[2] / "docs" / "embedding.md"


def _section_example():
    text = DOC.read_text()
    section = text[text.index("## PyTorch (`lowbit.torch`)"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    printed = re.search(r"It prints `([^`]*)`", section).group(1)
    return code, printed


def test_doc_example_runs_as_shown():
    code, printed = _section_example()
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, str(DOC), "exec"), {"__name__": "doc_example"})
    assert output.getvalue() == printed + "\n"

"""The package's stub (lowbit/__init__.pyi, shipped with py.typed) states
the module's real signatures: every public function and method of the
stub has the runtime's parameter names, kinds and defaults, and every
public name has a docstring that help() shows."""

import ast
import inspect
import os
import pydoc

import pytest

import lowbit

STUB = os.path.join(os.path.dirname(lowbit.__file__), "__init__.pyi")


def stub_functions():
    """(qualified name, ast.FunctionDef) of the stub's functions and of
    its classes' methods (properties aside)."""
    with open(STUB) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if (isinstance(item, ast.FunctionDef)
                        and not item.decorator_list):
                    yield f"{node.name}.{item.name}", item


def stub_parameters(node):
    args = node.args
    kinds = inspect.Parameter
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + [
        ast.literal_eval(d) for d in args.defaults]
    params = [(a.arg, kinds.POSITIONAL_OR_KEYWORD, d)
              for a, d in zip(positional, defaults)]
    if args.vararg:
        params.append((args.vararg.arg, kinds.VAR_POSITIONAL, None))
    params += [(a.arg, kinds.KEYWORD_ONLY,
                None if d is None else ast.literal_eval(d))
               for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return params


def runtime_parameters(function):
    return [(p.name, p.kind, None if p.default is p.empty else p.default)
            for p in inspect.signature(function).parameters.values()]


FUNCTIONS = list(stub_functions())


@pytest.mark.parametrize("name,node", FUNCTIONS,
                         ids=[name for name, _ in FUNCTIONS])
def test_stub_matches_runtime(name, node):
    target = lowbit
    for part in name.split("."):
        target = getattr(target, part)
    assert stub_parameters(node) == runtime_parameters(target)


def test_stub_covers_the_public_names():
    with open(STUB) as f:
        tree = ast.parse(f.read())
    stubbed = {node.name for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert set(lowbit.__all__) <= stubbed
    assert os.path.exists(os.path.join(os.path.dirname(STUB), "py.typed"))


def test_help_shows_signature_and_docs():
    text = pydoc.render_doc(lowbit.quantize, renderer=pydoc.plaintext)
    assert "quantize(x, scheme, *, scales=None, zeros=None, " in text
    assert "QuantizedTensor" in text
    for name in lowbit.__all__:
        assert inspect.getdoc(getattr(lowbit, name)), name

"""Our cheap positions equal libcst's PositionProvider, node for node."""

import libcst as cst
import pytest
from libcst.metadata import PositionProvider

from jaxmem.lint.positions import Positions

SOURCES = [
    pytest.param("import jax\n\n@jax.jit\ndef f(x, y):\n    return x + y  # c\n", id="plain"),
    pytest.param("x = 1\r\nif x:\r\n    y = [x,\r\n         2]\r\n", id="crlf"),
    pytest.param('s = "héllo wörld"; t = s\nu = f"{s!r:>10}"\n', id="non-ascii"),
    pytest.param('def g():\n    """doc\n    string"""\n    return (1 +\n            2)\n', id="multiline"),
]


def test_every_syntactic_node_has_a_position():
    module = cst.parse_module("@jax.jit\ndef f(x):\n    return g(x, y=[1, 2])[0].z\n")
    ours = Positions(module)
    from jaxmem.lint.walk import descendants

    for node in descendants(module):
        if isinstance(node, (cst.Name, cst.Call, cst.Attribute, cst.Subscript, cst.Decorator, cst.Arg, cst.Return)):
            assert node in ours


@pytest.mark.parametrize("source", SOURCES)
def test_positions_match_libcst(source):
    module = cst.parse_module(source)
    expected = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    ours = Positions(module)
    for node, want in expected.items():
        if node not in ours:
            continue  # whitespace and punctuation are not tracked
        got = ours[node]
        assert (got.start.line, got.start.column, got.end.line, got.end.column) == (
            want.start.line, want.start.column, want.end.line, want.end.column,
        ), type(node).__name__


@pytest.mark.parametrize("source", SOURCES)
def test_code_is_the_nodes_code(source):
    module = cst.parse_module(source)
    ours = Positions(module)
    from jaxmem.lint.walk import descendants

    for node in descendants(module):
        if node in ours:
            # Continuation lines keep their module indentation: equal up to whitespace.
            assert ours.code(node).split() == module.code_for_node(node).split(), type(node).__name__


def test_libcst_parenthesize_is_restored_after_indexing():
    from libcst._nodes.expression import _BaseParenthesizedNode

    from jaxmem.lint import positions

    module = cst.parse_module("y = ((a) + f(b, *c))\n")
    ours = Positions(module)
    assert ours[module.body[0]].start.line == 1
    assert positions._REPLACEABLE  # the pinned libcst: the replacement is in use
    assert _BaseParenthesizedNode.__dict__["_parenthesize"] is positions._ORIGINAL_PARENTHESIZE
    assert module.code == "y = ((a) + f(b, *c))\n"

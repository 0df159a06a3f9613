"""Our cheap positions equal libcst's PositionProvider, node for node."""

import libcst as cst
import pytest
from libcst.metadata import PositionProvider

from jaxmem.lint.syntax.positions import Positions

SOURCES = [
    pytest.param("import jax\n\n@jax.jit\ndef f(x, y):\n    return x + y  # c\n", id="plain"),
    pytest.param("x = 1\r\nif x:\r\n    y = [x,\r\n         2]\r\n", id="crlf"),
    pytest.param('s = "héllo wörld"; t = s\nu = f"{s!r:>10}"\n', id="non-ascii"),
    pytest.param('def g():\n    """doc\n    string"""\n    return (1 +\n            2)\n', id="multiline"),
    pytest.param("import jax\r\n\r\n@jax.jit\r\ndef f(x,\r\n      y):\r\n    return x + \\\r\n        y\r\n",
                 id="crlf-continuation"),
    pytest.param("x = 1\ry = (x +\r   2)\r", id="lone-cr"),
    pytest.param("def f(x):\n\tif x:\n\t\treturn [x,\n\t\t        x]\n\treturn  x\t# tab\n", id="tabs"),
    pytest.param("s = 'héllo'; t = 'w\U0001F600rld'; u = s + t\nπ = 3.14; 変数 = π * 2\n", id="wide-characters"),
    pytest.param("x = 1 + \\\n    2 + \\\n    3\nif x and \\\n   x:\n    pass\n", id="continuation"),
    pytest.param("@a.b(\n    c=1,\n)\n# comment\n@d\n\ndef f(): pass\n\n@(e)\nclass C: pass\n", id="decorators"),
    pytest.param("class A:\n    class B:\n        def f(self):\n            class C:\n                x = 1\n"
                 "            return C\n    def g(self): return self.B().f()\n", id="nested-classes"),
    pytest.param("x = 1\ny = f'{x!r:>{x}} {x=} {{}} {f\"{x}\"}'\nz = f'''\n{x}\n'''\n", id="f-strings"),
    pytest.param("a = 1; b = 2;\nc = a; d = b\nif a: e = 1; f = 2\n", id="semicolons"),
    pytest.param("def f():\n    return g(1,\n             2)", id="no-final-newline"),
    pytest.param("# head\n\n\ndef f():\n    x = 1\n    # trailing\n# dedented\n\n    # again\n    return x\n# foot\n",
                 id="comments"),
    pytest.param("x = 1\n\x0c\ndef f():\n    return x\n", id="form-feed"),
    pytest.param("async def f(*a, b=1, **k):\n    async with g() as (x, y):\n"
                 "        y = [i async for i in x if (j := i)]\n    lam = lambda q, *r: q[1:2, ::3]\n"
                 "    match a:\n        case [1, *rest] | {'k': _}:\n            return (yield)\n    return await x\n",
                 id="async-match-lambda"),
    pytest.param("try:\n    pass\nexcept (A, B) as e:\n    raise X from e\nelse:\n    pass\nfinally:\n    del x\n",
                 id="try"),
    pytest.param("y = (((a)))\nz = ((f)(x))[((0))]\nw = not (-(a ** -b) @ c)\n", id="parentheses"),
]


def _real_files():
    # Installed by .[test]: real library code, read as text, never imported here.
    import importlib.util
    import pathlib

    for package, names in {"optax": ["_src/transform.py", "_src/alias.py"], "flax": ["training/train_state.py", "linen/recurrent.py"],
                           "equinox": ["_module/_module.py"]}.items():
        root = pathlib.Path(importlib.util.find_spec(package).origin).parent
        for name in names:
            yield pytest.param(root / name, id=f"{package}/{name}")


def _assert_same_positions(module: cst.Module) -> int:
    expected = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    ours = Positions(module)
    compared = 0
    for node, want in expected.items():
        if node not in ours:
            continue  # whitespace is not tracked
        got = ours[node]
        assert (got.start.line, got.start.column, got.end.line, got.end.column) == (
            want.start.line, want.start.column, want.end.line, want.end.column,
        ), type(node).__name__
        compared += 1
    return compared


def test_every_syntactic_node_has_a_position():
    module = cst.parse_module("@jax.jit\ndef f(x):\n    return g(x, y=[1, 2])[0].z\n")
    ours = Positions(module)
    from jaxmem.lint.syntax.walk import descendants

    for node in descendants(module):
        if isinstance(node, (cst.Name, cst.Call, cst.Attribute, cst.Subscript, cst.Decorator, cst.Arg, cst.Return)):
            assert node in ours


@pytest.mark.parametrize("source", SOURCES)
def test_positions_match_libcst(source):
    module = cst.parse_module(source)
    assert _assert_same_positions(module) > 0


@pytest.mark.parametrize("path", list(_real_files()))
def test_positions_match_libcst_on_every_node_of_real_files(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    assert _assert_same_positions(module) > 400


@pytest.mark.parametrize("source", ["x = 1", "def f():\n    return 1", "x = 1\ry = 2"])
def test_a_module_without_final_newline_ends_where_libcst_says(source):
    # libcst drops that newline from the code but PositionProvider's module
    # range still ends after it.
    module = cst.parse_module(source)
    want = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)[module]
    got = Positions(module)[module]
    assert (got.end.line, got.end.column) == (want.end.line, want.end.column)
    assert module.code == source


@pytest.mark.parametrize("source", SOURCES)
def test_code_offsets_locate_the_nodes_code_in_the_module(source):
    module = cst.parse_module(source)
    ours = Positions(module)
    from jaxmem.lint.syntax.walk import descendants

    text = module.code
    for node in descendants(module):
        if node in ours:
            start, end = ours.code_offsets(node)
            # A module without a final newline lacks the last statement's newline.
            assert ours.code(node).startswith(text[start:end]) and len(ours.code(node)) - (end - start) <= 1


@pytest.mark.parametrize("source", SOURCES)
def test_code_is_the_nodes_code(source):
    module = cst.parse_module(source)
    ours = Positions(module)
    from jaxmem.lint.syntax.walk import descendants

    for node in descendants(module):
        if node in ours:
            # Continuation lines keep their module indentation: equal up to whitespace.
            assert ours.code(node).split() == module.code_for_node(node).split(), type(node).__name__


def test_libcst_parenthesize_is_restored_after_indexing():
    from libcst._nodes.expression import _BaseParenthesizedNode

    from jaxmem.lint.syntax import positions

    module = cst.parse_module("y = ((a) + f(b, *c))\n")
    ours = Positions(module)
    assert ours[module.body[0]].start.line == 1
    assert positions._REPLACEABLE  # the pinned libcst: the replacement is in use
    assert _BaseParenthesizedNode.__dict__["_parenthesize"] is positions._ORIGINAL_PARENTHESIZE
    assert module.code == "y = ((a) + f(b, *c))\n"

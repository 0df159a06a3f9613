"""The node index (``walk.NodeIndex``) answers exactly what a walk answers.

With an index active, ``descendants`` reads a slice of one pre-order list and
``descendants_of_type`` a few bisected ranges; both must give the very nodes,
in the very order, that walking the tree gives, for every node of real files
and of sources chosen for their shapes (nested scopes, lambdas, classes,
comprehensions, decorators, match, one node object at two places).
"""

import inspect
import pathlib

import libcst as cst
import pytest

from jaxmem.lint.syntax import walk

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRICKY = '''
import jax

@jax.jit
def outer(a, *b, c=lambda x: x + 1, **d):
    def inner(y):
        class Local:
            z = [w for w in y if (yield w)]
            def method(self):
                return lambda q: q
        return Local
    async def co():
        await inner(a)
    match a:
        case [1, *rest] if rest:
            return rest
        case {"k": v}:
            return v
    g = (i for i in range(3))
    return {k: v for k, v in d.items()}, inner, co, g
'''
SOURCES = {
    "tricky": TRICKY,
    "train.py": (ROOT / "examples" / "train.py").read_text(),
    "facts.py": (ROOT / "lint" / "join" / "facts.py").read_text(),
    "flow.py": (ROOT / "lint" / "values" / "flow.py").read_text(),
}
TYPES = [cst.Name, (cst.Yield, cst.Await), cst.Call, (cst.Global, cst.For, cst.AugAssign, cst.WithItem,
                                                       cst.AssignTarget), cst.BaseExpression, cst.FunctionDef]


def _all_nodes(module):
    return [module, *walk._walk(module, True)]


@pytest.mark.parametrize("name", list(SOURCES))
def test_every_node_below_is_what_a_walk_gives(name):
    module = cst.parse_module(SOURCES[name])
    nodes = _all_nodes(module)
    walked = {id(n): (list(walk._walk(n, True)), list(walk._walk(n, False))) for n in nodes}
    typed = {(id(n), i): [d for d in walk._walk(n, True) if isinstance(d, t)]
             for n in nodes for i, t in enumerate(TYPES)}
    with walk.indexed(module) as index:
        assert index is not None and len(index.nodes) == len(nodes)
        for node in nodes:
            assert list(walk.descendants(node)) == walked[id(node)][0]
            assert list(walk.descendants(node, into_scopes=False)) == walked[id(node)][1]
            for i, types in enumerate(TYPES):
                assert walk.descendants_of_type(node, types) == typed[(id(node), i)]


def test_nodes_outside_the_indexed_tree_are_walked():
    module = cst.parse_module(TRICKY)
    other = cst.parse_module(TRICKY)
    expected = list(walk._walk(other, True))
    with walk.indexed(module) as index:
        assert index.position(other) is None
        assert list(walk.descendants(other)) == expected
        assert walk.descendants_of_type(other, cst.Name) == [n for n in expected if isinstance(n, cst.Name)]


def test_one_node_object_at_two_places_has_one_subtree():
    shared = cst.parse_expression("f(x, y)")
    module = cst.Module(body=[cst.SimpleStatementLine([cst.Expr(shared)]),
                              cst.SimpleStatementLine([cst.Expr(shared)])])
    with walk.indexed(module):
        assert list(walk.descendants(shared)) == list(walk._walk(shared, True))
        assert list(walk.descendants(module)) == list(walk._walk(module, True))


def test_the_index_is_off_without_shortcuts_and_restored_after(monkeypatch):
    module = cst.parse_module(TRICKY)
    monkeypatch.setenv("JAXMEM_NO_SHORTCUTS", "1")
    with walk.indexed(module) as index:
        assert index is None
    monkeypatch.delenv("JAXMEM_NO_SHORTCUTS")
    with walk.indexed(module) as outer:
        with walk.indexed(cst.parse_module("x = 1\n")) as inner:
            assert inner is not outer
        assert walk._active.index is outer
    assert walk._active.index is None


def test_libcst_node_classes_that_code_checks_by_type_have_no_subclasses():
    """The hot paths test ``type(node) is cst.Name`` instead of isinstance (an ABC
    check, slow): exact only while libcst's concrete node classes have no subclasses."""
    concrete = [c for c in vars(cst).values()
                if inspect.isclass(c) and issubclass(c, cst.CSTNode) and not inspect.isabstract(c)]
    assert len(concrete) > 100
    assert [c.__name__ for c in concrete if c.__subclasses__()] == []

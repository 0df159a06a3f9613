"""``Flow.writes_reaching`` (one walk backward from a call, jumping up a tree of
single-predecessor nodes to the nearest one that writes the name) finds exactly the
writes from which ``Flow.search`` (one walk forward per write) reaches the call:
compared on every call and every written name of every scope of the tests'
cases, the examples, jaxmem's own analysis and fixer code, the generated worst cases and
programs written to exercise loops, exceptions, ``finally``, ``match``,
augmented assignments and ``del``.  ``Flow.nodes_reaching`` (ancestor bits of the
whole graph) gives the nodes a search backward from each call gives, and
``Flow.events_about_reaching`` the events of those nodes, and ``Flow.events_reaching``
the escapes and aliases a forward search per event reaches the call from, on the same code."""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
import pytest

from jaxmem.lint.values import flow as flow_module
from jaxmem.lint.values.flow import Point

ROOT = Path(__file__).resolve().parents[2]

TRICKY = '''
def loops(xs, f, g):
    state = f(0)
    for x in xs:
        g(state)
        if x:
            state = f(x)
            continue
        elif x is None:
            del state
            state = f(1)
            break
        state += 1
        g(state)
    else:
        state = f(2)
    while state:
        g(state)
        state = f(state)
    return g(state)


def exceptions(f, g):
    state = f(0)
    try:
        state = f(1)
        g(state)
        state = f(2)
    except ValueError:
        g(state)
        state = f(3)
    except Exception as state:
        g(state)
    else:
        state = f(4)
    finally:
        g(state)
    with f(5) as state:
        g(state)
    return g(state)


def shapes(f, g, value):
    state = f(0)
    state.x = f(1)
    g(state)
    match value:
        case [a, b]:
            state = f(a)
        case {"k": state}:
            g(state)
        case _:
            pass
    g(state)
    state, other = f(2), f(3)
    g(state, other)
    [state := f(4) for _ in range(2)]
    g(state)
    state.x += 1
    g(state.x)
    state = g(state)
    return g(state)


def aliases(f, g, keep, xs):
    state = f(0)
    alias = state
    keep.append(state)
    items = [state, alias]
    for x in items:
        g(alias)
        if x:
            alias = f(x)
            state = alias
            continue
        other = {"s": state}
        g(other)
    state.x = alias
    g(state)
    return g(alias)


def unreachable(f, g, k):
    state = f(0)
    return g(state)
    while True:  # a cycle no path enters
        g(state)
        if k:
            state = f(state)
        g(state)
'''


sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import worst_cases
    from flow_exactness import (
        about_reaching_mismatches, call_events, events_reaching_mismatches, scopes, write_queries,
    )
finally:
    sys.path.pop(0)


def _sources() -> list[tuple[str, str]]:
    paths = sorted((ROOT / "tests" / "lint" / "cases").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py")) \
        + sorted((ROOT / "lint").rglob("*.py")) + sorted((ROOT / "codemod").rglob("*.py"))
    out = [(str(path.relative_to(ROOT)), path.read_text()) for path in paths]
    for case in ("elifs", "long_scope", "module_rebinds", "donated_calls"):
        out.append((f"worst_cases.{case}", getattr(worst_cases, case)(12)))
    out.append(("tricky", TRICKY))
    return out


def _flows(source: str):
    """The flow graph of the module ``source`` and of each function in it (the test is
    skipped for code the parser rejects)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.skip("not Python the parser accepts")
    return scopes(module)


@pytest.mark.parametrize("name, source", _sources(), ids=lambda value: value if isinstance(value, str) and
                         len(value) < 80 else None)
def test_one_walk_backward_finds_what_a_forward_search_per_write_finds(name, source):
    compared = 0
    for flow in _flows(source):
        calls = call_events(flow)
        for key, candidates in write_queries(flow):
            for call_point, call_event in calls:
                expected = {id(event) for point, event in candidates
                            if flow.search(Point(point.node, point.index + 1), key,
                                           until_call=call_event.node).reached}
                assert flow.writes_reaching(key, call_point, candidates) == expected, (name, key, call_point)
                compared += 1
    assert compared or len(source) < 2000, name


@pytest.mark.parametrize("name, source", _sources(), ids=lambda value: value if isinstance(value, str) and
                         len(value) < 80 else None)
def test_ancestor_bits_give_the_nodes_a_search_backward_from_each_call_gives(name, source, monkeypatch):
    # ``Flow.nodes_reaching`` answers from one fixed point of ancestor bits per graph; above
    # ``_ANCESTOR_BITS_MAX_NODES`` nodes it searches backward from each call instead.
    compared = 0
    for flow in _flows(source):
        calls = [event.node for _, event in call_events(flow)]
        by_bits = [flow.nodes_reaching(call) for call in calls]
        monkeypatch.setattr(flow_module, "_ANCESTOR_BITS_MAX_NODES", -1)
        for call, bits in zip(calls, by_bits):
            searched = flow.nodes_reaching(call)
            assert isinstance(searched, set)
            assert {index for index in range(len(flow.nodes)) if index in bits} == searched, (name, call)
            compared += 1
        monkeypatch.undo()
    assert compared or len(source) < 2000, name


@pytest.mark.parametrize("name, source", _sources(), ids=lambda value: value if isinstance(value, str) and
                         len(value) < 80 else None)
def test_events_about_reaching_are_the_events_of_the_nodes_reaching_the_call(name, source):
    for flow in _flows(source):
        assert about_reaching_mismatches(flow, call_events(flow)) == [], name


@pytest.mark.parametrize("name, source", _sources(), ids=lambda value: value if isinstance(value, str) and
                         len(value) < 80 else None)
def test_one_walk_backward_finds_the_events_about_a_name_a_forward_search_reaches(name, source):
    # ``Flow.events_reaching``: the walk of ``writes_reaching`` for escapes and aliases too.
    compared = 0
    for flow in _flows(source):
        count, wrong = events_reaching_mismatches(flow, call_events(flow))
        assert wrong == [], name
        compared += count
    assert compared or len(source) < 2000 or name.startswith(("lint/", "codemod/")), name

"""Exactness of the flow graph's shortcut queries on real code.

``Flow.writes_reaching`` (one walk backward from a call, jumping up trees of
single-predecessor nodes) must find exactly the writes from which ``Flow.search`` (one
walk forward per write) reaches the call, and ``Flow.nodes_reaching`` (ancestor
bits of the whole graph) exactly the nodes a search backward from the call
finds, and ``Flow.events_about_reaching`` (those bits intersected with the nodes
of a name's events) exactly the events in those nodes, and ``Flow.events_reaching``
(the walk of ``writes_reaching`` for any event about a name) exactly the events
from which a forward search reaches the call.  This compares both on every call and every written name of every scope
of the Python files under the given folders (the corpus's sources, say), as
``tests/lint/test_writes_reaching.py`` does on the project's own code::

    .venv/bin/python benchmarks/flow_exactness.py benchmarks/.cache/src/brax-0.14.2 ...

It prints the number of queries compared and every mismatch; the exit status
is 1 when any query differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import libcst as cst

from jaxmem.lint.values import flow as flow_module
from jaxmem.lint.values.flow import CALL, WRITE, FlowBuilder, Point

# A scope with more calls times written names than this is skipped: the forward
# searches it is compared with are quadratic (the shortcut is what avoids them).
MAX_QUERIES_PER_SCOPE = 20_000


def scopes(module: cst.Module):
    """The flow graph of the module and of every function in it."""
    yield FlowBuilder(lambda call: False).build_module(module)
    stack = list(module.children)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef):
            yield FlowBuilder(lambda call: False).build_function(node)
        stack.extend(node.children)


def call_events(flow) -> list:
    """The ``(point, event)`` of every call of the graph."""
    return [(point, event) for point, event in flow.events()
            if event.kind == CALL and event.key is None and isinstance(event.node, cst.Call)]


def write_queries(flow) -> list:
    """``(key, candidates)`` for ``writes_reaching``: the writes of each key
    (``Provenance.reaching_writes``), and the writes of each name or into it
    (``facts._holds_entry_value``: ``state.x = ...`` does not rebind ``state``)."""
    writes: dict[tuple, list] = {}
    for point, event in flow.events():
        if event.kind == WRITE and event.key is not None and event.detail != "del":
            writes.setdefault(event.key, []).append((point, event))
    return list(writes.items()) + [((root,), flow.writes_under(root)) for root in {k[0] for k in writes}]


def compare(flow) -> tuple[int, list[str]]:
    """(queries compared, mismatches) for one flow graph."""
    calls = call_events(flow)
    queries = write_queries(flow)
    if len(queries) * len(calls) > MAX_QUERIES_PER_SCOPE:
        return 0, []
    compared, wrong = 0, []
    for key, candidates in queries:
        for call_point, call_event in calls:
            expected = {id(event) for point, event in candidates
                        if flow.search(Point(point.node, point.index + 1), key, until_call=call_event.node).reached}
            if flow.writes_reaching(key, call_point, candidates) != expected:
                wrong.append(f"writes_reaching {key} at node {call_point.node}")
            compared += 1
    compared_about, wrong_about = events_reaching_mismatches(flow, calls)
    compared += compared_about
    wrong += wrong_about
    wrong += about_reaching_mismatches(flow, calls)
    compared += len(calls)
    by_bits = [(event.node, flow.nodes_reaching(event.node)) for _, event in calls]
    saved = flow_module._ANCESTOR_BITS_MAX_NODES
    flow_module._ANCESTOR_BITS_MAX_NODES = -1  # the search backward from each call
    try:
        for call, bits in by_bits:
            searched = flow.nodes_reaching(call)
            if {index for index in range(len(flow.nodes)) if index in bits} != searched:
                wrong.append(f"nodes_reaching at {flow.calls[id(call)]}")
            compared += 1
    finally:
        flow_module._ANCESTOR_BITS_MAX_NODES = saved
    return compared, wrong


def events_reaching_mismatches(flow, calls) -> tuple[int, list[str]]:
    """Where ``Flow.events_reaching`` (one walk back from the call) differs from a forward
    ``search`` per event (``facts._aliases_of``): for every call and every key an event
    about a name hands on, the events about that name in the nodes reaching the call."""
    keys = sorted({key for _, event in flow.events()
                   for key in [*event.sources, *event.parts, *([event.key] if event.key else [])]})
    if len(keys) * len(calls) > MAX_QUERIES_PER_SCOPE:
        return 0, []
    compared, wrong = 0, []
    for call_point, call in calls:
        reaching = flow.nodes_reaching(call.node)
        for key in keys:
            about = flow.events_about_reaching(key[0], reaching)
            if not about:
                continue
            expected = {id(event) for point, event in about
                        if flow.search(Point(point.node, point.index + 1), key, until_call=call.node).reached}
            if flow.events_reaching(key, call_point, about) != expected:
                wrong.append(f"events_reaching {key} at node {call_point.node}")
            compared += 1
    return compared, wrong


def about_reaching_mismatches(flow, calls) -> list[str]:
    """Where ``Flow.events_about_reaching`` (bits intersected, forced on for every name)
    differs from ``events_about`` filtered one event at a time by the nodes reaching a call."""
    names = {root for _, event in flow.events() for root in
             [*(key[0] for key in event.sources + event.parts), *([event.key[0]] if event.key else [])]}
    saved = flow_module._MANY_EVENTS
    flow_module._MANY_EVENTS = 0
    wrong = []
    try:
        for _, call in calls:
            reaching = flow.nodes_reaching(call.node)
            for name in sorted(names):
                naive = [(p, e) for p, e in flow.events_about(name) if p.node in reaching]
                if flow.events_about_reaching(name, reaching) != naive:
                    wrong.append(f"events_about_reaching {name} at {flow.calls[id(call.node)]}")
    finally:
        flow_module._MANY_EVENTS = saved
    return wrong


def main(argv: list[str] | None = None) -> int:
    """Compare the queries on every ``.py`` file under the given folders; 1 on any mismatch."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    sys.setrecursionlimit(20_000)
    files = queries = skipped = 0
    mismatches: list[str] = []
    start = time.perf_counter()
    for folder in args.folders:
        for path in sorted(folder.rglob("*.py")):
            if not path.is_file():
                continue  # a folder named like a module
            try:
                module = cst.parse_module(path.read_bytes())
            except (cst.ParserSyntaxError, RecursionError, UnicodeDecodeError, OSError):
                skipped += 1
                continue
            files += 1
            for flow in scopes(module):
                compared, wrong = compare(flow)
                queries += compared
                mismatches += [f"{path}: {text}" for text in wrong]
    print(f"{queries:,} queries over {files:,} files ({skipped} not parsed) in {time.perf_counter() - start:.0f} s: "
          f"{len(mismatches)} differ")
    for text in mismatches[:50]:
        print("  " + text)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())

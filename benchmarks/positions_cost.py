"""What positions cost in a cold check, and what regenerating only the asked
top-level statements would cost instead (issue 17 item 1).

Usage: ``python benchmarks/positions_cost.py PROJECT_DIR...``.  For each
folder it runs ``jaxmem.api.check_paths(["."], use_cache=False)`` in this
process and prints:

* the CPU time of the whole check and of ``Positions._index`` (the code
  generation with jaxmem's hooks) within it;
* which top-level statements hold a node whose position was asked, as a
  share of the nodes of the modules asked;
* after the check, under the check's gc thresholds, for those modules: the
  full index again against the two parts the per-statement scheme cannot
  avoid: a walk that finds each asked node's statement (libcst nodes know
  no parent; walked in order up to the last statement needed) and the code
  generation of the asked statements alone.  The scheme would also need
  the lines of the statements it skips (a text scan, verified): not counted.

Measured figures are in benchmarks/README.md.
"""

from __future__ import annotations

import gc
import os
import sys
import time

from jaxmem import api
from jaxmem.lint.syntax import positions as P
from jaxmem.lint.syntax.walk import descendants


def _instrument(asked: dict, spent: list[float]) -> None:
    index = P.Positions._index

    def timed_index(self):
        if self._spans is not None:
            return self._spans
        start = time.process_time()
        try:
            return index(self)
        finally:
            spent[0] += time.process_time() - start

    P.Positions._index = timed_index
    for name in ("__getitem__", "__contains__", "code", "code_offsets"):
        original = getattr(P.Positions, name)

        def recording(self, node, *args, _original=original):
            asked.setdefault(id(self), (self, set()))[1].add(id(node))
            return _original(self, node, *args)

        setattr(P.Positions, name, recording)


def _chunk_costs(asked: dict) -> tuple[float, float, float, int, int]:
    full = walk = codegen = 0.0
    nodes = asked_nodes = 0
    for positions, ids in asked.values():
        module = positions._module
        start = time.process_time()
        P.Positions(module)._index()
        full += time.process_time() - start
        start = time.process_time()
        needed: set[int] = set()
        missing = set(ids)  # a node never found (the module itself) makes the walk go to the end
        for i, stmt in enumerate(module.body):
            found = missing & {id(stmt), *map(id, descendants(stmt))}
            if found:
                needed.add(i)
                missing -= found
                if not missing:
                    break
        walk += time.process_time() - start
        sizes = [1 + sum(1 for _ in descendants(stmt)) for stmt in module.body]
        nodes += sum(sizes)
        asked_nodes += sum(sizes[i] for i in needed)
        start = time.process_time()
        with P._parentheses_without_generators():
            for i in sorted(needed):
                module.body[i]._codegen(P._IndexState(module))
        codegen += time.process_time() - start
    return full, walk, codegen, asked_nodes, nodes


def main(folders: list[str]) -> None:
    asked: dict = {}
    spent = [0.0]
    _instrument(asked, spent)
    here = os.getcwd()
    for folder in folders:
        asked.clear()
        spent[0] = 0.0
        os.chdir(folder)
        try:
            start = time.process_time()
            api.check_paths(["."], use_cache=False)
            total = time.process_time() - start
        finally:
            os.chdir(here)
        before = gc.get_threshold()
        gc.set_threshold(*api._ANALYSIS_GC_THRESHOLD)
        try:
            full, walk, codegen, asked_nodes, nodes = _chunk_costs(asked)
        finally:
            gc.set_threshold(*before)
        print(f"{os.path.basename(os.path.normpath(folder))}: check {total:.2f} CPU-s, positions index "
              f"{spent[0]:.2f} ({spent[0] / total:.0%}) in {len(asked)} module(s); asked statements hold "
              f"{asked_nodes}/{nodes} nodes ({asked_nodes / max(nodes, 1):.0%}); again: full index {full:.2f} s "
              f"against walk {walk:.2f} + asked statements {codegen:.2f} = {walk + codegen:.2f} s")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python benchmarks/positions_cost.py PROJECT_DIR...")
    main(sys.argv[1:])

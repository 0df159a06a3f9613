"""Which nnx objects a State was split from, on a run ``jaxmem confirm`` watches.

nnx's functional API, as flax's performance guide writes it::

    graphdef, state = nnx.split((model, optimizer))
    for batch in data:
        state = train_step(graphdef, state, batch)   # a jax.jit step
    nnx.update((model, optimizer), state)

leaves ``model`` holding the state's Variables until ``nnx.update``.  The
holder check would refute the donation of ``state`` on that alone.  When the
static analysis proposed it at high confidence, it proved that nothing reads
``model`` (nor ``optimizer``) again, except ``nnx.update`` (which only writes)
and reads after an ``nnx.update`` that writes back every donated array
(``lint/values/nnx_write_back.py``); so the objects the state was split from
are expected holders, reported as a note.  Any other holder still refutes,
and a read of the object that does happen on the run is still caught where
it happens.

An nnx object that holds the very Variables of those objects
(``nnx.cached_partial(train_step, model, optimizer)`` keeps clones of the
graph nodes that share their Variables, flax 0.12.8) is in the same place:
``nnx.update`` writes the new arrays back into those Variables, and the
analysis proved nothing made from the objects by a call that may keep them
is read before (:func:`shares_variables`).

``nnx.split`` and ``nnx.state`` are recorded as the user's code calls them
(``flax.nnx.split``); nnx's own transforms call ``graphlib`` directly and are
not recorded.
"""

from __future__ import annotations

import functools
import gc
import sys
import weakref
from typing import Callable

RECORDED = ("split", "state")


class SplitSources:
    """``state -> the graph nodes it was split from``, by weak reference."""

    def __init__(self) -> None:
        self._sources: dict[int, tuple[weakref.ref, list[weakref.ref]]] = {}

    def patches(self) -> list[tuple[str, str, Callable]]:
        """``(module, attribute, replace)`` for :func:`jit_patch.patched_attributes`."""
        return [("flax.nnx", name, self._recording) for name in RECORDED]

    def _recording(self, original: Callable) -> Callable:
        @functools.wraps(original)
        def recorded(node, *args, **kwargs):
            result = original(node, *args, **kwargs)
            try:
                self._record(node, result)
            except Exception:  # noqa: BLE001 - recording must never break the program
                pass
            return result

        return recorded

    def _record(self, node, result) -> None:
        nnx = sys.modules["flax.nnx"]
        is_node = nnx.graph.is_graph_node
        if is_node(node):
            tops = [node]
        elif type(node) in (list, tuple, dict):
            tops = [item for item in (node.values() if type(node) is dict else node) if is_node(item)]
        else:
            return
        sources = [weakref.ref(top) for top in tops]
        for state in result if isinstance(result, tuple) else (result,):
            if isinstance(state, nnx.State):
                key = id(state)

                def forget(ref, key=key) -> None:
                    if self._sources.get(key, (None,))[0] is ref:
                        del self._sources[key]

                self._sources[key] = (weakref.ref(state, forget), sources)

    def source_objects(self, value) -> frozenset[int]:
        """Ids of the graph's nodes and containers (and their attribute dicts) ``value`` was split from, when
        ``value`` is a State ``nnx.split``/``nnx.state`` returned; empty otherwise."""
        entry = self._sources.get(id(value))
        if entry is None or entry[0]() is not value:
            return frozenset()
        iter_graph = sys.modules["flax.nnx"].graph.iter_graph
        ids = set()
        for source in entry[1]:
            top = source()
            if top is None:
                continue
            for _, node in iter_graph(top):  # Modules, Variables, and the tuples, lists and dicts
                ids.add(id(node))                # between them (an optax state is a NamedTuple)
                attributes = getattr(node, "__dict__", None)
                if attributes is not None:
                    ids.add(id(attributes))
        return frozenset(ids)


def shares_variables(variables: frozenset[int]):
    """``(obj, referrer) -> bool``: whether ``obj`` is one of the Variables whose ids are
    ``variables`` (those of the objects a State was split from) and ``referrer`` belongs to
    nnx: the attribute dict of another graph node, a container of flax.nnx's own (the index
    maps of a cached partial's graph), or a tuple, list or dict either holds, a few levels
    up (an optax state in a clone's ``opt_state``)."""
    is_node = sys.modules["flax.nnx"].graph.is_graph_node

    def of_nnx(container, depth: int) -> bool:
        if type(container).__module__.startswith("flax.nnx"):
            return True
        for owner in gc.get_referrers(container):
            if getattr(owner, "__dict__", None) is container and (
                    is_node(owner) or type(owner).__module__.startswith("flax.nnx")):
                return True
            if depth < _MAX_CONTAINER_DEPTH and isinstance(owner, (tuple, list, dict)) and of_nnx(owner, depth + 1):
                return True
        return False

    def shares(obj, referrer) -> bool:
        return id(obj) in variables and isinstance(referrer, (tuple, list, dict)) and of_nnx(referrer, 0)

    return shares


_MAX_CONTAINER_DEPTH = 3

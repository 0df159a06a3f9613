"""The join's half of :mod:`jaxmem.lint.values.kept_if`: settle each file's marked reasons
against the methods every file's classes may keep an argument in, and the project's
function summaries."""

from __future__ import annotations

import dataclasses
from typing import Callable

from jaxmem.lint.join.facts import FileFacts
from jaxmem.lint.values.kept_if import FUNCTION, is_marked, settled
from jaxmem.lint.values.provenance import Origin

_DROPPED = object()  # a reason that does not hold, and so what carries it


def settle_kept_if(all_facts: list[FileFacts], unseen: frozenset[str],
                   keeps_nothing: Callable[[str], bool]) -> list[FileFacts]:
    """``all_facts`` with each marked reason settled: kept (unmarked) when what it depends
    on may keep an argument, else left out with what carries it (an evidence ``Use``, an
    origin's ``shared_with`` entry or argument reason).  A method may keep one when some
    class of the project (of ``all_facts``, or ``unseen``: the keeping methods of files
    not among them) has a method of its name that may; a function of another file unless
    ``keeps_nothing`` (the join's reading of its summary) says it keeps none.  Files
    without marks are returned as they are."""
    if not any(facts.kept_if_marked for facts in all_facts):
        return all_facts
    methods = unseen.union(*(facts.keeping_methods for facts in all_facts))

    def keeps(condition: str) -> bool:
        if condition.startswith(FUNCTION):
            return not keeps_nothing(condition[len(FUNCTION):])
        return condition in methods

    return [dataclasses.replace(_settle(facts, keeps), kept_if_marked=False) if facts.kept_if_marked else facts
            for facts in all_facts]


def _settle(value, keeps: Callable[[str], bool]):
    """``value`` with its marked reasons settled (``value`` itself when it has none), or
    ``_DROPPED`` when it is such a reason that does not hold, or a record (a dataclass)
    with one as a field; containers lose the items (a dict its entries) that are dropped."""
    kind = type(value)
    if kind is str:
        if not is_marked(value):
            return value
        reason = settled(value, keeps)
        return _DROPPED if reason is None else reason
    if kind is tuple or kind is list or kind is set or kind is frozenset:
        items = [(item, _settle(item, keeps)) for item in value]
        if all(new is old for old, new in items):
            return value
        return kind(new for _, new in items if new is not _DROPPED)
    if kind is dict:
        entries = [(key, old, _settle(old, keeps)) for key, old in value.items()]
        if all(new is old for _, old, new in entries):
            return value
        return {key: new for key, _, new in entries if new is not _DROPPED}
    if kind is Origin:
        shared_with = _settle(value.shared_with, keeps)
        arg_reasons = tuple((slot, why) for slot, reason in value.arg_reasons
                            if (why := _settle(reason, keeps)) is not _DROPPED)
        if shared_with is value.shared_with and arg_reasons == value.arg_reasons:
            return value
        return dataclasses.replace(value, shared_with=shared_with, arg_reasons=arg_reasons)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for field in dataclasses.fields(value):
            old = getattr(value, field.name)
            new = _settle(old, keeps)
            if new is _DROPPED:
                return _DROPPED
            if new is not old:
                changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value

"""Name the call that donated an array when the program later reads it.

jax only says ``RuntimeError: Array has been deleted with shape=float32[3].``
at the read, which is often far from the donating call.  While
:func:`track_donations` is active every function made by ``jax.jit`` or
``jax.pmap`` records, after each call, which of its argument arrays the call
deleted: the call's file and line, the function, the parameter.  When the
"deleted" error leaves the block it is re-raised as
:class:`DonatedArrayUsedError` with that history.  The culprit is found by
identity (the deleted array still referenced from a frame of the traceback),
falling back to arrays of the same type deleted most recently.
"""

from __future__ import annotations

import inspect
import sys
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

from jaxmem.runtime_check.jit_patch import JitDefinition, TransformedProxy, patched_transforms

# jax's wording differs by path: "Array has been deleted with shape=float32[3]." from
# Python-level reads, "... called on deleted or donated buffer" from the runtime.
_DELETED_MARKERS = ("has been deleted", "deleted or donated buffer")
_RECORD_LIMIT = 100_000


class DonatedArrayUsedError(RuntimeError):
    """An array was read after a jitted call donated (and deleted) it."""


@dataclass(frozen=True)
class DonationEvent:
    """One array deleted by donation, and where."""

    call_path: str
    call_line: int
    function: str
    definition_path: str
    definition_line: int
    parameter: str
    type_text: str

    def describe(self) -> str:
        """``train.py:15 in a call to step(...) as parameter `state['w']` (float32[3])``."""
        return (f"{self.call_path}:{self.call_line} in a call to {self.function}(...) "
                f"(defined at {self.definition_path}:{self.definition_line}), "
                f"as parameter `{self.parameter}` ({self.type_text})")


def _type_text(array) -> str:
    return f"{array.dtype}[{','.join(map(str, array.shape))}]"


class DonationTracker:
    """Records donations of the functions it wraps and explains deleted-array errors."""

    def __init__(self):
        self._events: dict[int, tuple[weakref.ref, DonationEvent]] = {}

    @property
    def events(self) -> list[DonationEvent]:
        """Donations recorded so far whose arrays are still referenced somewhere."""
        return [event for ref, event in self._events.values() if ref() is not None]

    def watch(self, transformed, definition: JitDefinition | None = None):
        """Track a function jitted before the block started (returns the tracked stand-in)."""
        if definition is None:
            from jaxmem.runtime_check.jit_patch import locate_definition

            inner = getattr(transformed, "__wrapped__", transformed)
            definition = locate_definition(inner, sys._getframe(1), "jit", {})
        return TransformedProxy(transformed, definition, self._around_call)

    def _around_call(self, transformed, definition: JitDefinition, args, kwargs, caller):
        import jax

        live = [(name, leaf) for name, leaf in _named_leaves(definition, transformed, args, kwargs)
                if isinstance(leaf, jax.Array) and not leaf.is_deleted()]
        result = transformed(*args, **kwargs)
        for name, leaf in live:
            if leaf.is_deleted():
                self._remember(leaf, DonationEvent(
                    caller.f_code.co_filename, caller.f_lineno, definition.qualname,
                    definition.path, definition.line, name, _type_text(leaf)))
        return result

    def _remember(self, array, event: DonationEvent) -> None:
        if len(self._events) >= _RECORD_LIMIT:
            self._events = {key: value for key, value in self._events.items() if value[0]() is not None}
        self._events[id(array)] = (weakref.ref(array), event)

    def explain(self, error: BaseException) -> str | None:
        """The donation history behind a deleted-array ``error``, or None if unknown."""
        if not any(marker in str(error) for marker in _DELETED_MARKERS):
            return None
        found = self._found_in_traceback(error.__traceback__)
        if found:
            return "\n".join(
                f"jaxmem: {holder}was donated at {event.describe()}; that call deleted it. "
                "Do not read it after the call (use the call's result), or stop donating "
                f"`{event.parameter}`."
                for holder, event in found
            )
        same_type = [event for event in reversed(self.events) if f"shape={event.type_text}" in str(error)]
        if not same_type:
            return None
        lines = ["jaxmem: arrays of this type deleted by donation (most recent first):"]
        lines += [f"  - {event.describe()}" for event in same_type[:3]]
        return "\n".join(lines)

    def _found_in_traceback(self, traceback) -> list[tuple[str, DonationEvent]]:
        found: dict[int, tuple[str, DonationEvent]] = {}
        while traceback is not None:
            frame = traceback.tb_frame
            user_frame = "/jax/" not in frame.f_code.co_filename.replace("\\", "/")
            for variable, value in list(frame.f_locals.items()):
                for array in _arrays_in(value):
                    entry = self._events.get(id(array))
                    if entry is None or entry[0]() is not array:
                        continue
                    holder = (f"`{variable}` (read at {frame.f_code.co_filename}:{traceback.tb_lineno}) "
                              if user_frame else "")
                    if id(array) not in found or (holder and not found[id(array)][0]):
                        found[id(array)] = (holder, entry[1])
            traceback = traceback.tb_next
        return list(found.values())


def _arrays_in(value, depth: int = 0):
    """Arrays directly in ``value`` or in (small) containers of it."""
    import jax

    if isinstance(value, jax.Array):
        yield value
    elif depth < 3 and isinstance(value, (list, tuple, dict)) and len(value) <= 1000:
        items = value.values() if isinstance(value, dict) else value
        for item in items:
            yield from _arrays_in(item, depth + 1)


def _named_leaves(definition: JitDefinition, transformed, args, kwargs):
    """``(parameter path, leaf)`` for every leaf of a call's arguments."""
    import jax

    function = getattr(transformed, "__wrapped__", None) or getattr(transformed, "_fun", None)
    try:
        parameters = [p.name for p in inspect.signature(function).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    for index, value in enumerate(args):
        name = parameters[index] if index < len(parameters) else f"args[{index}]"
        for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            yield name + jax.tree_util.keystr(path), leaf
    for key, value in kwargs.items():
        for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            yield key + jax.tree_util.keystr(path), leaf


@contextmanager
def track_donations():
    """Track donations inside the block; explain ``Array has been deleted`` errors.

    Functions created with ``jax.jit``/``jax.pmap`` inside the block are
    tracked automatically; pass earlier ones through ``tracker.watch(fn)``.
    ``jaxmem run -- python script.py`` enters this before the script starts.
    """
    tracker = DonationTracker()
    with patched_transforms(lambda transformed, definition: TransformedProxy(
            transformed, definition, tracker._around_call)):
        try:
            yield tracker
        except RuntimeError as error:
            explanation = tracker.explain(error)
            if explanation is None:
                raise
            raise DonatedArrayUsedError(f"{error}\n{explanation}") from error

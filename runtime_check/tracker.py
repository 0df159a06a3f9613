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
_DONATION_KEY = "_jaxmem_donation"
_FIRST_PRUNE = 10_000


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


def _bind_jax():
    """Bind the jax names the per-call path uses once (attribute lookups cost per call)."""
    global _ArrayImpl, _tree_flatten
    import jax
    from jax._src.array import ArrayImpl

    _ArrayImpl, _tree_flatten = ArrayImpl, jax.tree_util.tree_flatten


_ArrayImpl = _tree_flatten = None


class _CallRecord:
    """One tracked call that deleted arrays; leaf names are worked out only when asked for."""

    __slots__ = ("call_path", "call_line", "definition", "transformed", "labels", "treedef", "_names")

    def __init__(self, caller, definition: JitDefinition, transformed, labels: list, treedef):
        self.call_path, self.call_line = caller.f_code.co_filename, caller.f_lineno
        self.definition, self.transformed = definition, transformed
        self.labels, self.treedef = labels, treedef  # positions/keywords of the donated values, their structure
        self._names = None

    def event(self, leaf_index: int, array) -> DonationEvent:
        """The :class:`DonationEvent` of the ``leaf_index``-th donated leaf."""
        if self._names is None:
            self._names = _leaf_names(self.transformed, self.labels, self.treedef)
        definition = self.definition
        return DonationEvent(self.call_path, self.call_line, definition.qualname, definition.path,
                             definition.line, self._names[leaf_index], _type_text(array))


class DonationTracker:
    """Records donations of the functions it wraps and explains deleted-array errors."""

    def __init__(self):
        # id(array) -> (weak reference, call, leaf index); an entry goes when its array does.
        self._events: dict[int, tuple[weakref.ref, _CallRecord, int]] = {}
        self._prune_at = _FIRST_PRUNE
        _bind_jax()

    def _prune(self) -> None:
        # Amortised: the threshold doubles with what is still alive.
        self._events = {key: entry for key, entry in self._events.items() if entry[0]() is not None}
        self._prune_at = max(_FIRST_PRUNE, 2 * len(self._events))

    @property
    def events(self) -> list[DonationEvent]:
        """Donations recorded so far whose arrays are still referenced somewhere."""
        return [record.event(index, array) for ref, record, index in list(self._events.values())
                if (array := ref()) is not None]

    def watch(self, transformed, definition: JitDefinition | None = None):
        """Track a function jitted before the block started (returns the tracked stand-in)."""
        if definition is None:
            from jaxmem.runtime_check.jit_patch import locate_definition

            inner = getattr(transformed, "__wrapped__", transformed)
            definition = locate_definition(inner, sys._getframe(1), "jit", {})
        return TransformedProxy(transformed, definition, self._around_call)

    def _around_call(self, transformed, definition: JitDefinition, args, kwargs, caller):
        labels, donated = _donated_values(transformed, definition, args, kwargs)
        if not donated:
            return transformed(*args, **kwargs)
        leaves, treedef = _tree_flatten(donated)
        result = transformed(*args, **kwargs)
        record = None
        events = self._events
        for index, leaf in enumerate(leaves):
            # Only concrete arrays can be deleted: a tracer (a jit called inside another
            # jit's trace) has no is_deleted().  An input deleted before the call would
            # have made the call fail, so every deleted input was deleted by this call.
            if type(leaf) is _ArrayImpl and leaf.is_deleted():
                if record is None:
                    record = _CallRecord(caller, definition, transformed, labels, treedef)
                events[id(leaf)] = (weakref.ref(leaf), record, index)
        if len(events) > self._prune_at:
            self._prune()
        return result

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
        # The innermost user frame holding the array names it; a variable bound to the
        # array itself beats a container holding it.  Frames of jax, runpy (whose
        # run_globals holds a script's module globals) and jaxmem never name it.
        found: dict[int, tuple[tuple[bool, bool], str, DonationEvent]] = {}
        while traceback is not None:
            frame = traceback.tb_frame
            user_frame = _is_user_file(frame.f_code.co_filename)
            for variable, value in list(frame.f_locals.items()):
                for array, direct in _arrays_in(value):
                    entry = self._events.get(id(array))
                    if entry is None or entry[0]() is not array:
                        continue
                    event = entry[1].event(entry[2], array)
                    score = (user_frame, direct and user_frame)
                    holder = (f"`{variable}` (read at {frame.f_code.co_filename}:{traceback.tb_lineno}) "
                              if user_frame else "")
                    if id(array) not in found or score >= found[id(array)][0]:
                        found[id(array)] = (score, holder, event)
            traceback = traceback.tb_next
        return [(holder, event) for _, holder, event in found.values()]


_NOT_USER_CODE = ("/jax/", "/jaxlib/", "/runpy.py", "/importlib/", "/site-packages/",
                  "/dist-packages/")


def _is_user_file(path: str) -> bool:
    path = path.replace("\\", "/")
    return not path.startswith("<frozen") and not any(part in path for part in _NOT_USER_CODE)


def _arrays_in(value, depth: int = 0):
    """``(array, directly bound)`` for arrays in ``value`` or in (small) containers of it."""
    import jax

    if isinstance(value, jax.Array):
        yield value, depth == 0
    elif depth < 3 and isinstance(value, (list, tuple, dict)) and len(value) <= 1000:
        items = value.values() if isinstance(value, dict) else value
        for item in items:
            yield from _arrays_in(item, depth + 1)


def _leaf_names(transformed, labels: list, treedef) -> list[str]:
    """``parameter['path']`` of every donated leaf, from the call's donated values' structure."""
    import jax

    function = getattr(transformed, "_fun", None) or getattr(transformed, "__wrapped__", None)
    try:
        parameters = [p.name for p in inspect.signature(function).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    positions = jax.tree_util.tree_unflatten(treedef, range(treedef.num_leaves))
    names = [""] * treedef.num_leaves
    for path, index in jax.tree_util.tree_flatten_with_path(positions)[0]:
        label = labels[path[0].idx]
        if isinstance(label, int):
            label = parameters[label] if label < len(parameters) else f"args[{label}]"
        names[index] = label + jax.tree_util.keystr(path[1:])
    return names


def _donation_of(transformed, definition: JitDefinition) -> tuple[frozenset, frozenset] | None:
    """``(positions, names)`` the transformed function donates; None when it cannot be read."""
    if _DONATION_KEY in definition.options:  # read once per function, kept with its definition
        return definition.options[_DONATION_KEY]
    from jaxmem.runtime_check.library_jits import inner_jit, library_kind
    from jaxmem.runtime_check.targets import is_jitted, pmap_options

    donation = None
    if is_jitted(transformed) or library_kind(transformed) == "nnx":  # nnx.jit keeps the user's positions
        info = (transformed if is_jitted(transformed) else inner_jit(transformed))._jit_info
        donation = (frozenset(info.donate_argnums), frozenset(info.donate_argnames))
    else:
        options = pmap_options(transformed)
        if options is not None:
            donation = (frozenset(options["donate_tuple"]), frozenset())
    definition.options[_DONATION_KEY] = donation
    return donation


def _donated_values(transformed, definition: JitDefinition, args, kwargs) -> tuple[list, list]:
    """``(labels, values)``: the arguments of one call the function donates (all when unknown).

    A label is the argument's position or keyword.
    """
    donation = _donation_of(transformed, definition)
    if donation is None:
        positions, names = range(len(args)), kwargs.keys()
    else:
        positions, names = donation
        if not positions and not names:
            return [], []
    labels = [index for index in range(len(args)) if index in positions]
    labels += [key for key in kwargs if key in names]
    return labels, [args[label] if isinstance(label, int) else kwargs[label] for label in labels]


def _tracking_proxy(tracker: DonationTracker):
    """The ``wrap`` of :func:`patched_transforms`: library-internal jits stay untouched."""
    from jaxmem.runtime_check.recorder import is_library_path

    def wrap(transformed, definition: JitDefinition):
        if is_library_path(definition.path):
            return transformed
        return TransformedProxy(transformed, definition, tracker._around_call)
    return wrap


@contextmanager
def track_donations():
    """Track donations inside the block; explain ``Array has been deleted`` errors.

    Functions created with ``jax.jit``/``jax.pmap`` inside the block are
    tracked automatically; pass earlier ones through ``tracker.watch(fn)``.
    ``jaxmem run -- python script.py`` enters this before the script starts.
    """
    tracker = DonationTracker()
    with patched_transforms(_tracking_proxy(tracker)):
        try:
            yield tracker
        except (RuntimeError, ValueError) as error:
            # ValueError: "Buffer has been deleted or donated" from an op compiled earlier
            # or from a jitted function called again with the donated array.
            explanation = tracker.explain(error)
            if explanation is None:
                raise
            raise DonatedArrayUsedError(f"{error}\n{explanation}") from error

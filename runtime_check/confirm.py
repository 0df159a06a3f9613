"""``jaxmem confirm``, inside the user's process: watch proposed donations on the real run.

The parent command (:mod:`jaxmem.runtime_check.commands`) runs the static
analysis and hands this process the proposals (definition file and line,
parameter, confidence).  While the program runs, every jitted definition
with a proposal is replaced by a stand-in (see :mod:`jit_patch`) that, per
call and per proposed parameter still active:

1. **held elsewhere** - before the call: the same array twice among the
   donated leaves or also in another argument (every call; both sides are
   refuted, as jax rejects either donation alone), or a leaf/inner node referenced from outside
   the argument (a heap scan, on the calls :data:`SCAN_POLICY` says).  A refuted proposal is
   not donated in that call nor later: the call runs as the user wrote it.
2. **reused** - on the first donating call of each definition and donation:
   the compiled module's aliasing per leaf (``verify_target``), bytes saved.
3. **read after** - the call is made with the proposal applied (a variant
   jitted with the donation), its deleted leaves remembered by identity.  A
   later read of one is caught where it happens: jax's Python check
   (``Array has been deleted``, patched to note the read first), a watched
   jitted function called with it (``Buffer has been deleted or donated``),
   or the error leaving the program (or a pytest test) with the array in a
   frame of its traceback.  The proposal is refuted with the read's site and
   the donating call's.  Because that read raised in the user's program, the
   run is marked ``rerun``: the parent runs the command again with every
   refuted proposal off, so the command's final behaviour and exit status are
   those of the program without the refuted donations.

The outcome is written as JSON to the ``--out`` file of the launcher.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import warnings
import weakref
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

from jaxmem.runtime_check.holders import (
    first_user_site, frame_variables, outside_holders, own_nodes, refers_to_itself, repeated_leaves,
)
from jaxmem.runtime_check.jit_patch import JitDefinition, TransformedProxy, patched_attributes, patched_transforms
from jaxmem.runtime_check.nnx_splits import SplitSources, shares_variables

SCANNED_CALLS = 3  # heap scans for outside holders on the first calls of each definition,
SCAN_POLICY = "the first 3 calls of each definition, then its 10th, 100th, 1000th, ... call"
_DELETED_MARKERS = ("has been deleted", "deleted or donated")
_MAX_NOTES = 5


@dataclass
class ProposalWatch:
    """What the run found out about one proposed parameter."""

    definition_path: str
    definition_line: int
    function: str
    parameter_name: str | None
    parameter_index: int | None
    confidence: str
    code: str = "JXM001"
    calls: int = 0  # calls that passed the parameter
    donated_calls: int = 0  # calls made with the donation applied
    scanned_calls: int = 0  # calls whose arguments were scanned for outside holders
    refutations: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    reuse: dict | None = None
    active: bool = True

    @property
    def key(self) -> str:
        """``path:line:parameter``, stable across runs."""
        return proposal_key(self.definition_path, self.definition_line, self.parameter_name, self.parameter_index)

    @property
    def label(self) -> str:
        """How the parameter reads in messages."""
        return self.parameter_name or f"args[{self.parameter_index}]"

    def refute(self, kind: str, message: str, **sites) -> None:
        """Record a refutation and stop applying the proposal for the rest of the run."""
        self.active = False
        if len(self.refutations) < _MAX_NOTES:
            self.refutations.append({"kind": kind, "message": message, **sites})

    def note(self, text: str) -> None:
        """Add a note once."""
        if text not in self.notes and len(self.notes) < _MAX_NOTES:
            self.notes.append(text)


def _flatten(value):
    """``(leaves, treedef)`` of ``value``."""
    import jax

    return jax.tree_util.tree_flatten(value)


def proposal_key(path: str, line: int, name: str | None, index: int | None) -> str:
    """The key of one proposal (used by the parent to merge runs)."""
    return f"{os.path.abspath(path)}:{line}:{name if name is not None else f'#{index}'}"


class _Donated:
    """The leaves one call donated: their structure, named only when a message needs them.

    Only the tree structure is kept (never the donated value), so the old
    arrays die with the user's last reference to them.
    """

    __slots__ = ("watch", "call_site", "label", "treedef", "_names")

    def __init__(self, watch, call_site, label, treedef):
        self.watch, self.call_site, self.label, self.treedef = watch, call_site, label, treedef
        self._names = None

    def name(self, index: int) -> str:
        if self._names is None:
            import jax

            positions = jax.tree_util.tree_unflatten(self.treedef, range(self.treedef.num_leaves))
            self._names = {leaf: self.label + jax.tree_util.keystr(path)
                           for path, leaf in jax.tree_util.tree_flatten_with_path(positions)[0]}
        return self._names.get(index, self.label)


def _leaf_names(label: str, value) -> list[str]:
    import jax

    return [label + jax.tree_util.keystr(path) for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]
            if isinstance(leaf, jax.Array)]


class Confirmer:
    """Watches the proposed donations of one run (see the module docstring)."""

    def __init__(self, proposals: list[dict], disabled: set[str],
                 place_of: Callable[[str, int], tuple[str, int]] | None = None):
        self.watches: dict[tuple[str, int], list[ProposalWatch]] = {}
        self.place_of = place_of  # where the proposals place code run from elsewhere (notebook cells)
        self.add_proposals(proposals, disabled)
        self.events: dict[int, tuple[weakref.ref, _Donated, int]] = {}
        self.rerun = False
        self.calls_per_definition: dict[tuple[str, int], int] = {}
        self.variants: dict[tuple, tuple] = {}
        self.reuse_checked: set[tuple] = set()
        self._prune_at = 20_000
        self.splits = SplitSources()
        import jax

        self._array_type = jax.Array

    def add_proposals(self, proposals: list[dict], disabled: set[str] = frozenset()) -> None:
        """Watch ``proposals`` too (those already watched stay as they are); ``disabled`` keys start off."""
        known = {watch.key for watches in self.watches.values() for watch in watches}
        for proposal in proposals:
            watch = ProposalWatch(**{k: proposal[k] for k in (
                "definition_path", "definition_line", "function", "parameter_name", "parameter_index",
                "confidence", "code") if k in proposal})
            watch.definition_path = os.path.abspath(watch.definition_path)
            if watch.key in known:
                continue
            known.add(watch.key)
            if watch.key in disabled:
                watch.active = False
            self.watches.setdefault((watch.definition_path, watch.definition_line), []).append(watch)

    # -- wrapping --------------------------------------------------------------

    def wrap(self, transformed, definition: JitDefinition):
        """The ``wrap`` of :func:`patched_transforms`: only definitions with proposals are watched."""
        renamed = False
        if self.place_of is not None:
            path, line = self.place_of(definition.path, definition.line)
            renamed = (path, line) != (definition.path, definition.line)
            definition = replace(definition, path=path, line=line)
        key = (os.path.abspath(definition.path), definition.line)
        if key not in self.watches and not renamed:
            return transformed
        # A renamed place (a notebook cell) is wrapped anyway: in an IPython session its
        # proposals may come later, when the analysis sees the cell that calls it.
        return TransformedProxy(transformed, definition, self._around_call)

    def _around_call(self, transformed, definition: JitDefinition, args, kwargs, caller):
        key = (os.path.abspath(definition.path), definition.line)
        if key not in self.watches:
            return transformed(*args, **kwargs)
        count = self.calls_per_definition[key] = self.calls_per_definition.get(key, 0) + 1
        site = (caller.f_code.co_filename, caller.f_lineno)
        labels = self._labels(transformed, definition, args, kwargs)
        # The donated leaves, taken once and before the call: after it the value may no longer
        # flatten (an nnx graph update that made a Module refer to itself recurses without end).
        flat = {}
        for watch, label in labels:
            if watch.active:
                value = _value(args, kwargs, label)
                if refers_to_itself(value):
                    watch.refute("check-failed", f"`{watch.label}` refers to itself (an nnx object reachable from "
                                 "its own attributes): jax cannot flatten it, so jaxmem cannot watch its donation",
                                 call=_site_text(site))
                    continue
                try:
                    flat[id(watch)] = _flatten(value)
                except Exception as error:  # noqa: BLE001 - RecursionError included; the program must go on
                    watch.refute("check-failed", f"jaxmem could not walk `{watch.label}`: {type(error).__name__}",
                                 call=_site_text(site))
        watched = [(watch, label) for watch, label in labels if watch.active]
        for watch, _ in labels:
            watch.calls += 1
        if watched:
            scan = count <= SCANNED_CALLS or _power_of_ten(count)  # a scan costs one walk of the heap
            try:
                self._check_holders(watched, flat, args, kwargs, site, scan, transformed, definition)
            except Exception as error:  # noqa: BLE001 - a failing check must not break the program
                for watch, _ in watched:
                    watch.refute("check-failed", f"jaxmem could not check the arguments: {type(error).__name__}: "
                                 f"{error}", call=_site_text(site))
            watched = [(watch, label) for watch, label in watched if watch.active]
        function = self._variant(transformed, definition, watched, args, kwargs) if watched else transformed
        if watched and function is not transformed:
            self._check_reuse(key, function, watched, args, kwargs, site)
        donated = [(watch, label, flat[id(watch)]) for watch, label in watched if watch.active]
        try:
            result = function(*args, **kwargs)
        except (RuntimeError, ValueError) as error:
            if any(marker in str(error) for marker in _DELETED_MARKERS):
                self._deleted_passed(args, kwargs, site)
            raise
        for watch, label, value in donated:
            watch.donated_calls += 1
            self._remember(watch, site, label, value)
        return result

    def _labels(self, transformed, definition, args, kwargs) -> list[tuple[ProposalWatch, int | str]]:
        """``(watch, position or keyword)`` of each proposal whose parameter this call passes."""
        positional = definition.options.get("_jaxmem_positional")
        if positional is None:
            from jaxmem.runtime_check.leaves import parameter_names

            positional = definition.options["_jaxmem_positional"] = parameter_names(_python_function(transformed))[0]
        found = []
        for watch in self.watches[(os.path.abspath(definition.path), definition.line)]:
            name = watch.parameter_name
            if name is None and watch.parameter_index is not None and watch.parameter_index < len(positional):
                name = positional[watch.parameter_index]
            if name is not None and name in kwargs:
                found.append((watch, name))
            elif name is not None and name in positional and positional.index(name) < len(args):
                found.append((watch, positional.index(name)))
            elif name is None and watch.parameter_index is not None and watch.parameter_index < len(args):
                found.append((watch, watch.parameter_index))
        return found

    # -- held elsewhere --------------------------------------------------------

    def _check_holders(self, watched, flat, args, kwargs, site, scan, transformed, definition) -> None:
        """Refute the ``watched`` proposals whose leaves (``flat``, by watch) something else holds."""
        import jax

        is_array = lambda x: isinstance(x, jax.Array)
        positional = definition.options.get("_jaxmem_positional") or []
        text = lambda label: label if isinstance(label, str) else (
            positional[label] if label < len(positional) else f"args[{label}]")
        # nnx.jit passes a graph reached twice (``right = left``) once: only what is left then repeats
        graph = _graph_leaves(args, kwargs, text) if definition.transform == "nnx.jit" else None
        donated, owners = [], {}
        for watch, label in watched:
            value = _value(args, kwargs, label)
            if graph is not None:
                leaves, names = graph.get(text(label), ([], []))
                donated.append((text(label), leaves, names))
            else:
                leaves = [leaf for leaf in flat[id(watch)][0] if is_array(leaf)]
                donated.append((text(label), leaves, lambda name=text(label), v=value: _leaf_names(name, v)))
            owners[text(label)] = watch
        # Every call, not only scanned ones: jax rejects a donated buffer passed undonated beside it.
        # The definition's own donations count as donated: a shared array is then donated twice.
        others = []
        declared = {text(label) for label in _declared_labels(transformed, definition, args, kwargs)}
        for label in [*range(len(args)), *kwargs]:
            name = text(label)
            if name in owners:
                continue
            value = _value(args, kwargs, label)
            if graph is not None:
                leaves, names = graph.get(name, ([], []))
            else:
                leaves = [leaf for leaf in jax.tree_util.tree_leaves(value) if is_array(leaf)]
                names = functools.partial(_leaf_names, name, value)
            if leaves:
                (donated if name in declared else others).append((name, leaves, names))
        for holder in repeated_leaves(donated, others):
            self._refute_holder(owners, holder, site)
        if not scan:
            return
        for watch, _ in watched:
            watch.scanned_calls += 1
        roots, inner, own, expected = [], [], {id(args), id(kwargs)}, {}
        shared: set[int] = set()  # the source objects' Variables among the donated nodes
        for watch, label in watched:
            if not watch.active:
                continue
            value = _value(args, kwargs, label)
            name = text(label)
            written_back = _written_back if definition.transform == "nnx.jit" else lambda node: False
            if not written_back(value):  # an nnx object's holders see the new arrays nnx.jit writes back
                roots.append((value, name))
            nodes, ids = own_nodes(value, is_array)
            own |= ids
            mine = [(node, f"{name}{path}") for node, path in nodes if node is not value and not written_back(node)]
            mine.extend(zip([leaf for leaf in jax.tree_util.tree_leaves(value) if is_array(leaf)],
                            _leaf_names(name, value)))
            inner.extend(mine)
            # nnx's functional API: the objects the state was split from hold it until nnx.update;
            # a high proposal is the analysis's proof that nothing reads them before (nnx_splits)
            sources = self.splits.source_objects(value) if watch.confidence == "high" else frozenset()
            if sources:
                expected.update((id(node), sources) for node, _ in mine)
                shared |= {id(node) for node, _ in mine if id(node) in sources and _is_variable(node)}
        if not roots and not inner:
            return
        for holder in outside_holders(roots, inner, own, {id(self.events), id(self.watches)}, expected,
                                      shares_variables(frozenset(shared)) if shared else None):
            if holder.refutes:
                self._refute_holder(owners, holder, site)
            else:
                self._note_holder(owners, holder)
        for holder in frame_variables([pair for pair in inner], skip_frames=3):
            self._note_holder(owners, holder)

    def _owner(self, owners: dict, held: str):
        for name in sorted(owners, key=len, reverse=True):
            if held == name or held.startswith((name + "[", name + ".")):
                return owners[name]
        return None

    def _refute_holder(self, owners, holder, site) -> None:
        watch = self._owner(owners, holder.held)
        if watch is not None and watch.active:
            effect = ("jax refuses to donate one buffer twice" if "(the same array" in holder.holder
                      else "after the call it would hold a deleted array")
            watch.refute("held-elsewhere", f"`{holder.held}` is also held by {holder.holder}: {effect}",
                         call=_site_text(site))

    def _note_holder(self, owners, holder) -> None:
        watch = self._owner(owners, holder.held)
        if watch is None:
            return
        if holder.expected:
            watch.note(f"`{holder.held}` is also bound to {holder.holder}, among the objects `nnx.split` or "
                       f"`nnx.state` made `{watch.label}` from (or an nnx object sharing their Variables, as "
                       f"`nnx.cached_partial` makes): the analysis proved nothing reads them again "
                       "unless `nnx.update` has written them back, and the run did not read them after the "
                       "donating call")
        else:
            watch.note(f"`{holder.held}` is also bound to {holder.holder}; the run did not read it after the "
                       "donating call (a path the run did not take could)")

    # -- donating variant and reuse --------------------------------------------

    def _variant(self, transformed, definition, watched, args, kwargs):
        """``transformed`` re-made with its declared donation plus the active proposals."""
        positional = definition.options["_jaxmem_positional"]
        wanted = set()
        for watch, label in watched:
            wanted.add(label if isinstance(label, str) else (positional[label] if label < len(positional) else label))
        cache_key = (id(transformed), frozenset(map(str, wanted)))
        cached = self.variants.get(cache_key)
        if cached is not None:
            return cached[1]
        try:
            variant = _donating_variant(transformed, definition, wanted, positional, args, kwargs)
        except _CannotDonate as reason:
            for watch, _ in watched:
                watch.refute("cannot-apply", str(reason))
            variant = transformed
        except Exception as error:  # noqa: BLE001
            for watch, _ in watched:
                watch.refute("cannot-apply", f"jaxmem could not re-make the function with this donation: "
                             f"{type(error).__name__}: {error}")
            variant = transformed
        self.variants[cache_key] = (transformed, variant)
        return variant

    def _check_reuse(self, key, variant, watched, args, kwargs, site) -> None:
        check_key = (key, id(variant))
        if check_key in self.reuse_checked:
            return
        self.reuse_checked.add(check_key)
        from jaxmem.runtime_check.targets import resolve_target, split_bound
        from jaxmem.runtime_check.verifier import verify_target

        try:
            fn, call_args = split_bound(variant, tuple(args))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                report = verify_target(resolve_target(fn), call_args, dict(kwargs))
        except Exception as error:  # noqa: BLE001
            for watch, _ in watched:
                watch.reuse = {"error": f"{type(error).__name__}: {error}"}
            return
        for watch, label in watched:
            mine = [leaf for leaf in report.leaves if leaf.parameter == watch.label or (
                isinstance(label, int) and leaf.parameter_index == label) or leaf.parameter == label]
            reused = [leaf for leaf in mine if leaf.aliased]
            watch.reuse = {
                "leaves": len(mine), "reused_leaves": len(reused),
                "reused_bytes": sum(leaf.nbytes for leaf in reused),
                "not_reused": [f"{leaf.path} ({leaf.type_text}): {leaf.reason}"
                               for leaf in mine if not leaf.aliased][:10],
                "predicted_saving_bytes": report.predicted_saving, "backend": report.backend,
            }
            if mine and not reused:
                watch.refute("not-reused", f"no output reuses any leaf of `{watch.label}` "
                             f"({watch.reuse['not_reused'][0]})", call=_site_text(site))

    # -- read after ------------------------------------------------------------

    def _remember(self, watch, site, label, flattened) -> None:
        record = None
        leaves, treedef = flattened
        array_type, events = self._array_type, self.events
        for index, leaf in enumerate(leaves):
            if isinstance(leaf, array_type) and leaf.is_deleted():
                if record is None:
                    record = _Donated(watch, site, label if isinstance(label, str) else watch.label, treedef)
                try:
                    events[id(leaf)] = (weakref.ref(leaf), record, index)
                except TypeError:
                    continue
        if len(events) > self._prune_at:
            self.events = {k: v for k, v in events.items() if v[0]() is not None}
            self._prune_at = max(20_000, 2 * len(self.events))

    def _event(self, array):
        entry = self.events.get(id(array))
        if entry is None or entry[0]() is not array:
            return None
        return entry

    def read_deleted(self, array, frame) -> None:
        """A deleted array is being read at ``frame`` (jax's Python check)."""
        entry = self._event(array)
        if entry is not None:
            self._refute_read(entry, first_user_site(frame))

    def _refute_read(self, entry, read_site) -> None:
        _, record, index = entry
        self.rerun = True
        watch = record.watch
        where = f"{read_site[0]}:{read_site[1]} in {read_site[2]}()" if read_site else "a library frame"
        if any(r["kind"] == "read-after" and r.get("read") == where for r in watch.refutations):
            return
        watch.refute("read-after", f"`{record.name(index)}` was read at {where} after the call at "
                     f"{_site_text(record.call_site)} donated it", call=_site_text(record.call_site), read=where)

    def _deleted_passed(self, args, kwargs, site) -> None:
        import jax

        for leaf in jax.tree_util.tree_leaves((args, kwargs)):
            if isinstance(leaf, self._array_type):
                entry = self._event(leaf)
                if entry is not None:
                    self._refute_read(entry, (site[0], site[1], "a call of a jitted function"))

    def on_error(self, error: BaseException) -> None:
        """An exception left the program (or a test): map a deleted array in it to its donating call."""
        if not any(marker in str(error) for marker in _DELETED_MARKERS):
            return
        found = others = False
        traceback = error.__traceback__
        innermost = site = None
        while traceback is not None:
            frame = traceback.tb_frame
            site = first_user_site(frame)
            if site is not None and site[0] == frame.f_code.co_filename:
                innermost = (site[0], traceback.tb_lineno, site[2])
            for value in list(frame.f_locals.values()):
                for array in _arrays_in(value, self._array_type):
                    entry = self._event(array)
                    if entry is not None:
                        found = True
                        self._refute_read(entry, innermost or site)
                    elif _deleted(array):
                        others = True
            traceback = traceback.tb_next
        # A deleted array jaxmem did not donate (the program's own donation): not a proposal's fault.
        if not found and not others:
            self._refute_unattributed(str(error), innermost)

    def _refute_unattributed(self, message: str, site) -> None:
        """A deleted array was read and cannot be tied to a call: refute what donated that type."""
        candidates = [(ref(), record) for ref, record, _ in self.events.values() if ref() is not None]
        typed = [(array, record) for array, record in candidates if f"={_type_text(array)}" in message]
        records = {id(record.watch): record for _, record in (typed or candidates)}
        for record in records.values():
            self.rerun = True
            where = f"{site[0]}:{site[1]} in {site[2]}()" if site else "an unknown place"
            record.watch.refute("read-after", f"a deleted array ({message.strip()[:120]}) was read at {where}; "
                                f"jaxmem could not tell which donated leaf it was, so every donation of that "
                                f"type is refuted (donated at {_site_text(record.call_site)})",
                                call=_site_text(record.call_site), read=where)

    def to_json(self) -> dict:
        """The child's report to the parent command."""
        return {"rerun": self.rerun,
                "proposals": [{**asdict(watch), "key": watch.key}
                              for watches in self.watches.values() for watch in watches]}


def _is_variable(node) -> bool:
    """Whether ``node`` is an nnx Variable (flax imported)."""
    nnx = sys.modules.get("flax.nnx")
    return nnx is not None and isinstance(node, nnx.Variable)


def _written_back(node) -> bool:
    """Whether ``node``, inside a value an ``nnx.jit`` call donates, is an nnx Variable or graph
    node: nnx.jit writes the call's new arrays back into those very objects, so another object
    that holds one (``ema.apply_to(model)``'s Layers hold the EMA's Variables) sees the new
    arrays after the call, not deleted ones (flax 0.12.8).  A holder of a raw array still refutes."""
    nnx = sys.modules.get("flax.nnx")
    return nnx is not None and (isinstance(node, nnx.Variable) or nnx.graph.is_graph_node(node))


def _graph_leaves(args, kwargs, text) -> dict | None:
    """``label -> (arrays, names)`` of every argument as ``nnx.jit`` passes them: one
    ``nnx.state`` of all of them, so a graph node or Variable reached twice (within an
    argument or across two) counts once, in the first argument that reaches it
    (flax 0.12.8: ``nnx.jit(donate_argnums=0)`` of a Module whose ``right`` is its
    ``left`` donates the shared array once and runs).  None when nnx cannot take them."""
    import jax

    try:
        from flax import nnx

        labels = [*range(len(args)), *kwargs]
        state = nnx.state(tuple(_value(args, kwargs, label) for label in labels))
        flattened = jax.tree_util.tree_flatten_with_path(state)[0]
    except Exception:  # noqa: BLE001 - not nnx values, or another flax: the plain check stands
        return None
    out: dict = {}
    for path, leaf in flattened:
        if not isinstance(leaf, jax.Array) or not path:
            continue
        position = getattr(path[0], "key", getattr(path[0], "idx", None))
        if not isinstance(position, int) or position >= len(labels):
            continue
        name = text(labels[position])
        leaves, names = out.setdefault(name, ([], []))
        leaves.append(leaf)
        names.append(name + jax.tree_util.keystr(tuple(path[1:])))
    return out


def _deleted(array) -> bool:
    try:
        return array.is_deleted()
    except Exception:  # noqa: BLE001 - a tracer or an array type without the method
        return False


def _power_of_ten(number: int) -> bool:
    while number % 10 == 0:
        number //= 10
    return number == 1


def _type_text(array) -> str:
    return f"{array.dtype}[{','.join(map(str, array.shape))}]"


def _arrays_in(value, array_type, depth: int = 0):
    if isinstance(value, array_type):
        yield value
    elif depth < 3 and isinstance(value, (list, tuple, dict)) and len(value) <= 1000:
        for item in (value.values() if isinstance(value, dict) else value):
            yield from _arrays_in(item, array_type, depth + 1)


def _value(args, kwargs, label):
    return kwargs[label] if isinstance(label, str) else args[label]


def _site_text(site) -> str:
    return f"{site[0]}:{site[1]}"


def _python_function(transformed):
    from jaxmem.runtime_check.library_jits import library_kind

    kind = library_kind(transformed)
    if kind == "nnx":
        return transformed.fun
    if kind == "eqx":
        return getattr(transformed, "__wrapped__", None) or transformed.fn
    return getattr(transformed, "_fun", None) or getattr(transformed, "__wrapped__", transformed)


def _declared_labels(transformed, definition, args, kwargs) -> list:
    from jaxmem.runtime_check.tracker import _donated_values

    try:
        return _donated_values(transformed, definition, args, kwargs)[0]
    except Exception:  # noqa: BLE001 - unknown: nothing counts as declared
        return []


class _CannotDonate(Exception):
    """This transform cannot donate exactly the proposed parameters."""


def _donating_variant(transformed, definition, wanted: set, positional: list, args, kwargs):
    """A function like ``transformed`` that also donates the parameters in ``wanted``."""
    from jaxmem.runtime_check.library_jits import library_kind
    from jaxmem.runtime_check.targets import is_jitted, pmap_options, resolve_target

    kind = library_kind(transformed)
    nums = {positional.index(name) for name in wanted if isinstance(name, str) and name in positional}
    nums |= {name for name in wanted if isinstance(name, int)}
    names = {name for name in wanted if isinstance(name, str)} | {positional[i] for i in nums if i < len(positional)}
    if kind == "eqx":
        return _equinox_variant(transformed, nums, positional, args, kwargs)
    if kind == "nnx":
        from flax import nnx

        original = getattr(nnx.jit, "__jaxmem_original__", nnx.jit)
        info = transformed.jitted_fn._jit_info
        declared = set(info.donate_argnums)
        statics = tuple(getattr(transformed, "static_argnums", ()) or ())
        return original(transformed.fun, donate_argnums=tuple(sorted(nums | declared)), static_argnums=statics)
    if is_jitted(transformed):
        info = transformed._jit_info
        nums |= set(info.donate_argnums)
        names |= set(info.donate_argnames)
        return resolve_target(transformed, donate_argnums=tuple(sorted(nums)),
                              donate_argnames=tuple(sorted(names))).build(True)
    options = pmap_options(transformed)
    if options is not None:
        if any(isinstance(name, str) and name in kwargs for name in wanted):
            raise _CannotDonate("jax.pmap does not donate arguments passed by keyword; pass it positionally")
        nums |= set(options["donate_tuple"])
        return resolve_target(transformed, donate_argnums=tuple(sorted(nums))).build(True)
    raise _CannotDonate(f"jaxmem cannot re-make {type(transformed).__name__} with a donation")


def _equinox_variant(transformed, nums: set, positional: list, args, kwargs):
    import equinox as eqx

    passed = set(range(len(args))) | {positional.index(k) for k in kwargs if k in positional}
    if passed <= nums:
        mode = "all"
    elif passed - {0} <= nums and 0 not in nums:
        mode = "all-except-first"
    else:
        raise _CannotDonate("eqx.filter_jit donates by mode only (donate='all' or 'all-except-first'); "
                            "no mode donates exactly the proposed parameters")
    original = getattr(eqx.filter_jit, "__jaxmem_original__", eqx.filter_jit)
    return original(_python_function(transformed), donate=mode)


_ACTIVE: list[Confirmer] = []


@contextmanager
def confirming(proposals: list[dict], disabled: set[str],
               place_of: Callable[[str, int], tuple[str, int]] | None = None):
    """Watch ``proposals`` in the block (jit patched, jax's deleted-array check patched).

    ``place_of(path, line)`` places a definition as the proposals do, where
    that is not its code's file and line (a notebook cell's code name)."""
    from jax._src.array import ArrayImpl

    confirmer = Confirmer(proposals, disabled, place_of)
    original_check = ArrayImpl._check_if_deleted

    def check_if_deleted(array):
        if array.is_deleted():
            confirmer.read_deleted(array, sys._getframe(1))
        return original_check(array)

    ArrayImpl._check_if_deleted = check_if_deleted
    _ACTIVE.append(confirmer)
    try:
        with patched_transforms(confirmer.wrap), patched_attributes(confirmer.splits.patches()):
            yield confirmer
    finally:
        _ACTIVE.remove(confirmer)
        ArrayImpl._check_if_deleted = original_check


def pytest_runtest_makereport(item, call):
    """pytest hook (this module is a plugin under ``jaxmem confirm -- pytest``): a test's error."""
    if call.excinfo is not None and _ACTIVE:
        _ACTIVE[-1].on_error(call.excinfo.value)


def run_confirm(target: list[str], proposals_path: str, out_path: str) -> int:
    """The launcher's ``confirm`` mode: run ``target`` watched; write the outcome to ``out_path``."""
    import traceback

    from jaxmem.runtime_check.launcher import run_program
    from jaxmem.runtime_check.notebook_run import CellFailed, NotebookRun, notebook_target

    with open(proposals_path, encoding="utf-8") as handle:
        given = json.load(handle)
    code = 1
    notebook = notebook_target(target)
    runner = NotebookRun(notebook) if notebook else None
    with confirming(given["proposals"], set(given.get("disabled", [])),
                    place_of=runner.place_of if runner else None) as confirmer:
        try:
            code = runner.run() if runner else run_program(target)
        except CellFailed as failed:  # IPython has shown the cell's traceback
            confirmer.on_error(failed.__cause__)
            print(f"jaxmem: {runner.path}: {failed}; the cells after it did not run", file=sys.stderr)
            code = 1
        except Exception as error:  # noqa: BLE001 - the program's own error, shown as python would
            confirmer.on_error(error)
            traceback.print_exc()
            code = 1
        finally:
            outcome = {**confirmer.to_json(), "exit_status": code}
            if runner is not None:  # name cells, not the code names IPython gave them
                outcome = json.loads(runner.in_cells(json.dumps(outcome)))
            with open(out_path, "w", encoding="utf-8") as handle:
                json.dump(outcome, handle, indent=1)
                handle.write("\n")
    return code

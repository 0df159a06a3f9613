"""Jitted state updates that no visible call reaches (JXM003).

JXM001/JXM002 decide from the call sites: a donation is safe only when the
argument is dead at every call.  Library code often has none: the package
builds and jits a ``train_step`` (or a sampler's step), and its users call
it.  For such a definition jaxmem cannot prove anything about the callers,
but it can still say that donating would pay: the body returns an update of
the parameter (an output built from it by shape- and dtype-preserving
operations, :mod:`jaxmem.lint.values.usefulness`), so an output can take its
buffers.  The proposal is low confidence and never applied by ``jaxmem-fix``.

Plain data out: the join (:mod:`jaxmem.lint.join.checks`) turns each
:class:`UncalledProposal` into a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxmem.lint.callables.definitions import IMMEDIATE, MODULE_SCOPE, JitDefinition
from jaxmem.lint.callables.jit_api import EQX_FILTER_JIT, donation_option
from jaxmem.lint.callables.signatures import KEYWORD_ONLY
from jaxmem.lint.values.usefulness import PRESERVED

# The output verdicts that say an output is built from the parameter.  Only
# ``preserved``: with no call site, the usefulness of the body is the whole
# claim, and ``maybe`` (through calls jaxmem does not know) also holds for
# every ``predict(params, x)`` whose params the caller keeps.
WORTH_DONATING = frozenset({PRESERVED})


@dataclass(frozen=True)
class UncalledProposal:
    """One parameter of a definition with no visible call that an output updates."""

    index: int | None  # None: keyword-only, spelled with donate_argnames
    name: str
    message: str
    evidence: tuple[str, ...]


def called_definitions(all_facts, index) -> set[tuple[str, int, tuple]]:
    """``(path, line, callee)`` of every definition some call of the run reaches,
    calls inside traced code included (they are call sites too)."""
    called = set()
    for facts in all_facts:
        for call in facts.calls:
            for def_path, definition in index.resolve(facts.path, call):
                called.add((def_path, definition.line, definition.callee))
    return called


def uncalled_proposals(definition: JitDefinition, passed_around: bool) -> list[UncalledProposal]:
    """JXM003 for ``definition``, which no call of the project reaches: each
    parameter it does not donate, that is worth donating and that an output
    updates.  ``passed_around``: the jitted callable is used as a value
    (returned, stored, passed), so its calls happen under another name."""
    spec, sig = definition.spec, definition.signature
    if definition.form == IMMEDIATE or sig is None or not spec.known or spec.mode is not None:
        return []
    if definition.problems or definition.transform == EQX_FILTER_JIT.name or definition.keeps_module_args:
        # An invalid spec is JXM103's; equinox spells donation as a mode over all arguments; nnx
        # Modules share Variables with other objects (``cached_partial``, ``nnx.split``), which
        # only a call site could show are not read again.
        return []
    out = []
    for index, name in _candidates(definition):
        if definition.output_verdict(name) not in WORTH_DONATING:
            continue
        spelled = _spelled(definition, index, name)
        out.append(UncalledProposal(index, name, _message(definition, name, spelled),
                                    _evidence(definition, name, passed_around)))
    return out


def _candidates(definition: JitDefinition) -> list[tuple[int | None, str]]:
    """``(index, name)`` of the parameters not donated, not static and not ``self``."""
    spec, sig = definition.spec, definition.signature
    static_indices, static_names = spec.static_indices or frozenset(), spec.static_names or frozenset()
    found: list[tuple[int | None, str]] = []
    for i, param in enumerate(sig.positional):
        if definition.shift and i == 0:
            continue  # self
        if spec.donates_index(i) or spec.donates_name(param.name) or i in static_indices \
                or param.name in static_names:
            continue
        found.append((i, param.name))
    if definition.donates_keywords:
        for param in sig.params:
            if param.kind == KEYWORD_ONLY and not spec.donates_name(param.name) and param.name not in static_names:
                found.append((None, param.name))
    return found


def _spelled(definition: JitDefinition, index: int | None, name: str) -> str:
    """The donation option that donates this one parameter, as the transform spells it."""
    positional = len(definition.signature.positional) if definition.signature is not None else None
    spec = definition.spec
    return donation_option(definition.transform, index, name, positional,
                           (spec.indices or frozenset(), spec.names or frozenset()))[0]


def _message(definition: JitDefinition, name: str, spelled: str) -> str:
    return (f"`{definition.function}` returns an update of `{name}` but no call of it is visible: if its callers "
            f"do not read `{name}` after the call, donate it ({spelled}) to reuse its memory "
            f"(low confidence: the callers are not in this project)")


def _evidence(definition: JitDefinition, name: str, passed_around: bool) -> tuple[str, ...]:
    where = "the module" if definition.scope == MODULE_SCOPE else f"`{definition.scope}`"
    evidence = [
        f"no call of `{definition.function}` (defined in {where}) was found in the analysed files",
        f"an output of `{definition.wrapped}` is built from `{name}` by shape- and dtype-preserving operations",
    ]
    if passed_around:
        evidence.append(f"`{definition.function}` is passed around as a value: it is called under another name")
    return tuple(evidence)

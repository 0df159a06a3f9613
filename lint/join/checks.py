"""The join: definitions of every file meet the calls of every file.

Given the per-file facts of one run, resolves each call to the jitted
definition it reaches, then

* for parameters the definition already donates, reports what would crash
  or silently not work (JXM101-JXM106);
* for the others, decides whether every call site leaves the argument
  dead, and proposes the donation (JXM001) or notes it (JXM002);
* for definitions no call reaches (library code), notes the parameters an
  output updates (JXM003, :mod:`jaxmem.lint.join.uncalled`);
* reports invalid specs (JXM103), ``jax_debug_nans`` (JXM107) and parse
  errors (JXM900).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Container
from dataclasses import dataclass, field

from jaxmem.findings import (
    Confidence,
    DonationFix,
    Evidence,
    FileReport,
    Finding,
    Refusal,
    Span,
)
from jaxmem.lint.callables.definitions import (
    IMMEDIATE,
    MODULE_SCOPE,
    WRAP_CALL,
    JitDefinition,
    with_unused_kept,
)
from jaxmem.lint.callables.donate_modes import (
    ParamState,
    choose_mode,
    covered,
    first_blocker,
)
from jaxmem.lint.callables.imports import nearest_modules
from jaxmem.lint.callables.jit_api import EQX_FILTER_JIT, donation_option
from jaxmem.lint.callables.signatures import (
    KEYWORD_ONLY,
    POSITIONAL,
    POSITIONAL_ONLY,
    VAR_KEYWORD,
    VAR_POSITIONAL,
    Signature,
    map_arguments,
)
from jaxmem.lint.join.facts import (
    ATTRIBUTE,
    GLOBAL,
    LOCAL,
    NESTED_DEF,
    NO_JIT_BINDING,
    PARAM,
    PRIVATE_FUNCTION,
    PRIVATE_METHOD,
    ArgFacts,
    CallFacts,
    FileFacts,
    mention_key,
)
from jaxmem.lint.join.kept_if import settle_kept_if
from jaxmem.lint.join.uncalled import called_definitions, uncalled_proposals
from jaxmem.lint.rules import RULES
from jaxmem.lint.syntax.relevance import OWN_METHOD
from jaxmem.lint.values.array_api import DISTINCT_RESULTS as RNGS_CLASSES, FRESH_CONSTRUCTORS
from jaxmem.lint.values.nnx_ownership import Factory, Made
from jaxmem.lint.values.provenance import (
    CALL,
    DERIVED,
    FRESH,
    HOST,
    DECORATOR_HELD,
    MODULE_HELD,
    NO_ARRAYS,
    PRNG_KEY,
    STORED_SLOT,
    UNKNOWN,
    FunctionSummary,
    Origin,
)
from jaxmem.lint.values.refs import overlaps, render
from jaxmem.lint.values.usefulness import (
    MAYBE,
    MUTATED,
    NONE,
    PRESERVED,
    PRNG,
    SCALAR,
    STATIC_STRUCTURE_NAMES,
    UNUSED,
    UNUSED_KEPT,
)
from jaxmem.settings import Settings

_LITERAL = re.compile(r"^-?[\d.]+(e-?\d+)?j?$|^(True|False|None)$|^[rbuf]*['\"]")
_ESCAPE_KINDS = frozenset({"stored", "closure", "yield"})


@dataclass
class ResolvedCall:
    path: str
    call: CallFacts
    definition: JitDefinition
    definition_path: str
    shift: int
    resolved: bool
    open: bool = False  # ``*args``/``**kwargs`` may fill the parameters ``by_index``/``by_name`` leave out
    by_index: dict[int, ArgFacts] = field(default_factory=dict)
    by_name: dict[str, ArgFacts] = field(default_factory=dict)
    keyword_of: dict[int, str] = field(default_factory=dict)

    @property
    def args(self) -> list[ArgFacts]:
        return self.call.args


@dataclass
class _Verdict:
    """One call site's view of one parameter."""

    live: str | None = None  # why the value may be read later
    useless: str | None = None  # why donating it at this call frees nothing
    confidence: Confidence = Confidence.HIGH
    doubts: tuple[str, ...] = ()  # why the confidence is not high
    rebound: bool = False
    # The value passed may be this callee's own result, rebound in a loop: from the second
    # iteration on an output of the same call has its shapes and dtypes.
    carried: bool = False
    evidence: str = ""


class Index:
    """Definitions of a run, addressable the ways calls reach them."""

    def __init__(self, all_facts: list[FileFacts]) -> None:
        # One name may be bound to several definitions (``f = jax.pmap(g) if multi else jax.jit(g)``).
        self.local: dict[tuple[str, str, tuple], list[tuple[str, JitDefinition]]] = defaultdict(list)
        self.qualified: dict[str, list[tuple[str, JitDefinition]]] = defaultdict(list)
        self.referenced: dict[str, set[str]] = {}  # path -> names its code passes around as values
        self.referenced_anywhere: set[str] = set()
        # Plain project functions (not jitted): where they are, what their result holds, their signature.
        self.functions: dict[tuple[str, str], tuple[FunctionSummary, Signature]] = {}
        self.qualified_functions: dict[str, tuple[FunctionSummary, Signature]] = {}
        self.module_names: dict[str, tuple[str, ...]] = {}
        self.nested: dict[tuple[str, str], tuple[FunctionSummary, Signature]] = {}  # (path, "parent.name")
        self.private_names = {facts.path: facts.private_names for facts in all_facts}
        self.handed_on_by: dict[str, list[str]] = defaultdict(list)  # project name -> files handing it on
        for facts in all_facts:
            for name in facts.handed_on:
                self.handed_on_by[name].append(facts.path)
        self.name_mentions = {(facts.path, name): (mentions, bindings)
                              for facts in all_facts for name, mentions, bindings in facts.name_mentions}
        self.nnx_calls: set[tuple[str, int, int]] = set()  # (path, line, col) of the calls that reach an nnx.jit
        self.module_calls: Counter[tuple[str, tuple]] = Counter()  # (path, callee) -> calls of a module-level name
        self.clean_classes = {f"{module}.{name}" for facts in all_facts for module in facts.module_names
                              for name in facts.clean_classes}
        self.nnx_classes = {f"{module}.{name}" for facts in all_facts for module in facts.module_names
                            for name in facts.nnx_classes}
        self.class_stores = {f"{module}.{name}": entry for facts in all_facts for module in facts.module_names
                             for name, entry in facts.class_stores.items()}
        self.twice_classes = {f"{module}.{name}": why for facts in all_facts for module in facts.module_names
                              for name, why in facts.twice_classes.items()}
        # -> (path, what it makes, or why it is no factory)
        self.nnx_factories: dict[str, list[tuple[str, Factory | str]]] = defaultdict(list)
        for facts in all_facts:
            for name, factory in facts.nnx_factories.items():
                for module in facts.module_names:
                    self.nnx_factories[f"{module}.{name}"].append((facts.path, factory))
        self.traced_callables = {facts.path: facts.traced_callables for facts in all_facts}
        self.called_qualified = {call.qualified.lstrip(".") for facts in all_facts for call in facts.calls
                                 if call.qualified is not None}
        # ``pkg/__init__.py`` doing ``from .steps import step``: ``pkg.step`` -> [("pkg/__init__.py", "steps.step")]
        self.reexported: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.reexporters: dict[str, list[tuple[str, str]]] = defaultdict(list)  # the reverse: target -> (alias, via)
        for facts in all_facts:
            for name, target in facts.reexports:
                for module in facts.module_names:
                    self.reexported[f"{module}.{name}"].append((facts.path, target))
                    self.reexporters[target].append((f"{module}.{name}", facts.path))
        for facts in all_facts:
            for scope, why in facts.nested_summaries.items():
                self.nested[(facts.path, scope)] = why
            self.module_names[facts.path] = facts.module_names
            self.referenced[facts.path] = facts.referenced
            self.referenced_anywhere |= facts.referenced
            for name, signature in facts.functions.items():
                why = (facts.function_summaries.get(name, FunctionSummary()), signature)
                self.functions[(facts.path, name)] = why
                for module in facts.module_names:
                    self.qualified_functions.setdefault(f"{module}.{name}", why)
            for d in facts.definitions:
                self.local[(facts.path, d.scope, d.callee)].append((facts.path, d))
                if d.scope == MODULE_SCOPE and len(d.callee) == 1:
                    for module in facts.module_names:
                        self.qualified[f"{module}.{d.callee[0]}"].append((facts.path, d))

    def resolve(self, path: str, call: CallFacts) -> list[tuple[str, JitDefinition]]:
        """The definitions a call may reach (several when a name is bound on branches)."""
        if call.callee[0] == "self":
            if call.class_scope is None:
                return []
            return self.local.get((path, call.class_scope, call.callee), [])
        for scope in call.scopes:
            found = self.local.get((path, scope, call.callee))
            if found:
                return found
        if call.qualified is not None:
            return self._qualified(path, call.qualified.lstrip("."))
        return []

    def resolve_call(self, path: str, call: CallFacts) -> list[tuple[str, JitDefinition]]:
        """The definitions a call of the program may reach: :meth:`resolve`'s, narrowed to the
        one binding that reaches a module-level call (``CallFacts.binding``) when the module
        binds the name to several jits; each module-level name's calls are counted for
        :meth:`handed_on`, which compares them with the name's mentions."""
        found = self.resolve(path, call)
        if found and len(call.callee) == 1 and self.local.get((path, MODULE_SCOPE, call.callee)) is found:
            self.module_calls[(path, call.callee)] += 1
            if call.binding == NO_JIT_BINDING:
                return []  # the one binding that reaches it is a plain def
            if call.binding is not None:
                first, last = call.binding
                reached = [item for item in found if first <= item[1].line <= last]
                return reached or found
        return found

    def _qualified(self, importer: str, qualified: str, depth: int = 0) -> list[tuple[str, JitDefinition]]:
        """The definitions file ``importer`` reaches by the import-resolved name ``qualified``,
        also through modules that import them from another (``from .steps import step`` in a
        package's ``__init__.py``, a few levels at most)."""
        found = self.qualified.get(qualified, [])
        if found:
            return nearest_modules(importer, qualified, found, lambda item: (item[0], item[1].callee[0]))
        if depth >= 3:
            return []
        return [item for via, target in self.reexported.get(qualified, ())
                for item in self._qualified(via, target, depth + 1)]

    def names_of(self, path: str, key: str) -> list[tuple[str, str]]:
        """The qualified names under which other files may import file ``path``'s top-level ``key``,
        each with the file that provides it: ``steps.step`` from ``pkg/steps.py``, and ``pkg.step``
        from ``pkg/__init__.py`` when it does ``from .steps import step``."""
        names = [(f"{module}.{key}", path) for module in self.module_names.get(path, ())]
        seen = {name for name, _ in names}
        for name, _ in names:  # grows while it is walked: re-exports of re-exports
            for alias, via in self.reexporters.get(name, ()):
                if alias not in seen and len(names) < 64:
                    seen.add(alias)
                    names.append((alias, via))
        return names


    def keeps_nothing(self, qualified: str | None) -> bool:
        """Whether the project function ``qualified`` (another file's) provably keeps
        no argument after it returns: it stores none and returns none, not even maybe, or
        it is a jitted callable (traced: its outputs are new buffers, jax 0.10.2)."""
        if self.known_as(qualified, self.qualified) is not None:
            return True
        found = self.qualified_functions.get(self.known_as(qualified, self.qualified_functions) or "")
        return found is not None and not found[0].keeps and not found[0].returned and not found[0].twice

    def factory_shared(self, path: str, definition: JitDefinition) -> bool:
        """Whether the factory that made ``definition`` (``f = make()``) may also make its one jit
        for calls jaxmem does not see: called in its file other than to bind a definition, used as
        a value, or called from another file."""
        factory = definition.made_by
        if definition.made_elsewhere:
            return True
        if factory is None or "." in factory:
            return False  # not made by a factory, or by a method: other files do not call it by name
        return self.passed_around(path, factory) or any(
            f"{module}.{factory}" in self.called_qualified for module in self.module_names.get(path, ()))

    def handed_on(self, path: str, definition: JitDefinition, calls: list[ResolvedCall]) -> str | None:
        """Why calls of ``definition`` may exist that the join does not see: its own file mentions
        its name other than to bind it or in the ``calls`` resolved to it (``fns = [step]``,
        ``self.evaluate = self.step``), or, for a jitted attribute (``self.step``), another file
        names ``.step`` (an instance or a subclass calls it there)."""
        callee = definition.callee
        key = mention_key(definition)
        if key is None:
            return None
        if key.startswith(".") and self.named_elsewhere(path, key):
            return f"another file names `{key}`: calls through an instance or subclass there are not seen"
        if "::" not in key and not key.startswith("."):
            for name, via in self.names_of(path, key):
                if any(self.imports_from(other, name, via) for other in self.handed_on_by.get(name, ())):
                    return f"another file uses `{key}` other than calling it: not every call site is seen"
                module = name.rsplit(".", 1)[0]
                if any(self.imports_from(other, f"{module}.*", via) for other in self.handed_on_by.get(f"{module}.*", ())):
                    return f"another file imports `{module}` with `*`: its calls of `{key}` are not seen"
                if any(self.imports_from(other, f"{module}.*", via) for other in self.handed_on_by.get(module, ())):
                    return (f"another file uses the module `{module}` as a value (`getattr({module.rsplit('.', 1)[-1]}, "
                            f"name)`, `vars(...)`): its calls of `{key}` are not seen")
        mentions, bindings = self.name_mentions.get((path, key), (0, 0))
        if definition.scope == MODULE_SCOPE and (path, callee) in self.module_calls:
            called = self.module_calls[(path, callee)]  # those of every binding of the name, as it is counted
        else:
            called = sum(1 for rc in calls if rc.path == path and rc.call.callee == callee)
        # ``step = jax.jit(step)``: the wrapped function's name is one more mention
        rewrapped = definition.form == WRAP_CALL and definition.wrapped in (callee[-1], definition.function)
        if mentions - bindings > called + rewrapped:
            return f"`{definition.function}` is used here other than called: not every call site is seen"
        return None

    def imports_from(self, importer: str, qualified: str, path: str) -> bool:
        """Whether ``qualified`` in file ``importer`` may be a name file ``path`` provides: not when
        a module beside the importer has that name (``import train`` in ``examples/wmt/`` is
        ``examples/wmt/train.py``, not ``examples/mnist/train.py``)."""
        name = qualified.rsplit(".", 1)[-1]
        beside = nearest_modules(importer, qualified, list(self.module_names), lambda file: (file, name))
        return path in beside

    def named_elsewhere(self, path: str, name: str) -> bool:
        """Whether a file of the run other than ``path`` mentions the private name ``name``."""
        return any(name in names for other, names in self.private_names.items() if other != path)

    def method_named_elsewhere(self, path: str, key: str) -> bool:
        """Whether a file of the run other than ``path`` names the method ``key`` (``.name``)
        other than in a def or through ``self``/``cls`` (``relevance.OWN_METHOD``)."""
        return any(key in names and OWN_METHOD + key not in names
                   for other, names in self.private_names.items() if other != path)

    def passed_around(self, path: str, name: str, scope: str | None = None) -> bool:
        """Whether ``name`` (a local of function ``scope``, or top-level) of file ``path``
        is used as a value there, or imported and used as a value elsewhere."""
        referenced = self.referenced.get(path, ())
        if name in referenced or (scope is not None and f"{scope}::{name}" in referenced):
            return True
        modules = self.module_names.get(path, ())
        return any(f"{module}.{name}" in self.referenced_anywhere for module in modules)

    def origin_call(self, path: str, origin: Origin, scopes: tuple[str, ...], class_scope):
        """What a ``call`` origin calls: ``("jitted", None)``, ``("function", (summary, signature))``
        for a plain project function, ``("twice class", why)`` for a project class whose instances may
        hold one array twice, or ``("unknown", None)``."""
        probe = CallFacts(0, 0, 0, 0, origin.callee, scopes[0], scopes, class_scope, origin.qualified,
                          (), (), False, False, origin.text)
        if self.resolve(path, probe):
            return "jitted", None
        if len(origin.callee) == 1 and origin.qualified is None and (path, f"{scopes[0]}.{origin.callee[0]}") in self.nested:
            return "function", self.nested[(path, f"{scopes[0]}.{origin.callee[0]}")]
        if len(origin.callee) == 1 and (path, origin.callee[0]) in self.functions:
            return "function", self.functions[(path, origin.callee[0])]
        if found := self.known_as(origin.qualified, self.qualified_functions):
            return "function", self.qualified_functions[found]
        if origin.qualified is not None and (why := self.class_stores_twice(origin.qualified)):
            return "twice class", why
        return "unknown", None

    def known_as(self, qualified: str | None, known: Container[str], depth: int = 0) -> str | None:
        """The name under which ``known`` (a table keyed by import-resolved project names)
        holds ``qualified``: itself, or what a module re-exports under it (``pkg.State`` is
        ``pkg.states.State`` when ``pkg/__init__.py`` does ``from .states import State``),
        a few levels at most; None when it holds neither."""
        if qualified is None:
            return None
        qualified = qualified.lstrip(".")
        if qualified in known or depth >= 3:
            return qualified if qualified in known else None
        return next((found for _, target in self.reexported.get(qualified, ())
                     if (found := self.known_as(target, known, depth + 1))), None)

    def class_stores_twice(self, qualified: str) -> str | None:
        """Why an instance of the project class ``qualified`` (import-resolved, also through
        re-exports) may hold one array twice: its ``__init__`` stores one value twice."""
        return self.twice_classes.get(self.known_as(qualified, self.twice_classes) or "")

    def class_stored(self, qualified: str | None) -> tuple[tuple[str, ...], Signature | None]:
        """The parameters the one ``__init__`` of the project class ``qualified`` (import-resolved,
        also through re-exports) stores into, with its signature (``FileFacts.class_stores``)."""
        return self.class_stores.get(self.known_as(qualified, self.class_stores) or "", ((), None))


def resolve_calls(all_facts: list[FileFacts], index: Index) -> list[ResolvedCall]:
    """Every call of the run that reaches a known definition, arguments mapped."""
    out: list[ResolvedCall] = []
    for facts in all_facts:
        for call in facts.calls:
            if call.traced or (call.traced_unless and not any(index.method_named_elsewhere(facts.path, key)
                                                                for key in call.traced_unless)):
                continue  # donation inside a traced function is a no-op
            for def_path, definition in index.resolve_call(facts.path, call):
                out.append(_resolved(facts.path, call, def_path, definition))
    return out


def _resolved(path: str, call: CallFacts, def_path: str, definition: JitDefinition) -> ResolvedCall:
    """``call`` mapped onto ``definition``'s parameters."""
    shift = definition.shift if call.callee[0] == "self" else 0
    names = tuple(name for name, _ in call.keywords)
    mapping = map_arguments(len(call.positional), names, definition.signature, shift, call.has_star, call.leading)
    resolved = ResolvedCall(path, call, definition, def_path, shift, mapping.resolved, mapping.open)
    if definition.signature is None and not call.has_star:
        # No signature (``jax.pmap(make_step(...), donate_argnums=(0, 1))``): positional
        # donation still names the first arguments of every call.
        resolved.by_index = dict(enumerate(call.positional))
        return resolved
    args = resolved.args
    for index, number in mapping.by_index.items():
        resolved.by_index[index] = args[number]
        if number >= len(call.positional):
            resolved.keyword_of[index] = names[number - len(call.positional)]
    for name, number in mapping.by_name.items():
        resolved.by_name[name] = args[number]
    return resolved


def _span(line: int, col: int, end_line: int | None = None, end_col: int | None = None) -> Span:
    return Span(line, col, end_line or line, end_col if end_col is not None else col)


class Reporter:
    """Builds findings with the rule's severity and the definition's context."""

    def __init__(self) -> None:
        self.reports: dict[str, FileReport] = {}

    def report(self, path: str) -> FileReport:
        if path not in self.reports:
            self.reports[path] = FileReport(path)
        return self.reports[path]

    def add(self, code: str, path: str, span: Span, message: str, confidence: Confidence = Confidence.HIGH,
            definition: JitDefinition | None = None, definition_path: str | None = None,
            parameter: tuple[int | None, str | None] | None = None, evidence=(), fix: DonationFix | None = None):
        rule = RULES[code]
        self.report(path).findings.append(
            Finding(
                code=code, path=path, span=span, message=message, severity=rule.severity, confidence=confidence,
                function=definition.function if definition else None,
                wrapped=definition.wrapped if definition else None,
                definition_path=definition_path if definition else None,
                definition_line=definition.line if definition else None,
                parameter_index=parameter[0] if parameter else None,
                parameter_name=parameter[1] if parameter else None,
                evidence=tuple(evidence), fix=fix,
            )
        )


def _holds_twice(arg: ArgFacts) -> bool:
    """Whether one argument passes the same array twice (``(x, x)``)."""
    return any(overlaps(a, b) for i, a in enumerate(arg.refs) for b in arg.refs[:i])


def _shared_with(arg: ArgFacts, rc: ResolvedCall) -> list[ArgFacts]:
    """The call's other arguments that pass an array ``arg`` passes too (not the pytree
    written out in the call that ``arg`` is an element of)."""
    return [other for other in rc.args if other is not arg and not _holds_part(other, arg) and any(
        overlaps(a, b) for a in arg.refs for b in other.refs)]


def _holds_part(arg: ArgFacts, part: ArgFacts) -> bool:
    return any(p is part or _holds_part(p, part) for p in arg.parts)


def _param_label(index: int | None, name: str | None) -> str:
    if name is not None:
        return f"`{name}`"
    return f"parameter {index}"


def check_declared(rc: ResolvedCall, out: Reporter) -> None:
    """JXM101/102/104/105/106 for the parameters a definition already donates."""
    d = rc.definition
    spec = d.spec
    if not spec.known:
        return
    sig = d.signature
    donated: list[tuple[int | None, str | None, ArgFacts]] = []
    for index, arg in rc.by_index.items():
        keyword = rc.keyword_of.get(index)
        name = sig.name_at(index) if sig else None
        if keyword is not None:
            if not d.donates_keywords:
                if spec.donates_index(index):
                    out.add(
                        "JXM106", rc.path, _span(arg.line, arg.col, arg.end_line, arg.end_col),
                        f"`{d.function}` is a jax.pmap function that donates `{keyword}`, but this call passes it "
                        f"by keyword, and pmap only donates positional arguments: pass it by position",
                        definition=d, definition_path=rc.definition_path, parameter=(index, keyword),
                        evidence=[Evidence(f"`{d.function}` defined with donate_argnums here", rc.definition_path, d.line)],
                    )
                continue
            if spec.donates_name(keyword):
                donated.append((index, keyword, arg))
        elif spec.donates_index(index):
            donated.append((index, name, arg))
    for name, arg in rc.by_name.items():
        if sig is not None and sig.index_of(name) is None and d.donates_keywords and spec.donates_name(name):
            donated.append((None, name, arg))
    for index, name, arg in donated:
        _check_donated_arg(rc, index, name, arg, out)


def _donation_context(rc: ResolvedCall, index, name):
    """``(definition, label, evidence, finding fields)`` shared by the findings about one donated argument."""
    d = rc.definition
    label = _param_label(index, name)
    where = Evidence(f"donated to `{d.function}` ({label}) here", rc.path, rc.call.line)
    return d, label, where, dict(definition=d, definition_path=rc.definition_path, parameter=(index, name))


def _check_donated_arg(rc: ResolvedCall, index, name, arg: ArgFacts, out: Reporter) -> None:
    d, label, where, common = _donation_context(rc, index, name)
    # JXM102: the same buffer twice in one call, even inside one pytree.
    if _holds_twice(arg):
        out.add(
            "JXM102", rc.path, _span(arg.line, arg.col, arg.end_line, arg.end_col),
            f"`{arg.text}` holds the same array twice and is donated to `{d.function}` ({label}): "
            f"JAX cannot donate one buffer twice; pass distinct arrays",
            evidence=[where], **common,
        )
    else:
        for other in _shared_with(arg, rc):
            out.add(
                "JXM102", rc.path, _span(other.line, other.col, other.end_line, other.end_col),
                f"`{other.text}` is passed to `{d.function}` together with `{arg.text}`, which is donated "
                f"({label}): JAX cannot donate a buffer that is also another argument; pass a copy or stop "
                f"donating it",
                evidence=[where], **common,
            )
    for leaf in _named_leaves(arg):
        _check_reads_after(rc, index, name, leaf, out)


def _named_leaves(arg: ArgFacts) -> list[ArgFacts]:
    """``arg`` itself when it names a value; the elements of a pytree written out in the call
    (not the operand of ``jnp.asarray(x)``, which may pass a copy: reading ``x`` may be fine)."""
    if arg.parts:
        return [] if arg.through_view else [leaf for part in arg.parts for leaf in _named_leaves(part)]
    return [arg] if arg.key is not None else []


def _check_reads_after(rc: ResolvedCall, index, name, arg: ArgFacts, out: Reporter) -> None:
    """JXM101/104/105 for ``arg``, a named value a call donates (or an element of one)."""
    d, label, where, common = _donation_context(rc, index, name)
    if _host_only(arg):
        return  # host NumPy data: jit copies it and never deletes it
    subject = render(arg.key)
    raises, unsure = _crash_claim(d, name)
    confidence = Confidence.MEDIUM if unsure else Confidence.HIGH
    # flax nnx writes a donated Module back into its Variables, so it stays usable; an
    # array made where jaxmem sees it (``jnp.ones(3)``, a PRNG key) is deleted as by jax.jit
    written_back = d.keeps_module_args and not _only_arrays(arg)
    for use in arg.reads_after:
        if written_back:
            break
        if use.kind == "loop":
            out.add(
                "JXM105", rc.path, _span(use.line, use.col, use.line, use.col + len(subject)),
                f"`{subject}` is donated to `{d.function}` inside a loop and not rebound: the next iteration "
                f"{'may pass' if unsure else 'passes'} a deleted array (\"Buffer has been deleted or donated\")"
                f"{unsure}; "
                f"rebind it from the result (`{subject} = {d.function}(...)`) or stop donating {label}",
                confidence=confidence, evidence=[where], **common,
            )
        else:
            out.add(
                "JXM101", rc.path, _span(use.line, use.col, use.line, use.col + len(use.text)),
                f"`{subject}` is read here after it was donated to `{d.function}` at line {rc.call.line} "
                f"({label}): this {raises} \"Array has been deleted\"{unsure}; use the call's result or stop "
                f"donating it",
                confidence=confidence, evidence=[where], **common,
            )
    for use in arg.alias_reads:
        if written_back:
            break  # the alias is the same Module, written back by nnx
        if use.kind == "maybe-alias":
            out.add(
                "JXM101", rc.path, _span(use.line, use.col, use.line, use.col + len(use.text)),
                f"`{use.text}` may share its arrays with `{subject}` (one was made from the other by a call that "
                f"can hand back what it was given), which was donated to `{d.function}` at line {rc.call.line}: if "
                f"it does, reading it {raises} \"Array has been deleted\"{unsure}; copy it before the call or stop "
                f"donating",
                confidence=Confidence.MEDIUM, evidence=[where], **common,
            )
            continue
        out.add(
            "JXM101", rc.path, _span(use.line, use.col, use.line, use.col + len(use.text)),
            f"`{use.text}` refers to the value of `{subject}`, which was donated to `{d.function}` at line "
            f"{rc.call.line}: reading it {raises} \"Array has been deleted\"{unsure}; copy it before the call or "
            f"stop donating",
            confidence=confidence, evidence=[where], **common,
        )
    for use in arg.escapes:
        if written_back:
            break  # whoever holds the Module sees the new arrays
        if use.kind in _ESCAPE_KINDS:
            out.add(
                "JXM104", rc.path, _span(arg.line, arg.col, arg.end_line, arg.end_col),
                f"`{subject}` is donated to `{d.function}` but its value outlives the call ({use.text}, line "
                f"{use.line}): any later read {raises} \"Array has been deleted\"{unsure}; donate a value nothing "
                f"else keeps",
                confidence=Confidence.MEDIUM, evidence=[where, Evidence(use.text, rc.path, use.line)], **common,
            )
    if arg.owner in (ATTRIBUTE, GLOBAL) and arg.reaches_exit and not arg.reads_after \
            and not written_back:
        out.add(
            "JXM104", rc.path, _span(arg.line, arg.col, arg.end_line, arg.end_col),
            f"`{subject}` is donated to `{d.function}` but still refers to the deleted buffer when this function "
            f"returns: assign the call's result back to `{subject}` on every path",
            confidence=Confidence.MEDIUM, evidence=[where], **common,
        )


def _only_arrays(arg) -> bool:
    """Whether every value ``arg`` may hold is a jax array made where jaxmem sees it: a
    ``jnp`` constructor's result (``jnp.ones(3)``) or a PRNG key, never an nnx object."""
    return bool(arg.origins) and all((origin.kind == FRESH and origin.qualified in FRESH_CONSTRUCTORS)
                                     or origin.kind == PRNG_KEY for origin in arg.origins)


def _crash_claim(definition: JitDefinition, name: str | None) -> tuple[str, str]:
    """``(verb, caveat)`` for a read after donation.  JAX deletes a donated input only
    when an output can reuse its buffer; otherwise it warns "Some donated buffers were
    not usable" and the input stays readable (jax 0.10.2).  Each output buffer goes to
    one input: two donated parameters that reach only the same outputs compete."""
    verdict = definition.output_verdict(name) if name is not None else None
    if verdict == MUTATED:
        return "raises", ""
    if verdict == PRESERVED:
        rivals = _rivals(definition, name)
        if not rivals:
            return "raises", ""
        return "may raise", (f" (the outputs of `{definition.function}` it reaches are also built from donated "
                             f"{', '.join(f'`{r}`' for r in sorted(rivals))}: each output buffer is reused for one "
                             f"donated input, and JAX only warns \"Some donated buffers were not usable\" for the "
                             f"other)")
    return "may raise", (f" (when an output of `{definition.function}` can reuse its buffer; otherwise JAX only "
                         f"warns \"Some donated buffers were not usable\")")


def _rivals(definition: JitDefinition, name: str) -> set[str]:
    """The other donated parameters that may take the buffers of every output ``name``
    reaches (none when ``name`` has a returned part of its own)."""
    sig = definition.signature
    if sig is None:
        return set()
    spec = definition.spec
    donated = {sig.name_at(i) for i in range(len(sig.positional)) if spec.donates_index(i)}
    donated |= {param.name for param in sig.params if spec.donates_name(param.name)}
    rivals = {q for q in donated - {name, None} if definition.output_verdict(q) == PRESERVED}
    parts = definition.output_parts
    if not rivals or parts is None:
        return rivals
    if any(name in part and not part & rivals for part in parts):
        return set()
    return {q for part in parts if name in part for q in part & rivals}


def _origin_problem(origin: Origin, subject: str, rc: ResolvedCall, project: Index) -> tuple[str | None, str | None]:
    """``(why the value may share buffers, why donating it frees nothing)`` for one origin."""
    where = f"line {origin.line}" if origin.line else "here"
    if origin.kind == NO_ARRAYS:
        return None, None  # useless only when every origin is (see _all_useless)
    if origin.kind == PRNG_KEY:
        return None, None
    if origin.kind == HOST:
        return None, None  # useless only when every origin is (see _useless_origins)
    if origin.kind == UNKNOWN:
        return f"its buffers are not proved to be its own: {origin.text} ({where})", None
    if origin.kind == CALL:
        kind, found = project.origin_call(rc.path, origin, rc.call.scopes, rc.call.class_scope)
        if kind == "jitted":
            return None, None  # a jitted call's outputs are new buffers
        if kind == "function":
            summary, signature = found
            if MODULE_HELD in summary.returned:
                return (f"its buffers are not proved to be its own: `{origin.text}` may return arrays a "
                        f"module-level value still holds ({where})"), None
            if DECORATOR_HELD in summary.returned:
                return (f"its buffers are not proved to be its own: `{origin.text}` calls a decorated function "
                        f"whose decorator may keep and hand out its result again (a cache) ({where})"), None
            twice = summary.twice or next((f"`{origin.text}` makes a `{made.rsplit('.', 1)[-1]}`: {why}"
                                           for made in summary.made if (why := project.class_stores_twice(made))),
                                          None)
            reasons = [twice] if twice else []
            reasons += [why for slot, why in origin.arg_reasons if not slot.startswith(STORED_SLOT)
                        and (slot == "*" or _slot_param(slot, signature) in summary.returned)]
            reasons += _stored_reasons(origin, summary.stores, signature)
            if not reasons:
                return None, None  # its result holds nothing still held elsewhere
            return f"`{origin.text}` ({where}) may share buffers with {', '.join(reasons)}" if not twice \
                else f"{'; '.join(reasons)} ({where})", None
        stores, init = project.class_stored(origin.qualified)
        if init is not None and (stored := _stored_reasons(origin, stores, init, skip=1)):  # after ``self``
            return f"`{origin.text}` ({where}) may share buffers with {', '.join(stored)}", None
        if kind == "twice class":
            return (f"its buffers are not proved to be its own: `{origin.text}` makes a "
                    f"`{origin.callee[-1]}`: {found} ({where})"), None
        if not origin.callee[-1][:1].isupper():
            # a project function jaxmem cannot find (not a class: those hold what they are given)
            return (f"its buffers are not proved to be its own: `{origin.text}` calls a function jaxmem cannot "
                    f"find, whose result may hold one array in two places ({where})"), None
    if origin.kind in (CALL, DERIVED) and origin.shared_with:
        return f"`{origin.text}` ({where}) may share buffers with {', '.join(origin.shared_with)}", None
    return None, None


def _stored_reasons(origin: Origin, stores: tuple[str, ...], signature: Signature, skip: int = 0) -> list[str]:
    """The reasons of ``origin``'s ``STORED_SLOT`` arguments (values that hold no array unless
    the call stores one into them) whose parameter is among ``stores``, the parameters the
    callee of another file stores into (``FunctionSummary.stores``, ``FileFacts.class_stores``);
    ``skip``: leading parameters no argument fills (a class's ``self``)."""
    out = []
    for slot, why in origin.arg_reasons:
        if not slot.startswith(STORED_SLOT):
            continue
        slot = slot[len(STORED_SLOT):]
        if (param := _slot_param(str(int(slot) + skip) if slot.isdigit() else slot, signature)) in stores:
            out.append(f"{why} (`{origin.callee[-1]}` may store an array into its `{param}`)")
    return out


def _useless_origins(arg: ArgFacts, subject: str, rc: ResolvedCall) -> str | None:
    """Why donating ``arg`` frees nothing, when every way it was made says so:
    Python values with no device array, host NumPy data, or PRNG keys (the call's
    own result, rebound in a loop, has the shapes of what went in: it does not
    count, except after host data, whose arrays it may replace with device ones)."""
    made = [o for o in arg.origins if not (o.kind == CALL and o.callee == rc.call.callee)]
    kinds = {origin.kind for origin in made}
    if not kinds or not kinds <= {NO_ARRAYS, PRNG_KEY, HOST}:
        return None  # a device array on some path: host data on the others costs nothing
    if HOST in kinds:
        if len(made) < len(arg.origins):
            return None  # ``params = np.load(f)``, then ``params = step(params)``: device arrays from round two
        host = next(origin for origin in made if origin.kind == HOST)
        where = f"line {host.line}" if host.line else "here"
        return f"`{subject}` is host data (`{host.text}`, {where}): jit copies it and never deletes it"
    first = made[0]
    where = f"`{first.text}`, line {first.line}"
    if kinds == {PRNG_KEY}:
        return f"`{subject}` is a PRNG key ({where}): a few bytes, not worth donating"
    if len(made) < len(arg.origins):
        return (f"`{subject}` starts as Python values ({where}) and is otherwise only `{render(rc.call.callee)}`'s "
                f"own result: at most a few scalars, not worth donating")
    return f"`{subject}` holds no device array ({where}): jit copies Python values in, donation frees nothing"


def _slot_param(slot: str, signature: Signature) -> str | None:
    """The parameter an argument slot (``"0"``, ``"1"``, ... or a keyword) binds;
    ``*args``/``**kwargs`` when it lands there."""
    if slot.isdigit():
        name = signature.name_at(int(slot))
        if name is not None:
            return name
        return next((p.name for p in signature.params if p.kind == VAR_POSITIONAL), None)
    if signature.by_name(slot) is not None:
        return slot
    return next((p.name for p in signature.params if p.kind == VAR_KEYWORD), None)


def _verdict(rc: ResolvedCall, arg: ArgFacts | None, project: Index) -> _Verdict | None:
    """Whether donating ``arg`` at this call is safe, and worth it."""
    where = f"{rc.path}:{rc.call.line}"
    if arg is None:
        return None  # the parameter's default is used: nothing to donate here
    if arg.is_temporary:
        if _LITERAL.match(arg.text):
            return None
        if (useless := _useless_origins(arg, arg.text, rc)) is not None:
            return _Verdict(useless=useless)
        confidence, reasons = Confidence.HIGH, []
        for origin in arg.origins:
            problem, useless = _origin_problem(origin, arg.text, rc, project)
            if useless is not None:
                return _Verdict(useless=useless)
            if problem is not None:
                confidence = Confidence.MEDIUM
                reasons.append(problem)
        text = f"call at {where} passes a temporary (`{arg.text}`)"
        return _Verdict(confidence=confidence, evidence="; ".join([text] + reasons), doubts=tuple(reasons))
    if arg.parts:
        return _parts_verdict(rc, arg, project)
    if arg.key is None:
        return _Verdict(live=f"call at {where} passes `{arg.text}`, whose parts may be read later")
    subject = render(arg.key)
    if arg.reads_after:
        use = arg.reads_after[0]
        why = "the next loop iteration passes it again" if use.kind == "loop" else f"`{use.text}` reads it"
        return _Verdict(live=f"`{subject}` is read after the call at {where}: {why} (line {use.line})")
    if arg.alias_reads:
        use = arg.alias_reads[0]
        return _Verdict(live=f"`{subject}` is read through `{use.text}` after the call at {where} (line {use.line})")
    for use in arg.escapes:
        if use.kind in _ESCAPE_KINDS:
            return _Verdict(live=f"`{subject}` may be read later: {use.text} (line {use.line})")
    if arg.owner in (ATTRIBUTE, GLOBAL) and arg.reaches_exit:
        return _Verdict(live=f"`{subject}` still holds the value when the function returns (call at {where})")
    if len(arg.refs) > 1 or _shared_with(arg, rc):
        return _Verdict(live=f"`{subject}` is passed twice in the call at {where}")
    if (useless := _useless_origins(arg, subject, rc)) is not None:
        return _Verdict(useless=useless)
    confidence = Confidence.HIGH
    reasons = []
    for origin in arg.origins:
        problem, useless = _origin_problem(origin, subject, rc, project)
        if useless is not None:
            return _Verdict(useless=useless)
        if problem is not None:
            confidence = Confidence.MEDIUM
            reasons.append(problem)
    released, useless = _released_by_callers(arg, rc, project) if arg.owner == PARAM else (None, None)
    if useless is not None:
        return _Verdict(useless=useless)
    if arg.owner != LOCAL and released is None:
        confidence = Confidence.MEDIUM
        reasons.append("the caller of the enclosing function may still hold it" if arg.owner == PARAM
                       else f"`{subject}` is owned outside this function{_other_uses(arg)}")
    for use in arg.escapes:
        if use.kind == "borrowed":
            confidence = Confidence.MEDIUM
            reasons.append(f"{use.text} (line {use.line})")
    kept = [use for use in arg.escapes if use.kind == "call" and not project.keeps_nothing(use.callee)]
    if kept:
        confidence = Confidence.MEDIUM
        use = kept[0]
        reasons.append(f"it was passed to `{use.text}` (line {use.line}), which may keep it")
    if arg.rebound_by_result:
        text = f"`{subject}` is rebound by the call's result at {where} (line {arg.rebound_line}) and not read before"
    else:
        text = f"`{subject}` is not read after the call at {where}"
    if released is not None:
        text += f"; {released}"
    if reasons:
        text += "; " + "; ".join(reasons)
    carried = arg.rebound_by_result and rc.call.callee in arg.made_by
    return _Verdict(confidence=confidence, rebound=arg.rebound_by_result, carried=carried, evidence=text,
                    doubts=tuple(reasons))


def _other_uses(arg: ArgFacts, shown: int = 3) -> str:
    """Where else the class uses the attribute ``arg`` passes: `` (`save` (line 40) and
    `get_variables` (line 52) use it too)``, the places to read before donating it."""
    uses = [f"`{use.text}` (line {use.line})" for use in arg.attribute_uses]
    if not uses:
        return ""
    more = len(uses) - shown
    listed = uses[:shown] + ([f"{more} more"] if more > 0 else [])
    names = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    return f" ({names} use{'s' if len(uses) == 1 else ''} it too)"


def _host_only(arg: ArgFacts) -> bool:
    """Whether ``arg`` holds host NumPy data only: jit copies it in and never deletes it."""
    return bool(arg.origins) and all(origin.kind == HOST for origin in arg.origins)


# A host element of a pytree: read later or not, donating the pytree leaves it as it was.
_HOST_PART = _Verdict(useless="it is host data: jit copies it and never deletes it")


def _parts_verdict(rc: ResolvedCall, arg: ArgFacts, project: Index) -> _Verdict | None:
    """A pytree written out in the call (``step((params, opt_state), batch)``): donating it
    donates every element, so it is as safe as its least safe element, and worth it unless
    none is."""
    where = f"{rc.path}:{rc.call.line}"
    if _holds_twice(arg) or _shared_with(arg, rc):
        return _Verdict(live=f"`{arg.text}` passes an array twice in the call at {where}")
    judged = [(part, verdict) for part in arg.parts
              if (verdict := _HOST_PART if _host_only(part) else _verdict(rc, part, project)) is not None]
    if not judged:
        return None
    live = next((verdict.live for _, verdict in judged if verdict.live), None)
    if live is not None:
        return _Verdict(live=live)
    useful = [(part, verdict) for part, verdict in judged if not verdict.useless]
    if not useful:
        return _Verdict(useless=judged[0][1].useless)
    named = [verdict for part, verdict in useful if not part.is_temporary]
    return _Verdict(
        confidence=Confidence.lowest(verdict.confidence for _, verdict in useful),
        doubts=tuple(doubt for _, verdict in useful for doubt in verdict.doubts),
        rebound=bool(named) and all(verdict.rebound for verdict in named),
        carried=bool(named) and all(verdict.carried for verdict in named),
        evidence=f"the call at {where} passes `{arg.text}`: " + "; ".join(verdict.evidence for _, verdict in useful),
    )


def _released_by_callers(arg: ArgFacts, rc: ResolvedCall, project: Index) -> tuple[str | None, str | None]:
    """``(released, useless)`` for parameter ``arg`` of a function whose every call jaxmem
    sees: the enclosing function is a nested def called only by name in its parent (or a
    private method called only through ``self`` in its class).  ``released`` says why the
    caller no longer holds it: every call passes a value that would be donated there at
    high confidence (dead after the call, held by nothing else, its own buffers).
    ``useless`` says why donating it frees nothing: every call passes a value not worth
    donating (a PRNG key, Python numbers).  Each is None when not proved."""
    callers = arg.callers
    if callers is None or not callers.calls:
        return None, None
    if callers.reach != NESTED_DEF and project.named_elsewhere(rc.path, callers.function):
        return None, None  # another file may call it (a subclass, a test) with a value it still holds
    lines, verdicts = [], []
    for call, number in callers.calls:
        outer = ResolvedCall(rc.path, call, rc.definition, rc.definition_path, 0, True)
        verdict = _verdict(outer, call.args[number], project)
        if verdict is None or verdict.live:
            return None, None
        verdicts.append(verdict)
        lines.append(str(call.line))
    where = f"line{'s' if len(lines) > 1 else ''} {', '.join(lines)}"
    if all(verdict.useless for verdict in verdicts):
        return None, f"every call of `{callers.function}` ({where}) passes for `{callers.param}` a value not worth " \
                     f"donating: {verdicts[0].useless}"
    if any(verdict.useless or verdict.confidence != Confidence.HIGH for verdict in verdicts):
        return None, None
    if callers.reach == PRIVATE_FUNCTION:
        return (f"the private function `{callers.function}` is called only in this file ({where}; no other file "
                f"names it), and each call passes for `{callers.param}` a value dead after it, held by nothing "
                f"else"), None
    if callers.reach == PRIVATE_METHOD:
        return (f"the private method `{callers.function}` is called only by `{callers.parent}`'s own methods "
                f"({where}; no other file names it), and each call passes for `{callers.param}` a value dead after "
                f"it, held by nothing else"), None
    return (f"`{callers.function}` is called only in `{callers.parent.rsplit('.', 1)[-1]}` ({where}), and each call "
            f"passes for `{callers.param}` a value dead after it, held by nothing else"), None


def _arg_at(rc: ResolvedCall, index: int | None, name: str):
    """The argument ``rc`` passes for the parameter at ``index`` (or keyword-only ``name``), if any."""
    return rc.by_index.get(index) if index is not None else rc.by_name.get(name)


def _nnx_nodes(calls: list[ResolvedCall], index: int | None, name: str, project: Index) -> bool:
    """Whether every call passes for the parameter an object proved to be an nnx graph node
    (made by an nnx class, or a project class deriving from one: ``Ownership.node``)."""
    for rc in calls:
        arg = _arg_at(rc, index, name)
        own = arg.nnx_own if arg is not None else None
        made = [_made_by_factory(entry, rc.path, project) for entry in own.factories] if own is not None else []
        if own is None or not own.node or not all(m is not None and m.node for m in made) \
                or any(project.known_as(c, project.nnx_classes) is None
                       for c in (*own.classes, *(c for m in made for c in m.classes))):
            return False
    return bool(calls)


def _made_by_factory(entry: tuple[str, int, int | None], importer: str, project: Index) -> Made | None:
    """What the factory of another module in ``entry`` (``Ownership.factories``: function,
    index, count) that file ``importer`` calls returned at that index (see
    ``FileFacts.nnx_factories``; a module beside the importer first, as Python imports it);
    None when it is no such factory of the project, several files that may be it differ,
    it returns another number of values, or a Python scalar's Variable."""
    qualified, index, count = entry
    factory = _factory_of(qualified, importer, project)
    if not isinstance(factory, Factory) or factory.unpacked != (count is not None) \
            or (count is not None and count != len(factory.made)) or factory.made[index].kind == "scalar":
        return None
    return factory.made[index]


def _factory_of(qualified: str, importer: str, project: Index) -> Factory | str | None:
    """What the function ``qualified`` that file ``importer`` calls is: a factory, why it is no
    factory, or None when no such function of the project is known or the files it may be in
    (same-named modules in sibling folders) differ: each must say the same."""
    module, _, name = qualified.lstrip(".").rpartition(".")
    paths = [path for path, modules in project.module_names.items()
             if module in modules and (path, name) in project.functions
             and project.imports_from(importer, qualified, path)]
    made_by = dict(project.nnx_factories.get(qualified.lstrip("."), ()))
    factories = {made_by.get(path) for path in paths}
    return factories.pop() if len(factories) == 1 else None


def _propose_module(definition: JitDefinition, def_path: str, calls: list[ResolvedCall], index: int | None,
                    name: str, out: Reporter, project: Index, partial_view: bool,
                    siblings: tuple[JitDefinition, ...] = (), updated: bool = True) -> None:
    """JXM001 for an ``nnx.jit`` parameter that is an nnx object: one its body updates in
    place (a Module or Optimizer), or one made by an nnx class (``updated`` False).  nnx.jit
    returns every array of such an object and writes them back after the call, so it stays
    usable and needs no rebinding; without donation each call makes a copy of every array
    (flax 0.12.8, jax 0.10.2, also when the body changes nothing)."""
    evidence = []
    owned = []
    texts: set[str] = set()
    scalar = True
    what = "is updated in place and written back by nnx" if updated else \
        "is an nnx object (made by an nnx class): nnx.jit returns its arrays and writes them back"
    for rc in calls:
        arg = _arg_at(rc, index, name)
        if not rc.resolved or arg is None or arg.key is None or _holds_twice(arg) or _shared_with(arg, rc):
            return  # a temporary, a *args call or a shared buffer: nothing to prove here
        evidence.append(Evidence(f"`{arg.text}` {what} at the call at {rc.path}:{rc.call.line}",
                                 rc.path, rc.call.line))
        owned.append(_module_doubt(arg, rc, project))
        texts.add(arg.text)
        scalar = scalar and arg.nnx_own is not None and arg.nnx_own.scalar
    if not evidence:
        return
    if scalar:
        out.report(def_path).refusals.append(Refusal(
            def_path, definition.line, definition.function, name,
            f"not worth donating: `{name}` holds only nnx Variables made from a Python number (`nnx.Param(1)`, "
            f"`nnx.Param(jnp.array(1.0))`): scalars, a few bytes"))
        return
    confidence, why = Confidence.HIGH, ""
    # nnx objects share Variables with other Modules (``ema.apply_to(model)``,
    # ``nnx.split``, optimizers holding models): a reference jaxmem cannot
    # see may keep the old arrays (flax's ema_test crashed when this was high).
    doubts = [doubt for doubt in owned if doubt is not None][:1]
    if not doubts:
        shown = ", ".join(sorted(texts))
        evidence.append(Evidence(f"`{shown}` is made here with new arrays and only handed to nnx.jit calls, "
                                 f"nnx.display, train()/eval()/update()/reset() and views that do the same: "
                                 f"nothing else holds its arrays", calls[0].path, calls[0].call.line))
    doubts += _reach_doubts(definition, def_path, project, partial_view, siblings, calls)
    if doubts:
        confidence, why = Confidence.MEDIUM, f": {doubts[0]}"
    spelled, _ = donation_option(definition.transform, index, name, None)  # nnx.jit: argnums or argnames
    kind = "which it updates in place and nnx writes back" if updated else \
        "an nnx object: nnx.jit returns every one of its arrays and writes them back, a copy per call unless donated"
    out.add(
        "JXM001", def_path, _span(definition.line, definition.col, definition.end_line, definition.end_col),
        f"`{definition.function}` does not donate `{name}`, {kind}: add {spelled} to reuse its memory "
        f"({confidence.value} confidence{why})",
        confidence=confidence, definition=definition, definition_path=def_path, parameter=(index, name),
        evidence=evidence + [Evidence(d, def_path, definition.line) for d in doubts],
        fix=DonationFix(definition.line, index, name),
    )


def _module_doubt(arg: ArgFacts, rc: ResolvedCall, project: Index) -> str | None:
    """Why the nnx object ``arg`` may share its arrays with something else, if it may."""
    own = arg.nnx_own
    generic = (f"nnx objects may share their arrays with other Modules (`{arg.text}` is one); "
               "jaxmem cannot prove nothing else holds them")
    if own is None:
        return generic
    if own.doubt is not None:
        return f"{own.doubt}; {generic}"
    for line, col in own.calls:
        if (rc.path, line, col) not in project.nnx_calls:
            return f"`{arg.text}` is passed to a call at {rc.path}:{line} that is not an nnx.jit call; {generic}"
    made = []
    for entry in own.factories:
        if (one := _made_by_factory(entry, rc.path, project)) is None:
            if isinstance(why := _factory_of(entry[0], rc.path, project), str):
                return (f"`{arg.text}` is made by `{entry[0].lstrip('.')}`, which jaxmem does not take for a factory "
                        f"of new nnx objects: {why}; {generic}")
            return (f"`{arg.text}` is made by `{entry[0]}`, which jaxmem cannot prove makes new nnx objects it "
                    f"takes no array out of; {generic}")
        made.append(one)
    for qualified in (*own.classes, *(c for m in made for c in m.classes)):
        if project.known_as(qualified, project.clean_classes) is None:
            return (f"`{arg.text}` is made by `{qualified}`, a class jaxmem cannot see (it may put arrays of "
                    f"another value in it); {generic}")
        if why := project.class_stores_twice(qualified):
            return f"`{arg.text}` is made by `{qualified}`: {why}"
        stored, signature = project.class_stored(qualified)
        named = [p.name for p in (signature.params if signature else ()) if p.name in stored
                 and p.kind not in (VAR_POSITIONAL, VAR_KEYWORD)]  # ``*args``/``**kwargs``: made per call
        if named:
            return (f"`{arg.text}` is made by `{qualified}`, whose `__init__` may store an array into its "
                    f"`{'`, `'.join(named)}`, which the caller may still hold; {generic}")
    return None


def _only_rngs(calls: list[ResolvedCall], index: int | None, name: str) -> bool:
    """Whether every call passes for the parameter a name bound only to ``nnx.Rngs(...)``."""
    for rc in calls:
        arg = _arg_at(rc, index, name)
        if arg is None or arg.key is None or not arg.origins \
                or any(origin.qualified not in RNGS_CLASSES for origin in arg.origins):
            return False
    return bool(calls)


def _nnx_not_updated(definition: JitDefinition, name: str, live: str) -> str:
    """Why an ``nnx.jit`` parameter read after its calls (``live`` says where) is not proposed."""
    return (f"{live}; that is fine only for an nnx Module that `{definition.wrapped}` updates in place (nnx "
            f"writes it back), and its body does not visibly update `{name}` (`optimizer.update({name}, grads)`, "
            f"`{name}.x[...] = ...`)")


def _useless_param(definition: JitDefinition, name: str) -> str | None:
    """Why no output of the jitted body can take parameter ``name``'s buffers, if so."""
    verdict = definition.output_verdict(name)
    if verdict == SCALAR and name in STATIC_STRUCTURE_NAMES:
        return f"`{name}` is by its name a structure (nnx.split's GraphDef, a treedef): it has no device buffer"
    if verdict == SCALAR:
        return f"`{name}` is a Python scalar, string or None (its default or annotation): it has no device buffer"
    if verdict == PRNG:
        return f"`{name}` is only used as a PRNG key by `{definition.wrapped}`: a few bytes"
    if verdict == NONE and not definition.keeps_module_args:
        return (f"no output of `{definition.wrapped}` is built from `{name}` by shape- and dtype-preserving "
                f"operations, so no output can take its buffers")
    if verdict == UNUSED and not definition.keeps_module_args:
        return (f"`{definition.wrapped}` never reads `{name}`, so {definition.transform} drops it and donating it "
                f"frees nothing (unless the definition says keep_unused=True)")
    if verdict == UNUSED_KEPT and not definition.keeps_module_args:
        return (f"`{definition.wrapped}` never reads `{name}` and the calls do not rebind it from the result: "
                f"most likely no output has its shapes and dtypes")
    return None


def _output_doubt(definition: JitDefinition, name: str, carried: bool = False) -> str | None:
    """Why it is not proved that an output can take ``name``'s buffers, if so.  ``carried``:
    every call passes the callee's own result of the loop's previous iteration, so from
    the second iteration an output of the same computation has the shapes and dtypes of
    what is donated (an unread argument jit drops is left undonated, silently)."""
    verdict = definition.output_verdict(name)
    if carried and verdict in (None, MAYBE, UNUSED_KEPT) and not definition.keeps_module_args:
        return None
    if verdict is None:
        return f"the body of `{definition.function}` is not visible: no output is known to take `{name}`'s buffers"
    if verdict == MAYBE:
        return (f"`{name}` reaches the outputs of `{definition.wrapped}` only through calls jaxmem does not know "
                f"(shape and dtype unproved)")
    if verdict in (NONE, UNUSED, UNUSED_KEPT) and definition.keeps_module_args:  # nnx.jit: Modules written back
        return f"no output of `{definition.wrapped}` is built from `{name}` (nnx writes Modules back)"
    if verdict == UNUSED_KEPT:
        return (f"`{definition.wrapped}` never reads `{name}` (kept by keep_unused=True): its buffers are reused "
                f"only if an output made otherwise has their shapes and dtypes")
    return None


def _carried_evidence(definition: JitDefinition, name: str) -> str:
    """Why an output can take ``name``'s buffers when only the loop proves it."""
    return (f"`{name}` comes back to every call as `{definition.function}`'s own result of the loop's previous "
            f"iteration: from the second iteration an output has its shapes and dtypes")


def _call_verdicts(definition: JitDefinition, calls: list[ResolvedCall], index: int | None, name: str,
                   project: Index) -> tuple[list[tuple[ResolvedCall, _Verdict]], str | None]:
    """Each call's verdict on parameter ``index``/``name`` (calls that use its
    default give none), or why the calls cannot be judged."""
    verdicts: list[tuple[ResolvedCall, _Verdict]] = []
    for rc in calls:
        if not rc.resolved and definition.signature is not None:
            return verdicts, f"the call at {rc.path}:{rc.call.line} passes *args/**kwargs or does not fit the signature"
        arg = _arg_at(rc, index, name)
        if arg is None and rc.open:
            return verdicts, f"the call at {rc.path}:{rc.call.line} passes *args/**kwargs, which may fill `{name}`"
        if arg is not None and index is not None and index in rc.keyword_of and not definition.donates_keywords:
            continue  # pmap ignores keyword-passed arguments
        verdict = _verdict(rc, arg, project)
        if verdict is not None:
            verdicts.append((rc, verdict))
    return verdicts, None


def _definition_doubts(definition: JitDefinition, def_path: str, name: str, project: Index,
                       partial_view: bool, siblings: tuple[JitDefinition, ...] = (),
                       calls: list[ResolvedCall] = (), carried: bool = False) -> list[str]:
    """What keeps any proposal for parameter ``name`` at medium, whatever the ``calls`` say
    (of ``definition`` or of any other name bound to its jit node, ``siblings``);
    ``carried`` as for :func:`_output_doubt`."""
    doubts = _reach_doubts(definition, def_path, project, partial_view, siblings, calls)
    output = _output_doubt(definition, name, carried)
    if output is not None:
        doubts.append(output)
    return doubts


def _reach_doubts(definition: JitDefinition, def_path: str, project: Index, partial_view: bool,
                  siblings: tuple[JitDefinition, ...], calls: list[ResolvedCall]) -> list[str]:
    """Why calls of ``definition`` (or of ``siblings``, the other names of its jit node) may
    exist that the join does not see, each a reason no donation of it can be high."""
    doubts = []
    for d in (definition, *siblings):
        handed_on = project.handed_on(def_path, d, calls)
        if handed_on is not None:
            doubts.append(handed_on)
        if d.wrapped_by is not None:
            doubts.append(f"`@{d.wrapped_by}` is applied after the jit: it decides what each call of "
                          f"`{d.function}` passes and may read the arguments afterwards")
        if d.public:
            doubts.append(f"`{d.function}` is public: callers outside this project are not seen")
        if len(d.callee) == 1 and project.passed_around(def_path, d.callee[0], d.scope):
            doubts.append(f"`{d.function}` is passed around as a value: not every call site is seen")
        if project.factory_shared(def_path, d):
            doubts.append(f"`{d.function}` is made by `{d.made_by}()`, which is also called where jaxmem cannot "
                          f"follow its result: the jit it returns there gets the same donation")
    if partial_view:
        doubts.append("only this file was analysed: calls in other files are not seen (`jaxmem check` "
                      "analyses the whole project)")
    return doubts


def propose(definition: JitDefinition, def_path: str, calls: list[ResolvedCall], project: Index, out: Reporter,
            *, partial_view: bool = False, siblings: tuple[JitDefinition, ...] = ()) -> None:
    """JXM001/JXM002 for the parameters ``definition`` does not donate yet (``calls``: those of
    ``siblings`` too, the other names of its jit node)."""
    spec, sig = definition.spec, definition.signature
    if not calls or definition.form == IMMEDIATE:
        return
    if definition.transform == EQX_FILTER_JIT.name and spec.known and sig is not None:
        return _propose_mode(definition, def_path, calls, project, out, partial_view, siblings)
    positional_view = sig is None and spec.known and spec.mode is None and all(not rc.call.has_star for rc in calls)
    if not spec.known or (sig is None and not positional_view):
        reason = spec.unknown_reason or "the jitted function's signature is not visible here"
        out.report(def_path).refusals.append(
            Refusal(def_path, definition.line, definition.function, "*", f"donation not analysed: {reason}")
        )
        return
    candidates: list[tuple[int | None, str]] = []
    if sig is None:
        # The wrapped function is not visible (a factory's parameter, another
        # library): positions every call passes can still be donated, at
        # medium confidence (no output is known to take them).
        for i in range(min(len(rc.call.positional) for rc in calls)):
            if not spec.donates_index(i) and not (spec.static_indices and i in spec.static_indices):
                candidates.append((i, f"argument {i}"))
    for i, param in enumerate(sig.positional if sig is not None else ()):
        if spec.donates_index(i) or spec.donates_name(param.name) or (spec.static_indices and i in spec.static_indices):
            continue
        if spec.static_names and param.name in spec.static_names:
            continue
        if definition.shift and i == 0:
            continue  # self
        candidates.append((i, param.name))
    if definition.donates_keywords and spec.mode is None and sig is not None:
        for param in sig.params:
            if param.kind == "keyword_only" and not spec.donates_name(param.name):
                if not (spec.static_names and param.name in spec.static_names):
                    candidates.append((None, param.name))
    for index, name in candidates:
        if definition.keeps_module_args and definition.output_verdict(name) == MUTATED:
            _propose_module(definition, def_path, calls, index, name, out, project, partial_view, siblings)
            continue
        if definition.keeps_module_args and _nnx_nodes(calls, index, name, project):
            _propose_module(definition, def_path, calls, index, name, out, project, partial_view, siblings,
                            updated=False)
            continue
        verdicts, blocked = _call_verdicts(definition, calls, index, name, project)
        if blocked is None:
            useless = next((v.useless for _, v in verdicts if v.useless), None)
            if verdicts and useless is None:
                useless = _useless_param(definition, name)
                if useless is not None and definition.output_verdict(name) == UNUSED_KEPT \
                        and any(v.rebound for _, v in verdicts):
                    # ``state = reset(state, keys)`` returning a new state of the same structure:
                    # no output is built from it, yet one may have its shapes (medium, see _output_doubt)
                    useless = None
            if useless is not None:
                out.report(def_path).refusals.append(
                    Refusal(def_path, definition.line, definition.function, name, f"not worth donating: {useless}"))
                continue
            live = [v for _, v in verdicts if v.live]
            if live and len(live) < len(verdicts):
                blocked = "call sites disagree: " + live[0].live
            elif live and definition.keeps_module_args and _only_rngs(calls, index, name):
                out.report(def_path).refusals.append(Refusal(
                    def_path, definition.line, definition.function, name,
                    f"not worth donating: every call passes an `nnx.Rngs` for `{name}`, which holds only PRNG "
                    f"keys and counters, a few bytes (nnx.jit writes it back, so reading it after the call is fine)"))
                continue
            elif live and definition.keeps_module_args and not all(
                    (arg := _arg_at(rc, index, name)) is not None and _only_arrays(arg) for rc, _ in verdicts):
                blocked = _nnx_not_updated(definition, name, live[0].live)  # say why a read after nnx.jit matters
            elif live:
                continue  # read later at every call: nothing to propose, nothing to say
        if blocked is not None:
            out.report(def_path).refusals.append(Refusal(def_path, definition.line, definition.function, name, blocked))
            continue
        if not verdicts:
            continue
        confidence = Confidence.lowest(v.confidence for _, v in verdicts)
        carried = all(v.carried for _, v in verdicts)
        extra = _definition_doubts(definition, def_path, name, project, partial_view, siblings, calls, carried)
        if extra:
            confidence = Confidence.lowest([confidence, Confidence.MEDIUM])
        evidence = [Evidence(v.evidence, rc.path, rc.call.line) for rc, v in verdicts]
        if carried and _output_doubt(definition, name) is not None:
            evidence.append(Evidence(_carried_evidence(definition, name), def_path, definition.line))
        evidence += [Evidence(text, def_path, definition.line) for text in extra]
        doubts = [d for _, v in verdicts for d in v.doubts] + extra
        why = f": {doubts[0]}" if doubts and confidence is not Confidence.HIGH else ""
        rebound = any(v.rebound for _, v in verdicts)
        spelled, fixable = donation_option(definition.transform, index, name,
                                           len(sig.positional) if sig is not None else None,
                                           (spec.indices or frozenset(), spec.names or frozenset()))
        span = _span(definition.line, definition.col, definition.end_line, definition.end_col)
        param_name = name if sig is not None else None  # "argument 0": no name to spell in argnames
        if rebound:
            out.add(
                "JXM001", def_path, span,
                f"`{definition.function}` does not donate `{name}`, which is dead after every call and rebound "
                f"from the result: add {spelled} to reuse its memory ({confidence.value} confidence{why})",
                confidence=confidence, definition=definition, definition_path=def_path,
                parameter=(index, param_name), evidence=evidence,
                fix=DonationFix(definition.line, index, param_name) if fixable else None,
            )
        else:
            # Dead in the calling scope is all that is known; say what is not (the caller, a container).
            held = [d for d in doubts if d != _output_doubt(definition, name)]
            unproved = f", but {held[0]}" if held else ""
            out.add(
                "JXM002", def_path, span,
                f"`{name}` is not read again after any call of `{definition.function}`{unproved}: "
                f"donating it ({spelled}) saves memory only if an output has its shape and dtype"
                f"{' and nothing else holds it' if held else ''}",
                confidence=Confidence.LOW, definition=definition, definition_path=def_path,
                parameter=(index, param_name), evidence=evidence,
            )


def _mode_param(definition: JitDefinition, calls: list[ResolvedCall], index: int | None, name: str,
                project: Index) -> tuple[ParamState, Confidence, list[str], list[tuple[ResolvedCall, _Verdict]]]:
    """What equinox's ``donate=`` may do with one parameter: ``(state, confidence, doubts, verdicts)``."""
    spec = definition.spec
    if spec.donates_name(name) or (index is not None and spec.donates_index(index)):
        return ParamState(name, donated=True), Confidence.HIGH, [], []
    if definition.shift and index == 0:
        return ParamState(name, blocker=f"`{name}` is the object whose method is jitted"), Confidence.HIGH, [], []
    if definition.output_verdict(name) == SCALAR:
        return ParamState(name), Confidence.HIGH, [], []  # not an array: equinox holds it static
    verdicts, blocked = _call_verdicts(definition, calls, index, name, project)
    if blocked is not None:
        return ParamState(name, blocker=blocked), Confidence.HIGH, [], verdicts
    live = next((v.live for _, v in verdicts if v.live), None)
    if live is not None:
        return ParamState(name, blocker=live), Confidence.HIGH, [], verdicts
    unpassed = next((rc for rc in calls if _arg_at(rc, index, name)
                     is None), None)
    if unpassed is not None:
        return ParamState(name, blocker=f"the call at {unpassed.path}:{unpassed.call.line} uses its default value, "
                          "which would be donated too"), Confidence.HIGH, [], verdicts
    useless = next((v.useless for _, v in verdicts if v.useless), None) or _useless_param(definition, name)
    dead = [v for _, v in verdicts if not v.useless]
    confidence = Confidence.lowest([v.confidence for v in dead] or [Confidence.HIGH])
    doubts = [d for v in dead for d in v.doubts]
    wanted = useless is None and any(v.rebound for v in dead)
    return ParamState(name, wanted=wanted), confidence, doubts, verdicts


def _propose_mode(definition: JitDefinition, def_path: str, calls: list[ResolvedCall], project: Index,
                  out: Reporter, partial_view: bool, siblings: tuple[JitDefinition, ...] = ()) -> None:
    """JXM001 for an ``eqx.filter_jit`` function: a ``donate=`` mode, which donates
    every parameter it covers, proposed only when each of them may be donated."""
    sig = definition.signature
    if sig.has_var_positional or sig.has_var_keyword:
        out.report(def_path).refusals.append(Refusal(
            def_path, definition.line, definition.function, "*",
            "equinox `donate=` would also donate `*args`/`**kwargs`, which the analysis cannot follow"))
        return
    params = [p for p in sig.params if p.kind in (POSITIONAL_ONLY, POSITIONAL, KEYWORD_ONLY)]
    states, facts = [], {}
    for param in params:
        index = sig.index_of(param.name) if param.kind != KEYWORD_ONLY else None
        state, confidence, doubts, verdicts = _mode_param(definition, calls, index, param.name, project)
        states.append(state)
        facts[param.name] = (index, confidence, doubts, verdicts)
    mode = choose_mode(states)
    donated = [p for p in covered(mode, states) if not p.donated] if mode else []
    for state in states:
        if not state.wanted:
            continue
        index, _, _, verdicts = facts[state.name]
        evidence = [Evidence(v.evidence, rc.path, rc.call.line) for rc, v in verdicts]
        head = (f"`{definition.function}` does not donate `{state.name}`, which is dead after every call and "
                f"rebound from the result")
        span = _span(definition.line, definition.col, definition.end_line, definition.end_col)
        if state not in donated:
            blocker = first_blocker(states, state)
            why = f"`{blocker.name}` must not be donated: {blocker.blocker}" if blocker else "no mode covers it"
            out.add(
                "JXM001", def_path, span,
                f"{head}, but equinox donates all arguments (`donate=\"all\"`) or all but the first "
                f"(`\"all-except-first\"`), and {why}; pass what must survive as the first argument and use "
                f"`donate=\"all-except-first\"` (medium confidence: no automatic fix)",
                confidence=Confidence.MEDIUM, definition=definition, definition_path=def_path,
                parameter=(index, state.name), evidence=evidence + [Evidence(why, def_path, definition.line)],
            )
            continue
        others = [p.name for p in donated if p is not state]
        doubts = [d for p in donated for d in facts[p.name][2]]
        doubts += _definition_doubts(definition, def_path, state.name, project, partial_view, siblings, calls)
        confidence = Confidence.lowest([facts[p.name][1] for p in donated] + [Confidence.HIGH])
        if doubts:
            confidence = Confidence.lowest([confidence, Confidence.MEDIUM])
        why = f": {doubts[0]}" if doubts and confidence is not Confidence.HIGH else ""
        also = (f" (it donates {', '.join(f'`{n}`' for n in others)} too, dead after every call or holding no "
                f"buffer it deletes)") if others else ""
        out.add(
            "JXM001", def_path, span,
            f"{head}: use `eqx.filter_jit(donate=\"{mode}\")` to reuse its memory{also} "
            f"({confidence.value} confidence{why})",
            confidence=confidence, definition=definition, definition_path=def_path, parameter=(index, state.name),
            evidence=evidence + [Evidence(d, def_path, definition.line) for d in doubts],
            fix=DonationFix(definition.line, index, state.name, mode=mode),
        )


def _with_imported_signatures(all_facts: list[FileFacts]) -> list[FileFacts]:
    """Definitions that jit another file's function get its signature and outputs:
    what its factory returns (``wrapped_qualname`` is ``pkg.mod.make_step()``) or
    the function itself (``jax.jit(pipeline.step)``: ``pkg.pipeline.step``)."""
    found: dict[str, list] = defaultdict(list)
    for facts in all_facts:
        for name, info in facts.factories.items():
            for module in facts.module_names:
                found[f"{module}.{name}()"].append((facts.path, name, info))
        for name, outputs in facts.function_outputs.items():
            info = (facts.functions[name], outputs)
            for module in facts.module_names:
                found[f"{module}.{name}"].append((facts.path, name, info))
    if not found:
        return all_facts

    def imported(path: str, key: str):
        nearest = nearest_modules(path, key.removesuffix("()"), found[key], lambda item: (item[0], item[1]))
        if any(item[2] != nearest[0][2] for item in nearest[1:]):
            return None  # same-named modules that disagree: which one is imported is not known
        return nearest[0][2]

    out = []
    for facts in all_facts:
        patched = [
            dataclasses.replace(d, signature=info[0], outputs=with_unused_kept(info[1], d.keeps_unused))
            if d.signature is None and (key := (d.wrapped_qualname or "").lstrip(".")) in found
            and (info := imported(facts.path, key)) else d
            for d in facts.definitions
        ]
        out.append(facts if patched == facts.definitions else dataclasses.replace(facts, definitions=patched))
    return out


def build_reports(all_facts: list[FileFacts], settings: Settings, *, partial_view: bool = False,
                  keeping_methods: frozenset[str] = frozenset()) -> list[FileReport]:
    """Findings for every file of the run (unfiltered; see ``engine.report``)."""
    out = Reporter()
    for facts in all_facts:
        out.report(facts.path)
        if facts.parse_error is not None:
            line, col, message = facts.parse_error
            out.add("JXM900", facts.path, _span(line, col), message)
    all_facts = _with_imported_signatures(all_facts)
    index = Index(all_facts)
    all_facts = settle_kept_if(all_facts, keeping_methods, index.keeps_nothing)  # Index reads no reason
    calls = resolve_calls(all_facts, index)
    index.nnx_calls = {(rc.path, rc.call.line, rc.call.col) for rc in calls if rc.definition.keeps_module_args}
    by_definition: dict[tuple[str, int, tuple], list[ResolvedCall]] = defaultdict(list)
    for rc in calls:
        check_declared(rc, out)
        by_definition[(rc.definition_path, rc.definition.line, rc.definition.callee)].append(rc)
    called = called_definitions(all_facts, index) if not partial_view else set()
    any_donation = False
    for facts in all_facts:
        for d, siblings in _by_jit_node(facts.definitions):
            if d.spec.indices or d.spec.names:
                any_donation = True
            for problem in d.problems:
                out.add("JXM103", facts.path, _span(d.line, d.col, d.end_line, d.end_col),
                        f"invalid donation on `{d.function}`: {problem}", definition=d, definition_path=facts.path)
            if siblings is None:
                continue  # proposed with the first definition of its jit node
            keys = [(facts.path, s.line, s.callee) for s in (d, *siblings)]
            propose(d, facts.path, [rc for key in keys for rc in by_definition.get(key, [])], index, out,
                    partial_view=partial_view, siblings=siblings)
            if not partial_view and not any(key in called for key in keys):
                _note_uncalled(d, facts.path, index, out)
    if any_donation:
        for facts in all_facts:
            for line, col, text in facts.debug_nans:
                out.add("JXM107", facts.path, _span(line, col),
                        "`jax_debug_nans` is enabled: JAX silently turns buffer donation off, so every donated "
                        "argument costs its memory twice; enable it only while debugging")
    reports = [out.report(f.path) for f in all_facts]
    for report in reports:
        report.findings = _dedupe(report.findings)
    return reports


def _by_jit_node(definitions: list[JitDefinition]):
    """Each definition with the other names bound to the same jit node (``f = make(); g = make()``,
    a factory's one ``jax.jit``), or ``None`` after the first: one edit donates for every name, so a
    parameter is proposed only when the calls through all of them allow it."""
    nodes: dict[tuple[int, int], list[JitDefinition]] = defaultdict(list)
    for d in definitions:
        nodes[(d.line, d.col)].append(d)
    for d in definitions:
        group = nodes[(d.line, d.col)]
        yield d, (tuple(group[1:]) if d is group[0] else None)


def _note_uncalled(definition: JitDefinition, def_path: str, project: Index, out: Reporter) -> None:
    """JXM003 for a definition no call of the run reaches (a partial view never says so), unless
    its file hands it to a tracing higher-order function (``lax.scan(step, ...)``): it runs traced."""
    if len(definition.callee) == 1 and definition.callee[0] in project.traced_callables.get(def_path, ()):
        return
    around = len(definition.callee) == 1 and project.passed_around(def_path, definition.callee[0], definition.scope)
    for p in uncalled_proposals(definition, around):
        out.add("JXM003", def_path, _span(definition.line, definition.col, definition.end_line, definition.end_col),
                p.message, confidence=Confidence.LOW, definition=definition, definition_path=def_path,
                parameter=(p.index, p.name), evidence=[Evidence(text, def_path, definition.line) for text in p.evidence])


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    unique = []
    for f in sorted(findings, key=lambda f: f.sort_key):
        # The index too: parameters of a function whose signature is not visible have no name.
        key = (f.code, f.span.line, f.span.col, f.parameter_index, f.parameter_name, f.function)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique

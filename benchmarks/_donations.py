"""The donations real code writes, found and edited with libcst (the benchmark's own oracle).

Independent of jaxmem's analysis on purpose: the accuracy benchmark compares
jaxmem's findings with what these small, literal readings of the source say.

* ``find_donations(source)``: every ``donate_argnums=`` / ``donate_argnames=``
  on a jit/pmap/pjit decorator or call (also through ``functools.partial``)
  and every ``eqx.filter_jit(donate=...)``, with the donated parameters and
  the call sites of the jitted callable in the same file.
* ``strip_donations(source)``: the source without those keywords.
* ``inject_reads(source, sites, through_alias)``: a read of each donated
  plain name on the line after its donating call (directly, or through an
  alias taken just before the call).
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

DONATION_KEYWORDS = ("donate_argnums", "donate_argnames")
_JIT_LAST_NAMES = {"jit", "pmap", "pjit", "filter_jit", "filter_pmap", "named_jit"}
_PARTIAL_LAST_NAMES = {"partial"}
# Statements after which a read on the next line runs (not after return/raise).
_SIMPLE_STATEMENTS = (cst.Expr, cst.Assign, cst.AnnAssign, cst.AugAssign)


@dataclass(frozen=True)
class CallSite:
    """One call of a donating jitted callable, in a simple statement."""

    line: int                  # first line of the statement holding the call
    end_line: int              # last line of that statement
    indent: str                # the statement's indentation
    donated_names: tuple[str, ...]     # donated arguments that are plain names
    donated_args: tuple[str, ...]      # source text of every donated argument
    rebound: tuple[str, ...]   # donated arguments the statement assigns again
    in_simple_statement: bool


@dataclass
class Donation:
    """One donation the authors wrote."""

    line: int                  # line of the donation keyword
    span: tuple[int, int]      # lines a finding about this definition may point at
    form: str                  # "decorator" or "call"
    callee: str                # e.g. "jax.jit", "functools.partial(jax.pmap)"
    keyword: str               # donate_argnums, donate_argnames or donate
    spec: str                  # the keyword's value as written
    bound_to: str | None       # the name calls use (def name, assigned target)
    wrapped: str | None        # the wrapped function's source text
    parameters: tuple[str, ...] | None  # the visible signature, self included
    is_method: bool
    indices: tuple[int, ...] = ()       # donated positions (donate_argnums semantics)
    names: tuple[str, ...] = ()         # donated parameter names
    literal: bool = True                # spec could be read without running code
    calls: list[CallSite] = field(default_factory=list)

    def key(self) -> tuple[int, str]:
        return (self.line, self.keyword)


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``jax.numpy.ones`` for the expression ``jax.numpy.ones``; None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _last(name: str | None) -> str:
    return name.rsplit(".", 1)[-1] if name else ""


def jit_callee(call: cst.Call) -> tuple[str, cst.BaseExpression | None] | None:
    """(callee text, wrapped-function expression or None) when ``call`` builds a jitted callable.

    ``jax.jit(f, ...)`` -> ("jax.jit", f); ``partial(jax.pmap, ...)`` ->
    ("partial(jax.pmap)", None); ``jax.jit(...)`` without positional -> (.., None).
    """
    name = dotted_name(call.func)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if _last(name) in _JIT_LAST_NAMES:
        return name, (positional[0].value if positional else None)
    if _last(name) in _PARTIAL_LAST_NAMES and positional:
        inner = dotted_name(positional[0].value)
        if _last(inner) in _JIT_LAST_NAMES:
            return f"{name}({inner})", (positional[1].value if len(positional) > 1 else None)
    return None


def _donation_arg(call: cst.Call) -> list[cst.Arg]:
    callee = jit_callee(call)
    if callee is None:
        return []
    keywords = DONATION_KEYWORDS + (("donate",) if "filter_" in callee[0] else ())
    return [a for a in call.args if a.keyword is not None and a.keyword.value in keywords]


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _parameters(function: cst.FunctionDef) -> tuple[str, ...]:
    params = function.params
    return tuple(p.name.value for p in (*params.posonly_params, *params.params))


def _resolve(donation: Donation) -> None:
    """Fill ``indices``/``names`` (and ``literal``) from the spec and the signature."""
    value = _literal(donation.spec)
    params = donation.parameters
    if donation.keyword == "donate":
        if value in ("all", "all-except-first") and params is not None:
            start = 1 if value == "all-except-first" else 0
            own = params[1:] if donation.is_method and donation.form == "decorator" else params
            donation.names = tuple(own[start:])
            donation.indices = tuple(range(start, len(own)))
        else:
            donation.literal = value in ("all", "all-except-first", "none", "warn")
        return
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, (int, str)) for v in value):
        donation.literal = False
        return
    visible = params
    if params is not None and donation.form == "call" and donation.is_method:
        visible = params[1:]  # jax.jit(self.method): positions start after self
    if donation.keyword == "donate_argnums":
        donation.indices = tuple(v for v in value if isinstance(v, int))
        if visible is not None:
            donation.names = tuple(visible[i] for i in donation.indices if 0 <= i < len(visible))
    else:
        donation.names = tuple(v for v in value if isinstance(v, str))
        if visible is not None:
            donation.indices = tuple(visible.index(n) for n in donation.names if n in visible)


class _Finder(cst.CSTVisitor):
    def __init__(self, module: cst.Module):
        super().__init__()
        self.module = module
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.positions = wrapper.resolve(PositionProvider)
        self.parents = wrapper.resolve(ParentNodeProvider)
        self.donations: list[Donation] = []
        self.functions: dict[str, cst.FunctionDef] = {}
        self.calls: list[tuple[cst.Call, cst.CSTNode]] = []

    def _pos(self, node):
        return self.positions[node]

    def _parent(self, node):
        return self.parents.get(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.setdefault(node.name.value, node)
        for decorator in node.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call):
                for arg in _donation_arg(expr):
                    self._add_decorator(node, expr, arg)

    def _in_class(self, node) -> bool:
        return isinstance(self._parent(self._parent(node)), cst.ClassDef)

    def _add_decorator(self, node: cst.FunctionDef, decorator: cst.Call, arg: cst.Arg) -> None:
        start = self._pos(node.decorators[0]).start.line
        def_line = self._pos(node.name).start.line
        self.donations.append(Donation(
            line=self._pos(arg).start.line, span=(start, def_line), form="decorator",
            callee=jit_callee(decorator)[0], keyword=arg.keyword.value,
            spec=self.module.code_for_node(arg.value), bound_to=node.name.value,
            wrapped=node.name.value, parameters=_parameters(node), is_method=self._in_class(node),
        ))

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append((node, self._parent(node)))
        parent = self._parent(node)
        if isinstance(parent, cst.Decorator):
            return
        for arg in _donation_arg(node):
            self._add_call(node, arg)

    def _add_call(self, node: cst.Call, arg: cst.Arg) -> None:
        callee, wrapped = jit_callee(node)
        parent = self._parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            # partial(jax.jit, donate_argnums=0)(f): the outer call wraps f
            positional = [a for a in parent.args if a.keyword is None and not a.star]
            wrapped = positional[0].value if positional else wrapped
            parent = self._parent(parent)
        bound_to = None
        span_start = self._pos(node).start.line
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            bound_to = self.module.code_for_node(parent.targets[0].target)
            span_start = self._pos(parent).start.line
        elif isinstance(parent, (cst.AnnAssign,)) and parent.value is not None:
            bound_to = self.module.code_for_node(parent.target)
        wrapped_text = self.module.code_for_node(wrapped) if wrapped is not None else None
        self.donations.append(Donation(
            line=self._pos(arg).start.line, span=(span_start, self._pos(node).end.line), form="call",
            callee=callee, keyword=arg.keyword.value, spec=self.module.code_for_node(arg.value),
            bound_to=bound_to, wrapped=wrapped_text, parameters=None,
            is_method=bool(wrapped_text and wrapped_text.startswith("self.")),
        ))


def _statement_of(finder: _Finder, node):
    """The simple statement holding ``node`` (and whether the call is its whole value)."""
    current = node
    while current is not None and not isinstance(current, cst.SimpleStatementLine):
        current = finder._parent(current)
    return current


def _targets(statement: cst.SimpleStatementLine, module: cst.Module) -> set[str]:
    names: set[str] = set()
    for small in statement.body:
        targets = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        for target in targets:
            if isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    inner = element.value
                    names.add(module.code_for_node(inner.value if isinstance(inner, cst.StarredElement) else inner))
            else:
                names.add(module.code_for_node(target))
    return names


def _call_sites(finder: _Finder, donation: Donation) -> list[CallSite]:
    if not donation.bound_to or not donation.literal:
        return []
    wanted = {donation.bound_to}
    method_call = donation.form == "decorator" and donation.is_method
    if method_call:
        wanted = {f"self.{donation.bound_to}", f"cls.{donation.bound_to}"}
    sites = []
    module = finder.module
    for call, _parent in finder.calls:
        if module.code_for_node(call.func) not in wanted:
            continue
        donated = _donated_arguments(call, donation, method_call, module)
        if not donated:
            continue
        statement = _statement_of(finder, call)
        if statement is None:
            continue
        position = finder._pos(statement)
        first = statement.body[0]
        simple = len(statement.body) == 1 and isinstance(first, _SIMPLE_STATEMENTS)
        targets = _targets(statement, module)
        indent = module.code.splitlines()[position.start.line - 1]
        indent = indent[: len(indent) - len(indent.lstrip())]
        # ``if c: x = f(x)`` shares its line with a header: no line to read on
        simple = simple and position.start.column == len(indent)
        sites.append(CallSite(
            line=position.start.line, end_line=position.end.line, indent=indent,
            donated_names=tuple(t for t in donated if t.isidentifier()),
            donated_args=tuple(donated), rebound=tuple(t for t in donated if t in targets),
            in_simple_statement=simple,
        ))
    return sites


def _donated_arguments(call: cst.Call, donation: Donation, method_call: bool, module: cst.Module) -> list[str]:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if any(a.star for a in call.args):
        return []
    shift = 1 if method_call else 0
    texts = []
    for index in donation.indices:
        if 0 <= index - shift < len(positional):
            texts.append(module.code_for_node(positional[index - shift].value))
    pmap = "pmap" in donation.callee
    if not pmap:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in donation.names:
                texts.append(module.code_for_node(arg.value))
    return texts


def find_donations(source: str) -> list[Donation]:
    """Every donation written in ``source``, with its donated parameters and same-file call sites."""
    module = cst.parse_module(source)
    finder = _Finder(module)
    module.visit(finder)
    for donation in finder.donations:
        if donation.parameters is None and donation.wrapped:
            name = donation.wrapped.rsplit(".", 1)[-1]
            function = finder.functions.get(name)
            if function is not None:
                donation.parameters = _parameters(function)
        _resolve(donation)
        donation.calls = _call_sites(finder, donation)
    return finder.donations


class _Stripper(cst.CSTTransformer):
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        doomed = {id(a) for a in _donation_arg(original)}
        if not doomed:
            return updated
        kept = [new for old, new in zip(original.args, updated.args) if id(old) not in doomed]
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(args=kept)


def strip_donations(source: str) -> str:
    """``source`` with every donation keyword of ``find_donations`` removed."""
    return cst.parse_module(source).visit(_Stripper()).code


@dataclass(frozen=True)
class Injection:
    """A read injected after a donating call: where it lands in the new text."""

    line: int          # line of the injected read in the new source
    name: str          # the donated name it reads
    call_line: int     # line of the donating call's statement in the original source
    through_alias: bool
    rebound: bool      # the call statement assigns the name again


def injection_sites(donations: list[Donation], through_alias: bool) -> list[tuple[CallSite, str]]:
    """(call site, donated name) pairs where a read can be injected.

    A direct read after ``x = f(x)`` reads the new ``x`` (no bug), so direct
    reads go only after calls that do not rebind the name; reads through an
    alias taken before the call are a use-after-donation either way.
    """
    seen: set[tuple[int, str]] = set()
    pairs = []
    for donation in donations:
        for site in donation.calls:
            if not site.in_simple_statement:
                continue
            for name in site.donated_names:
                if (not through_alias and name in site.rebound) or (site.line, name) in seen:
                    continue
                seen.add((site.line, name))
                pairs.append((site, name))
    return pairs


def inject_reads(source: str, pairs: list[tuple[CallSite, str]], through_alias: bool) -> tuple[str, list[Injection]]:
    """``source`` with a ``print(NAME)`` after each call site (via ``_jxm_alias_K`` when ``through_alias``)."""
    lines = source.splitlines(keepends=True)
    before: dict[int, list[str]] = {}
    after: dict[int, list[tuple[str, str, CallSite]]] = {}
    for number, (site, name) in enumerate(pairs):
        read = name
        if through_alias:
            read = f"_jxm_alias_{number}"
            before.setdefault(site.line, []).append(f"{site.indent}{read} = {name}\n")
        after.setdefault(site.end_line, []).append((f"{site.indent}print({read})\n", name, site))
    out: list[str] = []
    injections: list[Injection] = []
    for number, text in enumerate(lines, start=1):
        out.extend(before.get(number, []))
        if not text.endswith("\n"):
            text += "\n"
        out.append(text)
        for read_line, name, site in after.get(number, []):
            out.append(read_line)
            injections.append(Injection(line=len(out), name=name, call_line=site.line,
                                        through_alias=through_alias, rebound=name in site.rebound))
    return "".join(out), injections


def line_map(old: str, new: str):
    """A function from line numbers of ``old`` to the matching lines of ``new`` (an edited copy).

    Lines inside an edited block map to the first line of its replacement, so
    the first line of a multi-line definition whose keyword was removed keeps
    pointing at the definition.
    """
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    blocks = matcher.get_opcodes()

    def mapped(line: int) -> int:
        index = line - 1
        for tag, i1, i2, j1, j2 in blocks:
            if i1 <= index < i2:
                if tag == "equal":
                    return j1 + (index - i1) + 1
                return min(j1 + (index - i1), max(j1, j2 - 1)) + 1
        return line
    return mapped

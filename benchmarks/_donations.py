"""The donations real code writes, found and edited textually (the benchmark's own oracle).

Independent of jaxmem's analysis on purpose: the accuracy benchmark compares
jaxmem's findings with what these small, literal readings of the source say.
It reads with ``ast`` (libcst's metadata costs seconds per file on this
corpus) and edits text at ``ast``'s positions.

* ``find_donations(source)``: every ``donate_argnums=`` / ``donate_argnames=``
  on a jit/pmap/pjit decorator or call (also through ``functools.partial``)
  and every ``eqx.filter_jit(donate=...)``, with the donated parameters and
  the call sites of the jitted callable in the same file.
* ``strip_donations(source)``: the source without those keywords.
* ``inject_reads(source, pairs, through_alias)``: a read of each donated
  plain name on the line after its donating call (directly, or through an
  alias taken just before the call).
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field

DONATION_KEYWORDS = ("donate_argnums", "donate_argnames")
_JIT_LAST_NAMES = {"jit", "pmap", "pjit", "filter_jit", "filter_pmap", "named_jit"}
# Other transforms whose function runs on tracers when the decorated function is called: a
# donating jit called inside deletes nothing, so a read after it is no use-after-donation
# (jaxmem's tests run the shard_map case eagerly on jax 0.10.2).
_TRACING_LAST_NAMES = {"shard_map", "vmap", "grad", "value_and_grad", "checkpoint", "remat"}
_PARTIAL_LAST_NAMES = {"partial"}
# Statements after which a read on the next line runs (not after return/raise).
_SIMPLE_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)


@dataclass(frozen=True)
class CallSite:
    """One call of a donating jitted callable."""

    line: int                  # first line of the statement holding the call
    end_line: int              # last line of that statement
    indent: str                # the statement's indentation
    donated_names: tuple[str, ...]     # donated arguments that are plain names
    donated_args: tuple[str, ...]      # source text of every donated argument
    rebound: tuple[str, ...]   # donated arguments the statement assigns again
    in_simple_statement: bool  # alone on its lines, an expression or assignment


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
    scope: ast.AST | None = field(default=None, repr=False, compare=False)  # where its calls are looked for


def dotted_name(node: ast.AST) -> str | None:
    """``jax.numpy.ones`` for the expression ``jax.numpy.ones``; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _last(name: str | None) -> str:
    return name.rsplit(".", 1)[-1] if name else ""


def jit_callee(call: ast.Call) -> tuple[str, ast.AST | None] | None:
    """(callee text, wrapped-function expression or None) when ``call`` builds a jitted callable.

    ``jax.jit(f, ...)`` -> ("jax.jit", f); ``partial(jax.pmap, ...)`` ->
    ("partial(jax.pmap)", None); ``jax.jit(...)`` without positional -> (.., None).
    """
    name = dotted_name(call.func)
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    if _last(name) in _JIT_LAST_NAMES:
        return name, (positional[0] if positional else None)
    if _last(name) in _PARTIAL_LAST_NAMES and positional:
        inner = dotted_name(positional[0])
        if _last(inner) in _JIT_LAST_NAMES:
            return f"{name}({inner})", (positional[1] if len(positional) > 1 else None)
    return None


def _tracing_call(call: ast.Call) -> bool:
    """``jax.shard_map(mesh=...)``, ``partial(jax.shard_map, ...)``: a decorator that traces its function."""
    name = dotted_name(call.func)
    if _last(name) in _TRACING_LAST_NAMES:
        return True
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    return _last(name) in _PARTIAL_LAST_NAMES and bool(positional) \
        and _last(dotted_name(positional[0])) in _TRACING_LAST_NAMES


def donation_keywords(call: ast.Call) -> list[ast.keyword]:
    """The donation keywords of ``call`` when it builds a jitted callable."""
    callee = jit_callee(call)
    if callee is None:
        return []
    keywords = DONATION_KEYWORDS
    if "filter_" in callee[0]:
        keywords += ("donate",)  # equinox: donate="all" | "all-except-first" | ...
    if callee[0].endswith("named_jit"):
        keywords += ("donate_args",)  # haliax: donate_args=True or a tuple of booleans
    return [k for k in call.keywords if k.arg in keywords]


def _literal(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    return tuple(a.arg for a in (*function.args.posonlyargs, *function.args.args))


def _resolve(donation: Donation, value) -> None:
    """Fill ``indices``/``names`` (and ``literal``) from the spec's value and the signature."""
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
    if donation.keyword == "donate_args":
        flags = value if isinstance(value, (tuple, list)) else None
        if value is True and params is not None:
            flags = (True,) * len(params)
        if flags is None or not all(isinstance(v, bool) for v in flags):
            donation.literal = False
            return
        value = tuple(i for i, flag in enumerate(flags) if flag)
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
    if donation.keyword in ("donate_argnums", "donate_args"):
        donation.indices = tuple(v for v in value if isinstance(v, int))
        if visible is not None:
            donation.names = tuple(visible[i] for i in donation.indices if 0 <= i < len(visible))
    else:
        donation.names = tuple(v for v in value if isinstance(v, str))
        if visible is not None:
            donation.indices = tuple(visible.index(n) for n in donation.names if n in visible)


class _Module:
    """One parsed file: parents, functions by name, calls, lines."""

    def __init__(self, source: str):
        self.tree = ast.parse(source)
        self.lines = source.splitlines()
        self.parents: dict[ast.AST, ast.AST] = {}
        self.functions: dict[str, ast.AST] = {}
        self.calls: list[ast.Call] = []
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, node)
            elif isinstance(node, ast.Call):
                self.calls.append(node)

    def in_class(self, function: ast.AST) -> bool:
        return isinstance(self.parents.get(function), ast.ClassDef)

    def enclosing(self, node: ast.AST, kinds=(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) -> ast.AST:
        """The innermost function, class (of ``kinds``) or the module around ``node``."""
        current = self.parents.get(node)
        while current is not None and not isinstance(current, kinds):
            current = self.parents.get(current)
        return current if current is not None else self.tree

    def calls_in(self, scope: ast.AST | None) -> list[ast.Call]:
        """The calls inside ``scope`` (the whole module for None), in source order."""
        if scope is None or scope is self.tree:
            return self.calls
        inside = {id(n) for n in ast.walk(scope)}
        return [call for call in self.calls if id(call) in inside]

    def inside_jitted_function(self, node: ast.AST) -> bool:
        """Whether ``node`` sits in a function decorated with a jit transform (traced, not dispatched)."""
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in current.decorator_list:
                    if isinstance(decorator, ast.Call) and (jit_callee(decorator) is not None
                                                            or _tracing_call(decorator)):
                        return True
                    if _last(dotted_name(decorator)) in _JIT_LAST_NAMES | _TRACING_LAST_NAMES:
                        return True
            current = self.parents.get(current)
        return False

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        current = node
        while current is not None and not isinstance(current, ast.stmt):
            current = self.parents.get(current)
        return current

    def alone_on_its_lines(self, statement: ast.stmt) -> bool:
        """No header or other statement shares the statement's first or last line."""
        first = self.lines[statement.lineno - 1]
        indent = len(first) - len(first.lstrip())
        if len(first[:indent].encode("utf-8")) != statement.col_offset:
            return False
        tail = self.lines[statement.end_lineno - 1].encode("utf-8")[statement.end_col_offset:].decode("utf-8", "replace")
        return tail.strip() == "" or tail.strip().startswith("#")


def _donations_in(module: _Module) -> list[Donation]:
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call):
                    for keyword in donation_keywords(decorator):
                        found.append(_decorator_donation(module, node, decorator, keyword))
    decorators = {id(d) for n in ast.walk(module.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for d in n.decorator_list}
    for call in module.calls:
        if id(call) in decorators:
            continue
        for keyword in donation_keywords(call):
            found.append(_call_donation(module, call, keyword))
    return sorted(found, key=lambda d: d.line)


def _decorator_donation(module: _Module, node, decorator: ast.Call, keyword: ast.keyword) -> Donation:
    donation = Donation(
        line=keyword.lineno, span=(node.decorator_list[0].lineno, node.lineno), form="decorator",
        callee=jit_callee(decorator)[0], keyword=keyword.arg, spec=ast.unparse(keyword.value),
        bound_to=node.name, wrapped=node.name, parameters=_parameters(node), is_method=module.in_class(node),
    )
    # a method is called through self anywhere in its class; a function where its name is visible
    donation.scope = module.parents.get(node) if donation.is_method else module.enclosing(node)
    _resolve(donation, _literal(keyword.value))
    return donation


def _call_donation(module: _Module, call: ast.Call, keyword: ast.keyword) -> Donation:
    callee, wrapped = jit_callee(call)
    parent = module.parents.get(call)
    if isinstance(parent, ast.Call) and parent.func is call:
        # partial(jax.jit, donate_argnums=0)(f): the outer call wraps f
        positional = [a for a in parent.args if not isinstance(a, ast.Starred)]
        wrapped = positional[0] if positional else wrapped
        parent = module.parents.get(parent)
    bound_to = None
    start = call.lineno
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        bound_to = ast.unparse(parent.targets[0])
        start = parent.lineno
    elif isinstance(parent, ast.AnnAssign) and parent.value is not None:
        bound_to = ast.unparse(parent.target)
        start = parent.lineno
    wrapped_text = ast.unparse(wrapped) if wrapped is not None else None
    parameters = None
    if wrapped_text:
        function = module.functions.get(wrapped_text.rsplit(".", 1)[-1])
        parameters = _parameters(function) if function is not None else None
    donation = Donation(
        line=keyword.lineno, span=(start, call.end_lineno), form="call", callee=callee, keyword=keyword.arg,
        spec=ast.unparse(keyword.value), bound_to=bound_to, wrapped=wrapped_text, parameters=parameters,
        is_method=bool(wrapped_text and wrapped_text.startswith("self.")),
    )
    if bound_to and bound_to.startswith("self."):
        donation.scope = module.enclosing(call, (ast.ClassDef,))
    else:
        donation.scope = module.enclosing(call)
    _resolve(donation, _literal(keyword.value))
    return donation


def _targets(statement: ast.stmt) -> set[str]:
    targets = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    names = set()
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        else:
            names.add(ast.unparse(target))
    return names


def _call_sites(module: _Module, donation: Donation) -> list[CallSite]:
    if not donation.bound_to or not donation.literal:
        return []
    method_call = donation.form == "decorator" and donation.is_method
    wanted = {f"self.{donation.bound_to}", f"cls.{donation.bound_to}"} if method_call else {donation.bound_to}
    sites = []
    for call in module.calls_in(donation.scope):
        if ast.unparse(call.func) not in wanted:
            continue
        donated = _donated_arguments(call, donation, method_call)
        statement = module.statement_of(call)
        if not donated or statement is None:
            continue
        first = module.lines[statement.lineno - 1]
        targets = _targets(statement)
        traced = module.inside_jitted_function(call)
        sites.append(CallSite(
            line=statement.lineno, end_line=statement.end_lineno, indent=first[: len(first) - len(first.lstrip())],
            donated_names=tuple(t for t in donated if t.isidentifier()), donated_args=tuple(donated),
            rebound=tuple(t for t in donated if t in targets),
            # a call traced inside another jitted function donates nothing: no read to inject there
            in_simple_statement=(isinstance(statement, _SIMPLE_STATEMENTS) and module.alone_on_its_lines(statement)
                                 and not traced),
        ))
    return sites


def _donated_arguments(call: ast.Call, donation: Donation, method_call: bool) -> list[str]:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return []
    shift = 1 if method_call else 0
    texts = [ast.unparse(call.args[i - shift]) for i in donation.indices if 0 <= i - shift < len(call.args)]
    if "pmap" not in donation.callee:  # pmap ignores keyword-passed arguments
        texts += [ast.unparse(k.value) for k in call.keywords if k.arg in donation.names]
    return texts


def find_donations(source: str) -> list[Donation]:
    """Every donation written in ``source``, with its donated parameters and same-file call sites."""
    module = _Module(source)
    donations = _donations_in(module)
    for donation in donations:
        donation.calls = _call_sites(module, donation)
    return donations


def strip_donations(source: str) -> str:
    """``source`` with every donation keyword of ``find_donations`` removed (with its comma)."""
    tree = ast.parse(source)
    data = source.encode("utf-8")
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col

    cuts = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        doomed = donation_keywords(node)
        if not doomed:
            continue
        arguments = sorted([*node.args, *node.keywords], key=lambda a: (a.lineno, a.col_offset))
        for keyword in doomed:
            index = next(i for i, a in enumerate(arguments) if a is keyword)
            end = offset(keyword.end_lineno, keyword.end_col_offset)
            if index > 0:  # from the end of the previous argument: drops ", donate_argnums=..."
                previous = arguments[index - 1]
                cuts.append((offset(previous.end_lineno, previous.end_col_offset), end))
            elif len(arguments) > 1:  # first of several: drops "donate_argnums=..., "
                following = arguments[1]
                cuts.append((offset(keyword.lineno, keyword.col_offset),
                             offset(following.lineno, following.col_offset)))
            else:
                cuts.append((offset(keyword.lineno, keyword.col_offset), end))
    for start, end in sorted(cuts, reverse=True):
        data = data[:start] + data[end:]
    return data.decode("utf-8")


@dataclass(frozen=True)
class Injection:
    """A read injected after a donating call: where it lands in the new text."""

    line: int          # line of the injected read in the new source
    name: str          # the donated name it reads
    call_line: int     # line of the donating call's statement in the original source
    through_alias: bool
    rebound: bool      # the call statement assigns the name again


def keeps_arguments_usable(donation: Donation) -> bool:
    """Whether the donated arguments stay readable after the call (flax ``nnx.jit``/``nnx.pmap``)."""
    return re.search(r"\bnnx\.", donation.callee) is not None


def injection_sites(donations: list[Donation], through_alias: bool) -> list[tuple[CallSite, str]]:
    """(call site, donated name) pairs where a read can be injected.

    A direct read after ``x = f(x)`` reads the new ``x`` (no bug), so direct
    reads go only after calls that do not rebind the name; reads through an
    alias taken before the call are a use-after-donation either way.
    ``nnx.jit`` writes its outputs back into the donated Modules, which stay
    usable, so its calls get no injected read.
    """
    seen: set[tuple[int, str]] = set()
    pairs = []
    for donation in donations:
        if keeps_arguments_usable(donation):
            continue
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
        out.append(text if text.endswith("\n") else text + "\n")
        for read_line, name, site in after.get(number, []):
            out.append(read_line)
            injections.append(Injection(line=len(out), name=name, call_line=site.line,
                                        through_alias=through_alias, rebound=name in site.rebound))
    return "".join(out), injections


def line_map(old: str, new: str):
    """A function from line numbers of ``old`` to the matching lines of ``new`` (an edited copy).

    Lines inside an edited block map into its replacement (the last line when
    the replacement is shorter), so the first line of a multi-line definition
    whose keyword was removed keeps pointing at the definition.
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

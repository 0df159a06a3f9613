"""Where a donated value comes from: is its memory the donor's alone?

Donating an argument deletes every buffer of it.  That is safe only when
no other live value shares those buffers.  This module classifies each
assignment that can reach a call's argument (flow-insensitively: every
write of the name in the scope counts, an over-approximation) into plain
:class:`Origin` records; :mod:`jaxmem.lint.checks` turns them into
confidence once every file's definitions are known (a call's result is
fresh when the callee is jitted, which may be decided in another file).

Kinds:

* ``fresh``: new buffers nothing else holds: known array constructors
  (:mod:`jaxmem.lint.array_api`), arithmetic, ``x += ...``, a literal
  container of fresh parts none of which appears twice;
* ``host``: host NumPy data: jit copies it, donation frees nothing;
* ``call``: the result of a project function or a possibly jitted
  callable, named by ``callee``/``qualified`` for the join to resolve;
* ``derived``: made by a library call from other values (``nnx.split(model)``,
  ``TrainState.create(params=p)``), which may share their buffers:
  ``shared_with`` lists those that are still read after the donating call
  or belong to the caller;
* ``unknown``: anything else (a loop variable, an attribute, a parameter,
  a ``with`` target): nothing proves the buffers are the donor's alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from jaxmem.lint.array_api import TREE_MAPS, is_fresh_constructor, is_host_producer, is_view_of_arguments
from jaxmem.lint.flow import WRITE, Flow, Point
from jaxmem.lint.refs import RefKey, ref_key
from jaxmem.lint.walk import children

FRESH = "fresh"
HOST = "host"
CALL = "call"
DERIVED = "derived"
UNKNOWN = "unknown"

_MAX_DEPTH = 4
# ``model.init(rng, x)`` (flax linen) makes new variables.  ``tx.init(params)``
# (optax, one argument) may keep ``params`` itself in the state (lookahead,
# schedule-free): it is a library call that may share buffers with its argument.
_FRESH_METHODS = frozenset({"init", "init_with_output"})
# ``model.apply`` passed along is a function, not the model's arrays.
_FUNCTION_ATTRIBUTES = frozenset({"apply", "__call__"})


@dataclass(frozen=True)
class Origin:
    """One way a value can have been made."""

    kind: str
    line: int
    text: str
    callee: RefKey | None = None
    qualified: str | None = None
    shared_with: tuple[str, ...] = ()  # why a derived value may share buffers (already phrased)


class Provenance:
    """Classifies the origins of values in one scope's flow."""

    def __init__(self, flow: Flow, ctx, owner_of, class_scope: str | None) -> None:
        self.flow = flow
        self.ctx = ctx
        self.owner_of = owner_of  # RefKey -> local | param | attribute | global
        self.class_scope = class_scope
        self._writes: dict[RefKey, list] | None = None
        # Memos: every call's argument asks again about the same writes (a
        # scope that rebinds a name n times would otherwise cost n**3).
        self._view_writes: dict[str, list] = {}
        self._alias_memo: dict[RefKey, list] = {}
        self._first_read: dict[tuple, object] = {}
        self._plans: dict[tuple, list] = {}
        self._places: dict[int, tuple[int, str]] = {}
        self._call_kinds: dict[int, tuple] = {}
        self._lines: dict[int, int] = {}

    def writes_of(self, key: RefKey) -> list:
        """Every WRITE event of ``key`` in the scope (not ``del``)."""
        if self._writes is None:
            self._writes = {}
            for _, event in self.flow.events():
                if event.kind == WRITE and event.key is not None and event.detail != "del":
                    self._writes.setdefault(event.key, []).append(event)
        return self._writes.get(key, [])

    def of_key(self, key: RefKey, after: Point, depth: int = 0) -> list[Origin]:
        """Origins of the value ``key`` (a local name) holds at a call."""
        writes = self.writes_of(key)
        if not writes or depth > _MAX_DEPTH:
            return [Origin(UNKNOWN, 0, f"`{key[0]}` is not assigned here")]
        out: list[Origin] = []
        for event in writes:
            out.extend(self.of_write(event, after, depth))
        return out

    def of_write(self, event, after: Point, depth: int) -> list[Origin]:
        origin = event.origin
        line = self._line(event.node)
        if origin is None:
            return [Origin(UNKNOWN, line, "a parameter, import or definition")]
        if event.origin_kind == "aug":
            return [Origin(FRESH, line, self.ctx.text(origin))]
        if event.origin_kind == "iter":
            return [Origin(UNKNOWN, line, f"a loop variable taken from `{self.ctx.text(origin)}`, which still holds it")]
        if event.origin_kind in ("with", "except"):
            return [Origin(UNKNOWN, line, f"bound by `{self.ctx.text(origin)}`")]
        return self.of_expr(origin, after, depth + 1)

    def of_expr(self, expr: cst.BaseExpression, after: Point, depth: int) -> list[Origin]:
        """Origins of the value ``expr`` evaluates to."""
        line, text = self._place(expr)
        if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
            return [Origin(FRESH, line, text)]
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
            return [Origin(FRESH, line, text)]
        if isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"):
            return [Origin(FRESH, line, text)]
        if isinstance(expr, cst.IfExp):
            return self.of_expr(expr.body, after, depth) + self.of_expr(expr.orelse, after, depth)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Dict)):
            return self._of_container(expr, after, depth)
        if isinstance(expr, cst.Call):
            return self._of_call(expr, after, depth)
        key = ref_key(expr)
        if key is not None and len(key) == 1 and self.owner_of(key) == "local" and depth <= _MAX_DEPTH:
            return self.of_key(key, after, depth + 1)
        if key is not None:
            owner = self.owner_of(key)
            who = {"param": "the caller's", "attribute": "an attribute's", "global": "a global's"}.get(owner, "")
            return [Origin(UNKNOWN, line, f"`{text}` is {who} value" if who else f"`{text}`")]
        return [Origin(UNKNOWN, line, text)]

    def _of_container(self, expr, after: Point, depth: int) -> list[Origin]:
        elements = [e.value for e in expr.elements if isinstance(e, (cst.Element, cst.DictElement))]
        seen: set[RefKey] = set()
        out: list[Origin] = []
        for element in elements:
            key = ref_key(element)
            if key is not None:
                if key in seen:
                    line = self.ctx.positions[element].start.line
                    return [Origin(UNKNOWN, line, f"`{self.ctx.text(expr)}` holds `{self.ctx.text(element)}` twice")]
                seen.add(key)
            out.extend(self.of_expr(element, after, depth))
        return out

    def _line(self, node: cst.CSTNode) -> int:
        if id(node) not in self._lines:
            self._lines[id(node)] = self.ctx.positions[node].start.line
        return self._lines[id(node)]

    def _place(self, expr: cst.CSTNode) -> tuple[int, str]:
        """The line and source text of ``expr`` (each write is asked about at every call)."""
        if id(expr) not in self._places:
            self._places[id(expr)] = (self.ctx.positions[expr].start.line, self.ctx.text(expr))
        return self._places[id(expr)]

    def _of_call(self, call: cst.Call, after: Point, depth: int) -> list[Origin]:
        kind, line, text, callee, qualified = self._call_kind(call)
        if kind in (CALL, DERIVED):
            shared = self._shared_sources(call, after)
            return [Origin(kind, line, text, callee=callee, qualified=qualified, shared_with=shared)]
        return [Origin(kind, line, text)]

    def _call_kind(self, call: cst.Call) -> tuple:
        """``(kind, line, text, callee, qualified)`` of a call's result, all but
        what it shares with values read after the donating call (computed once
        per call)."""
        if id(call) in self._call_kinds:
            return self._call_kinds[id(call)]
        ctx = self.ctx
        line, text = self._place(call)
        qualified = ctx.imports.resolve(call.func)
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        key = ref_key(call.func)
        maybe, project_name = ctx.might_be_jitted(key, self.class_scope) if key is not None else (False, None)
        if is_fresh_constructor(qualified):
            found = (FRESH, line, text, None, None)
        elif qualified in TREE_MAPS and call.args and is_fresh_constructor(ctx.imports.resolve(call.args[0].value)):
            found = (FRESH, line, text, None, None)
        elif is_host_producer(qualified):
            found = (HOST, line, text, None, None)
        elif method == "copy" and not call.args:
            found = (FRESH, line, text, None, None)  # x.copy(): a new buffer
        elif method in _FRESH_METHODS and len(call.args) > 1:
            found = (FRESH, line, text, None, None)  # model.init(rng, x): new variables
        elif key is not None and (maybe or (qualified is None and key[0] in ctx.module_functions)):
            found = (CALL, line, text, key, project_name)
        elif method is not None and qualified is None:
            # obj.method(...): may return the object's own arrays (``self.get_state()``,
            # ``state.replace(step=0)`` shares every leaf it does not replace).
            found = (UNKNOWN, line, f"`{text}` may return arrays its object still holds", None, None)
        else:
            found = (DERIVED, line, text, None, None)
        self._call_kinds[id(call)] = found
        return found

    def _shared_sources(self, call: cst.Call, after: Point, depth: int = 0) -> tuple[str, ...]:
        """The values a library call was given that may share buffers with
        its result and are still held after the donating call: read again,
        the caller's, held by an attribute or a global, or made (one more
        call back) from such a value (``gdef, gstate = nnx.split(self)``)."""
        reasons: list[str] = []
        for item in self._sharing_plan(call, depth):
            if type(item) is str:
                reasons.append(item)
            elif item[0] == "made":
                _, name, made_by = item
                reasons.extend(f"`{name}` (made from {why})" for why in self._shared_sources(made_by, after, depth + 1))
            else:
                _, named, key = item
                read_line = self._read_again_line(after, key)
                if read_line is not None:
                    reasons.append(f"{named}, read again at line {read_line}")
        return tuple(reasons)

    def _sharing_plan(self, call: cst.Call, depth: int) -> list:
        """What :meth:`_shared_sources` checks, in order, less what depends on
        the donating call (computed once per call: every write of a name
        rebound n times is asked about at each of its n calls).  Items: a
        reason; ``("made", name, call)``, the reasons of the view call that
        made ``name``; ``("read", named, key)``, a reason if ``key`` is read
        after the donating call."""
        memo = (id(call), depth)
        if memo in self._plans:
            return self._plans[memo]
        plan: list = []
        seen_args: set[RefKey] = set()
        for arg in call.args:
            key = ref_key(arg.value)
            if key is None:
                continue
            if key in seen_args:
                plan.append(f"`{self.ctx.text(arg.value)}`, passed twice")
            seen_args.add(key)
            owner = self.owner_of(key)
            if len(key) > 1 and owner in ("attribute", "global", "param"):
                plan.append(f"`{self.ctx.text(arg.value)}`, which something else still holds")
        for name in sorted(_names_in(call)):
            if depth < 2 and self.owner_of((name,)) == "local":
                plan.extend(("made", name, event.origin) for event in self._writes_from_views(name)
                            if event.origin is not call)
            for key, via in self._aliases((name,)):
                owner = self.owner_of(key)
                named = f"`{key[0]}`" + (f" (through `{via}`)" if via else "")
                if owner == "param":
                    plan.append(f"{named}, which the caller may still hold")
                elif owner == "local" and self.writes_of(key):
                    plan.append(("read", named, key))
        self._plans[memo] = plan
        return plan

    def _writes_from_views(self, name: str) -> list:
        """The writes of ``name`` from a call that returns views of its
        arguments (``gdef, gstate = nnx.split(self)``): other calls make new
        arrays, so only these are followed back."""
        if name not in self._view_writes:
            self._view_writes[name] = [
                event for event in self.writes_of((name,))
                if isinstance(event.origin, cst.Call)
                and is_view_of_arguments(self.ctx.imports.resolve(event.origin.func))
            ]
        return self._view_writes[name]

    def _read_again_line(self, after: Point, key: RefKey) -> int | None:
        """The line of the first read of ``key`` found after ``after``, if any."""
        memo = (after, key)
        if memo not in self._first_read:
            reads = self.flow.search(after, key).reads
            self._first_read[memo] = self.ctx.positions[reads[0].node].start.line if reads else None
        return self._first_read[memo]

    def _aliases(self, key: RefKey) -> list[tuple[RefKey, str]]:
        """``key`` and the names it was copied from (``params = initial_params``),
        each with the name it was reached through."""
        if key not in self._alias_memo:
            self._alias_memo[key] = self._find_aliases(key)
        return self._alias_memo[key]

    def _find_aliases(self, key: RefKey) -> list[tuple[RefKey, str]]:
        out = [(key, "")]
        for event in self.writes_of(key):
            if event.origin_kind == "value" and event.origin is not None:
                source = ref_key(event.origin)
                if source is not None and len(source) == 1 and source != key:
                    out.append((source, key[0]))
        return out


def _names_in(call: cst.Call) -> set[str]:
    """Names whose values a call receives as arguments (a method's receiver
    rarely shares buffers with its result: ``model.init``, ``tx.update``)."""
    names: set[str] = set()
    stack: list[cst.CSTNode] = [arg.value for arg in call.args]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            names.add(node.value)
        elif isinstance(node, (cst.Lambda, cst.FunctionDef)):
            continue
        elif isinstance(node, cst.Attribute) and node.attr.value in _FUNCTION_ATTRIBUTES:
            continue
        else:
            stack.extend(children(node))
    return names


def return_sharing(function: cst.FunctionDef) -> str | None:
    """Why ``function``'s result may share buffers with other values, or None.

    It may when a returned container holds one value twice (``{"mu": zeros,
    "nu": zeros}``: donating it fails with "Attempt to donate the same
    buffer twice") or when it returns one of its parameters as it is.
    """
    return _returned_twice(function) or _returned_parameter(function)


def _returns(function: cst.FunctionDef):
    from jaxmem.lint.walk import small_statements, suite_statements

    for small in small_statements(suite_statements(function.body), into_scopes=False):
        if isinstance(small, cst.Return) and small.value is not None:
            yield small.value


def _returned_twice(function: cst.FunctionDef) -> str | None:
    for value in _returns(function):
        seen: set[RefKey] = set()
        for key in _container_refs(value):
            if key in seen:
                return f"`{function.name.value}` returns `{'.'.join(key)}` in two places"
            seen.add(key)
    return None


def _returned_parameter(function: cst.FunctionDef) -> str | None:
    params = {p.name.value for p in [*function.params.posonly_params, *function.params.params,
                                      *function.params.kwonly_params]}
    for value in _returns(function):
        for key in _container_refs(value):
            if key[0] in params:
                return f"`{function.name.value}` returns its argument `{key[0]}` (or part of it)"
    return None


def _container_refs(expr) -> list[RefKey]:
    """Keys a returned value holds as-is, through literal containers."""
    key = ref_key(expr)
    if key is not None:
        return [key]
    if isinstance(expr, (cst.Tuple, cst.List, cst.Dict)):
        return [k for e in expr.elements if isinstance(e, (cst.Element, cst.DictElement))
                for k in _container_refs(e.value)]
    if isinstance(expr, cst.Call):
        # dict(mu=zeros, nu=zeros), State(mu=zeros, nu=zeros): arguments kept as-is
        return [k for a in expr.args for k in _container_refs(a.value)] if _is_constructor_like(expr) else []
    return []


def _is_constructor_like(call: cst.Call) -> bool:
    """``dict(...)``, ``State(...)``: a call that stores its arguments (capitalised or ``dict``)."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name == "dict" or name[:1].isupper()


def keeps_arguments(function: cst.FunctionDef) -> bool:
    """Whether ``function`` may keep a reference to an argument after it returns:
    it returns one, stores into an attribute, subscript or container, yields,
    declares ``global``/``nonlocal``, or defines a closure."""
    from jaxmem.lint.flow import CONTAINER_METHODS
    from jaxmem.lint.walk import statements, suite_statements

    if _returned_parameter(function) is not None:
        return True
    for stmt in statements(suite_statements(function.body), into_scopes=False):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return True
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Global, cst.Nonlocal, cst.Yield, cst.Lambda)):
            return True
        if isinstance(node, cst.AssignTarget) and not isinstance(node.target, (cst.Name, cst.Tuple, cst.List)):
            return True
        if isinstance(node, (cst.AugAssign, cst.AnnAssign)) and not isinstance(node.target, cst.Name):
            return True
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in CONTAINER_METHODS):
            return True
        stack.extend(children(node))
    return False

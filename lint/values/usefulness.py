"""Can an output of the jitted body take a parameter's buffers?

Donation only saves memory when some output has the donated leaves' shape
and dtype.  Shapes are not visible statically, but the body's data flow
is: a parameter that reaches a ``return`` through shape- and
dtype-preserving operations (arithmetic, ``tree_map`` over it,
``optax.apply_updates``, ``.replace(...)``, ``.apply_gradients(...)``,
attribute or key access into the pytree) most likely has an output to
land in.  One that reaches no output, or reaches it only through
shape-changing operations (:mod:`jaxmem.lint.values.array_api`), has none.

Per parameter the verdict is one of:

* ``preserved``: it reaches an output through preserving operations only;
* ``maybe``: it reaches an output through calls jaxmem does not know;
* ``none``: no output is built from it (or only through shape-changing
  operations): donating it most likely frees nothing and prints "Some donated
  buffers were not usable";
* ``unused``: the body never reads it (``def reset(state, keys): return
  env.reset(keys)``): jit drops it, donated or not; with ``keep_unused=True``
  (``unused-kept``, set by the definition) an output made otherwise may
  still have its shapes and take its buffers;
* ``scalar``: its default or annotation says it is a Python number, string
  or ``None``, or it is named as static structure (``graphdef``,
  ``treedef``): it has no device buffer;
* ``prng``: it is only used as a PRNG key (``jax.random.*``): a few bytes;
* ``mutated``: the body updates it in place (``model.count[...] += 1``,
  ``optimizer.update(model, grads)`` (both of them), ``nnx.update(model, ...)``), which
  only an object (an nnx Module) allows: ``nnx.jit`` writes it back.

A call of one of the file's own functions by name (``return sgd(params,
grads, lr)``) passes each argument on as that function's verdict for its
parameter says (:class:`CalledFunctions`), so a helper's update counts as
one written inline.

The analysis is flow-insensitive over the body (a name's value is the
union of all its assignments), which over-approximates what reaches an
output.
"""

from __future__ import annotations

import libcst as cst

from jaxmem.lint.callables.definition_scopes import bindings
from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.syntax.walk import (
    bound_names,
    call_argument,
    children,
    descendants,
    descendants_of_type,
    small_statements,
    suite_statements,
    target_names,
)
from jaxmem.lint.values.array_api import (
    INDEXED_UPDATE_METHODS,
    PRNG_CONSUMERS_PREFIX,
    RESULT_OF_ARGUMENT,
    SHAPE_CHANGING,
    SHAPE_CHANGING_METHODS,
    SHAPE_PRESERVING,
    SHAPE_PRESERVING_METHODS,
    TREE_MAPS,
    UPDATED_OPERAND,
    is_constructor_like,
)
from jaxmem.lint.values.flow import free_names
from jaxmem.lint.values.metadata import data_reads
from jaxmem.lint.values.pallas_aliases import PALLAS_CALLS, aliased_operands

PRESERVED = "preserved"
MAYBE = "maybe"
NONE = "none"
UNUSED = "unused"
UNUSED_KEPT = "unused-kept"
SCALAR = "scalar"
PRNG = "prng"
MUTATED = "mutated"

_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "None"})
# Parameters named as a structure (nnx.split's GraphDef, a jax treedef): no arrays.
STATIC_STRUCTURE_NAMES = frozenset({"graphdef", "graph_def", "treedef", "tree_def"})
_MUTATING_METHODS = frozenset({"update"})  # nnx.Optimizer.update(model, grads)
_MUTATING_FUNCTIONS = frozenset({"flax.nnx.update"})
# Verdicts of a called function's parameter under which its argument reaches no output.
_REACHES_NOTHING = frozenset({NONE, UNUSED, UNUSED_KEPT, PRNG})
# (params preserved, params that may flow, params whose dtype it has, params whose shape it has):
# the last two from a cast or reshape to a parameter's own metadata (see _Body.restored).
_Flow = tuple[frozenset, frozenset, frozenset, frozenset]
_EMPTY: _Flow = (frozenset(), frozenset(), frozenset(), frozenset())
# Casts and reshapes (jax 0.10.2): the (position, keyword) of the operand, and of the
# dtype or shape; as methods, the operand is the receiver and the target argument 0.
_CASTS = {"jax.numpy.astype": ((0, "x"), (1, "dtype")),
          "jax.lax.convert_element_type": ((0, "operand"), (1, "new_dtype"))}
_RESHAPES = {"jax.numpy.reshape": ((0, "a"), (1, "shape")), "jax.lax.reshape": ((0, "operand"), (1, "new_sizes"))}
_CAST_METHOD, _RESHAPE_METHOD = "astype", "reshape"


_COMPREHENSION_TYPES = frozenset({cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp})


def _union(*flows: _Flow) -> _Flow:
    return tuple(frozenset().union(*(f[i] for f in flows)) for i in range(4))


def _maybe(flow: _Flow) -> _Flow:
    return frozenset(), flow[0] | flow[1], frozenset(), frozenset()


class _Body:
    """The data flow of one function body, from parameters to names."""

    def __init__(self, imports: ImportTable, params: list[str], preserving: frozenset[str] = frozenset(),
                 function: cst.FunctionDef | cst.Lambda | None = None,
                 helpers: CalledFunctions | None = None) -> None:
        self.imports = imports
        self.preserving = preserving  # free names bound to shape-preserving functions (``opt_update``)
        self.helpers = helpers  # the file's functions the body may call by name
        self.function = function
        self._nested: dict[str, set[str]] | None = None  # see nested
        self._params: dict[str, cst.Param] = {}  # the function's parameters, with _bound
        self._bound: dict[str, list] | None = None  # what the body binds (see pallas_aliased)
        self._calls_pallas: bool | None = None  # whether the body calls pallas_call at all
        self.names: dict[str, _Flow] = {p: (frozenset({p}), frozenset(), frozenset(), frozenset()) for p in params}
        # Names bound once, to a parameter's ``.shape`` or ``.dtype`` (``x_dtype = x.dtype``):
        # name -> (attribute, the parameters); see restored.
        self.metadata: dict[str, tuple[str, frozenset]] = {}
        self._bound_once: frozenset[str] | None = None
        self._data_read: frozenset[str] | None = None  # see data_read
        self.prng_uses: dict[str, int] = {}
        self.other_uses: dict[str, int] = {}
        self.receivers: set[str] = set()
        self.mutated: set[str] = set()

    def expr(self, node) -> _Flow:
        """Which parameters' shapes the value of ``node`` may carry."""
        if node is None:
            return _EMPTY
        kind = type(node)  # exact types: libcst's node classes have no subclasses (and isinstance is slow)
        if kind is cst.Name:
            return self.names.get(node.value, _EMPTY)
        if kind is cst.Attribute:
            return self.expr(node.value)  # state.params: a subtree of the pytree
        if kind is cst.Subscript:
            keys = [e.slice for e in node.slice]
            by_key = all(isinstance(k, cst.Index) and isinstance(k.value, cst.SimpleString) for k in keys)
            base = self.expr(node.value)
            if self._is_scan_carry(node):
                return base  # jax.lax.scan(f, init, xs)[0]: the carry, init's structure
            return base if by_key else _maybe(base)  # x["mu"] keeps leaves; x[0] may slice an array
        if kind is cst.BinaryOperation:
            return _union(self.expr(node.left), self.expr(node.right))
        if kind is cst.UnaryOperation:
            return self.expr(node.expression)
        if kind is cst.Tuple or kind is cst.List or kind is cst.Dict:
            values = [e.value for e in node.elements if isinstance(e, (cst.Element, cst.DictElement, cst.StarredElement))]
            return _union(*(self.expr(v) for v in values)) if values else _EMPTY
        if kind is cst.IfExp:
            return _union(self.expr(node.body), self.expr(node.orelse))
        if kind is cst.Call:
            return self.call(node)
        if kind in _COMPREHENSION_TYPES:
            return _maybe(_union(*(self.expr(c) for c in _children_exprs(node))))
        return _EMPTY

    def call(self, call: cst.Call) -> _Flow:
        qualified = self.imports.resolve(call.func)
        args = [a.value for a in call.args]
        arg_flows = [self.expr(a) for a in args]
        self._note_uses(call, qualified, args)
        if qualified is not None and qualified.startswith(PRNG_CONSUMERS_PREFIX):
            return _EMPTY
        if (restored := self.restored(call, qualified)) is not None:
            return restored
        if (aliased := self.pallas_aliased(call)) is not None:
            # each aliased operand's buffer becomes an output of its shape and dtype
            return _union(*(self.expr(operand) for operand in aliased),
                          _maybe(_union(*arg_flows, *self.closures(args))))
        if qualified in SHAPE_CHANGING:
            return _EMPTY
        if qualified in TREE_MAPS:
            return _union(*arg_flows[1:]) if arg_flows else _EMPTY
        if qualified in RESULT_OF_ARGUMENT:
            kept = _kept_argument(call, qualified)
            return self.expr(kept) if kept is not None else _maybe(_union(*arg_flows))
        if qualified in SHAPE_PRESERVING:
            return _union(*arg_flows)
        if qualified in UPDATED_OPERAND and (operand := call_argument(call, *UPDATED_OPERAND[qualified])) is not None:
            return _union(self.expr(operand), _maybe(_union(*arg_flows)))  # the update lands in a slice
        if isinstance(call.func, cst.Attribute):
            method = call.func.attr.value
            if method in SHAPE_CHANGING_METHODS:
                return _EMPTY
            if method in INDEXED_UPDATE_METHODS and _is_indexed_update(call.func.value):
                # x.at[i].set(v): the result is x's; v is what goes in at i (a slice, or broadcast)
                return _union(self.expr(call.func.value.value.value), _maybe(_union(*arg_flows)))
            receiver = self.expr(call.func.value)
            if method in SHAPE_PRESERVING_METHODS:
                return _union(receiver, *arg_flows)
            return _maybe(_union(receiver, *arg_flows, *self.closures(args)))
        if is_constructor_like(call):
            return _union(*arg_flows)  # State(params=p, ...), dict(...): stores its arguments as they are
        if isinstance(call.func, cst.Name) and call.func.value in self.preserving and call.func.value not in self.names:
            return _union(*arg_flows)  # opt_update(grads, opt_state): new updates and state, same structures
        if (flow := self.helper_call(call)) is not None:
            return flow
        return _maybe(_union(self.expr(call.func), *arg_flows, *self.closures([call.func, *args])))

    def restored(self, call: cst.Call, qualified: str | None) -> _Flow | None:
        """A cast to a parameter's dtype or a reshape to its shape (``y.astype(x.dtype)``,
        ``y.reshape(x_shape)`` with ``x_shape = x.shape`` bound before ``x`` is rebound):
        the result has that metadata whatever came before, so a value cast in and out of
        float32 (``x.astype(jnp.float32)`` ... ``.astype(x_dtype).reshape(x_shape)``) has the
        parameter's shape and dtype again once both are restored, and is built from it when
        the parameter flows into it at all.  None for any other call."""
        if qualified is None and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value in (_CAST_METHOD, _RESHAPE_METHOD):
            cast = call.func.attr.value == _CAST_METHOD
            operand = call.func.value
            target = call_argument(call, 0, "dtype") if cast else \
                (call.args[0].value if len(call.args) == 1 and not call.args[0].star and call.args[0].keyword is None
                 else None)  # x.reshape(n, m) spells the shape out: not a parameter's
        elif qualified in _CASTS or qualified in _RESHAPES:
            cast = qualified in _CASTS
            operand_at, target_at = (_CASTS if cast else _RESHAPES)[qualified]
            operand, target = call_argument(call, *operand_at), call_argument(call, *target_at)
        else:
            return None
        if operand is None or target is None:
            return None
        params = self.metadata_params(target, "dtype" if cast else "shape")
        if not params:
            return None
        preserved, maybe, dtype_of, shape_of = self.expr(operand)
        # the other half of the metadata: kept by the cast (shape), or by the reshape (dtype);
        # and the parameter's data must be read (jit drops one read only for its metadata)
        other = (preserved | shape_of) if cast else (preserved | dtype_of)
        restored = frozenset(p for p in params if p in other and p in self.data_read)
        if cast:  # a cast keeps the shape; what does not come back whole may still flow
            return restored, (preserved | maybe) - restored, params, preserved | shape_of
        return restored, frozenset(), preserved | dtype_of, params  # a reshape keeps only the dtype

    @property
    def data_read(self) -> frozenset[str]:
        """The parameters the body reads other than for their metadata (``x.shape``, ``x.dtype``...)."""
        if self._data_read is None:
            function = self.function
            self._data_read = frozenset() if function is None else data_reads(function.body, {
                p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                       *function.params.kwonly_params)})
        return self._data_read

    @property
    def bound_once(self) -> frozenset[str]:
        """The names the body binds exactly once (asked only where one is bound to metadata)."""
        if self._bound_once is None:
            self._bound_once = _bound_once(self.function) if isinstance(self.function, cst.FunctionDef) \
                else frozenset()
        return self._bound_once

    def metadata_params(self, node, attribute: str) -> frozenset:
        """The parameters whose ``.shape`` or ``.dtype`` (``attribute``) ``node`` is: ``x.dtype``
        of a name holding the parameter itself, or a name bound once to such a value."""
        if isinstance(node, cst.Name):
            kind, params = self.metadata.get(node.value, (None, frozenset()))
            return params if kind == attribute else frozenset()
        if isinstance(node, cst.Attribute) and node.attr.value == attribute and isinstance(node.value, cst.Name):
            preserved, maybe, _, _ = self.names.get(node.value.value, _EMPTY)
            return preserved if len(preserved) == 1 and not maybe else frozenset()
        return frozenset()

    def helper_call(self, call: cst.Call) -> _Flow | None:
        """A call of one of the file's own functions by name (``cache = update_cache(new, cache)``):
        each argument flows as that function's verdict for its parameter says (``preserved``
        stays preserved, ``none``, ``unused`` and ``prng`` reach nothing, anything else
        may); None when the callee is not such a function or the arguments do not map."""
        if (self.helpers is None or not isinstance(call.func, cst.Name)
                or call.func.value in self.names or call.func.value in self.nested):
            return None
        found = self.helpers.lookup(call.func.value)
        if found is None:
            return None
        function, verdicts = found
        bound = bind_arguments(function, call)
        if bound is None:
            return None
        flows = []
        for param, arg in bound:
            verdict = verdicts.get(param, MAYBE)
            if verdict == PRESERVED:
                flows.append(self.expr(arg))
            elif verdict not in _REACHES_NOTHING:
                flows.append(_maybe(self.expr(arg)))
            if verdict not in _REACHES_NOTHING:
                flows.append(self.closure(arg))  # a function it is given may be called and returned
        return _union(*flows)

    def pallas_aliased(self, call: cst.Call) -> list | None:
        """The operands whose buffers a Pallas kernel call writes its outputs into
        (:mod:`jaxmem.lint.values.pallas_aliases`); None for any other call."""
        if not isinstance(call.func, (cst.Call, cst.Name)) or not isinstance(self.function, cst.FunctionDef):
            return None
        if self._calls_pallas is None:  # a kernel is made in the body, or there is none to find
            self._calls_pallas = any(self.imports.resolve(inner.func) in PALLAS_CALLS
                                     for inner in descendants_of_type(self.function.body, cst.Call))
        if not self._calls_pallas:
            return None
        if self._bound is None:
            params = self.function.params
            self._params = {p.name.value: p for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
            self._bound = bindings(suite_statements(self.function.body))
        return aliased_operands(call, self.imports, self._params, self._bound)

    def closures(self, nodes) -> list[_Flow]:
        """An unknown call may return what a function it calls or is given returns
        (``lax.cond(p, branch, other, operand=None)`` with branches closing over the state)."""
        return [self.closure(node) for node in nodes]

    @property
    def nested(self) -> dict[str, set[str]]:
        """The defs nested in the body -> the outer names they read (found on first use:
        only a name handed to an unknown call asks)."""
        if self._nested is None:
            self._nested = {}
            if isinstance(self.function, cst.FunctionDef):
                for inner in descendants_of_type(self.function.body, (cst.FunctionDef,)):
                    self._nested.setdefault(inner.name.value, set()).update(free_names(inner))
        return self._nested

    def closure(self, node) -> _Flow:
        """What a function ``node`` (a def nested in the body, by name, or a lambda) may
        return of the outer names it reads: maybe any of them."""
        if isinstance(node, cst.Lambda):
            read = {n.value for n in descendants_of_type(node.body, cst.Name)}
        elif isinstance(node, cst.Name) and node.value not in self.names and node.value in self.nested:
            read, pending, seen = set(), [node.value], set()
            while pending:  # a nested def calling another one reads what that one reads
                name = pending.pop()
                if name in seen:
                    continue
                seen.add(name)
                for free in self.nested[name]:
                    read.add(free)
                    if free in self.nested and free not in self.names:
                        pending.append(free)
        else:
            return _EMPTY
        return _maybe(_union(*(self.names[name] for name in read if name in self.names)))

    def _is_scan_carry(self, node: cst.Subscript) -> bool:
        index = node.slice[0].slice if len(node.slice) == 1 else None
        return (isinstance(node.value, cst.Call) and self.imports.resolve(node.value.func) == "jax.lax.scan"
                and isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)
                and index.value.value == "0")

    def note_mutation(self, target) -> None:
        """``model.count[...] = ...``: an in-place update of what ``model`` names."""
        base = target
        while isinstance(base, (cst.Attribute, cst.Subscript)):
            base = base.value
        if base is not target and isinstance(base, cst.Name):
            self.mutated.add(base.value)

    def _note_uses(self, call: cst.Call, qualified: str | None, args) -> None:
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _MUTATING_METHODS:
            self.note_mutation(cst.Attribute(call.func.value, call.func.attr))
        if qualified in _MUTATING_FUNCTIONS and args and isinstance(args[0], cst.Name):
            self.mutated.add(args[0].value)
        is_prng = qualified is not None and qualified.startswith(PRNG_CONSUMERS_PREFIX)
        for arg in args:
            if isinstance(arg, cst.Name) and arg.value in self.names:
                bucket = self.prng_uses if is_prng else self.other_uses
                bucket[arg.value] = bucket.get(arg.value, 0) + 1
        if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
            self.receivers.add(call.func.value.value)


class CalledFunctions:
    """The functions a body can call by a plain name, one level of scopes: the
    ``def``s a module or function body binds once and nothing else (not rebound, not
    imported over), undecorated or only jitted (inside a trace a jitted function runs
    inlined), each one's verdicts computed on first use.  ``outer`` holds the enclosing
    level; a name this level binds otherwise hides it there."""

    def __init__(self, imports: ImportTable, functions: dict[str, cst.FunctionDef],
                 hidden: frozenset[str], outer: CalledFunctions | None = None) -> None:
        self.imports = imports
        self.functions = functions
        self.hidden = hidden
        self.outer = outer
        self._verdicts: dict[str, dict[str, str] | None] = {}

    @classmethod
    def of_scope(cls, node: cst.Module | cst.FunctionDef, imports: ImportTable,
                 outer: CalledFunctions | None = None) -> CalledFunctions:
        """The functions a module, or a function's body, defines once (a function's
        parameters hide the enclosing levels' functions of their names)."""
        body = node.body if isinstance(node, cst.Module) else suite_statements(node.body)
        bound = bindings(body)
        if isinstance(node, cst.FunctionDef):
            for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params,
                          node.params.star_arg, node.params.star_kwarg):
                if isinstance(param, cst.Param):
                    bound.setdefault(param.name.value, []).append(None)
        functions = {
            stmt.name.value: stmt for stmt in body
            if isinstance(stmt, cst.FunctionDef) and len(bound.get(stmt.name.value, ())) == 1
            and all(_is_plain_jit(d.decorator, imports) for d in stmt.decorators)
        }
        return cls(imports, functions, frozenset(bound) - set(functions), outer)

    def lookup(self, name: str) -> tuple[cst.FunctionDef, dict[str, str]] | None:
        """``(def, its verdicts)`` of the function ``name`` calls here; None when it is not
        one, or while its verdicts are being found (a recursive call)."""
        if name in self.functions:
            if name not in self._verdicts:
                self._verdicts[name] = None
                self._verdicts[name] = output_reach(self.functions[name], self.imports, helpers=self)
            verdicts = self._verdicts[name]
            return None if verdicts is None else (self.functions[name], verdicts)
        if name in self.hidden or self.outer is None:
            return None
        return self.outer.lookup(name)


def _is_plain_jit(decorator, imports: ImportTable) -> bool:
    """``@jax.jit``, ``@jax.jit(...)`` or ``@partial(jax.jit, ...)``."""
    if isinstance(decorator, cst.Call):
        if imports.resolve(decorator.func) == "functools.partial":
            return bool(decorator.args) and imports.resolve(decorator.args[0].value) == "jax.jit"
        decorator = decorator.func
    return imports.resolve(decorator) == "jax.jit"


def bind_arguments(function: cst.FunctionDef, call: cst.Call) -> list[tuple[str, cst.BaseExpression]] | None:
    """Each argument of ``call`` with the parameter of ``function`` it binds; None when
    the call unpacks ``*args``/``**kwargs`` or an argument lands in the function's own."""
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    by_keyword = {p.name.value for p in (*params.params, *params.kwonly_params)}
    bound = []
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if len(bound) >= len(positional) or any(a.keyword is not None for a in call.args[:len(bound)]):
                return None
            bound.append((positional[len(bound)], arg.value))
        elif arg.keyword.value in by_keyword:
            bound.append((arg.keyword.value, arg.value))
        else:
            return None
    return bound


def _kept_argument(call: cst.Call, qualified: str):
    """The argument whose structure the result of ``call`` has, positional or by keyword:
    a ``jax.lax`` loop's initial carry (``scan(f, init, xs, length=n)``,
    ``fori_loop(0, n, body, init_val=x)``), mjx's ``d`` (``mjx.step(m, d)``); or None."""
    return call_argument(call, *RESULT_OF_ARGUMENT[qualified])


def _children_exprs(node):
    for child in children(node):
        if isinstance(child, cst.BaseExpression):
            yield child
        else:
            yield from _children_exprs(child)


def _is_scalar_param(param: cst.Param) -> bool:
    annotation = param.annotation.annotation if param.annotation is not None else None
    if isinstance(annotation, cst.Name) and annotation.value in _SCALAR_ANNOTATIONS:
        return True
    if param.name.value in STATIC_STRUCTURE_NAMES:
        return True  # nnx.split's GraphDef, a jax treedef: structure, no arrays
    default = param.default
    if isinstance(default, cst.UnaryOperation):
        default = default.expression
    return isinstance(default, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(default, cst.Name) and default.value in ("None", "True", "False"))


def _is_indexed_update(node) -> bool:
    """Whether ``node`` is ``x.at[...]``, the receiver of jax's indexed updates."""
    return isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "at"


def interpret(function: cst.FunctionDef | cst.Lambda, imports: ImportTable,
              preserving: frozenset[str] = frozenset(),
              helpers: CalledFunctions | None = None) -> tuple[_Body, _Flow, list]:
    """Run the data flow over ``function``'s body: ``(the body's names after it, the
    returned flow, the returned expressions)``.  ``preserving``: free names bound to
    functions whose result has their arguments' structure (an optax transform's update);
    ``helpers``: the file's functions the body may call by name."""
    params = [*function.params.posonly_params, *function.params.params, *function.params.kwonly_params]
    body = _Body(imports, [p.name.value for p in params], preserving, function, helpers)
    if isinstance(function, cst.Lambda):
        return body, body.expr(function.body), [function.body]
    statements = list(small_statements(suite_statements(function.body), into_scopes=False))
    # A rebinding at the body's top level replaces a name's value; one inside an
    # ``if``, loop or ``try`` may not run, so the earlier value may still be there.
    top = {id(small) for stmt in suite_statements(function.body)
           if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body}
    returned = _EMPTY
    for _ in range(2):  # a second pass lets loops' later assignments reach earlier uses
        returned = _EMPTY
        for small in statements:
            returned = _union(returned, _statement(body, small, replaces=id(small) in top))
    return body, returned, [small.value for small in statements if isinstance(small, cst.Return)]


def _bound_once(function: cst.FunctionDef) -> frozenset[str]:
    """The names ``function``'s body binds exactly once (nested scopes included, so a
    closure's or comprehension's own binding of the name disqualifies it too)."""
    counts: dict[str, int] = {}
    for node in descendants(function.body):
        for name in bound_names(node):
            counts[name] = counts.get(name, 0) + 1
    return frozenset(name for name, count in counts.items() if count == 1)


def output_reach(function: cst.FunctionDef | cst.Lambda, imports: ImportTable,
                 preserving: frozenset[str] = frozenset(),
                 helpers: CalledFunctions | None = None) -> dict[str, str]:
    """Each parameter of ``function`` -> ``preserved | maybe | none | scalar | prng``
    (``preserving`` and ``helpers`` as for :func:`interpret`)."""
    params = [*function.params.posonly_params, *function.params.params, *function.params.kwonly_params]
    body, returned, _ = interpret(function, imports, preserving, helpers)
    body_node = function.body
    read = {node.value for node in [body_node, *descendants_of_type(body_node, cst.Name)] if isinstance(node, cst.Name)}
    verdicts: dict[str, str] = {}
    for param in params:
        name = param.name.value
        if _is_scalar_param(param):
            verdicts[name] = SCALAR
        elif body.prng_uses.get(name) and not body.other_uses.get(name):
            verdicts[name] = PRNG
        elif name in body.mutated and name not in returned[0]:
            verdicts[name] = MUTATED
        elif name in returned[0]:
            verdicts[name] = PRESERVED
        elif name in returned[1]:
            verdicts[name] = MAYBE
        elif name not in read:
            verdicts[name] = UNUSED
        else:
            verdicts[name] = NONE
    return verdicts


def _statement(body: _Body, small, replaces: bool = True) -> _Flow:
    """Update ``body``'s names for one small statement; the flow it returns, if any.
    ``replaces``: whether an assignment here certainly replaces the earlier value."""
    if isinstance(small, cst.Return):
        return body.expr(small.value)
    if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        value = body.expr(small.value)
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        # ``x_dtype = x.dtype`` at the top level, read in source order on the first pass (the
        # second one would see ``x`` as the body leaves it)
        if replaces and isinstance(small, cst.Assign) and len(targets) == 1 and isinstance(targets[0], cst.Name) \
                and targets[0].value not in body.metadata \
                and isinstance(small.value, cst.Attribute) and small.value.attr.value in ("shape", "dtype") \
                and targets[0].value in body.bound_once:
            attribute = small.value.attr.value
            body.metadata[targets[0].value] = (attribute, body.metadata_params(small.value, attribute))
        for target in targets:
            body.note_mutation(target)
            for name in target_names(target):
                # A rebinding replaces the name's value (in source order; loops get a
                # second pass): ``state = nnx.call(state).inc()`` is no longer the parameter.
                keeps = isinstance(small, cst.AugAssign) or not replaces
                previous = body.names.get(name, _EMPTY) if keeps else _EMPTY
                body.names[name] = _union(previous, value)
        return _EMPTY
    if isinstance(small, cst.Expr):
        body.expr(small.value)  # records uses (PRNG keys, receivers)
        if (model := _updated_model(small.value)) is not None:
            body.mutated.add(model)
    return _EMPTY


def _updated_model(expr) -> str | None:
    """``optimizer.update(model, grads)`` as a statement: nnx's Optimizer (flax >= 0.11,
    checked on 0.12.8) writes the new parameters into ``model``, so ``model`` is updated
    in place too.  Only a discarded result counts: optax's ``tx.update(grads, state)``
    returns its updates and changes nothing."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in _MUTATING_METHODS and isinstance(expr.func.value, cst.Name)):
        return None
    positional = [arg.value for arg in expr.args if arg.keyword is None and not arg.star]
    if len(positional) >= 2 and isinstance(positional[0], cst.Name):
        return positional[0].value
    return None

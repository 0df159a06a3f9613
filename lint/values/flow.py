"""Control-flow graph of one scope, with ordered read/write events per node.

Each statement (and each compound statement's header) becomes a node that
holds its events in evaluation order: ``READ key``, ``WRITE key`` (a
rebinding, which kills the key and everything under it), ``ALIAS key``
(a container that now holds other values, e.g. ``lst.append(x)``),
``ESCAPE key`` (a value handed to code that may keep it: an unknown call,
a closure, ``yield``) and ``CALL`` (a call site, a point in the graph).

Queries walk the graph forward from a point, per reference key, the way
pyright's binder evaluates flow nodes per reference key.  The graph
over-approximates paths (exceptions may leave any statement of a ``try``
body, ``finally`` may continue anywhere), which can only add reads: a
value is called dead only when no path reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

from jaxmem.lint.callables.jit_api import BENIGN_ATTRIBUTES, BENIGN_FUNCTIONS
from jaxmem.lint.syntax.keeping_methods import CONTAINER_METHODS
from jaxmem.lint.syntax.walk import children, descendants_of_type, suite_statements, target_names, target_stores
from jaxmem.lint.values.array_api import TRACING_TRANSFORMS
from jaxmem.lint.values.metadata import is_metadata_key
from jaxmem.lint.values.refs import RefKey, ident, kills, overlaps, ref_key

READ = "read"
WRITE = "write"
ALIAS = "alias"
ESCAPE = "escape"
CALL = "call"


@dataclass
class Event:
    kind: str
    key: RefKey | None
    node: cst.CSTNode
    sources: tuple[RefKey, ...] = ()
    detail: str = ""
    # For WRITE: the expression whose value the key now holds (the whole
    # right-hand side when a tuple target unpacks it), and how it got it.
    origin: cst.CSTNode | None = None
    origin_kind: str = ""  # value | unpack | iter | with | except | aug | "" (def, import, match)
    # For WRITE: keys whose arrays the value may be a part of through a method jaxmem
    # does not know (``p = state.get_params()``).  One way only: donating ``state``
    # makes a later read of ``p`` a read of its buffers; whether ``p`` is its own
    # to donate is the provenance's question (a method's result its object holds).
    parts: tuple[RefKey, ...] = ()


@dataclass
class FlowNode:
    events: list[Event] = field(default_factory=list)
    succ: list[int] = field(default_factory=list)
    exc: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Point:
    """A position between two events of a node."""

    node: int
    index: int


@dataclass
class SearchResult:
    reads: list[Event] = field(default_factory=list)
    kills: list[Event] = field(default_factory=list)
    reached_exit: bool = False
    reached: list[Point] = field(default_factory=list)


# Calls whose result may be their argument's very arrays, by the end of the
# callee's dotted name (no imports needed; over-matching only adds aliases),
# with the position of the first argument that may be returned (keyword
# arguments may be returned too).  Checked on jax 0.10.2, where a call that
# changes nothing hands back the very array it was given:
# ``jax.tree.map(lambda v: v, x)``, ``jax.tree.leaves(x)``, ``jax.device_put(x)``
# on its device, ``jnp.asarray(x)``, ``jax.block_until_ready(x)``; a reshape,
# transpose, ``astype`` or dtype cast that keeps the shape and dtype
# (``jnp.reshape(x, x.shape)``, ``jnp.float32(x)`` of a float32 array),
# ``jnp.concatenate([x])``, ``lax.stop_gradient(x)``; the control-flow
# primitives, whose body may pass the operand through (``lax.scan(lambda c, x:
# (c, x), s, xs)[0] is s``, ``lax.fori_loop(0, 0, f, s) is s``).  Builtins and
# the copy module return the elements they are given (``sorted(d.values())[0]``,
# ``copy.copy(d)``, a dict's shallow copy).
_VIEW_CALLS = {
    "tree.map": 1, "tree_map": 1, "tree.leaves": 0, "tree_leaves": 0, "tree.flatten": 0, "tree_flatten": 0,
    "device_put": 0, "asarray": 0, "block_until_ready": 0,
    "reshape": 0, "transpose": 0, "permute_dims": 0, "matrix_transpose": 0, "astype": 0, "squeeze": 0,
    "broadcast_to": 0, "concatenate": 0, "concat": 0, "stop_gradient": 0, "convert_element_type": 0,
    "trim_zeros": 0, "freeze": 0, "unfreeze": 0, "copy_to_host_async": 0,
    "make_array_from_single_device_arrays": 2,
    **{dtype: 0 for dtype in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
                              "uint8", "uint16", "uint32", "uint64", "bool_", "complex64", "complex128")},
    "cond": 3, "switch": 2, "fori_loop": 3, "while_loop": 2, "scan": 1, "associative_scan": 1, "map": 1,
    "functools.reduce": 1, "copy.copy": 0,
    # iterators over what they are given, as they are (Python 3.11): ``itertools.chain([w])``
    **{"itertools." + name: 0 for name in ("chain", "chain.from_iterable", "islice", "cycle", "repeat", "tee",
                                           "zip_longest", "product", "permutations", "combinations",
                                           "combinations_with_replacement", "pairwise", "batched", "groupby",
                                           "compress", "accumulate")},
    **{"itertools." + name: 1 for name in ("dropwhile", "takewhile", "filterfalse")},
    # the pytree utilities that hand back leaves as they are: a rebuilt tree
    # (``jax.tree.unflatten(treedef, leaves)``), the leaves with their paths, a reduction
    # that may return a leaf (``jax.tree.reduce(max, x)`` of one leaf), a transpose, a
    # broadcast; optax's ``tree_get`` (a leaf), ``tree_set`` and ``tree_cast`` (to the
    # dtype a leaf has, or none: the leaf itself).  Checked on jax 0.10.2, optax 0.2.8.
    "tree.unflatten": 1, "tree_unflatten": 1, "tree.flatten_with_path": 0, "tree_flatten_with_path": 0,
    "tree.leaves_with_path": 0, "tree_leaves_with_path": 0, "tree.reduce": 1, "tree_reduce": 1,
    "tree.transpose": 2, "tree_transpose": 2, "tree.broadcast": 0, "tree_broadcast": 0,
    "tree.map_with_path": 1, "tree_map_with_path": 1,
    "tree.get": 0, "tree_get": 0, "tree.set": 0, "tree_set": 0, "tree.cast": 0, "tree_cast": 0,
}
_VIEW_CALLS_BY_LAST: dict[str, list[tuple[str, int]]] = {}  # by the last name: one dict lookup per call
for _suffix, _position in _VIEW_CALLS.items():
    _VIEW_CALLS_BY_LAST.setdefault(_suffix.rpartition(".")[2], []).append((_suffix, _position))
# Builtins (called by their bare name) whose result holds the values they are given.
_VIEW_BUILTINS = frozenset({"list", "tuple", "dict", "set", "frozenset", "sorted", "reversed", "iter", "next",
                            "min", "max", "zip", "enumerate", "getattr", "vars", "map", "filter"})
# Transforms applied at once, ``jax.vmap(f)(x)``: ``f`` sees tracers and keeps
# nothing, but an identity-like ``f`` returns ``x`` itself (jax 0.10.2).  Matched
# by last name, without imports: over-matching only adds aliases.
_APPLIED_TRANSFORMS = frozenset(name.rsplit(".", 1)[-1] for name in TRACING_TRANSFORMS)


def _dotted(func) -> str:
    """``jax.tree.map`` for that callee; unlike ``imports``' resolution it keeps the
    trailing names of a call-based receiver (``get_jax().device_put`` -> ``device_put``),
    so a view call is never missed."""
    parts = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if isinstance(func, cst.Name):
        parts.append(func.value)
    return ".".join(reversed(parts))


def applied_transform(call: cst.Call) -> bool:
    """``jax.vmap(f)(x)``: a tracing transform applied at once (keeps no argument)."""
    return isinstance(call.func, cst.Call) and _dotted(call.func.func).rsplit(".", 1)[-1] in _APPLIED_TRANSFORMS


def _view_arguments(call: cst.Call, imported: frozenset[str] = frozenset()) -> list:
    """The arguments whose arrays ``call``'s result may be (``x`` in ``jax.tree.leaves(x)``)."""
    if _method_receiver(call, imported) is not None:
        return _method_view_arguments(call)
    return _function_view_arguments(call)


def _method_view_arguments(call: cst.Call) -> list:
    """For a method of a value (``x.reshape(n, m)``: the receiver is the operand, see
    _method_receiver), the arguments its result may hold: ``d.get(k, default)``."""
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    keywords = [arg.value for arg in call.args if arg.keyword is not None]
    method = call.func.attr.value
    if method in ("get", "pop"):
        return positional[1:] + keywords
    if method in CONTAINER_METHODS:
        # ``nbrs = nbrs.update(state.position)``: what it returns may hold what it stored
        return positional + keywords
    return keywords if method in ("replace", "_replace") else []


def returns_an_argument(call: cst.Call) -> bool:
    """Whether a function call's result may be one of its arguments' very arrays
    (``jnp.reshape(x, x.shape)``, ``jnp.float32(x)``, ``lax.stop_gradient(x)``:
    see ``_VIEW_CALLS``)."""
    return bool(_function_view_arguments(call))


def _function_view_arguments(call: cst.Call) -> list:
    """For a function (not a method of a value), the arguments its result may be."""
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    if applied_transform(call):
        return positional
    dotted = _dotted(call.func)
    keywords = [arg.value for arg in call.args if arg.keyword is not None]
    starred = [arg.value for arg in call.args if arg.star]
    if dotted.endswith("array") and any(arg.keyword is not None and arg.keyword.value == "copy"
                                        and not (isinstance(arg.value, cst.Name) and arg.value.value == "True")
                                        for arg in call.args):
        return positional[:1]  # jnp.array(x, copy=None): x itself when it is already an array
    if isinstance(call.func, cst.Name) and dotted in _VIEW_BUILTINS:
        if dotted in ("map", "filter"):
            positional = positional[1:]  # map(f, xs): f's results, or xs's elements
        return positional + keywords + starred
    for suffix, position in _VIEW_CALLS_BY_LAST.get(dotted.rpartition(".")[2], ()):
        if dotted == suffix or dotted.endswith("." + suffix):
            if position == 1 and suffix in ("tree.map", "tree_map", "map") and positional \
                    and _makes_new_arrays(positional[0]):
                return []  # jax.tree.map(jnp.copy, x), jax.tree.map(lambda v: v * 2, x): new arrays
            return positional[position:] + keywords + starred
    return []


# Methods whose result is a new value, never the receiver or a part of it:
# array reductions and arithmetic (jax 0.10.2 computes them), values that
# hold no device array, and what models and transforms make (``model.init(k, x)``,
# ``model.apply(v, x)``: the provenance decides those).
_NEW_VALUE_METHODS = frozenset({
    "sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "argsort", "sort", "cumsum",
    "cumprod", "all", "any", "dot", "round", "clip", "conj", "conjugate", "flatten", "ravel", "nonzero",
    "searchsorted", "take", "repeat", "trace", "item", "tolist", "tobytes", "keys", "count", "index",
    "format", "join", "split", "startswith", "endswith", "encode", "decode", "strip", "lower", "upper",
    "is_deleted", "delete", "is_fully_addressable", "is_fully_replicated", "apply", "init", "init_with_output",
})
# Methods whose result is their receiver or a part of it (checked on jax 0.10.2
# and Python's containers): ``d.get("a")``, ``d.values()``, ``d.copy()`` of a
# dict, ``x.reshape(x.shape)``, ``x.astype(x.dtype)``, ``x.at[:].get()``,
# ``x.block_until_ready()``, flax's ``FrozenDict.unfreeze()``, ``state.replace(...)``.
_VIEW_METHODS = frozenset({
    "get", "values", "items", "copy", "pop", "popitem", "setdefault", "reshape", "astype", "transpose",
    "squeeze", "view", "swapaxes", "block_until_ready", "unfreeze", "freeze", "to_dict", "_asdict", "replace",
    "_replace", "flat_state", "to_pure_dict", "filter", "addressable_data", "copy_to_host_async", "__getitem__",
})
# ``x.at[i].set(v)``: the indexed-update methods after ``.at[...]``; ``get`` reads
# (``x.at[:].get()`` is ``x`` itself).
_INDEXED_UPDATES = frozenset({"set", "add", "multiply", "mul", "divide", "power", "min", "max", "apply"})


def _method_receiver(call: cst.Call, imported: frozenset[str]):
    """``(receiver, known)`` for a method call whose result may be its receiver or a
    part of it: ``known`` for the view methods (``d.get("a")``), not for a method
    jaxmem does not know (``state.get_params()``); None for a function of a module
    or class (``jnp.zeros(3)``), a method known to make a new value, or no method."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    receiver = func.value
    if isinstance(receiver, cst.Subscript) and isinstance(receiver.value, cst.Attribute) \
            and receiver.value.attr.value == "at":
        return None if method in _INDEXED_UPDATES else (receiver.value.value, True)  # x.at[i].set(v) is new
    if method in _NEW_VALUE_METHODS:
        return None
    root = receiver
    called = False  # np.random.default_rng(0).normal(...): a method of the value a call made
    while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
        called = called or isinstance(root, cst.Call)
        root = root.func if isinstance(root, cst.Call) else root.value
    if isinstance(root, cst.Name) and root.value in imported and not called:
        return None  # jnp.zeros(3), optax.adam(lr), TrainState.create(...): not a method of a value
    return receiver, method in _VIEW_METHODS


def part_refs(expr, imported: frozenset[str] = frozenset()) -> tuple[RefKey, ...]:
    """Keys whose arrays ``expr``'s value may be a part of through methods jaxmem does
    not know (``state.get_params()``, ``state.get_params()["w"]``); see ``Event.parts``."""
    if isinstance(expr, cst.Call):
        found = _method_receiver(expr, imported)
        if found is None:
            return ()
        receiver, known = found
        inner = part_refs(receiver, imported)
        return inner if known else direct_refs(receiver, imported) + inner
    if isinstance(expr, (cst.Attribute, cst.Subscript)) and ref_key(expr) is None:
        return part_refs(expr.value, imported)
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return tuple(k for e in expr.elements for k in part_refs(e.value, imported))
    if isinstance(expr, cst.Dict):
        return tuple(k for e in expr.elements if isinstance(e, cst.DictElement) for k in part_refs(e.value, imported))
    if isinstance(expr, cst.IfExp):
        return part_refs(expr.body, imported) + part_refs(expr.orelse, imported)
    return ()


def _comprehension_refs(expr, imported: frozenset[str] = frozenset()) -> tuple[RefKey, ...]:
    """What a comprehension's elements may be: the values it iterates over, when
    an element is (part of) a loop variable (``[v for v in d.values()]``); its
    other direct refs as they are.  Arithmetic elements are new arrays."""
    bound: set[str] = set()
    iterables = []
    comp = expr.for_in
    while comp is not None:
        bound.update(map(ident, target_names(comp.target)))
        iterables.append(comp.iter)
        comp = comp.inner_for_in
    elements = (expr.value,) if isinstance(expr, cst.DictComp) else (expr.elt,)  # keys: hashable, not arrays
    out: list[RefKey] = []
    through_loop = False
    for element in elements:
        for key in direct_refs(element, imported):
            if key[0] in bound:
                through_loop = True
            else:
                out.append(key)
    if through_loop:
        out.extend(k for iterable in iterables for k in refs_within(iterable, imported) if k[0] not in bound)
    return tuple(out)


def _holds_operands(expr: cst.BinaryOperation) -> bool:
    """``a | b`` (a dict merge), ``t + (x,)`` and ``[x] * 3`` hold their operands'
    values; arithmetic on arrays makes new ones."""
    if isinstance(expr.operator, cst.BitOr):
        return True
    containers = (cst.Tuple, cst.List, cst.ListComp, cst.Dict, cst.DictComp)
    return isinstance(expr.operator, (cst.Add, cst.Multiply)) and (
        isinstance(expr.left, containers) or isinstance(expr.right, containers))


_NUMBERS = (cst.Integer, cst.Float, cst.Imaginary)


def joined_operands(expr: cst.BinaryOperation) -> list:
    """The operands of a chain of joins (``a + b + [c]``), left to right, found without
    recursion (a long concatenation nests one node per ``+``); strings and numbers,
    which hold no array, are left out."""
    out, stack = [], [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation) and may_join_containers(node):
            stack += (node.right, node.left)
        elif not isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, *_NUMBERS)):
            out.append(node)
    return out


def may_join_containers(expr: cst.BinaryOperation) -> bool:
    """Whether ``expr`` may build a list, tuple or dict of its operands' elements
    (``ps + []``, ``[x] * 2``, ``d | e``) rather than compute new arrays (``x * 0.5``,
    ``x + 1``): ``+``, ``*`` or ``|`` without a number that rules sequences out.  The
    ownership side of :func:`_holds_operands`: that one says an operand is *surely* held
    (an alias, read after a donation, is a crash), this one that it *may* be (a doubt)."""
    operator = expr.operator
    if not isinstance(operator, (cst.Add, cst.Multiply, cst.BitOr)):
        return False
    sides = (expr.left, expr.right)
    if any(isinstance(side, (cst.Float, cst.Imaginary)) for side in sides):
        return False  # a float never repeats or joins a container
    return not (isinstance(operator, cst.Add) and any(isinstance(side, _NUMBERS) for side in sides))


# Functions whose result is a new array whatever they are given (by name):
# copies, and reductions (``jax.tree.map(jnp.mean, x)``, ``lambda v: v.sum()``).
_FRESH_MAPPERS = frozenset({"copy", "deepcopy", "zeros_like", "ones_like", "full_like", "empty_like",
                            "mean", "sum", "max", "min", "std", "var", "prod", "norm", "any", "all"})


def _makes_new_arrays(function) -> bool:
    """Whether ``function``, mapped over leaves, returns new arrays: a copying or
    reducing function, or a lambda whose body is arithmetic, a comparison or such
    a call (anything else may hand back what it was given: ``lambda v: v.value``)."""
    if isinstance(function, (cst.Name, cst.Attribute)):
        return _dotted(function).rsplit(".", 1)[-1] in _FRESH_MAPPERS
    if not isinstance(function, cst.Lambda):
        return False
    body = function.body
    if isinstance(body, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
        return True
    return isinstance(body, cst.Call) and _dotted(body.func).rsplit(".", 1)[-1] in _FRESH_MAPPERS


_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp})


def view_operands(call: cst.Call, imported: frozenset[str] = frozenset()) -> list[cst.BaseExpression]:
    """What ``call``'s result may be as it is, or hold as it is: the arguments of a
    function that may return them (``jnp.asarray(x)``), the receiver of a view method
    (``x.reshape(n)``) and what such a method stores (``d.get(k, default)``)."""
    found = _method_receiver(call, imported)
    if found is None:
        return _function_view_arguments(call)
    receiver, known = found
    return ([receiver] if known else []) + _method_view_arguments(call)


def direct_refs(expr: cst.BaseExpression | None, imported: frozenset[str] = frozenset()) -> tuple[RefKey, ...]:
    """Keys whose values ``expr`` evaluates to as-is (itself, inside a literal
    container, or returned by a call that may hand back its argument's arrays:
    ``jax.tree.leaves(x)[0]``)."""
    if expr is None:
        return ()
    key = ref_key(expr)
    if key is not None:
        return () if len(key) > 1 and (key[-1] in BENIGN_ATTRIBUTES or is_metadata_key(key)) else (key,)
    kind = type(expr)  # not isinstance: libcst's node classes have no subclasses, and this is hot
    if kind is cst.Call:
        return tuple(k for value in view_operands(expr, imported) for k in direct_refs(value, imported))
    if kind is cst.Attribute:
        if expr.attr.value in BENIGN_ATTRIBUTES:
            return ()
        return direct_refs(expr.value, imported)  # f(x).params: a part of what the call returns
    if kind is cst.Subscript:
        # x[:], x[...], x[i:j] may be x itself (jax 0.10.2 returns the very array for a
        # slice that takes everything); d[k], lst[i], [x][0] are one of the elements
        return direct_refs(expr.value, imported)
    if kind in _COMPREHENSIONS:
        return _comprehension_refs(expr, imported)
    if kind is cst.BinaryOperation and _holds_operands(expr):
        return direct_refs(expr.left, imported) + direct_refs(expr.right, imported)
    out: list[RefKey] = []
    if kind is cst.Tuple or kind is cst.List or kind is cst.Set:
        for element in expr.elements:
            out.extend(direct_refs(element.value, imported))
    elif kind is cst.Dict:
        for element in expr.elements:
            out.extend(direct_refs(element.value, imported))
    elif kind is cst.IfExp:
        out.extend(direct_refs(expr.body, imported))
        out.extend(direct_refs(expr.orelse, imported))
    elif kind is cst.BooleanOperation:
        out.extend(direct_refs(expr.left, imported))
        out.extend(direct_refs(expr.right, imported))
    elif kind is cst.NamedExpr:
        out.extend(direct_refs(expr.value, imported))
    return tuple(out)


def constructed_refs(expr: cst.BaseExpression | None) -> tuple[RefKey, ...]:
    """Keys an object that a class call in ``expr`` makes may hold as they are: the direct
    refs of the arguments of a call whose callee is spelled as a class (``Holder(w)``,
    ``types.SimpleNamespace(w=w)``, a dataclass) or is ``functools.partial``, through
    containers and nested calls of those.  Its result is not ``w``, so :func:`direct_refs` leaves it out, but storing
    it out of sight keeps ``w`` too (``KEPT.append(Holder(w))``)."""
    out: list[RefKey] = []
    stack = [expr] if expr is not None else []
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Call:
            callee = node.func.attr.value if type(node.func) is cst.Attribute else \
                node.func.value if type(node.func) is cst.Name else ""
            if callee[:1].isupper() or callee == "partial":
                for arg in node.args:
                    out.extend(direct_refs(arg.value))
                    stack.append(arg.value)
        elif kind is cst.Tuple or kind is cst.List or kind is cst.Set or kind is cst.Dict:
            stack.extend(element.value for element in node.elements)
    return tuple(out)


def refs_within(expr: cst.BaseExpression | None, imported: frozenset[str] = frozenset()) -> tuple[RefKey, ...]:
    """Keys whose values an evaluated ``expr`` may still hold: its direct refs,
    and the arguments and receivers of the calls it makes (``jax.tree.leaves(state)``
    and ``state.items()`` return ``state``'s own arrays).  Callees and lambdas are not values."""
    if expr is None:
        return ()
    key = ref_key(expr)
    if key is not None:
        return direct_refs(expr, imported)
    if isinstance(expr, cst.Lambda):
        return ()
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and expr.func.value in BENIGN_FUNCTIONS:
            return ()  # len(state): an int
        parts = [a.value for a in expr.args]
        if isinstance(expr.func, cst.Attribute):
            parts.append(expr.func.value)
        elif not isinstance(expr.func, cst.Name):
            parts.append(expr.func)
        return tuple(k for part in parts for k in refs_within(part, imported))
    out: list[RefKey] = []
    for child in children(expr):
        if isinstance(child, cst.BaseExpression):
            out.extend(refs_within(child, imported))
        elif isinstance(child, (cst.Arg, cst.Element, cst.StarredElement, cst.DictElement)):
            out.extend(refs_within(child.value, imported))
    return tuple(out)


def _operands(expr) -> tuple:
    """The operands an expression uses only once all of them are evaluated."""
    kind = type(expr)  # exact types: libcst's node classes have no subclasses (and isinstance is slow)
    if kind is cst.BinaryOperation:
        return (expr.left, expr.right)
    if kind is cst.Comparison:
        return (expr.left, *(target.comparator for target in expr.comparisons))
    if kind is cst.Tuple or kind is cst.List or kind is cst.Set:
        return tuple(element.value for element in expr.elements)
    if kind is cst.Dict:
        return tuple(element.value for element in expr.elements if type(element) is cst.DictElement)
    return ()


def free_names(node: cst.CSTNode) -> set[str]:
    """Names ``node`` (a def or lambda) reads from enclosing scopes; for a generator
    expression, those it reads lazily, as it is consumed (not its first iterable's)."""
    read: set[str] = set()
    bound: set[str] = set()
    if type(node) is cst.GeneratorExp:
        first = node.for_in
        bound.update(map(ident, target_names(first.target)))
        stack: list[cst.CSTNode] = [node.elt, *first.ifs]
        if first.inner_for_in is not None:
            stack.append(first.inner_for_in)
    else:
        stack = [node.params, node.body]
    while stack:
        current = stack.pop()
        kind = type(current)  # exact types: cheaper than isinstance on libcst's ABCs
        if kind is cst.Name:
            read.add(ident(current.value))
            continue
        if kind is cst.Attribute or kind is cst.Arg:
            stack.append(current.value)
            continue
        if kind is cst.Param:
            bound.add(ident(current.name.value))
            if current.default is not None:
                stack.append(current.default)
            continue
        if kind is cst.AssignTarget:
            bound.update(map(ident, target_names(current.target)))
        elif kind is cst.For or kind is cst.CompFor:
            bound.update(map(ident, target_names(current.target)))
        elif kind is cst.FunctionDef:
            bound.add(ident(current.name.value))
        elif (kind is cst.Import or kind is cst.ImportFrom) and type(current.names) is not cst.ImportStar:
            for alias in current.names:
                name = alias.asname.name if alias.asname is not None else alias.name
                while isinstance(name, cst.Attribute):
                    name = name.value
                if isinstance(name, cst.Name):
                    bound.add(name.value)
            continue
        stack.extend(children(current))
    return read - bound


class Flow:
    """The graph of one scope plus its queries."""

    def __init__(self) -> None:
        self.nodes: list[FlowNode] = [FlowNode(), FlowNode()]  # 0 = entry, 1 = exit
        self.calls: dict[int, Point] = {}  # id(call node) -> point just after its CALL event
        self.globals: set[str] = set()
        self.capture_nodes: list[cst.CSTNode] = []  # nested defs and lambdas (closures)
        self._free: dict[int, set[str]] = {}
        self._captured: set[str] | None = None
        self._by_name: dict[str, list] | None = None
        self._about_by_node: dict[str, tuple[int, dict[int, list]]] = {}  # see events_about_reaching
        self._preds: list[list[int]] | None = None
        self._succ_preds: list[list[int]] | None = None  # see writes_reaching
        self._exc_preds: list[list[int]] | None = None
        self._write_roots: list[set[str]] = []  # per node, the root names its WRITE events write
        self._trees: _SinglePredecessors | None = None  # see writes_reaching
        self._about_roots: list[set[str]] = []  # per node, the root names written or with events about them
        self._about_trees: _SinglePredecessors | None = None  # see events_reaching
        self._candidates: dict[int, tuple] = {}  # id(candidates) -> (candidates, their ids, ids by node)
        self._under: dict[str, list] | None = None  # see writes_under
        self._reaching: dict[int, set[int]] = {}
        self._bits: list[int] | None = None  # see _ancestor_bits
        self.call_nodes: list[cst.Call] = []  # every call in the scope's own code, in order
        self.passed: set[str] = set()  # names handed on as values: f(step), x = step, return step
        self._bound_by: dict[int, int] | None = None  # see writes_from

    ENTRY = 0
    EXIT = 1

    def free_names_of(self, node: cst.CSTNode) -> set[str]:
        """Names a nested def or lambda of this scope reads from outside (computed once)."""
        if id(node) not in self._free:
            self._free[id(node)] = free_names(node)
        return self._free[id(node)]

    @property
    def captured(self) -> set[str]:
        """Names some closure of this scope captures (computed on first use)."""
        if self._captured is None:
            self._captured = set()
            for node in self.capture_nodes:
                self._captured |= self.free_names_of(node)
        return self._captured

    def point_after(self, call: cst.Call) -> Point | None:
        return self.calls.get(id(call))

    def nodes_reaching(self, call: cst.Call) -> set[int] | _NodeBits | None:
        """The nodes from which some path (whatever it kills) leads to the node
        of ``call``, that node included (``index in result``); ``None`` for a call
        not in this graph.  A search from any other node cannot reach the call:
        asking this first keeps a scope of many calls and aliases from searching
        every pair."""
        point = self.calls.get(id(call))
        if point is None:
            return None
        if point.node not in self._reaching:
            if self._preds is None:
                self._preds = [[] for _ in self.nodes]
                for index, node in enumerate(self.nodes):
                    for target in (*node.succ, *node.exc):
                        self._preds[target].append(index)
            if len(self.nodes) <= _ANCESTOR_BITS_MAX_NODES:
                return _NodeBits(self._ancestor_bits()[point.node])
            found = {point.node}
            work = [point.node]
            while work:
                for source in self._preds[work.pop()]:
                    if source not in found:
                        found.add(source)
                        work.append(source)
            self._reaching[point.node] = found
        return self._reaching[point.node]

    def _ancestor_bits(self) -> list[int]:
        """Per node, the nodes with a path to it (itself included), as bits of an int:
        the least fixed point of ``bits[v] = v | bits of v's predecessors``, reached by
        sweeps in node order (edges mostly run forward: a sweep per loop level).  One
        pass for the whole graph, where a search per call costs a scope of many calls
        quadratic time."""
        if self._bits is None:
            preds = self._preds
            bits = [1 << index for index in range(len(self.nodes))]
            changed = True
            while changed:
                changed = False
                for index, sources in enumerate(preds):
                    acc = bits[index]
                    for source in sources:
                        acc |= bits[source]
                    if acc != bits[index]:
                        bits[index] = acc
                        changed = True
            self._bits = bits
        return self._bits

    def writes_from(self, origin: cst.CSTNode) -> int:
        """How many WRITE events bind a name to the value of ``origin`` (``a = b = (x, y)``:
        two), counted once per graph."""
        if self._bound_by is None:
            self._bound_by = {}
            for _, event in self.events():
                if event.kind == WRITE and event.origin is not None:
                    self._bound_by[id(event.origin)] = self._bound_by.get(id(event.origin), 0) + 1
        return self._bound_by.get(id(origin), 0)

    def writes_under(self, name: str) -> list[tuple[Point, Event]]:
        """Every WRITE event to ``name`` or into it (``name.x = ...``), bar the parameter's own
        binding, at its point (one list per name, built once)."""
        if self._under is None:
            self._under = {}
            for point, event in self.events():
                if event.kind == WRITE and event.key is not None and not isinstance(event.node, cst.Param):
                    self._under.setdefault(event.key[0], []).append((point, event))
        return self._under.get(name, [])

    def writes_reaching(self, key: RefKey, call_at: Point, candidates: list[tuple[Point, Event]]) -> set[int]:
        """The ids of the ``candidates`` (WRITE events of ``key`` or into it, at their points)
        from which :meth:`search` with ``until_call`` reaches the CALL event at ``call_at``: one
        walk backward from the call instead of one forward search per candidate.

        A path stops at a kill of ``key`` (an augmented assignment is none), as the
        forward search does; an exception edge leaves its node before any event, so
        every candidate in that node, and every path into it, reaches its target."""
        self._reverse_edges()
        return self._walk_back(key, call_at, candidates, self._write_roots, self._trees)

    def events_reaching(self, key: RefKey, call_at: Point, candidates: list[tuple[Point, Event]]) -> set[int]:
        """:meth:`writes_reaching` for candidates of any kind among :meth:`events_about`
        ``key[0]`` (an escape, an alias): the ids of those from which :meth:`search` with
        ``until_call`` reaches the CALL event at ``call_at``.  The walk passes over whole the
        nodes with no write of ``key[0]`` and no event about it."""
        self._reverse_edges()
        if self._about_trees is None:
            roots = [set(names) for names in self._write_roots]
            for name, events in self._by_name_index().items():
                for point, _ in events:
                    roots[point.node].add(name)
            self._about_roots = roots
            self._about_trees = _SinglePredecessors(self.nodes, self._succ_preds, self._exc_preds, roots)
        return self._walk_back(key, call_at, candidates, self._about_roots, self._about_trees)

    def _reverse_edges(self) -> None:
        if self._succ_preds is None:
            self._succ_preds = [[] for _ in self.nodes]
            self._exc_preds = [[] for _ in self.nodes]
            self._write_roots = [set() for _ in self.nodes]
            for index, node in enumerate(self.nodes):
                for target in node.succ:
                    self._succ_preds[target].append(index)
                for target in node.exc:
                    self._exc_preds[target].append(index)
                for event in node.events:
                    if event.kind == WRITE and event.key is not None:
                        self._write_roots[index].add(event.key[0])
            self._trees = _SinglePredecessors(self.nodes, self._succ_preds, self._exc_preds, self._write_roots)

    def _walk_back(self, key: RefKey, call_at: Point, candidates: list[tuple[Point, Event]],
                   roots: list[set[str]], trees: _SinglePredecessors) -> set[int]:
        """The backward walk of :meth:`writes_reaching`; ``roots[node]`` holds ``key[0]``
        for every node with a kill of ``key`` or a candidate, ``trees`` jumps over the others."""
        indexed = self._candidates.get(id(candidates))
        if indexed is None or indexed[0] is not candidates:  # the same list is asked about at every call
            in_node_of: dict[int, list[int]] = {}
            for point, event in candidates:
                in_node_of.setdefault(point.node, []).append(id(event))
            indexed = self._candidates[id(candidates)] = (candidates, {id(e) for _, e in candidates}, in_node_of)
        _, wanted, in_node = indexed
        found: set[int] = set()
        entered: set[int] = set()
        scanned: set[int] = set()
        work: list[tuple[int, int]] = [(call_at.node, call_at.index)]  # (node, events before the call or end)
        while work:
            node, upto = work.pop()
            events = self.nodes[node].events
            stopped = False
            # A kill of ``key`` and every candidate are in a node ``roots`` names ``key[0]`` in:
            # any other node (most of a long scope) is passed over whole.
            for index in range(upto - 1 if key[0] in roots[node] else -1, -1, -1):
                event = events[index]
                if id(event) in wanted:
                    found.add(id(event))
                if event.kind != WRITE or event.key is None:
                    continue
                if kills(event.key, key) and event.origin_kind != "aug":
                    stopped = True
                    break
            if stopped or node in entered:
                continue
            entered.add(node)  # paths arrive at this node's first event: from the end of a
            writer = trees.writer_before(node, key[0])
            if writer is not None:  # below another node: the nodes between hold no such event
                if writer not in scanned:
                    scanned.add(writer)
                    work.append((writer, len(self.nodes[writer].events)))
                continue
            for source in self._succ_preds[node]:  # successor edge's source, or from anywhere
                if source not in scanned:  # in an exception edge's source
                    scanned.add(source)
                    work.append((source, len(self.nodes[source].events)))
            for source in self._exc_preds[node]:
                found.update(in_node.get(source, ()))
                if source not in entered:
                    work.append((source, 0))
        return found

    def search(self, start: Point, key: RefKey, *, until_call: cst.Call | None = None,
               until_event: Event | None = None, stop_at: frozenset[int] = frozenset()) -> SearchResult:
        """Walk forward from ``start``; stop each path at the first kill of ``key``,
        and at the CALL event of a call whose id is in ``stop_at``.

        An augmented assignment (``xs += [y]``) is no kill: it may change the
        object ``key`` holds in place and leave it bound to the same object
        (its read of ``key`` comes first, so liveness is unchanged).

        By default a path also stops at the first read of ``key`` (liveness).
        With ``until_call``, reads do not stop it; reaching that call's CALL
        event does, and is recorded in ``reached`` (does a value flow there?).
        ``until_event`` is the same for one event of the graph.
        """
        result = SearchResult()
        work: list[Point] = [start]
        seen: set[int] = set()

        def push(target: int) -> None:
            if target not in seen:
                seen.add(target)
                work.append(Point(target, 0))

        while work:
            point = work.pop()
            node = self.nodes[point.node]
            stopped = False
            events = node.events
            if point.index < len(events):
                for target in node.exc:  # an exception may leave before any event
                    push(target)
            for index in range(point.index, len(events)):
                event = events[index]
                if event is until_event:
                    result.reached.append(Point(point.node, index))
                    stopped = True
                    break
                if event.key is None:
                    if until_call is not None and event.kind == CALL and event.node is until_call:
                        result.reached.append(Point(point.node, index))
                        stopped = True
                        break
                    if stop_at and event.kind == CALL and id(event.node) in stop_at:
                        stopped = True
                        break
                    continue
                if event.kind == READ and until_call is None and until_event is None and overlaps(event.key, key):
                    result.reads.append(event)
                    stopped = True
                    break
                if event.kind == WRITE and kills(event.key, key) and event.origin_kind != "aug":
                    result.kills.append(event)
                    stopped = True
                    break
            if stopped:
                continue
            for target in node.exc:
                push(target)
            if point.node == self.EXIT:
                result.reached_exit = True
            for target in node.succ:
                push(target)
        return result

    def rebound_before_any_call(self, start: Point, key: RefKey) -> bool:
        """Whether every path from ``start`` rebinds ``key`` before it reaches a
        call, a read of ``key`` or the scope's exit (so no closure can run and
        see the old value)."""
        work: list[Point] = [start]
        seen: set[int] = set()
        while work:
            point = work.pop()
            node = self.nodes[point.node]
            killed = False
            for event in node.events[point.index:]:
                if event.kind == CALL or (event.kind == READ and overlaps(event.key, key)):
                    return False
                if event.kind == WRITE and event.key is not None and kills(event.key, key):
                    killed = True
                    break
            if killed:
                continue
            if node.exc or point.node == self.EXIT:
                return False
            for target in node.succ:
                if target not in seen:
                    seen.add(target)
                    work.append(Point(target, 0))
        return True

    def same_value(self, name: str, first: Point, second: Point) -> bool:
        """Whether the local ``name`` may hold the same value at the events at ``first`` and
        ``second`` (the points of two events of the graph): one's value reaches the other
        unrebound, whichever comes first."""
        one, other = self.nodes[first.node].events[first.index], self.nodes[second.node].events[second.index]
        return bool(self.search(Point(first.node, first.index + 1), (name,), until_event=other).reached
                    or self.search(Point(second.node, second.index + 1), (name,), until_event=one).reached)

    def events(self):
        """Every ``(point, event)`` in the graph."""
        for n, node in enumerate(self.nodes):
            for i, event in enumerate(node.events):
                yield Point(n, i), event

    def events_about(self, name: str) -> list:
        """The ``(point, event)`` pairs, in :meth:`events` order, that may hand
        on a value whose key or one of whose sources starts with ``name``: an
        ``ESCAPE`` of a key, a ``WRITE`` or ``ALIAS`` with sources (built once:
        a scope's calls each ask, so reads and plain rebindings, which no asker
        wants, are left out to keep long scopes linear)."""
        return self._by_name_index().get(name, [])

    def _by_name_index(self) -> dict[str, list]:
        if self._by_name is None:
            index: dict[str, list] = {}
            for point, event in self.events():
                if not _hands_on_value(event):
                    continue
                names = {source[0] for source in event.sources + event.parts}
                if event.key is not None:
                    names.add(event.key[0])
                for root in names:
                    index.setdefault(root, []).append((point, event))
            self._by_name = index
        return self._by_name

    def events_about_reaching(self, name: str, reaching: set[int] | _NodeBits | None) -> list:
        """:meth:`events_about` ``name``, only those in the nodes of ``reaching`` (all
        when it is None), in the same order.  With ancestor bits, the nodes of many
        events are picked by one intersection, not one test per event: a long
        ``if``/``elif`` chain asks about every branch's events at every call."""
        events = self.events_about(name)
        if reaching is None:
            return events
        if type(reaching) is not _NodeBits or len(events) < _MANY_EVENTS:
            return [(p, event) for p, event in events if p.node in reaching]
        grouped = self._about_by_node.get(name)
        if grouped is None:
            by_node: dict[int, list] = {}
            for p, event in events:
                by_node.setdefault(p.node, []).append((p, event))
            grouped = self._about_by_node[name] = (sum(1 << node for node in by_node), by_node)
        mask, by_node = grouped
        hit = reaching.bits & mask
        if hit == mask:
            return events
        out: list = []
        digits = bin(hit)[:1:-1]  # least significant first: node order
        node = digits.find("1")
        while node >= 0:
            out.extend(by_node[node])
            node = digits.find("1", node + 1)
        return out


class _SinglePredecessors:
    """The single-predecessor trees of a flow graph: a node whose only way in is the
    end of one node (its one predecessor, and no exception edge into it) hangs below
    that node.  Walking backward from such a node, only the nodes above it that write
    a name matter to a search about it; :meth:`writer_before` finds the nearest
    (memoised per name along the tree), so neither a long straight scope nor a long
    ``if``/``elif`` chain is walked node by node for every call."""

    __slots__ = ("parent", "write_roots", "nearest")

    def __init__(self, nodes, succ_preds, exc_preds, write_roots) -> None:
        self.parent = [-1] * len(nodes)  # the one predecessor, if the node hangs below it
        for index in range(len(nodes)):
            sources = set(succ_preds[index])
            if len(sources) == 1 and not exc_preds[index]:
                (source,) = sources
                if source != index:
                    self.parent[index] = source
        self.write_roots = write_roots
        self.nearest: dict[str, dict[int, int | None]] = {}  # root name -> node -> writer_before

    def writer_before(self, node: int, root: str) -> int | None:
        """For a node below another, the nearest node above it whose events write ``root``,
        or the top of its tree when none does; None for a node below none, and for the
        nodes of a cycle of such nodes (unreachable code: walked node by node)."""
        if self.parent[node] < 0:
            return None
        memo = self.nearest.setdefault(root, {})
        path: list[int] = []
        on_path: set[int] = set()
        current = node
        while True:
            if current in memo:
                answer = memo[current]
                break
            if current in on_path:
                answer = None  # a cycle of single-predecessor nodes
                break
            parent = self.parent[current]
            path.append(current)
            on_path.add(current)
            if root in self.write_roots[parent] or self.parent[parent] < 0:
                answer = parent
                break
            current = parent
        for below in path:
            memo[below] = answer
        return answer


# From this many events about a name, events_about_reaching intersects bits.
_MANY_EVENTS = 64

# Above this many nodes, a graph's ancestor bits (nodes squared over 8 bytes) would
# cost more memory than a search per call: 12,000 nodes is 18 MiB.
_ANCESTOR_BITS_MAX_NODES = 12_000


class _NodeBits:
    """A set of node indices held as the bits of an int (``index in nodes``)."""

    __slots__ = ("bits",)

    def __init__(self, bits: int) -> None:
        self.bits = bits

    def __contains__(self, index: int) -> bool:
        return (self.bits >> index) & 1 == 1


def _hands_on_value(event: Event) -> bool:
    return (event.kind == ESCAPE and event.key is not None) or \
        (event.kind in (WRITE, ALIAS) and bool(event.sources or event.parts))


@dataclass
class _Loop:
    head: int
    breaks: list[int] = field(default_factory=list)


def handed_on(flow: "Flow", name: str, skip=lambda node: False, kept_by_call=lambda event: (False, None),
              made: Point | None = None) -> list[tuple[Event, str | None]]:
    """The events of ``flow`` that hand the value of the local ``name`` to something that
    keeps it: a container or another object's attribute or item it is stored in
    (``history.append(w)``, ``box.w = w``), a yield; those whose node ``skip`` says belongs
    to the value being looked at (the expression that made it) are left out, and so are
    plain rebindings (another name bound to it: :meth:`Provenance._still_read` follows
    those) and calls, but those ``kept_by_call`` says may keep it (``logger.log(w)``): most
    calls given a value keep nothing (``m.apply(variables, x)``), and taking them all would
    cost real donations.  ``kept_by_call`` gives ``(kept, condition)``: what the keeping
    depends on (see :mod:`jaxmem.lint.values.kept_if`), None when nothing.  Each event
    comes with its condition: the first event that keeps the value unconditionally,
    alone; else every event that keeps it only under a condition.  ``made``: the point
    of the event that gave the value looked at ``name``'s; events about another value of
    ``name`` (bound before or after) are left out."""
    marked: list[tuple[Event, str | None]] = []
    for point, event in flow.events_about(name):
        key = event.key
        if key is None or (made is not None and not flow.same_value(name, point, made)):
            continue
        condition = None
        if event.kind == ESCAPE:
            # a call only when ``kept_by_call`` says so: most keep nothing (``m.apply(variables, x)``)
            kept = key[0] == name and event.detail in ("stored", "yield")
            if not kept and key[0] == name:
                kept, condition = kept_by_call(event)
        elif event.kind == ALIAS or (event.kind == WRITE and len(key) > 1):
            kept = key[0] != name and any(source[0] == name for source in event.sources)
        else:
            kept = False
        if kept and not skip(event.node):
            if condition is None:
                return [(event, None)]
            marked.append((event, condition))
    return marked


# What :meth:`FlowBuilder._child` does with a child node of an expression, by its exact type
# (computed once per type with ``issubclass``: isinstance on libcst's ABCs is slow).
_EXPRESSION, _HOLDS_VALUE, _KEY_AND_VALUE, _COMPARATOR, _FORMATTED, _CONTAINER, _FORMATTING = range(7)
_CHILD_ROLES: dict[type, int] = {}


def _child_role(kind: type) -> int:
    if issubclass(kind, cst.BaseExpression):
        return _EXPRESSION
    if issubclass(kind, (cst.Arg, cst.Element, cst.StarredElement, cst.StarredDictElement)):
        return _HOLDS_VALUE
    if issubclass(kind, cst.DictElement):
        return _KEY_AND_VALUE
    if issubclass(kind, cst.ComparisonTarget):
        return _COMPARATOR
    if issubclass(kind, cst.FormattedStringExpression):
        return _FORMATTED
    if issubclass(kind, cst.CSTNode) and not issubclass(
            kind, (cst.BaseParenthesizableWhitespace, cst.Comma, cst.BaseBinaryOp, cst.BaseBooleanOp,
                   cst.BaseCompOp, cst.BaseUnaryOp, cst.LeftParen, cst.RightParen)):
        return _CONTAINER
    return _FORMATTING


class FlowBuilder:
    """Builds a :class:`Flow` for a module body or a function body."""

    def __init__(self, retains: Callable[[cst.Call], bool],
                 reads_metadata: Callable[[cst.Call], bool] = lambda call: False,
                 jitted_argument: Callable[[cst.Call], object] = lambda call: None,
                 written_argument: Callable[[cst.Call], object] = lambda call: None,
                 key_reads: Callable[[cst.Call], dict[int, frozenset[str]]] = lambda call: {},
                 imported: frozenset[str] = frozenset(),
                 hands_keeping_function: Callable[[cst.Call], bool] = lambda call: False) -> None:
        self.retains = retains
        # ``map(register, [w])``: a view call that also runs a function which may keep ``w``
        self.hands_keeping_function = hands_keeping_function
        # names the file imports: ``jnp.zeros(3)`` is a module's function, not a method of ``jnp``
        self.imported = imported
        self.reads_metadata = reads_metadata  # jnp.shape(x), jax.tree.map(lambda a: a.shape, x)
        # ``jax.pmap(step, ...)``: the function it wraps, which is not passed around
        # (calls of the wrapped result inside a trace ignore its donation)
        self.jitted_argument = jitted_argument
        # ``nnx.update(model, state)``: ``model``'s Variables are written, their old arrays never read
        self.written_argument = written_argument
        # ``check(b)`` where ``check`` reads only ``b["k"]``: id(argument) -> the key parts it may read
        self.key_reads = key_reads
        self.flow = Flow()
        self.local_defs: dict[str, cst.FunctionDef] = {}  # the defs of the scope, by name
        self.loops: list[_Loop] = []
        self.handlers: list[list[int]] = []
        self.finals: list[int] = []

    # -- graph plumbing ----------------------------------------------------

    def _node(self, events: list[Event], preds: list[int]) -> int:
        node = FlowNode(events)
        if self.handlers:
            node.exc = list(self.handlers[-1])
        self.flow.nodes.append(node)
        index = len(self.flow.nodes) - 1
        self._link(preds, index)
        for position, event in enumerate(events):
            if event.kind == CALL:
                self.flow.calls[id(event.node)] = Point(index, position + 1)
                self.flow.call_nodes.append(event.node)
        return index

    def _link(self, preds: list[int], target: int) -> None:
        for p in preds:
            if target not in self.flow.nodes[p].succ:
                self.flow.nodes[p].succ.append(target)

    # -- entry points ------------------------------------------------------

    def build_function(self, node: cst.FunctionDef | cst.Lambda) -> Flow:
        """The flow of a function body; parameters are written at entry."""
        params = node.params
        all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
        if isinstance(params.star_arg, cst.Param):
            all_params.append(params.star_arg)
        if params.star_kwarg is not None:
            all_params.append(params.star_kwarg)
        entry_events = [Event(WRITE, (ident(p.name.value),), p) for p in all_params]
        start = self._node(entry_events, [Flow.ENTRY])
        if isinstance(node, cst.Lambda):
            events: list[Event] = []
            self._expr(node.body, events)
            out = [self._node(events, [start])]
        else:
            out = self._block(_statements(node.body), [start])
        self._link(out, Flow.EXIT)
        return self.flow

    def build_module(self, module: cst.Module) -> Flow:
        """The flow of a module's top-level code."""
        out = self._block(module.body, [Flow.ENTRY])
        self._link(out, Flow.EXIT)
        return self.flow

    # -- statements --------------------------------------------------------

    def _block(self, statements, preds: list[int]) -> list[int]:
        for stmt in statements:
            preds = self._statement(stmt, preds)
        return preds

    def _statement(self, stmt, preds: list[int]) -> list[int]:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                preds = self._small(small, preds)
            return preds
        method = getattr(self, "_" + type(stmt).__name__, None)
        if method is not None:
            return method(stmt, preds)
        # Unknown compound statement: treat its blocks as straight-line code.
        return preds

    def _small(self, small, preds: list[int]) -> list[int]:
        events: list[Event] = []
        if isinstance(small, (cst.Assign, cst.Return)) and isinstance(small.value, cst.Name):
            self.flow.passed.add(small.value.value)
        if type(small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None) is cst.GeneratorExp:
            # ``scaled = (w * i for i in xs)``: kept, it reads ``w`` whenever it is consumed
            self._capture(small.value, events)
        if isinstance(small, cst.Assign):
            self._expr(small.value, events)
            sources = direct_refs(small.value, self.imported)
            for target in small.targets:
                self._target(target.target, sources, events, small.value, small.value)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self._expr(small.value, events)
                self._target(small.target, direct_refs(small.value, self.imported), events, small.value, small.value)
        elif isinstance(small, cst.AugAssign):
            # x += f(x): the old x is combined with the result after the call.
            self._expr(small.value, events)
            self._expr(small.target, events)
            key = ref_key(small.target)
            if key is not None:
                events.append(Event(WRITE, key, small.target, direct_refs(small.value, self.imported) + (key,),
                                    origin=small, origin_kind="aug"))
        elif isinstance(small, cst.Del):
            self._delete(small.target, events)
        elif isinstance(small, cst.Return):
            self._expr(small.value, events)
            node = self._node(events, preds)
            self._link([node], self.finals[-1] if self.finals else Flow.EXIT)
            return []
        elif isinstance(small, cst.Raise):
            self._expr(small.exc, events)
            self._expr(small.cause, events)
            # ``raise ValueError(w)``: an ``except ... as error`` here or in any caller may keep it
            for key in refs_within(small.exc, self.imported) + refs_within(small.cause, self.imported):
                events.append(Event(ESCAPE, key, small, (), "stored"))
            node = self._node(events, preds)
            if not self.handlers:
                self._link([node], self.finals[-1] if self.finals else Flow.EXIT)
            return []
        elif isinstance(small, cst.Break):
            node = self._node(events, preds)
            if self.loops:
                self.loops[-1].breaks.append(node)
            if self.finals:
                self._link([node], self.finals[-1])
            return []
        elif isinstance(small, cst.Continue):
            node = self._node(events, preds)
            if self.loops:
                self._link([node], self.loops[-1].head)
            if self.finals:
                self._link([node], self.finals[-1])
            return []
        elif isinstance(small, (cst.Global, cst.Nonlocal)):
            self.flow.globals.update(ident(n.name.value) for n in small.names)
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            names = small.names if not isinstance(small.names, cst.ImportStar) else []
            for alias in names:
                if alias.asname is not None:
                    bound = alias.asname.name
                else:
                    bound = alias.name
                    while isinstance(bound, cst.Attribute):
                        bound = bound.value
                if isinstance(bound, cst.Name):
                    events.append(Event(WRITE, (ident(bound.value),), alias))
        elif isinstance(small, cst.Expr):
            self._expr(small.value, events)
        elif isinstance(small, cst.Assert):
            self._expr(small.test, events)
            self._expr(small.msg, events)
        else:
            for child in children(small):
                if isinstance(child, cst.BaseExpression):
                    self._expr(child, events)
        return [self._node(events, preds)]

    def _If(self, stmt: cst.If, preds):
        events: list[Event] = []
        self._expr(stmt.test, events)
        test = self._node(events, preds)
        out = self._block(_statements(stmt.body), [test])
        if stmt.orelse is None:
            return out + [test]
        if isinstance(stmt.orelse, cst.If):
            return out + self._If(stmt.orelse, [test])
        return out + self._block(_statements(stmt.orelse.body), [test])

    def _While(self, stmt: cst.While, preds):
        events: list[Event] = []
        self._expr(stmt.test, events)
        test = self._node(events, preds)
        loop = _Loop(test)
        self.loops.append(loop)
        body_out = self._block(_statements(stmt.body), [test])
        self.loops.pop()
        self._link(body_out, test)
        infinite = isinstance(stmt.test, cst.Name) and stmt.test.value == "True"
        after_test = [] if infinite else [test]
        if stmt.orelse is not None:
            after_test = self._block(_statements(stmt.orelse.body), after_test)
        return after_test + loop.breaks

    def _For(self, stmt: cst.For, preds):
        events: list[Event] = []
        self._expr(stmt.iter, events)
        iterate = self._node(events, preds)
        head_events: list[Event] = []
        self._target(stmt.target, (), head_events, None, stmt.iter, "iter")
        self._stored_by_binding(stmt.target, stmt.iter, head_events)
        head = self._node(head_events, [iterate])
        loop = _Loop(head)
        self.loops.append(loop)
        body_out = self._block(_statements(stmt.body), [head])
        self.loops.pop()
        self._link(body_out, head)
        out = [head]
        if stmt.orelse is not None:
            out = self._block(_statements(stmt.orelse.body), out)
        return out + loop.breaks

    def _With(self, stmt: cst.With, preds):
        events: list[Event] = []
        for item in stmt.items:
            self._expr(item.item, events)
            if item.asname is not None:
                self._target(item.asname.name, (), events, None, item.item, "with")
                self._stored_by_binding(item.asname.name, item.item, events)
        node = self._node(events, preds)
        out = self._block(_statements(stmt.body), [node])
        # leaving the block runs the manager's ``__exit__``, which may read what it was given
        # (``stack.callback(save, w)``): its name is read there
        exits = [Event(READ, (ident(item.asname.name.value),), item.asname.name) for item in stmt.items
                 if item.asname is not None and type(item.asname.name) is cst.Name]
        return [self._node(exits, out)] if exits and out else out

    def _Try(self, stmt, preds):
        final_entry = None
        if stmt.finalbody is not None:
            final_entry = self._node([], [])
            self.finals.append(final_entry)
        handler_entries = []
        for handler in stmt.handlers:
            events: list[Event] = []
            if handler.type is not None:
                self._expr(handler.type, events)
            if handler.name is not None:
                self._target(handler.name.name, (), events, None, handler, "except")
            handler_entries.append((handler, events))
        entry_ids = [self._node_detached(events) for _, events in handler_entries]
        targets = list(entry_ids)
        if final_entry is not None:
            targets.append(final_entry)
        if self.handlers:
            targets += self.handlers[-1]  # an exception no handler matches
        self.handlers.append(targets)
        entry = self._node([], preds)  # an exception before the first statement
        body_out = self._block(_statements(stmt.body), [entry])
        self.handlers.pop()
        out: list[int] = []
        if stmt.orelse is not None:
            body_out = self._block(_statements(stmt.orelse.body), body_out)
        out += body_out
        for (handler, _), node in zip(handler_entries, entry_ids):
            out += self._block(_statements(handler.body), [node])
        if final_entry is not None:
            self.finals.pop()
            self._link(out, final_entry)
            final_out = self._block(_statements(stmt.finalbody.body), [final_entry])
            # After finally: continue, or resume a return/raise/break elsewhere.
            outer = self.handlers[-1] if self.handlers else []
            self._link(final_out, self.finals[-1] if self.finals else Flow.EXIT)
            for target in outer:
                self._link(final_out, target)
            if self.loops:
                self.loops[-1].breaks.extend(final_out)
                self._link(final_out, self.loops[-1].head)
            return final_out
        return out

    _TryStar = _Try

    def _node_detached(self, events: list[Event]) -> int:
        return self._node(events, [])

    def _Match(self, stmt, preds):
        events: list[Event] = []
        self._expr(stmt.subject, events)
        previous = [self._node(events, preds)]
        out: list[int] = []
        for case in stmt.cases:
            case_events: list[Event] = []
            self._pattern(case.pattern, case_events)
            if case.guard is not None:
                self._expr(case.guard, case_events)
            node = self._node(case_events, previous)
            out += self._block(_statements(case.body), [node])
            previous = [node]
        return out + previous

    def _FunctionDef(self, stmt: cst.FunctionDef, preds):
        events: list[Event] = []
        for decorator in stmt.decorators:
            self._expr(decorator.decorator, events)
        self._defaults(stmt.params, events, frozenset())
        self._capture(stmt, events)
        self.local_defs[ident(stmt.name.value)] = stmt
        events.append(Event(WRITE, (ident(stmt.name.value),), stmt))
        return [self._node(events, preds)]

    def _ClassDef(self, stmt: cst.ClassDef, preds):
        events: list[Event] = []
        for decorator in stmt.decorators:
            self._expr(decorator.decorator, events)
        for base in stmt.bases:
            self._expr(base.value, events)
        node = self._node(events, preds)
        out = self._block(_statements(stmt.body), [node])
        # ``class Holder: value = w``: the class keeps what its body binds (read as ``Holder.value``)
        stored = [Event(ESCAPE, key, assigned, (), "stored")
                  for assigned in _class_body_values(stmt) for key in direct_refs(assigned, self.imported)]
        return [self._node([*stored, Event(WRITE, (ident(stmt.name.value),), stmt)], out)]

    # -- targets -----------------------------------------------------------

    def _target(self, target, sources, events, value, origin=None, origin_kind="value", position="") -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            parallel = isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements)
            for i, element in enumerate(target.elements):
                part = direct_refs(value.elements[i].value, self.imported) if parallel else sources
                if parallel:
                    self._target(element.value, part, events, value.elements[i].value, value.elements[i].value)
                else:
                    self._target(element.value, part, events, None, origin,
                                 "unpack" if origin_kind == "value" else origin_kind, position=str(i))
            return
        if isinstance(target, cst.StarredElement):
            self._target(target.value, sources, events, None, origin, "unpack")
            return
        if isinstance(target, (cst.Attribute, cst.Subscript)) and value is not None:
            # ``box.h = Holder(w)``: the object stored there holds ``w``
            self._stored_out_of_sight(target, [k for k in constructed_refs(value) if k not in sources], events)
        key = ref_key(target)
        if key is not None:
            if isinstance(target, (cst.Attribute, cst.Subscript)):
                self._expr_base_reads(target, events)
            # ``init, apply = hk.transform(f)``: which element of the unpacked value (``detail``)
            detail = position if origin_kind == "unpack" else ""
            events.append(Event(WRITE, key, target, tuple(sources), detail, origin=origin, origin_kind=origin_kind,
                                parts=self._parts(origin, origin_kind)))
            return
        if isinstance(target, cst.Subscript):
            base = ref_key(target.value)
            self._expr(target.value, events) if base is None else None
            for element in target.slice:
                self._expr(element.slice, events)
            if base is not None:
                events.append(Event(ALIAS, base, target, tuple(sources)))
            else:
                self._stored_out_of_sight(target, sources, events)
            return
        if isinstance(target, cst.Attribute):
            self._expr(target.value, events)
            self._stored_out_of_sight(target, sources, events)
            return
        self._expr(target, events)

    def _stored_by_binding(self, target, source, events, skip=frozenset()) -> None:
        """``for box.kept in [w]``, ``with nullcontext(w) as box.kept``, ``[0 for box.kept in
        [w]]``: what the iterable or the manager hands out is stored on an object, where the
        flow does not follow it (rare: an escape of everything ``source`` may hold)."""
        stores = target_stores(target)
        if stores:
            for key in refs_within(source, self.imported):
                if key[0] not in skip:
                    events.append(Event(ESCAPE, key, stores[0], (), "stored"))

    @staticmethod
    def _stored_out_of_sight(target, sources, events) -> None:
        """A value stored into an object no name holds (``globals()["G"] = state``,
        ``registry().w = w``): kept where the flow cannot follow it."""
        for key in sources:
            events.append(Event(ESCAPE, key, target, (), "stored"))

    def _parts(self, origin, origin_kind: str) -> tuple[RefKey, ...]:
        """What a bound value may be a part of, one way (``Event.parts``): through a
        method jaxmem does not know, or as an element of the iterable a loop takes it from."""
        if not isinstance(origin, cst.BaseExpression):
            return ()
        if origin_kind in ("value", "unpack"):
            return part_refs(origin, self.imported) + self._returned_captures(origin)
        if origin_kind == "iter":
            return direct_refs(origin, self.imported) + part_refs(origin, self.imported)
        return ()

    def _returned_captures(self, origin) -> tuple[RefKey, ...]:
        """For a call of a def of the scope, the scope's values it may return as they are, or
        a part of (``first = get()``, ``def get(): return state["w"]``: a part of ``state``)."""
        if type(origin) is not cst.Call or type(origin.func) is not cst.Name \
                or (function := self.local_defs.get(origin.func.value)) is None:
            return ()
        free = self.flow.free_names_of(function)
        return tuple(key for node in descendants_of_type(function.body, cst.Return)
                     for key in direct_refs(node.value, self.imported) + part_refs(node.value, self.imported)
                     if key[0] in free)

    def _expr_base_reads(self, target, events) -> None:
        """Reads needed to evaluate the object an attribute target lives on."""
        base = target.value
        while isinstance(base, (cst.Attribute, cst.Subscript)) and ref_key(base) is not None:
            base = base.value
        if not isinstance(base, cst.Name):
            self._expr(base, events)

    def _delete(self, target, events) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._delete(element.value, events)
            return
        key = ref_key(target)
        if key is not None:
            events.append(Event(WRITE, key, target, (), "del"))
        else:
            self._expr(target, events)

    def _pattern(self, pattern, events) -> None:
        if isinstance(pattern, cst.MatchAs):
            if pattern.pattern is not None:
                self._pattern(pattern.pattern, events)
            if pattern.name is not None:
                events.append(Event(WRITE, (ident(pattern.name.value),), pattern))
            return
        if isinstance(pattern, cst.MatchValue):
            self._expr(pattern.value, events)
            return
        if isinstance(pattern, cst.MatchStar):
            if pattern.name is not None:
                events.append(Event(WRITE, (ident(pattern.name.value),), pattern))
            return
        if isinstance(pattern, cst.MatchClass):
            self._expr(pattern.cls, events)
        if isinstance(pattern, cst.MatchMapping) and pattern.rest is not None:
            events.append(Event(WRITE, (ident(pattern.rest.value),), pattern))
        for child in pattern.children:
            if isinstance(child, cst.MatchPattern):
                self._pattern(child, events)
            elif hasattr(child, "pattern") and isinstance(getattr(child, "pattern"), cst.MatchPattern):
                self._pattern(child.pattern, events)
            elif isinstance(child, cst.MatchMappingElement):
                self._expr(child.key, events)
                self._pattern(child.pattern, events)

    # -- expressions -------------------------------------------------------

    def _defaults(self, params: cst.Parameters, events, skip) -> None:
        """Default values are evaluated now and kept by the function: ``def cb(p=params)``
        holds today's ``params`` for every later call."""
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            if param.default is not None:
                self._expr(param.default, events, skip)
                for key in direct_refs(param.default, self.imported):
                    if key[0] not in skip:
                        events.append(Event(ESCAPE, key, param, (), "stored"))

    def _capture(self, node, events) -> None:
        # Which names the closure captures is worked out only if a query asks.
        self.flow.capture_nodes.append(node)
        events.append(Event(ESCAPE, None, node, (), "closure"))

    def _expr(self, expr, events: list[Event], skip: frozenset[str] = frozenset()) -> None:
        if expr is None:
            return
        kind = type(expr)  # exact types: cheaper than isinstance on libcst's ABCs
        if kind is cst.Name:
            if expr.value not in skip and ref_key(expr) is not None:  # not None/True/False
                events.append(Event(READ, (ident(expr.value),), expr))
            return
        if kind is cst.Attribute or kind is cst.Subscript:
            key = ref_key(expr)
            if key is not None:
                if key[0] in skip:
                    return
                if len(key) > 1 and (key[-1] in BENIGN_ATTRIBUTES or is_metadata_key(key)):
                    return  # x.shape, x.shape[0], x.dtype: metadata stays readable after donation
                events.append(Event(READ, key, expr))
                return
            if kind is cst.Attribute:
                self._expr(expr.value, events, skip)
                return
            self._expr(expr.value, events, skip)
            for element in expr.slice:
                self._slice(element.slice, events, skip)
            self._consume((expr.value,), events, skip)
            return
        if kind is cst.Call:
            self._call(expr, events, skip)
            return
        if kind is cst.Lambda:
            self._defaults(expr.params, events, skip)
            self._capture(expr, events)
            return
        if kind in _COMPREHENSIONS:
            self._comprehension(expr, events, skip)
            return
        if kind is cst.NamedExpr:
            self._expr(expr.value, events, skip)
            key = ref_key(expr.target)
            if key is not None:
                events.append(Event(WRITE, key, expr.target, direct_refs(expr.value, self.imported), origin=expr.value))
            return
        if kind is cst.Yield:
            value = expr.value
            if isinstance(value, cst.From):
                value = value.item
            self._expr(value, events, skip)
            for key in direct_refs(value, self.imported):
                events.append(Event(ESCAPE, key, expr, (), "yield"))
            return
        for child in children(expr):
            self._child(child, events, skip)
        operands = _operands(expr)
        if operands:
            self._consume(operands, events, skip)

    def _consume(self, operands, events: list[Event], skip) -> None:
        """Operands loaded earlier but used only now, after everything evaluated
        since: in ``x + f(x)`` or ``g(x, f(x))`` the array ``x`` is used after
        ``f`` ran, which matters when ``f`` donated it."""
        for operand in operands:
            for key in direct_refs(operand, self.imported):
                if key[0] not in skip:
                    events.append(Event(READ, key, operand, (), "consume"))

    def _child(self, child, events, skip) -> None:
        kind = type(child)
        role = _CHILD_ROLES.get(kind)
        if role is None:
            role = _CHILD_ROLES[kind] = _child_role(kind)
        if role == _EXPRESSION:
            self._expr(child, events, skip)
        elif role == _HOLDS_VALUE:
            self._expr(child.value, events, skip)
        elif role == _KEY_AND_VALUE:
            self._expr(child.key, events, skip)
            self._expr(child.value, events, skip)
        elif role == _COMPARATOR:
            self._expr(child.comparator, events, skip)
        elif role == _FORMATTED:
            self._expr(child.expression, events, skip)
        elif role == _CONTAINER:
            for grandchild in children(child):
                self._child(grandchild, events, skip)

    def _key_reads(self, value, keyed: dict[int, frozenset[str]], events, skip, detail: str) -> bool:
        """Read only the parts of ``value`` the callee may read, when ``keyed`` knows them
        and ``value`` is a key; False (nothing done) otherwise."""
        parts = keyed.get(id(value))
        key = ref_key(value) if parts is not None else None
        if key is None:
            return False
        if key[0] in skip or (len(key) > 1 and (key[-1] in BENIGN_ATTRIBUTES or is_metadata_key(key))):
            return True  # not a read of a tracked value, as in ``_expr``
        events.extend(Event(READ, key + (part,), value, (), detail) for part in sorted(parts))
        return True

    def _slice(self, slice_node, events, skip) -> None:
        if isinstance(slice_node, cst.Index):
            self._expr(slice_node.value, events, skip)
        elif isinstance(slice_node, cst.Slice):
            for part in (slice_node.lower, slice_node.upper, slice_node.step):
                self._expr(part, events, skip)

    def _comprehension(self, expr, events, skip) -> None:
        bound = set(skip)
        comp = expr.for_in
        if isinstance(expr, cst.GeneratorExp):
            # A generator evaluates its first iterable now and keeps it until consumed;
            # ``(f(x) for x in jax.tree.leaves(state))`` keeps ``state``'s leaves.
            for key in refs_within(comp.iter, self.imported):
                if key[0] not in skip:
                    events.append(Event(ESCAPE, key, expr, (), "stored"))

        first = True
        while comp is not None:
            self._expr(comp.iter, events, frozenset(skip if first else bound))
            self._stored_by_binding(comp.target, comp.iter, events, frozenset(skip if first else bound))
            bound.update(map(ident, target_names(comp.target)))
            for condition in comp.ifs:
                self._expr(condition.test, events, frozenset(bound))
            comp = comp.inner_for_in
            first = False
        inner = frozenset(bound)
        if isinstance(expr, cst.DictComp):
            self._expr(expr.key, events, inner)
            self._expr(expr.value, events, inner)
        else:
            self._expr(expr.elt, events, inner)
        # ``[(last := v) for v in [w]]`` binds ``last`` in the scope to an element, and
        # ``[kept.append(v) for v in [w]]`` fills ``kept`` with the elements: of the iterables
        elements = None
        for node in descendants_of_type(expr, (cst.NamedExpr, cst.Call)):
            if type(node) is cst.NamedExpr:
                target = ref_key(node.target) if type(node.target) is cst.Name else None
            else:
                func = node.func
                target = ref_key(func.value) if type(func) is cst.Attribute and func.attr.value in CONTAINER_METHODS \
                    else None
                if target is not None and target[0] in bound:
                    target = None
            if target is None:
                continue
            if elements is None:
                elements = tuple(key for iterable in _comprehension_iterables(expr)
                                 for key in refs_within(iterable, self.imported) if key[0] not in skip)
            if type(node) is cst.NamedExpr:
                events.append(Event(WRITE, target, node.target, (), origin=node.value, parts=elements))
            elif elements:
                events.append(Event(ALIAS, target, node, elements, "container"))

    def _call(self, call: cst.Call, events: list[Event], skip) -> None:
        func = call.func
        if (isinstance(func, cst.Name) and func.value in BENIGN_FUNCTIONS and func.value not in skip) \
                or self.reads_metadata(call):
            # len(x), isinstance(x, T), jnp.shape(x): answered from metadata, fine on a donated value
            for arg in call.args:
                if ref_key(arg.value) is None:
                    self._expr(arg.value, events, skip)
            events.append(Event(CALL, None, call))
            return
        receiver = ref_key(func.value) if isinstance(func, cst.Attribute) else None
        if receiver is not None and func.attr.value in BENIGN_ATTRIBUTES | CONTAINER_METHODS:
            pass  # x.is_deleted(), x.delete(); lst.append(y) stores y without reading lst's elements
        else:
            self._expr(func, events, skip)
            if receiver is not None and receiver[0] not in skip:
                events.append(Event(READ, receiver, func.value, (), "receiver"))
        wrapped = self.jitted_argument(call)
        written = self.written_argument(call)
        keyed = self.key_reads(call)
        for arg in call.args:
            if arg.value is written:
                parts = [e.value for e in written.elements] if isinstance(written, (cst.Tuple, cst.List)) else [written]
                for part in parts:
                    if ref_key(part) is None:
                        self._expr(part, events, skip)
                continue
            if not self._key_reads(arg.value, keyed, events, skip, ""):
                self._expr(arg.value, events, skip)
            if isinstance(arg.value, cst.Name) and arg.value is not wrapped:
                self.flow.passed.add(arg.value.value)
        consumed = []
        for arg in call.args:
            if arg.value is not written and not self._key_reads(arg.value, keyed, events, skip, "consume"):
                consumed.append(arg.value)
        if receiver is not None and func.attr.value not in BENIGN_ATTRIBUTES | CONTAINER_METHODS:
            consumed.append(func.value)
        self._consume(consumed, events, skip)
        arg_refs = tuple(k for arg in call.args for k in direct_refs(arg.value, self.imported) if k[0] not in skip)
        # what an object made here holds, handed on with it (``KEPT.append(Holder(w))``)
        arg_refs += tuple(k for arg in call.args for k in constructed_refs(arg.value) if k[0] not in skip)
        if receiver is not None and func.attr.value in CONTAINER_METHODS and arg_refs:
            events.append(Event(ALIAS, receiver, call, arg_refs, "container"))
        elif arg_refs and _fills_an_unnamed_container(func):
            holder = _named_holder(func.value)  # history[f"train_{k}"].append(v): in ``history``
            if holder is not None:
                events.append(Event(ALIAS, holder, call, arg_refs, "container"))
            else:
                self._stored_out_of_sight(call, arg_refs, events)  # vars(box).update(w=w)
        elif arg_refs and self.retains(call) and (not _view_arguments(call, self.imported)
                                                  or self.hands_keeping_function(call)):
            # (a view call's result holds its arguments as aliases of whatever it is bound to,
            # but ``list(map(register, [w]))`` runs ``register(w)``, which may keep it too)
            for key in arg_refs:
                events.append(Event(ESCAPE, key, call, (), "call"))
        events.append(Event(CALL, None, call))


def _comprehension_iterables(expr) -> list[cst.BaseExpression]:
    """What each ``for`` of a comprehension iterates over."""
    iterables = []
    comp = expr.for_in
    while comp is not None:
        iterables.append(comp.iter)
        comp = comp.inner_for_in
    return iterables


def _class_body_values(stmt: cst.ClassDef) -> list[cst.BaseExpression]:
    """The values a class body binds at its own level (``value = w``, ``value: T = w``)."""
    values = []
    for line in _statements(stmt.body):
        if type(line) is cst.SimpleStatementLine:
            values += [small.value for small in line.body
                       if type(small) in (cst.Assign, cst.AnnAssign, cst.AugAssign) and small.value is not None]
    return values


def _fills_an_unnamed_container(func) -> bool:
    """Whether ``func`` is a container's mutator on an object no name holds
    (``vars(box).update(w=w)``, ``registry().append(w)``), not ``x.at[i].add(y)`` (a new array)."""
    if type(func) is not cst.Attribute or func.attr.value not in CONTAINER_METHODS or ref_key(func.value) is not None:
        return False
    base = func.value
    return not (type(base) is cst.Subscript and type(base.value) is cst.Attribute and base.value.attr.value == "at")


def _named_holder(expr) -> RefKey | None:
    """The key of the named value an item or attribute of which ``expr`` is
    (``history[f"train_{k}"]``: ``history``); None when no name holds it (``vars(box)``)."""
    while type(expr) in (cst.Subscript, cst.Attribute):
        expr = expr.value
        if (key := ref_key(expr)) is not None:
            return key
    return None


_statements = suite_statements

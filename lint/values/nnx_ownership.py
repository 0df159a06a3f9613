"""Whether an nnx object handed to ``nnx.jit`` owns its arrays.

``nnx.jit`` writes a Module's (an Optimizer's, a Metric's) new arrays back
into the same Variables after the call, so a donated object stays usable,
and any other object that shares its Variables (``nnx.view(model)``) sees
the new arrays too.  What breaks is a reference to the *arrays* taken
outside the Variables and read after a donating call: ``nnx.state(model)``,
``model.kernel[...]``, ``jax.tree.leaves(model)``, the result of calling the
model, an EMA or optimizer state that holds the parameters, a value the
object was built from (when every nnx object was high, flax's ``ema_test``
crashed).  So an object
is proved its own when, in the scope that holds it (checked on flax 0.12.8,
optax 0.2.8):

* it is made by a constructor that makes new arrays: a class called with
  arguments that hold no array (``CNN(rngs=nnx.Rngs(0))``),
  ``nnx.Optimizer(model, tx, wrt=...)`` of a standard optax transform (its
  state is new moments and it keeps no reference to ``model``), flax's
  ``Average``/``Accuracy`` metrics or a ``MultiMetric`` of them,
  ``nnx.EMA(model, decay)`` (a ``jnp.copy`` of each tracked Variable, no
  reference to ``model`` kept: flax 0.12.8),
  ``nnx.view(other)`` of an object that is itself proved its own, or
  ``nnx.ModelAndOptimizer(other, tx)`` of such an object and a standard optax
  transform (it holds ``other``'s very Variables, like a view, and new
  moments: flax 0.12.8);
* every use takes no array out of it: an argument of a call the join finds
  to be an ``nnx.jit`` call, ``.train()``, ``.eval()``, ``.update(...)``,
  ``.reset()``, ``nnx.display``, ``print``, the model of such an
  Optimizer, the model an ``nnx.EMA`` copies, the source of a view (whose
  own uses follow these rules; ``ema.apply_to(model)`` is a view of both), a
  metric's ``.compute()`` (new arrays for those classes), metadata of its
  Variables (``m.kernel.sharding``) and comparisons (``m.left is m.right``,
  ``m.rngs.count[...] == 0``: a bool or a new array); calling it once
  outside the loop and showing the result before the first such call
  (``y = model(x)``, then ``y``), or calling it after the last such call,
  outside loops and defs; any use after the last such call, outside
  loops and defs, when none of those calls is in a def (nothing donates it
  any more: ``JaxModule(model, predict)`` after training).

Anything else is a doubt, and the proposal stays at medium confidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import libcst as cst

from jaxmem.lint.syntax.walk import children, descendants
from jaxmem.lint.values.array_api import KNOWN_LIBRARIES, READS, array_free_call, call_effect, is_fresh_constructor
from jaxmem.lint.values.metadata import METADATA_ATTRIBUTES

_VIEW = "flax.nnx.view"
# ``nnx.state(model, nnx.Param)``: a State of ``model``'s very Variables, in graph and tree
# mode (flax 0.12.8), which nnx.jit writes the new arrays back into.
_STATE_VIEWS = frozenset({"flax.nnx.state", "flax.nnx.graph.state", "flax.nnx.variables"})
# ``nnx.update(model, state)``: writes the State's arrays into ``model``'s Variables (flax 0.12.8).
_UPDATES = frozenset({"flax.nnx.update", "flax.nnx.graph.update"})
# Calls that hand back the same State placed elsewhere: its arrays as they are, or copies of
# them on devices or on the host, nothing else (``jax.device_put(state, sharding)``, jax 0.10.2).
_PLACEMENTS = frozenset({"jax.device_put", "jax.device_get", "jax.lax.with_sharding_constraint",
                         "jax.sharding.reshard"})
# ``nnx.map_state(f, state)``: ``f(path, variable)`` for each Variable; holds no array when
# ``f`` is a lambda that never reads the Variable (``lambda path, v: path[-1]``).
_MAP_STATE = frozenset({"flax.nnx.map_state", "flax.nnx.statelib.map_state"})
_MODEL_AND_OPTIMIZER = "flax.nnx.ModelAndOptimizer"
_VARIABLES = frozenset("flax.nnx." + name for name in ("Param", "Variable", "BatchStat", "Cache", "Intermediate"))
_OPTIMIZER = "flax.nnx.Optimizer"
_EMA = frozenset({"flax.nnx.EMA", "flax.nnx.training.ema.EMA"})
_RNGS = "flax.nnx.Rngs"
# make a 0-d array from a Python number (``jnp.array(1.0)``); so does a dtype called on one
_SCALAR_ARRAYS = frozenset({"jax.numpy.array", "jax.numpy.asarray"})
_NONE: Mapping[str, str | None] = MappingProxyType({})
_READERS = frozenset({"flax.nnx.display", "print"})
# ``p = nnx.cached_partial(f, model, optimizer)``: each call ``p(x)`` calls ``f(model, optimizer, x)``
# with the very objects (flax 0.12.8 clones the graph nodes, sharing their Variables, which
# nnx.jit writes back); see ``FactExtractor.cached_partial``.
CACHED_PARTIALS = frozenset({"flax.nnx.cached_partial", "flax.nnx.graph.cached_partial",
                             "flax.nnx.graphlib.cached_partial", "flax.nnx.compat.cached_partial"})
_METRICS = frozenset({"flax.nnx.metrics.Average", "flax.nnx.metrics.Accuracy"})
_MULTI_METRIC = frozenset({"flax.nnx.MultiMetric", "flax.nnx.metrics.MultiMetric"})
_METHODS = frozenset({"train", "eval", "update", "reset"})  # in place, or flags: no array leaves
_METRIC_METHODS = _METHODS | {"compute"}
_MAX_VIEWS = 8
# Statements that run the code inside them more than once, or later.
_REPEATING = (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.CompFor, cst.ListComp, cst.SetComp,
              cst.DictComp, cst.GeneratorExp)
_SHOWN_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size"})


@dataclass(frozen=True)
class Ownership:
    """``doubt``: why the object may share its arrays (None: proved its own, provided
    every call in ``calls`` is an ``nnx.jit`` call); ``calls``: ``(line, col)`` of the
    calls that receive it, for the join to check."""

    doubt: str | None
    calls: tuple[tuple[int, int], ...] = ()
    classes: tuple[str, ...] = ()  # qualified classes of other modules it is made by: project classes, for the join
    scalar: bool = False  # an nnx Variable of a Python number (``nnx.Param(1)``): no device buffer to reuse
    # made only by nnx classes (``nnx.Linear``, ``nnx.Optimizer``, a class of this file deriving from
    # one), or by ``classes`` and ``factories``, which the join checks are: a graph node nnx.jit
    # writes back, not a pytree
    node: bool = False
    # ``(function, index, count)`` for each call of another module's function that made it
    # (``model, optimizer = lib.create(0)``: ``("lib.create", 0, 2)``; count None: bound whole):
    # the join checks each is a factory of new nnx objects (``FileFacts.nnx_factories``)
    factories: tuple[tuple[str, int, int | None], ...] = ()


@dataclass(frozen=True)
class Made:
    """One value a factory function of the file returns (see :func:`nnx_factory`): ``kind``
    as the constructors that make it ("module", "optimizer", "metric" or "scalar"), the
    classes of other modules it is made by, and whether it is an nnx graph node."""

    kind: str
    classes: tuple[str, ...] = ()
    node: bool = True


@dataclass(frozen=True)
class Factory:
    """What a top-level function that makes nnx objects returns: one :class:`Made` per value;
    ``unpacked``: it returns a tuple (``return model, optimizer``), else one value."""

    made: tuple[Made, ...]
    unpacked: bool


# ``factory(func)`` for a function of another module of the project: what it returns is known to the join only.
IMPORTED = Factory((), False)


@dataclass(frozen=True)
class _Part:
    """``model, optimizer = create(0)``: the ``index``-th of the ``count`` values a call of a
    factory function returns, as a bound value."""

    call: cst.Call
    index: int
    count: int


def bound_arguments(partial: cst.Call) -> list[cst.BaseExpression]:
    """The values an ``nnx.cached_partial(f, a, b)`` call binds: ``a`` and ``b``."""
    return [arg.value for arg in partial.args[1:] if arg.keyword is None]


def might_make_nnx_object(call: cst.Call) -> bool:
    """A cheap first look: a class call (``CNN(...)``, ``nnx.Optimizer(...)``) or
    ``nnx.view(...)``; anything else is never an object this module proves its own."""
    name = call.func.attr.value if isinstance(call.func, cst.Attribute) else \
        call.func.value if isinstance(call.func, cst.Name) else ""
    return name[:1].isupper() or name == "view"


def nnx_ownership(name: str, occurrences, imports, provenance, positions,
                  unclean_classes: Mapping[str, str | None] = _NONE, binding: cst.Call | None = None,
                  local_nnx_classes: frozenset[str] = frozenset(),
                  factory: Callable[[cst.BaseExpression], Factory | None] | None = None) -> Ownership | None:
    """Whether the nnx object bound to ``name`` owns its arrays (see the module docstring);
    ``occurrences``: :func:`occurrences` of the scope that holds it.  None when ``name``
    is not bound only to calls (not an object this applies to).  ``binding``: the value of
    the one assignment that reaches the call; when it is a plain statement outside loops,
    ``try`` and ``with``, only the occurrences that may see that object are looked at
    (:func:`_one_object`: a notebook that makes a new ``model`` in every section, a
    script that makes one in each mode's branch).
    ``local_nnx_classes``: this file's classes that derive from an nnx class (:func:`nnx_classes`).
    ``factory``: what the function a call names (its ``func``) returns, when it makes nnx
    objects: a :class:`Factory` for one of this file (:func:`nnx_factory`), :data:`IMPORTED`
    for one of another project module; ``model, optimizer = create(0)`` binds what it made."""
    if binding is not None:
        occurrences = _one_object(name, occurrences, binding, positions) or occurrences
    values = _bound_values(name, occurrences, factory)
    if not values or not all(isinstance(value, (cst.Call, _Part)) for value in values):
        return None
    return _Finder(name, occurrences, imports, provenance, positions, unclean_classes, local_nnx_classes,
                   factory).run()


def nnx_factory(function: cst.FunctionDef, imports, provenance, positions,
                unclean_classes: Mapping[str, str | None] = _NONE, local_nnx_classes: frozenset[str] = frozenset(),
                factory: Callable[[cst.BaseExpression], Factory | None] | None = None,
                defaults_provenance=None) -> Factory | str:
    """What ``function`` returns when it is a factory of nnx objects (``def create(seed): model
    = Model(nnx.Rngs(seed)); optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param); return
    model, optimizer``), or why jaxmem does not take it for one.  A factory is undecorated, its
    one ``return`` its last statement, giving a name or a tuple of distinct names, each bound to
    an object :func:`nnx_ownership` proves its own in the function (no view, no call of a step,
    no use that takes an array out, the ``return`` aside), or a call that makes one (``return
    nnx.Sequential(...)``); no parameter default holds an array (:func:`_defaults_hold_no_array`,
    with the module's ``defaults_provenance``).  ``provenance`` takes every parameter to hold no
    array: a call binds what the factory made only when its arguments hold none
    (``_Finder._factory_made``)."""
    returned = _factory_return(function)
    if isinstance(returned, str):
        return returned
    if (default := _array_default(function, defaults_provenance)) is not None:
        return f"its default `{_code(default)[:40]}` may hold an array, which every object it makes would share"
    value = returned.value
    found = occurrences(function)
    if isinstance(value, cst.Call):
        # ``return nnx.Sequential(...)``: an object no name of the factory holds, so no use of it to check
        finder = _Finder("", found, imports, provenance, positions, unclean_classes, local_nnx_classes, factory,
                         returned)
        kind = finder._made_by(value)
        if kind is None:
            return f"`{_code(value)[:60]}` may hold arrays from elsewhere"
        if finder.factories:
            return f"it returns what another module's function makes (`{finder.factories[0][0]}`), not followed"
        return Factory((Made(kind, tuple(dict.fromkeys(finder.classes)), finder.node),), False)
    names = [value.value] if isinstance(value, cst.Name) else [element.value.value for element in value.elements]
    made = []
    for name in names:
        values = _bound_values(name, found, factory)
        if not values or not all(isinstance(v, (cst.Call, _Part)) for v in values):
            return f"`{name}` is not bound only by calls in it"
        finder = _Finder(name, found, imports, provenance, positions, unclean_classes, local_nnx_classes, factory,
                         returned)
        own = finder.run()
        kind = finder._constructor_kind(name, found)  # None for a view: its root is another object
        if own.doubt is not None:
            return own.doubt
        if own.calls:
            return f"it passes `{name}` to a call at line {own.calls[0][0]} that may keep or donate it"
        if kind is None:
            return f"`{name}` is a view of another object, or made in more than one way"
        if finder.factories:
            return f"`{name}` is made by another module's function (`{finder.factories[0][0]}`), not followed"
        made.append(Made(kind, tuple(dict.fromkeys(finder.classes)), finder.node))
    return Factory(tuple(made), isinstance(value, cst.Tuple))


def factory_return(function: cst.FunctionDef) -> cst.Return | None:
    """``function``'s one ``return``, when it is its last statement and gives a name, a tuple
    of distinct names or a class call (``return Model(rngs)``), and the function is undecorated,
    not async, no generator and declares no ``global``/``nonlocal``; None otherwise."""
    found = _factory_return(function)
    return None if isinstance(found, str) else found


def return_refusal(function: cst.FunctionDef) -> str | None:
    """Why ``function`` has no :func:`factory_return` (None: it has one)."""
    found = _factory_return(function)
    return found if isinstance(found, str) else None


def _factory_return(function: cst.FunctionDef) -> cst.Return | str:
    """:func:`factory_return`, or why ``function`` has no such ``return``."""
    if function.decorators:
        return "it is decorated, and the decorator may return something else"
    if function.asynchronous is not None:
        return "it is async"
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    last = body[-1] if body else None
    if not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and isinstance(last.body[0], cst.Return)):
        return "its last statement is not a `return`"
    returned = last.body[0]
    value = returned.value
    if isinstance(value, cst.Tuple):
        names = [e.value.value if isinstance(e, cst.Element) and isinstance(e.value, cst.Name) else None
                 for e in value.elements]
    elif isinstance(value, cst.Call) and might_make_nnx_object(value):
        names = []  # ``return Model(rngs)``: the object the call makes
    else:
        names = [value.value] if isinstance(value, cst.Name) else [None]
    if None in names or len(set(names)) != len(names):
        return "its `return` gives something other than a name, distinct names or a class call"
    own = [node for node in descendants(function.body, into_scopes=False)
           if isinstance(node, (cst.Return, cst.Yield, cst.Await, cst.Global, cst.Nonlocal))]
    if own != [returned]:
        return "it has another `return`, a `yield`, an `await`, or a `global` or `nonlocal`"
    return returned


def _array_default(function: cst.FunctionDef, module_provenance) -> cst.BaseExpression | None:
    """The first parameter default of ``function``, a top-level function, that may hold an
    array, if any.  A default is evaluated once, where the def runs, so an array in one would
    be in every object made (``w=TABLE``): a literal holds none, and so does a value the
    module's ``module_provenance`` (None: literals only) proves array-free
    (``init=lecun_normal``, a module-level initializer; ``dtype=jnp.float32``)."""
    p = function.params
    return next((param.default for param in (*p.posonly_params, *p.params, *p.kwonly_params)
                 if param.default is not None and not is_literal(param.default)
                 and (module_provenance is None or not module_provenance.array_free(param.default))), None)


def is_literal(expr) -> bool:
    """``1``, ``-0.5``, ``1e-3``, ``"adam"``, ``None``, ``True``: a value that holds no array."""
    return _is_number(expr) or isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"))


class _Finder:
    def __init__(self, name: str, occurrences, imports, provenance, positions, unclean_classes,
                 local_nnx_classes, factory=None, returned: cst.Return | None = None) -> None:
        self.occurrences = occurrences
        self.factory = factory
        self.returned = returned  # a factory's final ``return``: handing the object out is no use
        self.unclean_classes = unclean_classes
        self.local_nnx_classes = local_nnx_classes
        self.node = True  # every constructor seen so far makes an nnx graph node (see Ownership.node)
        self.scalar = False  # see Ownership.scalar
        self.classes: list[str] = []  # classes of other modules the object is made by (the join checks them)
        self.factories: list[tuple[str, int, int | None]] = []  # other modules' factories (see Ownership)
        # a call that may donate it sits in a def or lambda: it may run after any statement
        self.calls_in_defs = False
        self.imports = imports
        self.provenance = provenance
        self.positions = positions
        self.name = name
        self.calls: list[tuple[int, int]] = []
        self._trips: dict[str, frozenset[int]] = {}  # see _round_trip_lines

    def run(self) -> Ownership:
        occurrences = self.occurrences
        root, doubt = self._root(self.name, occurrences, 0)
        if doubt is not None:
            return Ownership(doubt)
        # a few bytes (``nnx.Param(1)``) are not worth donating, whatever else holds them
        self.scalar = self._constructor_kind(root, occurrences) == "scalar"
        family = self._family(root, occurrences)
        if family is None:
            return self._doubt(f"more than {_MAX_VIEWS} views of `{root}`")
        metric = self._constructor_kind(root, occurrences) == "metric"
        eager, late = [], []
        for member in family:
            for node, parents in occurrences.get(member, ()):
                if len(parents) > 1 and isinstance(parents[-1], cst.Call) and parents[-1].func is node:
                    eager.append((member, parents))  # ``model(x)``: decided once every call is known
                    continue
                doubt = self._use(member, node, parents, metric, family)
                if doubt is not None:
                    if any(isinstance(p, _REPEATING) for p in parents):
                        return self._doubt(doubt)
                    late.append((doubt, node))  # fine once nothing can donate it any more
        for member, parents in eager:
            doubt = self._eager_doubt(member, parents, occurrences)
            if doubt is not None and not self._after_every_call(parents):
                return self._doubt(doubt)
        for doubt, node in late:
            position = self.positions[node].start
            if self.calls_in_defs or not self.calls or (position.line, position.column) <= max(self.calls):
                return self._doubt(doubt)
        return Ownership(None, tuple(self.calls), tuple(self.classes), self.scalar, self.node,
                         tuple(dict.fromkeys(self.factories)))

    def _doubt(self, doubt: str) -> Ownership:
        """A doubt about an object whose constructors are known (whether it is a graph node)."""
        return Ownership(doubt, classes=tuple(self.classes), scalar=self.scalar, node=self.node,
                         factories=tuple(dict.fromkeys(self.factories)))

    def _after_every_call(self, parents: tuple) -> bool:
        """Whether the call ``parents[-1]`` runs once, after every call that may donate the
        object (outside loops and defs, none of those calls in a def): nothing donates the
        object any more, so what it returns stays valid (``print(eval_model(x))`` after training)."""
        if self.calls_in_defs or not self.calls or any(isinstance(p, _REPEATING) for p in parents):
            return False
        position = self.positions[parents[-1]].start
        return (position.line, position.column) > max(self.calls)

    def _eager_doubt(self, name: str, parents: tuple, occurrences) -> str | None:
        """Why calling the object outside a jit (``y = model(x)``) may leave its arrays in
        a value read after a donating call: the result may be a Variable's very array
        (a Module that returns ``self.w[...]``).  None when the call is made once, outside
        loops and defs, and its result is discarded or only shown before the first call
        that may donate the object (flax's tutorial: ``y = model(x)``, then ``y``)."""
        call, statement = parents[-1], parents[-2]
        text = _code(call)[:60]
        if any(isinstance(p, _REPEATING) for p in parents[:-1]):
            return f"`{text}` is called in a loop or a function: its result may be one of `{name}`'s arrays"
        if isinstance(statement, cst.Expr):
            return None  # the result is not kept
        target = statement.targets[0].target if isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
            else None
        if not isinstance(target, cst.Name):
            return f"`{text}` may return one of `{name}`'s arrays, and its result is kept"
        first_call = min(self.calls) if self.calls else None
        for node, found in occurrences.get(target.value, ()):
            if found[-1:] and isinstance(found[-1], cst.AssignTarget):
                if found[-2] is not statement:
                    return f"`{target.value}` is bound more than once"
                continue
            position = self.positions[node].start
            if any(isinstance(p, _REPEATING) for p in found) or (
                    first_call is not None and (position.line, position.column) >= first_call):
                return f"`{target.value} = {text}` may be one of `{name}`'s arrays, read after a call that donates it"
            if not _shown(node, found):
                return f"`{target.value} = {text}` may be one of `{name}`'s arrays and is kept"
        return None

    # -- where the object comes from --------------------------------------

    def _root(self, name: str, occurrences, depth: int) -> tuple[str, str | None]:
        """The object ``name`` is a view of (itself if none), and a doubt about how it was made."""
        values = _bound_values(name, occurrences, self.factory)
        if values is None or not values:
            return name, f"`{name}` is not bound only by plain assignments"
        if all(isinstance(v, cst.Call) and self._is_view(v) for v in values):
            sources = {source for v in values for source in self._view_sources(v)}
            if len(sources) != 1 or None in sources or depth > _MAX_VIEWS:
                return name, f"`{name}` is a view of something jaxmem cannot name"
            return self._root(sources.pop(), occurrences, depth + 1)
        if self._constructor_kind(name, occurrences) is None:
            failing = next((v for v in values if self._made_by(v) is None), values[0])
            failing = failing.call if isinstance(failing, _Part) else failing
            local = failing.func.value if isinstance(failing, cst.Call) and isinstance(failing.func, cst.Name) else None
            if why := self.unclean_classes.get(local):
                return name, f"`{name}` is made by `{_code(failing)[:60]}`: {why}"
            why = f"`{name}` is made by `{_code(failing)[:60]}`, which may hold arrays from elsewhere"
            filled = [f"`{arg.value.value}`: {by}" for arg in getattr(failing, "args", ())
                      if isinstance(arg.value, cst.Name) and (by := self.provenance.gained_by(arg.value.value))]
            return name, why + (f" ({filled[0]})" if filled else "")
        return name, None

    def _constructor_kind(self, name: str, occurrences) -> str | None:
        """"module", "optimizer" or "metric" when every binding of ``name`` makes new arrays."""
        values = _bound_values(name, occurrences, self.factory)
        kinds = {self._made_by(value) for value in values or ()}
        return kinds.pop() if len(kinds) == 1 and None not in kinds else None

    def _made_by(self, value) -> str | None:
        if isinstance(value, _Part):
            return self._factory_made(value.call, value.index, value.count)
        if not isinstance(value, cst.Call) or any(arg.star for arg in value.args):
            return None
        qualified = self._resolve(value.func)
        if qualified in _VARIABLES and value.args and self._number_or_scalar_array(value.args[0].value):
            return "scalar"
        if qualified in _EMA:
            # jnp.copy of every tracked Variable; the other arguments must hold no array
            positional = [arg for arg in value.args if arg.keyword is None]
            if not positional:
                return None
            return "module" if all(self.provenance.array_free(arg.value) for arg in value.args
                                   if arg is not positional[0]) else None
        if qualified == _OPTIMIZER:
            return "optimizer" if self.provenance.new_state_nnx_optimizer(value) else None
        if qualified in _METRICS:
            return "metric" if all(self.provenance.array_free(arg.value) for arg in value.args) else None
        if qualified in _MULTI_METRIC:
            return "metric" if all(isinstance(arg.value, cst.Call) and self._made_by(arg.value) == "metric"
                                   for arg in value.args) else None
        if qualified is not None and qualified.startswith("flax.nnx.") and not qualified[9:10].isupper():
            return None  # nnx.merge, nnx.clone, nnx.eval_shape: functions, not classes
        if not _is_class_like(value.func) and (qualified is None or may_be_project_function(qualified)):
            return self._factory_made(value, 0, None)
        if not _is_class_like(value.func):
            return None
        own_class = qualified is not None and qualified.startswith("flax.nnx.")
        if not all(self._made_here(arg.value) if own_class else self._array_free_or_rngs(arg.value)
                   for arg in value.args):
            return None
        if own_class and value.args and all(isinstance(arg.value, cst.Call) and self._made_by(arg.value) == "scalar"
                                            for arg in value.args):
            return "scalar"  # ``nnx.Dict(a=nnx.Param(jnp.array(1)))``: a few bytes
        if qualified is None:
            # a class of this file: it must not read a module-level value (``nnx.Cache(PE)``)
            local = value.func.value if isinstance(value.func, cst.Name) else None
            if local in self.unclean_classes:
                return None
            self.node &= local in self.local_nnx_classes
            return "module"
        if not qualified.startswith("flax.nnx."):
            self.classes.append(qualified)
        self.node &= qualified != _RNGS  # keys of a few bytes, and nnx.Rngs is no Module to keep
        return "module"

    def _factory_made(self, call: cst.Call, index: int, count: int | None) -> str | None:
        """The kind of the ``index``-th value ``call`` of a factory function of this file
        returns (:func:`nnx_factory`); ``count``: the number of names it is unpacked to (None:
        bound whole).  The factory was proved for arguments that hold no array: ``call``'s
        must not either."""
        if self.factory is None or any(arg.star for arg in call.args):
            return None
        factory = self.factory(call.func)
        if factory is None or not all(self._array_free_or_rngs(arg.value) for arg in call.args):
            return None
        if factory is IMPORTED:
            # another module's function: the join checks it makes new nnx objects (graph nodes)
            self.factories.append((self._resolve(call.func), index, count))
            return "module"
        if factory.unpacked != (count is not None) or (count is not None and count != len(factory.made)):
            return None
        made = factory.made[index]
        self.classes.extend(made.classes)
        self.node &= made.node
        return made.kind

    def _array_free_or_rngs(self, expr) -> bool:
        """An argument that brings no array of another value into the object: array-free,
        or an ``nnx.Rngs`` (its keys become Variables the object shares, which nnx writes back)."""
        if self.provenance.array_free(expr):
            return True
        return self.provenance.bound_only_to(expr, lambda call, depth: self._resolve(call.func) == _RNGS, 0)

    def _made_here(self, expr) -> bool:
        """An argument of an nnx class of flax's own (which keeps each argument as it is, in one
        place) that brings no array of another value either: array-free or an ``nnx.Rngs``, or
        made right there, where nothing else can name it: new arrays (``nnx.Param(jnp.zeros(4))``),
        an nnx object made so (``nnx.Sequential(nnx.Linear(2, 8, rngs=rngs), nnx.relu)``), or a
        list or tuple of those.  Not for a project class, whose checks take every argument to
        hold no array (it might keep one twice)."""
        if self._array_free_or_rngs(expr):
            return True
        if type(expr) in (cst.List, cst.Tuple):
            return all(isinstance(e, cst.Element) and self._made_here(e.value) for e in expr.elements)
        if type(expr) is not cst.Call:
            return False
        return is_fresh_constructor(self._resolve(expr.func), expr) or self._made_by(expr) in ("module", "scalar")

    def _number_or_scalar_array(self, expr) -> bool:
        """``1``, ``-0.5``, or a 0-d array made from one (``jnp.array(1.0)``, ``jnp.float32(2)``,
        ``jnp.asarray(3, dtype=jnp.int32)``): a few bytes."""
        if _is_number(expr):
            return True
        if type(expr) is not cst.Call:
            return False
        positional = [arg for arg in expr.args if arg.keyword is None]
        qualified = self._resolve(expr.func)
        return len(positional) == 1 and not positional[0].star and _is_number(positional[0].value) \
            and qualified is not None and (qualified in _SCALAR_ARRAYS or (
                qualified.startswith(("jax.numpy.", "numpy.")) and array_free_call(qualified) == "value")) \
            and all(self.provenance.array_free(arg.value) for arg in expr.args if arg.keyword is not None)

    def _family(self, root: str, occurrences) -> list[str] | None:
        """``root`` and every name bound to a view of it (or of a view of it)."""
        family = [root]
        changed = True
        while changed:
            changed = False
            for name, found in occurrences.items():
                if name in family:
                    continue
                values = _bound_values(name, occurrences, self.factory)
                if values and all(isinstance(v, cst.Call) and self._is_view(v)
                                  and set(self._view_sources(v)) & set(family) for v in values):
                    family.append(name)
                    changed = True
                    if len(family) > _MAX_VIEWS:
                        return None
        return family

    # -- what is done with it -----------------------------------------------

    def _use(self, name: str, node: cst.Name, parents: tuple, metric: bool, family: list[str]) -> str | None:
        """Why this occurrence of ``name`` may take arrays out of the object (None: it does not)."""
        parent = parents[-1] if parents else None
        if isinstance(parent, (cst.AssignTarget, cst.AnnAssign)):
            return None  # a binding: checked by _root and _constructor_kind
        if self.factory is not None and _factory_part(node, parents, self.factory) is not None:
            return None  # ``model, optimizer = create(0)``: a binding too
        if self.returned is not None and (parent is self.returned or (
                isinstance(parent, cst.Element) and len(parents) > 2 and parents[-3] is self.returned)):
            return None  # a factory hands it out: the caller's uses are checked there
        if (call := _graph_call_of(node, parents)) is not None and self._in_round_trip(call, parents):
            return None  # its Variables get the State's arrays back, and nothing else holds them
        if isinstance(parent, cst.Arg) and len(parents) > 1 and isinstance(parents[-2], cst.Call) \
                and parent.value is node:
            call = parents[-2]
            if next((a for a in call.args if a.keyword is None), None) is parent and self._is_view(call):
                return self._view_use(name, call, parents[:-2], metric, family)
            return self._argument_use(name, call, parent, parents)
        if isinstance(parent, cst.Attribute) and parent.value is node and len(parents) > 1 \
                and isinstance(parents[-2], cst.Call) and parents[-2].func is parent:
            if self._is_view(parents[-2]):  # ``ema.apply_to(model)``
                return self._view_use(name, parents[-2], parents[:-2], metric, family)
            if parent.attr.value in (_METRIC_METHODS if metric else _METHODS):
                return None  # in place
            return f"`{name}.{parent.attr.value}(...)` may return or keep its arrays"
        if _takes_nothing(node, parents) or self._only_read(node, parents):
            return None
        return f"`{name}` is used as `{_code(_outermost(node, parents))[:60]}`, which may take its arrays"

    def _only_read(self, node, parents: tuple) -> bool:
        """``jax.debug.visualize_array_sharding(model.kernel.value)``: the use is an argument
        of a call that only reads it (:data:`~jaxmem.lint.values.array_api.READS`), made as a
        statement of its own, so nothing keeps what it was given nor what it returns."""
        outer = _outermost(node, parents)
        at = len(parents) if outer is node else next(i for i, p in enumerate(parents) if p is outer)
        if at < 3 or not isinstance(parents[at - 1], cst.Arg) or parents[at - 1].value is not outer:
            return False
        call, statement = parents[at - 2], parents[at - 3]
        return (isinstance(call, cst.Call) and isinstance(statement, cst.Expr) and statement.value is call
                and call_effect(self._resolve(call.func)) == READS)

    def _in_round_trip(self, call: cst.Call, parents: tuple) -> bool:
        """Whether ``call``, an ``nnx.state`` or ``nnx.update`` of the object (or of a tuple
        of names holding it), is part of a round trip, statements in a row (flax's
        ``nnx_toy_examples/04_data_parallel_with_jit.py``)::

            state = nnx.state((model, optimizer))
            state = jax.device_put(state, sharding)      # any number of placements
            nnx.update((model, optimizer), state)

        and every occurrence of ``state`` in the scope is in such a round trip: the objects'
        Variables get the placed arrays, which only the dead ``state`` also holds."""
        found = _statement_line(parents)
        state = _trip_state_name(found[0][found[1]], call, self._resolve) if found is not None else None
        return state is not None and id(found[0][found[1]]) in self._round_trip_lines(state)

    def _round_trip_lines(self, state: str) -> frozenset[int]:
        """Ids of the statements of every round trip through ``state`` (see
        :meth:`_in_round_trip`); empty when one of its occurrences is in none."""
        if state in self._trips:
            return self._trips[state]
        lines: set[int] = set()
        for node, parents in self.occurrences.get(state, ()):
            found = _statement_line(parents)
            if found is None:
                lines = set()
                break
            body, at = found
            if id(body[at]) in lines:
                continue
            trip = _round_trip_from(body, at, state, self._resolve, self.provenance.array_free)
            if trip is None:
                lines = set()
                break
            lines.update(id(statement) for statement in trip)
        self._trips[state] = frozenset(lines)
        return self._trips[state]

    def _view_use(self, name: str, view: cst.Call, parents: tuple, metric: bool, family: list[str]) -> str | None:
        """Why the result of ``view``, a view of the object (``nnx.state(model)``,
        ``ema.apply_to(model)``), may take its arrays: bound to a name of the family (one
        bound only to views), whose own uses are checked; thrown away, it takes nothing; anything else
        (``jax.tree.leaves(nnx.view(model))``) is checked as a use of the object itself."""
        statement = parents[-1] if parents else None
        if isinstance(statement, cst.Expr) and statement.value is view:
            return None
        if isinstance(statement, cst.Assign) and statement.value is view and len(statement.targets) == 1 \
                and isinstance(statement.targets[0].target, cst.Name):
            target = statement.targets[0].target.value
            if target in family:
                return None  # the view's own uses are checked as the family's
            return f"`{target}` holds a view of `{name}` (`{_code(view)[:40]}`) and is bound to other values too"
        doubt = self._use(name, view, parents, metric, family)
        return doubt and doubt.replace(f"`{name}`", f"`{name}` (through `{_code(view)[:40]}`)", 1)

    def _argument_use(self, name: str, call: cst.Call, arg: cst.Arg, parents: tuple) -> str | None:
        qualified = self._resolve(call.func)
        if qualified in _READERS:
            return None
        positional = [a for a in call.args if a.keyword is None]
        if qualified in _MAP_STATE and len(positional) == 2 and positional[1] is arg \
                and _ignores_variable(positional[0].value):
            return None  # labels from the paths: ``nnx.map_state(lambda p, v: list(p)[-1], state)``
        first = bool(positional) and positional[0] is arg
        if qualified in _EMA and (first or (arg.keyword is not None and arg.keyword.value == "params")):
            return None  # nnx.EMA copies the Variables it tracks and keeps no reference to them
        if qualified == _OPTIMIZER and (first or (arg.keyword is not None and arg.keyword.value == "model")):
            if self.provenance.new_state_nnx_optimizer(call):
                return None
            return f"`{_code(call)[:60]}` may keep `{name}`'s parameters in its state"
        if qualified in CACHED_PARTIALS and not first and arg.keyword is None:
            calls = self._partial_calls(call, parents)
            if calls is None:
                return f"`{name}` is bound by `{_code(call)[:60]}`, called where jaxmem cannot follow"
            self.calls.extend(calls)  # each a call of the jitted function with the object: the join checks
            return None
        if qualified is not None and not may_be_project_function(qualified):
            return f"`{name}` is passed to `{qualified}`, which may keep its arrays"
        # a function of this file, or one imported from another module (``from steps import
        # train_step``): the join checks that the call reaches an nnx.jit definition
        position = self.positions[call].start
        self.calls.append((position.line, position.column))  # the join checks it is an nnx.jit call
        self.calls_in_defs |= any(isinstance(p, (cst.FunctionDef, cst.Lambda)) for p in parents)
        return None

    def _partial_calls(self, partial: cst.Call, parents: tuple) -> list[tuple[int, int]] | None:
        """``(line, col)`` of every call of ``p`` when ``parents`` end in ``p = partial`` and
        ``p``'s other occurrences in the scope are all plain calls outside defs and lambdas."""
        statement = parents[-3] if len(parents) > 2 else None
        if not (isinstance(statement, cst.Assign) and statement.value is partial and len(statement.targets) == 1
                and isinstance(statement.targets[0].target, cst.Name)):
            return None
        calls = []
        for node, found in self.occurrences.get(statement.targets[0].target.value, ()):
            if found and found[-1] is statement.targets[0]:
                continue  # the binding itself
            if not (found and isinstance(found[-1], cst.Call) and found[-1].func is node) \
                    or any(isinstance(p, (cst.FunctionDef, cst.Lambda)) for p in found):
                return None
            position = self.positions[found[-1]].start
            calls.append((position.line, position.column))
        return calls or None

    def _view_sources(self, call: cst.Call) -> tuple[str | None, ...]:
        """The names of the objects a view call shares Variables with: ``model`` for
        ``nnx.view(model)``; ``ema`` and ``model`` for ``ema.apply_to(model)``."""
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "apply_to":
            return (call.func.value.value, _first_name(call))
        return (_first_name(call),)

    def _is_view(self, call: cst.Call) -> bool:
        """``nnx.view(model, ...)``, ``nnx.state(model, *filters)`` (a State of its very
        Variables), or ``nnx.ModelAndOptimizer(model, tx)`` of a standard optax
        transform: an object that holds ``model``'s very Variables (which nnx writes back) and,
        for the optimizer, new moments of its own (flax 0.12.8, optax 0.2.8); or
        ``ema.apply_to(model)`` of an ``nnx.EMA``: a model whose Variables are the EMA's
        tracked ones and ``model``'s others (flax 0.12.8)."""
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "apply_to":
            receiver = call.func.value
            values = _bound_values(receiver.value, self.occurrences) if isinstance(receiver, cst.Name) else None
            return bool(values) and len(call.args) == 1 and call.args[0].keyword is None \
                and not call.args[0].star and isinstance(call.args[0].value, cst.Name) \
                and all(isinstance(v, cst.Call) and self._resolve(v.func) in _EMA for v in values)
        qualified = self._resolve(call.func)
        if qualified == _VIEW:
            return True
        if qualified in _STATE_VIEWS:
            return _plain_state_call(call) and isinstance(call.args[0].value, cst.Name)
        if qualified != _MODEL_AND_OPTIMIZER or any(arg.star for arg in call.args):
            return False
        return any(arg.keyword is None for arg in call.args) and self.provenance.new_state_transform_of(call)

    def _resolve(self, func) -> str | None:
        qualified = self.imports.resolve(func)
        if qualified is None and isinstance(func, cst.Name) and func.value == "print":
            return "print"
        return qualified


def nnx_classes(module: cst.Module, imports) -> frozenset[str]:
    """The top-level classes of ``module`` that derive, through classes of the module,
    from a class of ``flax.nnx`` (``class CNN(nnx.Module)``): an object one makes is an
    nnx graph node, which ``nnx.jit`` splits into Variables and writes back after the
    call.  A base imported from another project module is not followed (not listed)."""
    bases = {stmt.name.value: stmt.bases for stmt in module.body if isinstance(stmt, cst.ClassDef)}
    found: set[str] = set()

    def nnx_base(arg: cst.Arg) -> bool:
        if arg.keyword is not None:
            return False  # ``metaclass=...``
        if isinstance(arg.value, cst.Name) and arg.value.value in found:
            return True
        qualified = imports.resolve(arg.value)
        return qualified is not None and qualified.startswith("flax.nnx.") and qualified != _RNGS \
            and qualified.rsplit(".", 1)[-1][:1].isupper()

    while new := {name for name, args in bases.items() if name not in found and any(map(nnx_base, args))}:
        found |= new
    return frozenset(found)


def occurrences(scope) -> dict[str, list[tuple[cst.Name, tuple]]]:
    """Every ``Name`` in ``scope`` with its chain of parents, by name; a nested def or
    lambda that binds the name as a parameter hides it (its uses are another value)."""
    found: dict[str, list[tuple[cst.Name, tuple]]] = {}

    def walk(node, parents: tuple, hidden: frozenset) -> None:
        kind = type(node)  # exact types: libcst's node classes have no subclasses (and isinstance is slow)
        if kind is cst.Name:
            if node.value not in hidden:
                found.setdefault(node.value, []).append((node, parents))
            return
        if kind is cst.Import or kind is cst.ImportFrom:
            return
        if (kind is cst.FunctionDef or kind is cst.Lambda) and parents:
            hidden = hidden | _parameter_names(node.params)
            if kind is cst.FunctionDef:
                hidden = hidden | _local_names(node)
        inner = parents + (node,)
        if kind is cst.Attribute:
            walk(node.value, inner, hidden)  # ``nnx.metrics``: ``metrics`` is an attribute, not the name
        elif kind is cst.Arg:
            walk(node.value, inner, hidden)  # ``f(model=x)``: the keyword is not a use of ``model``
        elif kind is cst.Param:
            for part in (node.annotation, node.default):
                if part is not None:
                    walk(part, inner, hidden)
        else:
            named = node.name if kind is cst.FunctionDef or kind is cst.ClassDef else None
            for child in children(node):
                if child is not named:
                    walk(child, inner, hidden)

    # the scope itself is not a parent: only the defs and loops inside it run code later or again
    walk(scope.body if isinstance(scope, cst.FunctionDef) else scope, (), frozenset())
    return found


# Statements whose code runs at most once, in order, each time the scope runs: the
# ancestors of a binding whose object is narrowed to what runs after it.
_STRAIGHT = (cst.Module, cst.IndentedBlock, cst.If, cst.Else, cst.SimpleStatementLine, cst.SimpleStatementSuite)


def _one_object(name: str, occurrences, binding: cst.Call, positions) -> dict | None:
    """``occurrences`` with those of ``name`` narrowed to the object ``name = binding``
    makes: every occurrence in a def or lambda (it may run at any time), and those
    outside that may run after the binding with that object still bound.  The
    binding must be a plain one-target assignment outside loops, ``try`` and
    ``with`` (inside ``if``/``else`` only), so nothing before it runs after it.
    Left out: what comes before it, what is in another branch of an ``if`` it is
    in (never both run), what follows a later rebinding of ``name`` in that
    rebinding's block (the only way in passes it) or anywhere after it when its
    block holds the binding (every way on passes it), and the other plain
    bindings (``model, opt = nnx.merge(...)``: another object).  None (no
    narrowing) when the binding is not such a statement."""
    outside = [(node, parents) for node, parents in occurrences.get(name, ())
               if not any(isinstance(p, (cst.FunctionDef, cst.Lambda)) for p in parents)]
    mine = [(node, parents) for node, parents in outside
            if (i := _binding_index(node, parents)) is not None and parents[i].value is binding]
    if len(mine) != 1:
        return None
    target, chain = mine[0]
    chain = chain[:_binding_index(target, chain) + 1]  # down to the assignment
    if not all(isinstance(p, _STRAIGHT) for p in chain[:-1]):
        return None
    begin = _start(positions, chain[-1])
    rebindings = []  # (parents down to the assignment, its start), after the binding, on a line of their own
    for node, parents in outside:
        i = _binding_index(node, parents)
        if i is not None and i >= 2 and isinstance(parents[i - 1], cst.SimpleStatementLine) \
                and _start(positions, parents[i]) > begin:
            rebindings.append((parents[:i + 1], _start(positions, parents[i])))
    kept = []
    for node, parents in occurrences[name]:
        if node is target or any(isinstance(p, (cst.FunctionDef, cst.Lambda)) for p in parents):
            kept.append((node, parents))
            continue
        where = _start(positions, node)
        if where < begin or _binding_index(node, parents) is not None or _exclusive(chain, parents):
            continue
        if not any(_passed_first(rebinding, at, chain, parents, where) for rebinding, at in rebindings):
            kept.append((node, parents))
    return {**occurrences, name: kept}


def _binding_index(node: cst.Name, parents: tuple) -> int | None:
    """The index in ``parents`` of the one-target assignment statement that binds
    ``node``, as ``name = ...`` or unpacked (``a, name = ...``); None otherwise."""
    i = len(parents) - 1
    while i >= 0 and isinstance(parents[i], (cst.Tuple, cst.List, cst.Element)):
        i -= 1
    if i < 1 or not isinstance(parents[i], cst.AssignTarget):
        return None
    if i == len(parents) - 1 and parents[i].target is not node:
        return None
    assign = parents[i - 1]
    return i - 1 if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None


def _start(positions, node) -> tuple[int, int]:
    start = positions[node].start
    return start.line, start.column


def _exclusive(chain: tuple, parents: tuple) -> bool:
    """Whether the occurrence under ``parents`` is in another branch of an ``if`` whose
    branch ``chain`` (the binding's parents) is in: the two never both run."""
    for i, node in enumerate(chain[:-1]):
        if not isinstance(node, cst.If):
            continue
        for j, other in enumerate(parents[:-1]):
            if other is node:
                mine, theirs = chain[i + 1], parents[j + 1]
                if theirs is not mine and (theirs is node.body or theirs is node.orelse):
                    return True
    return False


def _passed_first(rebinding: tuple, at: tuple[int, int], chain: tuple, parents: tuple,
                  where: tuple[int, int]) -> bool:
    """Whether every way from the binding (parents ``chain``) to the occurrence under
    ``parents`` at ``where`` passes the later rebinding (its parents ``rebinding``, down to
    the assignment, starting at ``at``): the occurrence follows it in its own block, or
    the rebinding's block holds the binding too."""
    assign = rebinding[-1]
    if where <= at or any(p is assign for p in parents):
        return False  # before it, or read by its own value (``model = Wrapper(model)``)
    block = rebinding[-3]  # the block its statement line is in
    if any(p is block for p in parents):
        return True
    depth = len(rebinding) - 2  # down to the block
    return len(chain) > depth and all(a is b for a, b in zip(chain[:depth], rebinding[:depth]))


def _local_names(function: cst.FunctionDef) -> frozenset[str]:
    """Names ``function`` binds in its own code by assignment, ``for`` or ``def``
    (``model = nnx.merge(graphdef, state)`` in a jitted function): each is a local of
    the function throughout it, another value than the enclosing scope's, unless the
    function or one nested in it declares it ``global`` or ``nonlocal``.  Other binding
    forms are not collected: their names are left visible, which only adds doubts."""
    bound: set[str] = set()
    declared: set[str] = set()

    def targets(expr) -> None:
        if isinstance(expr, cst.Name):
            bound.add(expr.value)
        elif isinstance(expr, (cst.Tuple, cst.List)):
            for element in expr.elements:
                targets(element.value)
        elif isinstance(expr, cst.StarredElement):
            targets(expr.value)

    def walk(node, own: bool) -> None:
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            declared.update(item.name.value for item in node.names)
        if own:
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    targets(target.target)
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                targets(node.target)
            elif isinstance(node, cst.For):
                targets(node.target)
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                bound.add(node.name.value)
        for child in children(node):
            # nested defs, classes, lambdas and comprehensions bind in scopes of their own
            walk(child, own and not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.CompFor)))

    for statement in function.body.body if isinstance(function.body, cst.IndentedBlock) else ():
        walk(statement, True)
    return frozenset(bound - declared)


def _parameter_names(params: cst.Parameters) -> frozenset[str]:
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return frozenset(names)


def _bound_values(name: str, occurrences, factory=None) -> list | None:
    """The values ``name`` is bound to by plain ``name = value`` statements, and by
    ``a, name = make(...)`` of a factory function (a :class:`_Part`; ``factory`` says
    which names are); None when it is bound any other way (a loop, ``with``, other
    unpacking, an augmented assignment, a parameter, ``global``)."""
    values = []
    for node, parents in occurrences.get(name, ()):
        parent = parents[-1] if parents else None
        part = _factory_part(node, parents, factory) if factory is not None else None
        if part is not None:
            values.append(part)
            continue
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            assign = parents[-2]
            values.append(assign.value)
        elif isinstance(parent, cst.AnnAssign) and parent.target is node:
            if parent.value is None:
                continue
            values.append(parent.value)
        elif isinstance(parent, (cst.Param, cst.AugAssign, cst.For, cst.CompFor, cst.AsName, cst.Global,
                                 cst.Nonlocal, cst.NamedExpr, cst.FunctionDef, cst.ClassDef)):
            return None
        elif isinstance(parent, (cst.Tuple, cst.List, cst.StarredElement, cst.Element)) and _in_target(parents):
            return None
    return values


def _factory_part(node: cst.Name, parents: tuple, factory) -> _Part | None:
    """``a, node = make(...)``, one target of plain names unpacking a call of a factory
    function of the file: what ``node`` is bound to; None otherwise."""
    if len(parents) < 4 or not isinstance(parents[-1], cst.Element) or parents[-1].value is not node:
        return None
    target, assign_target, assign = parents[-2], parents[-3], parents[-4]
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(assign_target, cst.AssignTarget)
            and assign_target.target is target and isinstance(assign, cst.Assign) and len(assign.targets) == 1
            and isinstance(assign.value, cst.Call)):
        return None
    if not all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements):
        return None
    if factory(assign.value.func) is None:
        return None
    index = next(i for i, element in enumerate(target.elements) if element is parents[-1])
    return _Part(assign.value, index, len(target.elements))


def _in_target(parents: tuple) -> bool:
    return any(isinstance(p, (cst.AssignTarget, cst.For, cst.CompFor, cst.WithItem)) for p in parents)


def _shown(node: cst.Name, parents: tuple) -> bool:
    """A read that keeps nothing: the value shown by itself (a notebook cell's last
    line), printed, or its shape or dtype."""
    parent = parents[-1] if parents else None
    if isinstance(parent, cst.Expr):
        return True
    if isinstance(parent, cst.Attribute) and parent.attr.value in _SHOWN_ATTRIBUTES:
        return True
    return isinstance(parent, cst.Arg) and len(parents) > 1 and isinstance(parents[-2], cst.Call) \
        and isinstance(parents[-2].func, cst.Name) and parents[-2].func.value == "print"


def _takes_nothing(node: cst.Name, parents: tuple) -> bool:
    """Whether a use of the object reads attributes or items of it only to get a value
    that holds none of its arrays: metadata below its first attribute
    (``m.kernel.sharding``, ``m.kernel[...].shape``), or an operand of a comparison
    (``m.left is m.right``, ``m.rngs.count[...] == 0``, ``m is not None``: a bool, or a
    new array).  Not ``m.shape``: a Module's own attribute of that name may hold anything."""
    chain, index, depth = node, len(parents) - 1, 0
    while index >= 0:
        parent = parents[index]
        if type(parent) is cst.Attribute and parent.value is chain:
            if depth and parent.attr.value in METADATA_ATTRIBUTES:
                return True
            depth += 1
        elif not (type(parent) is cst.Subscript and parent.value is chain):
            break
        chain, index = parent, index - 1
    if index < 0:
        return False
    parent = parents[index]
    return (type(parent) is cst.Comparison and parent.left is chain) or (
        type(parent) is cst.ComparisonTarget and parent.comparator is chain)


def may_be_project_function(qualified: str) -> bool:
    """Whether a call's import-resolved name may be a function of the project
    (``steps.train_step``, ``.steps.train_step``): not a known library's, nor
    ``print``.  The join decides whether it is an ``nnx.jit`` definition."""
    return qualified != "print" and qualified.lstrip(".").split(".", 1)[0] not in KNOWN_LIBRARIES


def _is_number(expr) -> bool:
    """``1``, ``-0.5``: a Python number literal."""
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _graph_call_of(node, parents: tuple) -> cst.Call | None:
    """The call whose first argument is ``node`` or a tuple holding it (``nnx.state(model)``,
    ``nnx.update((model, optimizer), state)``), if any."""
    at = len(parents) - 1
    if at >= 1 and isinstance(parents[at], cst.Element) and isinstance(parents[at - 1], cst.Tuple):
        at -= 2
    if at < 1 or not isinstance(parents[at], cst.Arg) or not isinstance(parents[at - 1], cst.Call):
        return None
    call = parents[at - 1]
    return call if call.args and call.args[0] is parents[at] and call.args[0].keyword is None else None


def _graph_names(expr) -> str | None:
    """``model`` or ``(model, optimizer)`` as code, when ``expr`` is a name or a tuple of names."""
    if isinstance(expr, cst.Name) or (isinstance(expr, cst.Tuple) and expr.elements and all(
            isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in expr.elements)):
        return _code(expr)
    return None


def _statement_line(parents: tuple) -> tuple[list, int] | None:
    """``(body, index)`` of the innermost simple statement line among ``parents`` in the
    statement list that holds it, or None."""
    line_at = next((i for i in range(len(parents) - 1, 0, -1) if isinstance(parents[i], cst.SimpleStatementLine)),
                   None)
    body = getattr(parents[line_at - 1], "body", None) if line_at is not None else None
    if not isinstance(body, (list, tuple)):
        return None
    return body, next(i for i, statement in enumerate(body) if statement is parents[line_at])


def _single(statement):
    """The one small statement of a simple statement line, or None."""
    return statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None


def _assigned_call(statement, resolve, callees) -> tuple[str, cst.Call] | None:
    """``(name, call)`` of a line ``name = call(...)`` whose callee is one of ``callees``."""
    small = _single(statement)
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
            and isinstance(small.value, cst.Call) and resolve(small.value.func) in callees:
        return small.targets[0].target.value, small.value
    return None


def _plain_state_call(call: cst.Call) -> bool:
    """``nnx.state(node, *filters)``: arguments, none spread, no keyword but ``graph=``."""
    return bool(call.args) and not any(arg.star or (arg.keyword is not None and arg.keyword.value != "graph")
                                       for arg in call.args)


def _trip_state_name(statement, call: cst.Call, resolve) -> str | None:
    """The State name of a round trip's first or last statement when ``call`` is its own call:
    ``state`` of ``state = nnx.state(...)`` or of ``nnx.update(..., state)``."""
    if (assigned := _assigned_call(statement, resolve, _STATE_VIEWS)) is not None and assigned[1] is call:
        return assigned[0]
    small = _single(statement)
    if isinstance(small, cst.Expr) and small.value is call and resolve(call.func) in _UPDATES \
            and len(call.args) == 2 and isinstance(call.args[1].value, cst.Name):
        return call.args[1].value.value
    return None


def _round_trip_from(body, at: int, state: str, resolve, array_free) -> list | None:
    """The statements of the round trip through ``state`` that ``body[at]`` is part of
    (see ``_Finder._in_round_trip``), or None when it is in none."""
    start = at
    while start >= 0 and not _starts_trip(body[start], state, resolve):
        if start != at and not _places(body[start], state, resolve, array_free):
            return None
        start -= 1
    if start < 0:
        return None
    objects = _graph_names(_single(body[start]).value.args[0].value)
    end = start + 1
    while end < len(body) and _places(body[end], state, resolve, array_free):
        end += 1
    update = _single(body[end]) if end < len(body) else None
    if objects is None or not (isinstance(update, cst.Expr) and isinstance(update.value, cst.Call)
                               and resolve(update.value.func) in _UPDATES and len(update.value.args) == 2
                               and not any(arg.star or arg.keyword for arg in update.value.args)
                               and _graph_names(update.value.args[0].value) == objects
                               and isinstance(update.value.args[1].value, cst.Name)
                               and update.value.args[1].value.value == state) or not start <= at <= end:
        return None
    return list(body[start:end + 1])


def _starts_trip(statement, state: str, resolve) -> bool:
    """``state = nnx.state(objects, *filters)``."""
    assigned = _assigned_call(statement, resolve, _STATE_VIEWS)
    return assigned is not None and assigned[0] == state and _plain_state_call(assigned[1])


def _places(statement, state: str, resolve, array_free) -> bool:
    """``state = jax.device_put(state, sharding)``: a placement of ``state`` (arguments
    after it that hold no array)."""
    assigned = _assigned_call(statement, resolve, _PLACEMENTS)
    if assigned is None or assigned[0] != state or not assigned[1].args:
        return False
    first, *rest = assigned[1].args
    return (first.keyword is None and not first.star and isinstance(first.value, cst.Name)
            and first.value.value == state and all(not arg.star and array_free(arg.value) for arg in rest))


def _ignores_variable(function) -> bool:
    """``lambda path, v: list(path)[-1]``: a lambda of two plain parameters whose body never
    names the second (the Variable), so what it returns holds none of the State's arrays."""
    if not isinstance(function, cst.Lambda):
        return False
    params = function.params
    if params.star_arg is not cst.MaybeSentinel.DEFAULT or params.star_kwarg is not None or params.kwonly_params \
            or params.posonly_params or len(params.params) != 2 or any(p.default for p in params.params):
        return False
    variable = params.params[1].name.value
    return not any(isinstance(node, cst.Name) and node.value == variable
                   for node in (function.body, *descendants(function.body)))


def _first_name(call: cst.Call) -> str | None:
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[0].value if positional and isinstance(positional[0], cst.Name) else None


def _is_class_like(func) -> bool:
    """``CNN``, ``models.CNN``, ``nnx.Linear``: a capitalised name (a class by convention)."""
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name[:1].isupper()


def _outermost(node, parents: tuple):
    """The largest expression around ``node`` that is still an expression."""
    out = node
    for parent in reversed(parents):
        if not isinstance(parent, cst.BaseExpression):
            break
        out = parent
    return out


def _code(node) -> str:
    return cst.Module([]).code_for_node(node).strip()

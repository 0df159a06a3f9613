"""Where a donated value comes from: is its memory the donor's alone?

Donating an argument deletes every buffer of it.  That is safe only when
no other live value shares those buffers.  This module classifies each
assignment that can reach a call's argument (flow-insensitively: every
write of the name in the scope counts, an over-approximation) into plain
:class:`Origin` records; :mod:`jaxmem.lint.join.checks` turns them into
confidence once every file's definitions are known (a call's result is
fresh when the callee is jitted, which may be decided in another file).

Kinds:

* ``fresh``: new buffers nothing else holds: known array constructors
  (:mod:`jaxmem.lint.values.array_api`), arithmetic, ``x += ...``, a literal
  container of fresh parts none of which appears twice;
* ``host``: host NumPy data: jit copies it, donation frees nothing;
* ``no_arrays``: Python values with no device array (``0.0``, ``{"loss": 0.0}``,
  a config): jit copies them in, donation frees nothing;
* ``prng_key``: a PRNG key (``jax.random.PRNGKey``, ``split``, replicated):
  a few bytes, not worth donating;
* ``call``: the result of a project function or a possibly jitted
  callable, named by ``callee``/``qualified`` for the join to resolve;
* ``derived``: made by a library call from other values (``nnx.split(model)``,
  ``TrainState.create(params=p)``), which may share their buffers:
  ``shared_with`` lists those that are still read after the donating call
  or belong to the caller; a call that holds its arguments as they are
  (the table in :mod:`jaxmem.lint.values.array_api`, dataclass constructors) also
  brings the origins of what it holds;
* ``unknown``: anything else (a loop variable, an attribute, a parameter,
  a ``with`` target, one tree held twice): nothing proves the buffers are
  the donor's alone.

Values that provably hold no device array (:meth:`Provenance.array_free`)
never count as sharing.  :func:`summarize_function` gives each project
function a :class:`FunctionSummary` (which parameters its result holds,
whether it holds one value twice) that the join applies at call sites.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import libcst as cst

from jaxmem.lint.callables.imports import dotted_name
from jaxmem.lint.callables.jit_api import NON_RETAINING_ROOTS, PARTIAL_NAMES
from jaxmem.lint.callables.signatures import VAR_KEYWORD, VAR_POSITIONAL, map_arguments
from jaxmem.lint.syntax.walk import call_argument, children, descendants_of_type, target_names, target_stores
from jaxmem.lint.values.array_api import (
    ARRAY_FREE_PARTS,
    ARRAY_FREE_TYPES,
    BLACKJAX_ALGORITHMS,
    BLACKJAX_INITS,
    CONTAINER_FUNCTIONS,
    DISTINCT_RESULTS,
    DEVICE_COPIES,
    FLASHBAX_BUFFERS,
    HOLDS,
    INIT_APPLY_PAIRS,
    JAX_MD_INIT_TWICE,
    JAX_MD_STEPPERS,
    KEEPING_FUNCTIONS,
    KNOWN_LIBRARIES,
    MAP_PARAMS,
    METADATA_ATTRIBUTES,
    NEW,
    NNX_GRAPH_VIEWS,
    OPTAX_INJECT,
    OPTAX_NEW_STATE,
    OPTAX_NEW_STATE_IF_ARRAY_FREE,
    OPTAX_NO_STATE,
    OPTAX_WRAPPERS,
    PARTITION,
    READING_METHODS,
    READS,
    REPLICATORS,
    STATIC_FIELDS,
    TREE_MAPS,
    TWICE,
    array_free_call,
    call_effect,
    is_constructor_like,
    is_fresh_constructor,
    is_host_producer,
    is_prng_producer,
    is_view_of_arguments,
    library_function,
    mapped_trees,
    maps_to_new_arrays,
    returns_distinct_arrays,
)
from jaxmem.lint.values.flow import (
    ALIAS,
    CALL as CALL_EVENT,
    ESCAPE,
    WRITE,
    Event,
    Flow,
    Point,
    direct_refs,
    free_names,
    joined_operands,
    may_join_containers,
    part_refs,
    refs_within,
    returns_an_argument,
)
from jaxmem.lint.values.kept_if import FUNCTION
from jaxmem.lint.values.nnx_write_back import SPLITS, UPDATES, graph_names, only_argument, returns_whole_state
from jaxmem.lint.values.param_stores import (
    CONTAINER_MUTATORS,
    NO_STORE,
    STORES,
    counted_level,
    is_immutable,
    passed_values,
)
from jaxmem.lint.values.refs import RefKey, base_name, literal_part, overlaps, ref_key, render

# Comprehensions that build their value at once (a generator expression is evaluated later).
_BUILT_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.DictComp})
FRESH = "fresh"
HOST = "host"
NO_ARRAYS = "no_arrays"
PRNG_KEY = "prng_key"
CALL = "call"
DERIVED = "derived"
UNKNOWN = "unknown"

# Transforms whose results are new buffers (tests/lint/test_array_api_facts.py).
_NEW_RESULT_TRANSFORMS = frozenset({"jax.jit", "jax.pmap", "pjit"})
_MAX_DEPTH = 10  # chains through holding calls take 3 levels per hop
# ``model.init(rng, x)`` (flax linen) makes new variables.  ``tx.init(params)``
# (optax, one argument) may keep ``params`` itself in the state (lookahead,
# schedule-free): it is a library call that may share buffers with its argument.
_FRESH_METHODS = frozenset({"init", "init_with_output"})

# ``model.apply`` passed along is a function, not the model's arrays.
_FUNCTION_ATTRIBUTES = frozenset({"apply", "__call__"})


def _is_model_init(call: cst.Call, qualified: str | None, method: str | None) -> bool:
    """``model.init(rng, x)``: flax's and haiku's convention, new variables.  Not a
    function an import names (``pipeline.init(sys, q, qd)`` of another module
    may return ``q``: its summary decides) nor the enclosing class's own method."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    return (method in _FRESH_METHODS and len(call.args) > 1 and qualified is None
            and not (isinstance(receiver, cst.Name) and receiver.value in ("self", "cls")))


@dataclass(frozen=True)
class Origin:
    """One way a value can have been made."""

    kind: str
    line: int
    text: str
    callee: RefKey | None = None
    qualified: str | None = None
    shared_with: tuple[str, ...] = ()  # why a derived value may share buffers (already phrased)
    # For a project function's result: per argument slot ("0", "1", ... or a keyword),
    # why the value passed there is still held; the join keeps those the function returns.
    # A slot prefixed with STORED_SLOT: a value that holds no array, unless the function (of
    # another file) stores one into it; the join keeps those its summary ``stores``.
    arg_reasons: tuple[tuple[str, str], ...] = ()


STORED_SLOT = "stored:"


def caller_holds(named: str) -> str:
    """Why a value a call made from a parameter (``named`` as the message writes it,
    ```state``` or ```s`` (through `state`)``) may share buffers (``shared_with``)."""
    return f"{named}, which the caller may still hold"


def without_caller_of(origin: Origin, param: str) -> Origin:
    """``origin`` without the reasons that the caller may hold parameter ``param`` itself:
    for when the callers are proved not to (``CallerFacts``)."""
    reason = caller_holds(f"`{param}`")
    if reason not in origin.shared_with:
        return origin
    return dataclasses.replace(origin, shared_with=tuple(r for r in origin.shared_with if r != reason),
                               arg_reasons=tuple((slot, r) for slot, r in origin.arg_reasons if r != reason))


# Literals (and lambdas): values that hold no device array.
_LITERAL_NODES = frozenset({cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                            cst.FormattedString, cst.Lambda})

class Provenance:
    """Classifies the origins of values in one scope's flow."""

    def __init__(self, flow: Flow, ctx, owner_of, class_scope: str | None,
                 array_free_params: frozenset[str] = frozenset()) -> None:
        self.flow = flow
        self.ctx = ctx
        self.owner_of = owner_of  # RefKey -> local | param | attribute | global
        self.class_scope = class_scope
        self.array_free_params = array_free_params  # annotated ``config: ConfigDict``, ``path: str``
        # This scope's summarised nested defs: name -> (FunctionSummary, Signature).
        self.nested_functions: dict[str, tuple] = {}
        # names a function's own code binds (parameters, assignments): a call by one of
        # them is not the file's top-level function of that name
        self.local_names: frozenset[str] = frozenset()
        self.is_module = False  # the scope is a module's own code
        # > 0 while the origins of an nnx graph call's arguments are looked at: nnx.split and
        # nnx.state see a shared nnx.Rngs (a graph node) once, so it is not "held twice" there
        self._through_nnx_graph = 0
        # The file's top-level functions: name -> (FunctionSummary, Signature), or None.
        self.module_function = lambda name: None
        # The one def a called name means at the call before a point (``name, point``), or None.
        self.function_def = lambda name, at: None
        # Whether a local holds only objects this scope keeps to itself (_Context.private_object).
        self.private_object = lambda name: False
        self._writes: dict[RefKey, list] | None = None
        self._held_by_args: dict[int, list[tuple[cst.BaseExpression, set[RefKey]]]] = {}  # see passed_beside
        self._read_holders: dict[tuple, tuple[str, int, bool] | None] = {}  # see _still_read
        self._contained: dict[tuple[str, int], set[RefKey]] = {}  # see _may_contain
        self._events_of: dict[RefKey, tuple] = {}  # see writes_of
        self._views_of: dict[str, tuple] = {}  # see view_writes_of
        self._stores = None  # see _stores_by_name
        self._stored_into_names: dict[str, list] | None = None  # see _gains_arrays
        self._gaining: set[str] = set()  # names whose stores _gains_arrays is looking at
        self._storing_calls: dict[str, int] | None = None  # see _store_level
        self._storing_call: dict[str, cst.Call] = {}  # name -> the call that gave its level
        self._gained_by_call: set[str] = set()  # array-free by origin, found filled by a call (see gained_by)
        self._aliases_of: dict[RefKey, tuple] = {}  # see _aliases
        self._made_from_of: dict[str, tuple[str, ...]] | None = None  # see _made_from
        self._effect_method_calls: dict[str, list] | None = None  # see _method_calls_for_effect
        self._holders_kept: dict[tuple, str | None] = {}  # see _holder_kept
        self._written_back: dict[tuple, tuple[tuple[str, ...], frozenset[int]]] = {}  # see _write_backs
        # the nnx.split calls whose arguments' origins are being looked at (see _holder_read_after)
        self._splitting: list[cst.Call] = []
        self._order_of: dict[RefKey, dict[int, int]] = {}  # see reaching_writes
        self._host_names: frozenset[str] | None = None  # see host_names
        self.nnx_made: dict[str, tuple[bool, bool]] = {}  # lint.join.facts: (any, all) writes make an nnx object

    def writes_of(self, key: RefKey) -> tuple:
        """Every WRITE event of ``key`` in the scope (not ``del``)."""
        found = self._events_of.get(key)
        if found is None:
            found = self._events_of[key] = tuple(event for _, event in self._write_points(key))
        return found

    def defined_only(self, name: str) -> bool:
        """Whether every binding of the local ``name`` is a ``def`` or ``class`` statement:
        it holds a function or a class, never an array."""
        writes = self.writes_of((name,))
        return bool(writes) and all(type(event.node) in _DEFINITIONS for event in writes)

    def view_writes_of(self, name: str) -> tuple:
        """The writes of the local ``name`` that bind a view of their call's arguments
        (``gdef, gstate = nnx.split(self)``)."""
        found = self._views_of.get(name)
        if found is None:
            found = self._views_of[name] = tuple(
                event for event in self.writes_of((name,)) if isinstance(event.origin, cst.Call)
                and is_view_of_arguments(self.ctx.imports.resolve(event.origin.func)))
        return found

    def _write_points(self, key: RefKey) -> list:
        if self._writes is None:
            self._writes = {}
            for point, event in self.flow.events():
                if event.kind == WRITE and event.key is not None and event.detail != "del":
                    self._writes.setdefault(event.key, []).append((point, event))
        return self._writes.get(key, [])

    def _host_at_call(self, key: RefKey, after: Point) -> list[Origin]:
        """The origins of ``key`` at the call when every write reaching it makes host
        NumPy data (``for batch in ds: batch = jax.tree.map(np.asarray, batch)``), else [].
        Only then are the other writes dropped: a derived value's origins do not follow
        its sources, so narrowing anything else could lose what they share."""
        writes = self.reaching_writes(key, after)
        if len(writes) == len(self._write_points(key)):
            return []
        origins = [origin for event in writes for origin in self.of_write(event, after, 1)]
        return origins if origins and all(origin.kind == HOST for origin in origins) else []

    def reaching_writes(self, key: RefKey, after: Point) -> list:
        """The writes of ``key`` whose value can reach the call just before ``after``
        (``for batch in ds: batch = np.asarray(batch)``: the loop's own value never does)."""
        writes = self._write_points(key)
        call_event = self._call_event_before(after)
        if len(writes) < 2 or call_event is None:
            return [event for _, event in writes]
        reached = self.flow.writes_reaching(key, Point(after.node, after.index - 1), writes)
        order = self._order_of.get(key)
        if order is None:
            order = self._order_of[key] = {id(event): index for index, (_, event) in enumerate(writes)}
        return [writes[index][1] for index in sorted(order[found] for found in reached)]

    def _call_event_before(self, after: Point):
        """The CALL event just before ``after`` (a call's point), or None."""
        event = self.flow.nodes[after.node].events[after.index - 1] if after.index else None
        return event if event is not None and event.kind == CALL_EVENT else None

    def entry_value_reaches(self, key: RefKey, after: Point) -> bool:
        """Whether the value the caller passed for parameter ``key`` (a one-name key) may
        still be what the name holds at the call before ``after``: False when every
        path from the entry rebinds the name first (``x = jnp.asarray([x] * n)``)."""
        return any(isinstance(event.node, cst.Param) for event in self.reaching_writes(key, after))

    def made_by(self, key: RefKey, after: Point) -> list[RefKey]:
        """The callees (as keys, ``cls.f`` read as ``self.f``) of the calls whose results the
        writes of ``key`` that reach the call before ``after`` bind (``state = step(state)``:
        ``step``)."""
        found = []
        for event in self.reaching_writes(key, after):
            if event.origin_kind in ("value", "unpack") and isinstance(event.origin, cst.Call):
                callee = ref_key(event.origin.func)
                if callee is not None:
                    found.append(("self",) + callee[1:] if callee[0] == "cls" else callee)
        return found

    def _writes_into(self, key: RefKey, after: Point) -> list:
        """The writes whose value may be (part of) ``key``'s value at the call before
        ``after``: those reaching it, and, for each that reads ``key`` again
        (``state = tree_map(f, state)``, ``state = state.replace(step=0)``), those
        reaching that read.  Every write when a reading write is not a call."""
        found: list = []
        work = self.reaching_writes(key, after)
        while work:
            event = work.pop()
            if any(event is seen for seen in found):
                continue
            found.append(event)
            if event.origin_kind == "aug" or event.origin is None or key[0] not in _names_in_expr(event.origin):
                continue
            if isinstance(event.origin, cst.Call) and self._makes_new_memory(event.origin):
                continue  # x = jnp.asarray([x] * n): the new value holds nothing of the old one
            point = self.flow.point_after(event.origin) if isinstance(event.origin, cst.Call) else None
            if point is None:
                return self.writes_of(key)
            work.extend(self.reaching_writes(key, point))
        return found

    def of_key(self, key: RefKey, after: Point, depth: int = 0, entry: bool = True) -> list[Origin]:
        """Origins of the value ``key`` (a local name) holds at a call; without ``entry``, of
        the values the scope binds it to, not the parameter's own (the caller's value)."""
        if depth == 0 and (host := self._host_at_call(key, after)):
            return host
        # The donated value itself is made by one of the writes that reach the call (a
        # write after it, not in a loop around it, never does), or by a write reaching
        # those that read the name again.  Deeper, a name is read where its holder was
        # made, not at the call: every write counts there.
        writes = self._writes_into(key, after) if depth == 0 else self.writes_of(key)
        if not entry:
            writes = [event for event in writes if not isinstance(event.node, cst.Param)]
        if not writes or depth > _MAX_DEPTH:
            return [Origin(UNKNOWN, 0, f"`{key[0]}` is not assigned here")]
        out: list[Origin] = []
        for event in writes:
            out.extend(self.of_write(event, after, depth))
        return out

    def of_write(self, event, after: Point, depth: int) -> list[Origin]:
        origin = event.origin
        line = self.ctx.positions[event.node].start.line
        if origin is None:
            return [Origin(UNKNOWN, line, "a parameter, import or definition")]
        if event.origin_kind == "aug":
            return [Origin(FRESH, line, self.ctx.text(origin))]
        if event.origin_kind == "iter":
            if isinstance(origin, cst.Call) and isinstance(origin.func, cst.Name) and origin.func.value == "range" \
                    and self.ctx.imports.resolve(origin.func) is None:
                return [Origin(NO_ARRAYS, line, self.ctx.text(origin))]  # for i in range(n): an int
            return [Origin(UNKNOWN, line, f"a loop variable taken from `{self.ctx.text(origin)}`, which still holds it")]
        if event.origin_kind in ("with", "except"):
            return [Origin(UNKNOWN, line, f"bound by `{self.ctx.text(origin)}`")]
        origins = self.of_expr(origin, after, depth + 1)
        if event.key is not None and len(event.key) == 1 and depth <= _MAX_DEPTH:
            # state = {}; state["w"] = w: it holds what is stored into it too (w itself, two names back)
            stored = self._stored_into(event.key[0], after, max(depth + 1, 2))
            if stored and all(o.kind == NO_ARRAYS for o in origins):
                origins = []  # no longer the Python values it was made as
            origins = origins + stored
        return origins

    def _stored_into(self, name: str, after: Point, depth: int) -> list[Origin]:
        """The origins of what the scope stores into the local ``name``: ``name["w"] = v``,
        ``name[k] = v`` (an unknown value), ``name.append(v)``, ``name.update(w=v)``."""
        def unknown(event: Event) -> Origin:
            return Origin(UNKNOWN, self.ctx.positions[event.node].start.line,
                          f"`{self.ctx.text(event.node)}` is stored into it")

        out: list[Origin] = []
        stores, mutators = self._stores_by_name()
        subscript_writes, subscript_aliases = stores.get(name, ((), ()))
        for event in subscript_writes:
            if event.origin_kind == "value" and isinstance(event.origin, cst.BaseExpression):
                out.extend(self._stored_value(event.origin, after, depth))
            else:
                out.append(unknown(event))
        out.extend(unknown(event) for event in subscript_aliases)
        for call in mutators.get(name, ()):
            for arg in call.args:
                out.extend(self._stored_value(arg.value, after, depth))
        return out

    def _stores_by_name(self) -> tuple[dict[str, tuple[list[Event], list[Event]]], dict[str, list[cst.Call]]]:
        """Per local name, what :meth:`_stored_into` reads, found in one pass over the scope
        (a long scope asks for many names): the writes under a subscript of it
        (``name["w"] = v``) and the ``ALIAS`` events that store a subscript of another
        value into it, each in event order; and the mutating calls on it (``name.append(v)``)."""
        if self._stores is None:
            stores: dict[str, tuple[list[Event], list[Event]]] = {}
            for _, event in self.flow.events():
                key = event.key
                if key is None:
                    continue
                if event.kind == WRITE and len(key) > 1 and key[-1].startswith("[") \
                        and not isinstance(event.node, cst.Param):
                    stores.setdefault(key[0], ([], []))[0].append(event)
                elif event.kind == ALIAS and len(key) == 1 and isinstance(event.node, cst.Subscript) \
                        and (event.sources or event.parts):
                    stores.setdefault(key[0], ([], []))[1].append(event)
            mutators: dict[str, list[cst.Call]] = {}
            for call in self.flow.call_nodes:
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value in CONTAINER_MUTATORS \
                        and (base := base_name(func.value)) is not None:
                    mutators.setdefault(base, []).append(call)
            self._stores = stores, mutators
        return self._stores

    def _stored_value(self, value, after: Point, depth: int) -> list[Origin]:
        """The origins of a value stored into a container; none for a local that holds
        only Python values (``state.hyperparams["max_norm"] = i``, ``i`` from ``range``)."""
        if isinstance(value, cst.Name) and self.owner_of((value.value,)) == "local":
            made = self.of_key((value.value,), after, depth + 1)
            if made and all(origin.kind == NO_ARRAYS for origin in made):
                return []
        return self.of_expr(value, after, depth)

    def of_expr(self, expr: cst.BaseExpression, after: Point, depth: int) -> list[Origin]:
        """Origins of the value ``expr`` evaluates to."""
        ctx = self.ctx
        line = ctx.positions[expr].start.line
        text = ctx.text(expr)
        if not isinstance(expr, (cst.Name, cst.Attribute)) and self.array_free(expr):
            return [Origin(NO_ARRAYS, line, text)]  # 0.0, {"loss": 0.0}, len(x): jit copies Python values
        if isinstance(expr, cst.Call) and is_prng_producer(ctx.imports.resolve(expr.func)):
            return [Origin(PRNG_KEY, line, text)]
        if (isinstance(expr, cst.Call) and ctx.imports.resolve(expr.func) in REPLICATORS and expr.args
                and all(o.kind == PRNG_KEY for o in self.of_expr(expr.args[0].value, after, depth + 1))):
            return [Origin(PRNG_KEY, line, text)]  # replicate(jax.random.PRNGKey(0))
        if isinstance(expr, cst.BinaryOperation) and may_join_containers(expr):
            # ps + [w], [x] * n: a new container of the operands' own elements
            return [origin for operand in joined_operands(expr) for origin in self.of_expr(operand, after, depth)]
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
        if type(expr) in _BUILT_COMPREHENSIONS and self._new_elements(expr, after, depth):
            return [Origin(FRESH, line, text)]  # {k: jnp.zeros(n) for k, n in shapes.items()}
        key = ref_key(expr)
        if key is not None and len(key) == 1 and self.owner_of(key) == "local" and depth <= _MAX_DEPTH:
            return self._still_read(key, after, line, depth) + self.of_key(key, after, depth + 1)
        if key is None and isinstance(expr, (cst.Subscript, cst.Attribute)) and depth <= _MAX_DEPTH:
            return self.of_expr(expr.value, after, depth + 1)  # model.init(k, x)["params"]: part of a new value
        if (key is not None and len(key) > 1 and self.owner_of(key[:1]) == "local" and depth <= _MAX_DEPTH
                and not self.flow.captured.intersection(key[:1])):
            # variables["params"]: a part of a local value, own if the whole is and nothing reads the rest
            shared = tuple(self._held_elsewhere({key[0]}, None, after, 0))
            return self.of_key(key[:1], after, depth + 1) + [Origin(DERIVED, line, text, shared_with=shared)]
        if key is not None:
            owner = self.owner_of(key)
            who = {"param": "the caller's", "attribute": "an attribute's", "global": "a global's"}.get(owner, "")
            return [Origin(UNKNOWN, line, f"`{text}` is {who} value" if who else f"`{text}`")]
        return [Origin(UNKNOWN, line, text)]

    def _new_elements(self, expr, after: Point, depth: int) -> bool:
        """Whether every element a list, set or dict comprehension builds is new memory of its
        own (``{k: jnp.zeros(n) for k, n in shapes.items()}``): an expression made anew on
        each iteration (arithmetic, a call that makes new arrays) that is no name's value as
        it is, nor a part of one (``{k: base ...}`` would hold ``base`` in every entry: one
        array many times).  The comprehension's own names count only as operands of
        arithmetic, and only when what it iterates over holds no arrays."""
        element = expr.value if type(expr) is cst.DictComp else expr.elt
        imported = self.ctx.imported_names
        if direct_refs(element, imported) or part_refs(element, imported):
            return False
        bound: set[str] = set()
        iterables_array_free = True
        comp = expr.for_in
        while comp is not None:
            bound.update(target_names(comp.target))
            iterables_array_free = iterables_array_free and self.array_free(comp.iter)
            comp = comp.inner_for_in

        def made_new(value) -> bool:
            kind = type(value)
            if kind is cst.Name and value.value in bound:
                return iterables_array_free
            if kind in (cst.Integer, cst.Float, cst.SimpleString):
                return True
            if kind is cst.UnaryOperation:
                return True  # -x, ~x: a new array
            if kind is cst.BinaryOperation:
                # x * 2 is a new array whatever x is, so is jnp.zeros(n) + i; ps + [w] joins two
                # containers' elements
                return not may_join_containers(value) or self._makes_an_array(value.left) \
                    or self._makes_an_array(value.right) or (made_new(value.left) and made_new(value.right))
            if any(type(name) is cst.Name and name.value in bound for name in descendants_of_type(value, cst.Name)) \
                    and not (kind is cst.Call and iterables_array_free):
                return False
            return all(origin.kind in (FRESH, NO_ARRAYS) for origin in self.of_expr(value, after, depth + 1))

        return made_new(element)

    def _makes_an_array(self, value) -> bool:
        """Whether ``value`` is a call of jax's or numpy's (``jnp.zeros(n)``): an array, never a
        list, so arithmetic on it makes a new array."""
        if type(value) is not cst.Call:
            return False
        qualified = self.ctx.imports.resolve(value.func)
        return qualified is not None and qualified.split(".")[0] in ("jax", "numpy")

    def _still_read(self, key: RefKey, after: Point, line: int, depth: int) -> list[Origin]:
        """A doubt when a name bound to the value of ``key`` (a local the donated value
        was made from) as it is (``other = w; state = [w]``), or ``key`` itself two or
        more names back (``ps = [w]; state = ps``, then ``w``), is read after the call:
        it still holds the same arrays.  ``key`` one name back the alias analysis of
        the call already sees (``state = [w]``, then ``w``)."""
        # a local a split the donated value comes from split, written back by ``nnx.update``: reads
        # after that read other arrays (the splits being looked at: ``_of_holding_call``)
        written_back = self._write_backs(key, after)
        memo = (key, after, depth >= 2, written_back)
        if memo not in self._read_holders:  # a long ``[w] + [w] + ...`` asks once per operand
            self._read_holders[memo] = self._holder_read_after(key, after, depth >= 2, written_back)
        found = self._read_holders[memo]
        if found is None:
            return []
        holder, read_line, kept = found
        holds = "may hold its arrays (a call made it from them and may keep them)" if kept else "still holds its arrays"
        return [Origin(UNKNOWN, line, f"`{holder}` {holds}, read again at line {read_line}")]

    def _holder_read_after(self, key: RefKey, after: Point, itself: bool,
                           written_back: frozenset[int] = frozenset()) -> tuple[str, int, bool] | None:
        """``(name, line, kept)`` of the first read after the call of a name bound to ``key``'s
        value as it is or to a part of it, directly or through another such name (``a = b = w``,
        ``a, b = w, w``, ``for last in [w]``: :meth:`names_holding`), or of ``key`` itself
        (``itself``; not after one of the ``written_back`` calls), or (``kept``) of a name made
        from it by calls that may keep it (:meth:`_made_from`).  A closure that reads such a
        name may run after the call: where it is made counts as a read."""
        holders = {key: (key, False)} if itself else {}
        holders.update(self.names_holding(key))
        for holder, (source, filled) in holders.items():
            if not filled and not any(holder == key or any(overlaps(part, source) for part in event.sources + event.parts)
                                      for event in self.reaching_writes(holder, after)):
                continue  # bound to another value by the time of the call
            reads = self.flow.search(after, holder, stop_at=written_back if holder == key else frozenset()).reads
            if reads:
                return holder[0], self.ctx.positions[reads[0].node].start.line, False
            if len(holder) == 1 and (line := self._capture_line(holder[0])) is not None:
                return holder[0], line, False  # kept = w.T; report = lambda: kept.sum(), called after
        if len(key) == 1:
            for holder, read_line in self._made_from_reaching(key[0], after):
                return holder, read_line, True
        return None

    def names_holding(self, key: RefKey, limit: int = 8) -> dict[RefKey, tuple[RefKey, bool]]:
        """The locals bound to ``key``'s value as it is or to a part of it, or filled with it,
        directly or through one another (``a = w; b, a = a, b``; ``for x in [w]``, the last
        element after the loop; ``for x in [w]: kept.append(x)``), each with the name it got
        it from and whether a mutator put it there (``kept``: whatever it is bound to after);
        at most ``limit`` of them."""
        found: dict[RefKey, tuple[RefKey, bool]] = {}
        frontier = [key]
        while frontier and len(found) < limit:
            source = frontier.pop()
            for _, event in self.flow.events_about(source[0]):
                holder = event.key
                if event.kind in (WRITE, ALIAS) and holder is not None and len(holder) == 1 \
                        and holder != key and holder not in found \
                        and any(overlaps(part, source) for part in event.sources + event.parts) \
                        and self.ctx.imports.resolve(cst.Name(holder[0])) is None:
                    # (not ``nnx`` of ``nnx.update(model, state)``: a module's function, no container)
                    found[holder] = (source, event.kind == ALIAS)
                    frontier.append(holder)
        return found

    def _read_line_after(self, name: str, after: Point) -> int | None:
        """The line of the first read of the local ``name`` after ``after``, or where a
        closure that captures it is defined (it may run later: ``jax.grad(energy)(x)``)."""
        found = self.flow.search(after, (name,))
        if found.reads:
            return self.ctx.positions[found.reads[0].node].start.line
        call = self._call_event_before(after)
        for kill in found.kills:  # nbrs = nbrs.update(x): a method's receiver is read before the rebinding
            if kill.origin is None or (call is not None and (
                    kill.origin is call.node or call.node in descendants_of_type(kill.origin, cst.Call))):
                continue  # state = step(state): the donating call's own rebinding
            if any(node.value == name for node in descendants_of_type(kill.origin, cst.Name)):
                return self.ctx.positions[kill.origin].start.line
        return self._capture_line(name)

    def _kept_elsewhere(self, name: str, held: set[str], after: Point,
                        made_by: cst.Call | None = None) -> list[str]:
        """Why the local ``name``'s value may still be held after the donating call before
        ``after``, by what it was handed to: a local container a mutator put it in
        (``history.append(w)``: "which `history` holds, read again at line 9"), an object
        a method made for its effect may keep it in (:meth:`keeping_call`, ``logger.log(w)``:
        "which `logger` may hold, ..."), both when read after (or by a closure); an object
        that is not local, or a function that may keep it wherever it puts it
        (``register(w)``: "which `register(w)` (line 7) may keep"); empty when nothing is.
        The first reason that holds whatever the project's classes are, alone; else every
        reason that holds only if some class has a method that keeps its argument
        (``n = tracker.track(w)``, marked: :mod:`jaxmem.lint.values.kept_if`).
        What it is handed through another name for it or for a part of it counts too
        (``for v in [w]: history.append(v)``: :meth:`names_holding`).
        Containers and objects among ``held`` (what the donated value is made of) do not
        count, nor, when ``made_by`` (the call the donated value is made by) is given, those
        given another value of ``name`` than it is, or that call itself."""
        made_at = self.flow.point_after(made_by) if made_by is not None else None
        making = {id(made_by), *map(id, descendants_of_type(made_by, cst.Call))} if made_by is not None else set()
        marked: list[str] = []
        # the value itself, and the locals bound to it or to a part of it (``for v in [w]:
        # history.append(v)``), but not what the donated value is made of
        holders = [name, *(key[0] for key in self.names_holding((name,)) if key[0] not in held)]
        for holder in holders:
            through = f" (through `{holder}`)" if holder != name else ""
            for point, event in self.flow.events_about(holder):
                if holder == name and made_at is not None \
                        and not self.flow.same_value(name, point, Point(made_at.node, made_at.index - 1)):
                    continue
                if id(event.node) in making:
                    continue  # the call that makes the donated value: what it returns is that value
                kept, key, condition = self.keeping_call(event, holder)
                if kept and self._kept_beyond_scope(event, key):
                    if key is not None and key[0] in held:
                        continue
                    line = self.ctx.positions[event.node].start.line
                    reason = f"which `{self.ctx.text(event.node, 40)}` (line {line}) may keep{through}"
                else:
                    if not kept and (event.kind != ALIAS or event.detail != "container" or event.key is None
                                     or not any(source[0] == holder for source in event.sources)
                                     or self.library_method(event.node)):
                        continue
                    holds = "may hold" if kept else "holds"
                    key = key or event.key
                    if key[0] == holder or key[0] == name or key[0] in held or self.owner_of(key[:1]) != "local" \
                            or self.ctx.imports.resolve(cst.Name(key[0])) is not None:
                        continue  # (``nnx.update(model, state)``: a module's function, no container)
                    line = self._read_line_after(key[0], after)  # or where a closure reading it is
                    if line is None:
                        continue
                    reason = f"which `{key[0]}` {holds}{through}, read again at line {line}"
                if condition is None:
                    return [reason]
                marked.append(self.ctx.marked_kept_if(reason, condition))
        return marked

    def _kept_beyond_scope(self, event: Event, holder: RefKey | None) -> bool:
        """Whether what :meth:`keeping_call` says ``event``'s call may keep it in (``holder``)
        may outlive the scope: anywhere (None), an object that is not a local, or a local
        that is not an object only this scope reaches (:meth:`private_receiver`)."""
        return holder is None or self.owner_of(holder[:1]) != "local" or not self.private_receiver(event.node, holder)

    def keeping_call(self, event: Event, name: str) -> tuple[bool, RefKey | None, str | None]:
        """Whether ``event`` hands the local ``name`` to a call that may keep it, with the
        object that may then hold it (None when a function may keep it anywhere), and the
        condition the keeping depends on (None when none: see
        :mod:`jaxmem.lint.values.kept_if`).  A call made for its effect (a statement of its
        own, or its result thrown away) may well keep what it is given: ``(True,
        ("logger",), None)`` for ``logger.log(w)`` (``Logger.log`` appends to
        ``self.seen``), ``(True, None, None)`` for ``register(w)`` (a function of the
        project, or a local callable: it may keep it anywhere).  A call whose result is used
        may too, when its callee may keep an argument: a function of this file (the flow
        hands nothing on to those that keep none); a function of another file, as its
        summary says (``(True, None, "function:registry.register")``); a method, when some
        class has a method of that name that may keep one, which a class of this file
        decides (``method_keeps``) and any other the join (``n = tracker.track(w)``:
        ``(True, ("tracker",), "track")``).  Other calls whose result is used are taken to
        be made for that result.  A standard-library function that puts its argument into a
        container (``heapq.heappush(heap, w)``: ``CONTAINER_FUNCTIONS``) keeps it there, as
        a method of an object no name holds may keep it anywhere (``vars(box).update(w=w)``),
        as a standard-library function that keeps it for later does (``atexit.register(f, w)``:
        ``KEEPING_FUNCTIONS``).
        ``(False, None, None)`` for any other event, and for a library function, a builtin
        (``print(w)``), a method of the value itself or of a library module
        (``jax.debug.print``), a method known to keep nothing (``READING_METHODS``, a
        standard optax transform's ``init``)."""
        call = event.node
        if event.kind != ESCAPE or event.detail != "call" or event.key is None or event.key[0] != name \
                or type(call) is not cst.Call:
            return False, None, None
        func = call.func
        used = id(call) not in self.ctx.statement_calls()
        qualified = self.ctx.imports.resolve(func)
        if qualified in CONTAINER_FUNCTIONS:
            # heapq.heappush(heap, (loss, w)): kept in ``heap``, as by ``heap.append``
            container = ref_key(call.args[0].value) if call.args and not call.args[0].star else None
            return container is None or container[0] != name, container, None
        if qualified in KEEPING_FUNCTIONS:
            return True, None, None  # atexit.register(save, w): kept for later, anywhere
        if (handed := self.ctx.keeping_function_handed(call, name)) is not None:
            # functools.partial(register, w)(), map(register, [w]), Thread(target=register, args=(w,))
            return True, None, handed or None
        if type(func) is cst.Name:
            if qualified is None:  # a function of this file that may keep it (the flow asked ``retains``)
                return not used or func.value in self.ctx.module_functions, None, None
            if not self.ctx.imports.is_project(qualified):
                return not used, None, None  # its result is used: taken to be what the call is for
            # another file's function, made for its effect or not: as its summary says
            return True, None, FUNCTION + qualified.lstrip(".")
        if type(func) is not cst.Attribute:
            return False, None, None
        if self.ctx.imports.resolve(func.value) is not None:
            # a function of a module (``registry.register(w)``) or of an imported class
            if qualified is None or not self.ctx.imports.is_project(qualified):
                return False, None, None  # a library's: ``jax.debug.print``
            return True, None, FUNCTION + qualified.lstrip(".")  # as its summary says
        condition = func.attr.value if used and not self.ctx.method_keeps(func.attr.value) else None
        receiver = ref_key(func.value)  # None: an object no name holds (``vars(box).update(w=w)``)
        if (receiver is not None and receiver[0] == name) or self.keeps_nothing(call) or self.library_method(call):
            return False, None, None
        return True, receiver, condition

    def private_receiver(self, call, receiver: RefKey) -> bool:
        """Whether what ``call`` keeps in ``receiver`` stays there: it is not a method of the
        local ``receiver`` (``heapq.heappush(heap, w)`` fills a container, followed as one),
        or the local only ever holds an object this scope keeps to itself (``private_object``)."""
        func = call.func if type(call) is cst.Call else None
        if type(func) is not cst.Attribute or ref_key(func.value) != receiver:
            return True
        return len(receiver) == 1 and self.private_object(receiver[0])

    def keeps_nothing(self, call: cst.Call) -> bool:
        """Whether ``call`` provably keeps no reference to what it is given: ``tx.init(params)``
        or ``opt_init(params)`` of a standard optax transform (a pure function whose state is
        new buffers, checked per transform in ``test_array_api_facts``), ``buffer.init(x)`` of
        a flashbax buffer, a method that only reads (``vault.write(state)``, see
        ``READING_METHODS``), or a jit called where it is made (``jax.pmap(opt_init)(params)``:
        the traced function sees tracers, never the array)."""
        func = call.func
        if type(func) is cst.Attribute and func.attr.value == "init" and len(call.args) == 1:
            return self.inits_new_arrays(func.value)
        return self.only_reads(func) or self.is_transform_init(func) or self.immediate_jit(call)

    def _capture_line(self, name: str, within: cst.CSTNode | None = None) -> int | None:
        """The line of :meth:`capturing_closure`'s closure, or None."""
        closure = self.capturing_closure(name, within)
        return self.ctx.positions[closure].start.line if closure is not None else None

    def capturing_closure(self, name: str, within: cst.CSTNode | None = None) -> cst.CSTNode | None:
        """A closure of the scope (nested def, lambda, generator expression bound to a name)
        that reads the local ``name`` when it runs, which may be after any call; None when
        none does.  Closures inside ``within`` (the expression that made the value:
        ``jax.vmap(lambda q: d.replace(qpos=q))(qs)``) run as it does, and do not count."""
        if name not in self.flow.captured:
            return None
        closures = (cst.Lambda, cst.FunctionDef, cst.GeneratorExp)
        inside = {id(node) for node in descendants_of_type(within, closures)} if within is not None else set()
        return next((node for node in self.flow.capture_nodes
                     if id(node) not in inside and name in self.flow.free_names_of(node)), None)

    def _of_container(self, expr, after: Point, depth: int) -> list[Origin]:
        """Origins of a container display's elements; one doubt when two elements may hold
        the same array: one value, or a value and a part or view of it
        (``{"all": params, "w": params["w"]}``, ``{"a": jax.tree.map(lambda v: v, p), "b": p}``)."""
        elements = [e.value for e in expr.elements if isinstance(e, (cst.Element, cst.DictElement))]
        imported = self.ctx.imported_names
        seen: list[tuple[RefKey, cst.BaseExpression]] = []
        out: list[Origin] = []
        for element in elements:
            held = direct_refs(element, imported) + part_refs(element, imported)
            for key in held:
                for other, earlier in seen:
                    if overlaps(key, other):
                        line = self.ctx.positions[element].start.line
                        what = f"`{self.ctx.text(element)}`" if ref_key(element) == other else \
                            f"`{render(other)}` (through `{self.ctx.text(earlier, 30)}` and `{self.ctx.text(element, 30)}`)"
                        return [Origin(UNKNOWN, line, f"`{self.ctx.text(expr)}` holds {what} twice")]
            seen.extend((key, element) for key in held)
            out.extend(self.of_expr(element, after, depth))
        return out

    def _of_call(self, call: cst.Call, after: Point, depth: int) -> list[Origin]:
        ctx = self.ctx
        line = ctx.positions[call].start.line
        text = ctx.text(call)
        qualified = ctx.imports.resolve(call.func)
        if is_fresh_constructor(qualified, call):
            return [Origin(FRESH, line, text, qualified=qualified)]  # jnp.zeros(...): a new array
        if self.immediate_jit(call):
            return [Origin(FRESH, line, text)]  # jax.pmap(init)(rng, batch): new buffers
        if qualified in TREE_MAPS and call.args and maps_to_new_arrays(call.args[0].value, ctx.imports.resolve):
            return [Origin(FRESH, line, text)]
        if is_host_producer(qualified):
            return [Origin(HOST, line, text)]
        if qualified in TREE_MAPS and call.args and is_host_producer(ctx.imports.resolve(call.args[0].value)):
            return [Origin(HOST, line, text)]  # jax.tree.map(np.asarray, batch)
        if qualified in DEVICE_COPIES and self.holds_host_data(call_argument(call, 0, DEVICE_COPIES[qualified])):
            return [Origin(FRESH, line, text, qualified=qualified)]  # jnp.asarray(np_batch): a device copy
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if method is not None and qualified is None and self.holds_host_data(call.func.value):
            return [Origin(HOST, line, text)]  # rng.normal(size=n).astype(np.float32): NumPy's methods
        if method == "copy" and not call.args:
            return [Origin(FRESH, line, text)]  # x.copy(): a new buffer
        if _is_model_init(call, qualified, method):
            return [Origin(FRESH, line, text)]  # model.init(rng, x): new variables
        if method == "init" and len(call.args) == 1 and self.inits_new_arrays(call.func.value, depth):
            return [Origin(FRESH, line, text)]  # optax.adam(...).init(params): zeros_like moments
        if method in _FRESH_METHODS and qualified is None and self._inits_from_key(call, after, depth):
            return [Origin(FRESH, line, text)]  # network.init(key): new parameters from a PRNG key
        if self.is_transform_init(call.func):
            return [Origin(FRESH, line, text)]  # init, apply = hk.transform(f); init(rng, x): new parameters
        if method == "init" and (qualified in BLACKJAX_INITS
                                 or (qualified is None and self.is_blackjax_algorithm(call.func.value, depth))):
            # nuts.init(position), blackjax.nuts.init(position, logdensity_fn): holds the position, the rest is new
            return self._of_holding_call(call, after, depth, line, text, held=_position_argument(call))
        stepper = self.jax_md_init_of(call.func) if qualified is None and method is None else None
        if stepper in JAX_MD_INIT_TWICE:
            return [Origin(UNKNOWN, line, f"`{text}` holds one array twice (the init of `{stepper}`)")]
        if stepper is not None:
            return self._of_holding_call(call, after, depth, line, text)  # init_fn(key, R): may hold R
        if (mapped := self._mapped_by_a_helper(qualified, call)) is not None:
            if not mapped:
                return [Origin(FRESH, line, text)]  # jax.tree.map(zeros_of, params): new arrays
            return self._of_holding_call(call, after, depth, line, text, held=mapped)  # jax.tree.map(cast, s)
        if (trees := mapped_trees(qualified, call)) is not None:
            return self._of_holding_call(call, after, depth, line, text, held=trees)  # jax.tree.map(lambda v: v, s)
        effect = call_effect(qualified, method if qualified is None else None, call)
        if effect == NEW:
            return [Origin(FRESH, line, text)]
        if effect == TWICE:
            return [Origin(UNKNOWN, line, f"`{text}` holds the same arrays twice")]
        if (qualified is None and isinstance(call.func, cst.Name) and call.func.value not in self.local_names
                and (why := ctx.class_stores_twice(call.func.value, call, self._brings_no_array_twice))):
            return [Origin(UNKNOWN, line, f"`{text}` makes a `{call.func.value}`: {why}")]
        if effect in (HOLDS, PARTITION, READS) or (qualified is None and method is None and is_constructor_like(call)):
            return self._of_holding_call(call, after, depth, line, text)
        arg_reasons = self._arg_reasons(call, after)
        shared = tuple(reason for slot, reason in arg_reasons if not slot.startswith(STORED_SLOT))
        key = ref_key(call.func)
        if key is not None:
            maybe, project_name = ctx.might_be_jitted(key, self.class_scope)
            top_level = key[0] in ctx.module_functions and key[0] not in self.local_names
            if maybe or (qualified is None and (top_level or key[0] in self.nested_functions)):
                return [Origin(CALL, line, text, callee=key, qualified=project_name, shared_with=shared,
                               arg_reasons=arg_reasons)]
        if method is not None and qualified is None:
            # obj.method(...): may return the object's own arrays (``self.get_state()``).
            return [Origin(UNKNOWN, line, f"`{text}` may return arrays its object still holds")]
        # (``nnx.Rngs(0)`` keeps its name: the join says an nnx.jit parameter passed only those is not worth donating)
        derived = Origin(DERIVED, line, text, shared_with=shared,
                         qualified=qualified if qualified in DISTINCT_RESULTS else None)
        if (returns_distinct_arrays(qualified or (call.func.value if isinstance(call.func, cst.Name) else None))
                or self.new_state_nnx_optimizer(call) or _is_class_call(call)
                or _vmapped_rebuild(call, ctx.imports.resolve)):
            return [derived]  # a class (``MLP(...)``) holds what it is given ("passed twice" is an arg reason)
        # npt_nose_hoover's init_fn(key, R, box) holds one new zero as two fields: donated as made,
        # the step fails with "Attempt to donate the same buffer twice"
        return [derived, Origin(UNKNOWN, line, f"`{text}` is a call jaxmem does not know: "
                                               f"its result may hold one array in two places")]

    def _of_holding_call(self, call: cst.Call, after: Point, depth: int, line: int, text: str,
                         held: list | None = None) -> list[Origin]:
        """A call whose result holds its arguments as they are (``TrainState.create``,
        ``.replace``, a dataclass): the result is own only if each held argument
        is, and none is still held elsewhere after the donating call.  ``held``: the
        expressions the result holds, when known; by default every argument, and a
        method's receiver."""
        if held is None and self.ctx.imports.resolve(call.func) in NNX_GRAPH_VIEWS:
            held = [only] if (only := call_argument(call, 0, "node")) is not None else None  # then filters
        if held is None:
            held = [arg.value for arg in call.args if not _is_static_field(call, arg)]
            if (isinstance(call.func, cst.Attribute) and self.ctx.imports.resolve(call.func) is None
                    and not _is_class_name(call.func.value)):
                held.append(call.func.value)  # state.replace(step=0) keeps state's other leaves
        reasons = [reason for _, reason in self._arg_reasons(call, after, held)]
        # ``state = state.replace(f=p)``: the old state's field ``f`` (where an earlier
        # run of this very call put ``p``) is replaced, so that write holds nothing twice.
        replacing = (isinstance(call.func, cst.Attribute) and call.func.attr.value in ("replace", "_replace")
                     and all(arg.keyword is not None for arg in call.args))
        seen: list[tuple[RefKey, str]] = []
        for value in _elements(held):  # nnx.split((model, optimizer)): each part on its own
            through = self.ctx.text(value)
            own_write = call if replacing and value is call.func.value else None
            keys = self._may_contain(value, skip_origin=own_write, at_call=self.flow.point_after(call))
            for key, other in seen:
                if any(overlaps(key, mine) for mine in keys):
                    shown = render(key).split("<")[0].rstrip(".")
                    return [Origin(UNKNOWN, line, f"`{text}` may hold `{shown}` twice (through `{other}` "
                                                  f"and `{through}`)")]
            seen.extend((key, through) for key in sorted(keys))  # the first overlap is named: not in hash order
        out = [Origin(DERIVED, line, text, shared_with=tuple(reasons))]
        if depth <= _MAX_DEPTH:
            at_call = self.flow.point_after(call)
            graph = self.ctx.imports.resolve(call.func) in NNX_GRAPH_VIEWS
            self._through_nnx_graph += graph
            self._splitting.append(call)
            try:
                for value in held:
                    if self.array_free(value):
                        continue
                    for origin in self._of_value_at(value, at_call, after, depth + 1):
                        if origin.kind in (UNKNOWN, CALL, DERIVED):
                            out.append(origin)
            finally:
                self._through_nnx_graph -= graph
                self._splitting.pop()
        return out

    def _brings_no_array_twice(self, expr) -> bool:
        """A construction's argument that cannot make its object hold an array twice: an
        array-free value; under an nnx graph call, an ``nnx.Rngs`` too (seen once there)."""
        if self.array_free(expr):
            return True
        return self._through_nnx_graph > 0 and self.bound_only_to(
            expr, lambda call, depth: self.ctx.imports.resolve(call.func) == "flax.nnx.Rngs", 0)

    def _of_value_at(self, value, at_call: Point | None, after: Point, depth: int) -> list[Origin]:
        """Origins of ``value`` as read by the call just before ``at_call``: a local
        name has only the values of the writes that reach that call
        (``state = state.replace(step=0)`` does not hold its own result)."""
        key = ref_key(value)
        if at_call is None or key is None or len(key) != 1 or self.owner_of(key) != "local":
            return self.of_expr(value, after, depth)
        writes = self._writes_into(key, at_call)
        if not writes:
            return self.of_expr(value, after, depth)
        return [origin for event in writes for origin in self.of_write(event, after, depth)]

    @staticmethod
    def _returned_args(call: cst.Call, summary: FunctionSummary, signature) -> list:
        """The arguments of ``call`` whose arrays its result may hold, by the callee's summary
        (a result that holds one of its own new arrays twice, ``twice``, holds no argument for that:
        the origin's own check reports it); every argument when the call cannot be mapped."""
        found = returned_arguments(call, summary.returned, signature)
        return [arg.value for arg in call.args] if found is None else found

    def _may_contain(self, value, depth: int = 0, skip_origin=None, at_call: Point | None = None) -> set[RefKey]:
        """What ``value`` may hold arrays of, as keys: the values it passes, and
        (two steps back) the inputs of calls not known to return new memory
        (``opt_state = opt_init(params)`` may contain ``params``).  Disjoint
        parts get keys that do not overlap (``variables["params"]``, the
        elements unpacked from ``nnx.split(model, nnx.Param, Count)``)."""
        if depth > 2 or value is None:
            return set()
        if type(value) is cst.Name and skip_origin is None and at_call is None:
            # What a name may hold, looked at from nowhere in particular, is the same
            # wherever it is asked (``state = update(state, g)`` n times: once, not n times)
            memo = (value.value, depth)
            if memo not in self._contained:
                self._contained[memo] = self._may_contain_uncached(value, depth)
            return set(self._contained[memo])
        return self._may_contain_uncached(value, depth, skip_origin, at_call)

    def _may_contain_uncached(self, value, depth: int, skip_origin=None, at_call: Point | None = None) -> set[RefKey]:
        if self.array_free(value):
            return set()
        key = ref_key(value)
        if key is not None:
            keys = {key}
            if len(key) == 1 and self.owner_of(key) == "local":
                # read by a call: only the writes that reach it (and what they read again)
                writes = self._writes_into(key, at_call) if at_call is not None else self.writes_of(key)
                for event in writes:
                    if event.origin is None or ref_key(event.origin) == key or event.origin is skip_origin:
                        continue
                    inner = self._may_contain(event.origin, depth + 1)
                    if at_call is not None and self._older_value_of_source(key, event, at_call):
                        # ``acc = fresh`` in an earlier iteration: ``acc`` holds an older
                        # value of ``fresh`` than the call receives (fedjax's tree_mean)
                        source = ref_key(event.origin)[0]
                        inner = {(f"{source} <older value>",) + k[1:] if k[0] == source else k for k in inner}
                    if event.origin_kind == "unpack" and isinstance(event.origin, cst.Call) and \
                            call_effect(self.ctx.imports.resolve(event.origin.func)) == PARTITION:
                        inner = {k + (f"<part {event.detail}>",) for k in inner}  # disjoint parts
                    keys |= inner
            return keys
        if isinstance(value, cst.Call):
            if self._makes_new_memory(value) or self.new_state_nnx_optimizer(value):
                return set()
            # ``Model(..., rngs=rngs)``: an nnx Module draws new keys from ``rngs`` or keeps the
            # very Rngs object, which nnx's graph calls (split, state) hold only once
            parts = [arg.value for arg in value.args
                     if not (arg.keyword is not None and arg.keyword.value == "rngs" and _is_class_call(value))]
            if isinstance(value.func, cst.Name) and value.func.value in self.nested_functions:
                parts = self._returned_args(value, *self.nested_functions[value.func.value])
            elif isinstance(value.func, cst.Name) and self._names_top_level_function(value.func.value) \
                    and (helper := self.module_function(value.func.value)) is not None:
                parts = self._returned_args(value, *helper)  # a helper of this file, by its summary
            if isinstance(value.func, cst.Attribute) and self.ctx.imports.resolve(value.func) is None:
                parts.append(value.func.value)  # tx.init(params): the receiver may hand out what it holds
            elif isinstance(value.func, cst.Name) and self._is_local_object(value.func.value):
                parts.append(value.func)  # model(x): an object called may return one of its own arrays
            return set().union(*(self._may_contain(part, depth + 1) for part in parts))
        if isinstance(value, (cst.Tuple, cst.List, cst.Set, cst.Dict)):
            return set().union(*(self._may_contain(e.value, depth) for e in value.elements
                                 if isinstance(e, (cst.Element, cst.DictElement, cst.StarredElement))))
        if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
            return set()  # arithmetic makes new arrays
        if isinstance(value, cst.IfExp):
            return self._may_contain(value.body, depth) | self._may_contain(value.orelse, depth)
        if isinstance(value, (cst.Subscript, cst.Attribute)):
            return self._may_contain(value.value, depth)
        return {(name,) for name in _names_in_expr(value) if self.owner_of((name,)) == "local"}

    def _mapped_by_a_helper(self, qualified: str | None, call: cst.Call) -> list | None:
        """For ``jax.tree.map(f, *trees)`` with ``f`` a top-level function of this file (one def,
        by its summary): ``[]`` when ``f`` returns new memory, the trees when it may return
        (a part of) what it is given as it is (``def cast(x): return x.astype(x.dtype)``);
        None for any other call, or an ``f`` whose result may hold one array twice, or what
        it was not given (a module's value), or that may keep an argument elsewhere."""
        if qualified not in TREE_MAPS or qualified in MAP_PARAMS or any(arg.star for arg in call.args):
            return None
        positional = [arg.value for arg in call.args if arg.keyword is None]
        if len(positional) < 2 or type(positional[0]) is not cst.Name \
                or not self._names_top_level_function(positional[0].value) \
                or (helper := self.module_function(positional[0].value)) is None:
            return None
        summary, signature = helper
        parameters = {param.name for param in signature.params}
        if summary.twice is not None or summary.made or self.ctx.keeps_beyond_result(positional[0].value) \
                or any(name not in parameters for name in summary.returned):
            return None  # (a module's value, ``<global>``, or one it may keep elsewhere too)
        return positional[1:] if summary.returned else []

    def _names_top_level_function(self, name: str) -> bool:
        """Whether a call by ``name`` here reaches the file's top-level def of that name:
        in a function, no local binds it; at module level, nothing else binds it."""
        if self.is_module:
            return name in self.ctx.module_functions and name not in self.ctx.rebound_functions()
        return self.owner_of((name,)) == "global"

    def _older_value_of_source(self, key: RefKey, event, at_call: Point) -> bool:
        """Whether ``event`` (a write ``key = source`` of a local name) copies a value of
        ``source`` older than any the call before ``at_call`` can read: every path from the
        write to the call rebinds ``source``, and every write of ``source`` reaching the call
        makes new buffers, so its value there was made after the copy and shares nothing
        with it.  Two such copies of one ``source`` still share with each other: their keys
        stay equal."""
        source = ref_key(event.origin)
        if source is None or len(source) != 1 or source == key or self.owner_of(source) != "local":
            return False
        call_event = self._call_event_before(at_call)
        if call_event is None:
            return False
        point = next((p for p, e in self._write_points(key) if e is event), None)
        if point is None or self.flow.search(Point(point.node, point.index + 1), source,
                                             until_call=call_event.node).reached:
            return False
        writes = self.reaching_writes(source, at_call)
        return bool(writes) and all(
            w.origin_kind == "value" and isinstance(w.origin, cst.Call) and self._makes_new_memory(w.origin)
            for w in writes)

    def new_state_nnx_optimizer(self, call: cst.Call) -> bool:
        """``nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)``: its state is new
        moments; it keeps no reference to ``model`` (flax 0.12.8, checked by buffer)."""
        return self.ctx.imports.resolve(call.func) == "flax.nnx.Optimizer" and self.new_state_transform_of(call)

    def new_state_transform_of(self, call: cst.Call) -> bool:
        """Whether the transform ``call`` (``nnx.Optimizer(model, tx)``,
        ``nnx.ModelAndOptimizer(model, tx)``) is given, as ``tx=`` or second, is a
        standard optax transform whose state is new moments."""
        tx = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "tx"]
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        tx = tx or positional[1:2]
        return bool(tx) and self.is_new_state_optimizer(tx[0])

    def passed_beside(self, value, call: cst.Call, at_call: Point, values=None) -> Origin | None:
        """Why ``value`` (an argument of ``call``) may share arrays with another argument of the same
        call, if it may: jax rejects donating a buffer that the call also receives otherwise ("Attempt
        to donate a buffer which is also used by the same call"), so such a donation is never proved.
        ``state = State(0, params); step(params, state)``: ``state`` holds ``params`` itself.
        ``values``: every value the call passes, when they differ from its arguments (a spread
        ``*args``; the same for every question about one call)."""
        held = self._held_by_args.get(id(call))
        if held is None:
            # Once per call, for all its arguments.  This call's own earlier results (``a, b = step(a, b)``
            # in a loop) are left out: the outputs of a jitted call are new buffers, one per output.
            held = self._held_by_args[id(call)] = [
                (argument, set() if self.array_free(argument) else
                 self._may_contain(argument, skip_origin=call, at_call=at_call))
                for argument in (values if values is not None else [arg.value for arg in call.args])]
        mine = next((keys for argument, keys in held if argument is value), None)
        if mine is None:  # not one of them as written (none is known to reach here): asked directly
            mine = set() if self.array_free(value) else self._may_contain(value, skip_origin=call, at_call=at_call)
        for argument, theirs in held:
            if argument is value:
                continue
            if any(overlaps(a, b) for a in mine for b in theirs):
                line = self.ctx.positions[call].start.line
                return Origin(UNKNOWN, line, f"`{self.ctx.text(value)}` may share arrays with `{self.ctx.text(argument)}`, "
                                             "which the same call also receives (jax rejects donating a buffer "
                                             "another argument of the call holds)")
        return None

    def holds_host_data(self, expr: cst.BaseExpression | None) -> bool:
        """Whether ``expr`` evaluates to host NumPy data only, no device array a donation
        could delete: a call of a NumPy function (or ``jax.device_get``), a method of what
        one returns (``rng.normal(size=n).astype(np.float32)``), or a local every write
        of which is one of these (:attr:`host_names`)."""
        key = ref_key(expr) if expr is not None else None
        if key is not None:
            return len(key) == 1 and key[0] in self.host_names
        if not isinstance(expr, cst.Call):
            return False
        qualified = self.ctx.imports.resolve(expr.func)
        if is_host_producer(qualified):
            return True
        if qualified in TREE_MAPS and expr.args and is_host_producer(self.ctx.imports.resolve(expr.args[0].value)):
            return True  # jax.tree.map(np.asarray, batch)
        return qualified is None and isinstance(expr.func, cst.Attribute) and self.holds_host_data(expr.func.value)

    @property
    def host_names(self) -> frozenset[str]:
        """The locals of the scope whose every write binds host data (flow-insensitive: every
        write counts).  The largest such set: ``x = np.ones(n); x = x.astype(np.float32)``
        keeps ``x``, whose writes hold host data if the others do."""
        if self._host_names is None:
            self._write_points(("",))  # fills self._writes
            writes = {key[0]: self.writes_of(key) for key in self._writes
                      if len(key) == 1 and self.owner_of(key) == "local" and key[0] not in self.flow.captured}
            self._host_names = frozenset(name for name, events in writes.items() if all(
                event.origin is not None and event.origin_kind in ("value", "unpack") for event in events))
            while True:  # drop a name one of whose writes is not host data, until none is
                kept = frozenset(name for name in self._host_names
                                 if all(self.holds_host_data(event.origin) for event in writes[name]))
                if kept == self._host_names:
                    break
                self._host_names = kept
        return self._host_names

    def key_holds_host_data(self, key: RefKey, after: Point) -> bool:
        """Whether the local ``key`` holds host NumPy data only at the call before ``after``:
        only the writes that reach the call count (after ``x = jnp.ones(n); x = np.ones(n)`` it does)."""
        if len(key) > 1 or self.owner_of(key) != "local" or key[0] in self.flow.captured:
            return False  # a closure may rebind what it captures (``nonlocal x``)
        origins = self.of_key(key, after, 0)
        return bool(origins) and all(origin.kind == HOST for origin in origins)

    def _makes_new_memory(self, call: cst.Call) -> bool:
        """Whether ``call``'s result is known to be new buffers only."""
        qualified = self.ctx.imports.resolve(call.func)
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if is_fresh_constructor(qualified, call) or is_host_producer(qualified) or is_prng_producer(qualified):
            return True
        if qualified in TREE_MAPS and call.args and maps_to_new_arrays(call.args[0].value, self.ctx.imports.resolve):
            return True
        if self.immediate_jit(call):
            return True
        if call_effect(qualified, method if qualified is None else None, call) == NEW:
            return True
        if _is_model_init(call, qualified, method):
            return True
        if method == "init" and len(call.args) == 1 and self.inits_new_arrays(call.func.value):
            return True
        if method in _FRESH_METHODS and qualified is None and self._inits_from_key(call, None, 0):
            return True
        key = ref_key(call.func)
        return self.is_transform_init(call.func) or (key is not None and key[0] in self.ctx.local_callees)

    def immediate_jit(self, call: cst.Call) -> bool:
        """``jax.pmap(initial_state)(rng, batch)``: a jit or pmap called where it is made
        returns new buffers (jax 0.10.2, also for outputs that pass an input through)."""
        if not isinstance(call.func, cst.Call):
            return False
        found = self.ctx.finder.calls.jit_call(call.func)
        return found is not None and found[2] is not None and found[0].name in _NEW_RESULT_TRANSFORMS

    def _inits_from_key(self, call: cst.Call, after: Point | None, depth: int) -> bool:
        """``network.init(key)``: one argument, provably a PRNG key; an initialiser
        given nothing but randomness makes new parameters (brax, haiku without inputs)."""
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star or depth > _MAX_DEPTH:
            return False
        return self.is_prng_key(call.args[0].value)

    def is_prng_key(self, value) -> bool:
        """Whether ``value`` is a local name bound only to PRNG keys (``key = jax.random.PRNGKey(0)``)."""
        key = ref_key(value)
        if key is None or len(key) != 1 or self.owner_of(key) != "local":
            return False
        writes = self.writes_of(key)
        return bool(writes) and all(
            isinstance(event.origin, cst.Call) and is_prng_producer(self.ctx.imports.resolve(event.origin.func))
            and event.origin_kind in ("value", "unpack") for event in writes)

    def is_transform_init(self, func) -> bool:
        """Whether ``func`` is a local name bound only as the ``init`` of a pure
        transform pair (``params_init, loss_fn = hk.transform(f)``) or of an optax
        transform whose state is new buffers (``opt_init, opt_update = optax.adam(lr)``)."""
        key = ref_key(func)
        if key is None or len(key) != 1:
            return False
        if self.owner_of(key) == "global":
            return self._module_optax_init(key[0])
        if self.owner_of(key) != "local":
            return False
        writes = self.writes_of(key)
        return bool(writes) and all(
            event.origin_kind == "unpack" and isinstance(event.origin, cst.Call)
            and (event.detail == str(INIT_APPLY_PAIRS.get(self.ctx.imports.resolve(event.origin.func), -1))
                 # opt_init, opt_update = optax.adam(lr): a GradientTransformation is (init, update)
                 or (event.detail == "0" and self.is_new_state_optimizer(event.origin)))
            for event in writes)

    def jax_md_init_of(self, func) -> str | None:
        """The jax-md simulator whose ``init_fn`` ``func`` is (``init_fn, apply_fn =
        simulate.nve(...)``, ``JAX_MD_STEPPERS``): a name bound only by that unpacking."""
        key = ref_key(func)
        if key is None or len(key) != 1:
            return None
        if self.owner_of(key) == "global":
            found = self.ctx.module_unpacked(key[0])
            origins = [(found[0], found[1], found[2])] if found is not None else []
        elif self.owner_of(key) == "local":
            origins = [(event.origin, event.detail, None) for event in self.writes_of(key)
                       if event.origin_kind == "unpack"]
            if len(origins) != len(self.writes_of(key)):
                return None
        else:
            return None
        steppers = {self.ctx.imports.resolve(value.func) for value, position, _ in origins
                    if isinstance(value, cst.Call) and str(position) == "0"}
        if len(origins) == 0 or len(steppers) != 1 or not steppers <= JAX_MD_STEPPERS:
            return None
        return next(iter(steppers)) if all(str(position) == "0" for _, position, _ in origins) else None

    def _module_optax_init(self, name: str) -> bool:
        """``opt_init, opt_update = optax.adam(lr)`` at module level, the only binding of ``opt_init``
        (module-level code binds it nowhere else, and no function declares it ``global``)."""
        found = self.ctx.module_unpacked(name)  # None also when bound by an assignment, a loop, ``global``
        return found is not None and found[1] == 0 and self.is_new_state_optimizer(found[0])

    def is_new_state_optimizer(self, expr, depth: int = 0) -> bool:
        """Whether ``expr`` is an optax transform whose ``init`` makes new buffers only
        (``optax.adam(1e-3)``, a chain of such, a name bound only to one, or a call of a
        top-level function of this file that returns only such: ``make_optimizer(config)``)."""
        def made_by(call: cst.Call, inner: int) -> bool:
            qualified = self.ctx.imports.resolve(call.func)
            if qualified is None and isinstance(call.func, cst.Name) \
                    and self._names_top_level_function(call.func.value):
                return self._optimizer_factory(call.func.value)
            return _standard_optax_call(call, qualified, lambda arg: self.is_new_state_optimizer(arg, inner),
                                        self.ctx.imports.resolve, lambda arg: self.array_free(arg, inner),
                                        lambda arg: self.plain_hyperparameter(arg, inner), self._dicts_bound)

        return self.bound_only_to(expr, made_by, depth)

    def _dicts_bound(self, expr) -> list[cst.Dict] | None:
        """The dict literals the name ``expr`` is bound to (``rates = {"kernel": optax.adam(1e-3)}``,
        given to ``optax.partition(rates, labels)``), when every binding is one and nothing is
        stored into it (no item or attribute store, container method, or call that may fill
        it); None otherwise."""
        key = ref_key(expr)
        if key is None or len(key) != 1 or not isinstance(expr, cst.Name):
            return None
        owner = self.owner_of(key)
        if owner == "global":
            values = self.ctx.module_values(key[0])
            if not values or self.ctx.may_gain_arrays(key[0]) or self.ctx.stored_into(key[0]):
                return None
        elif owner == "local":
            values = [event.origin if event.origin_kind == "value" else None for event in self.writes_of(key)]
            if self.is_module and (self.ctx.may_gain_arrays(key[0]) or self.ctx.stored_into(key[0])):
                return None
            if self._store_level(key[0]) != NO_STORE or self._has_stores(key[0]):
                return None
        else:
            return None
        return values if values and all(isinstance(value, cst.Dict) for value in values) else None

    def _has_stores(self, name: str) -> bool:
        """Whether the scope stores anything into the value of ``name`` (``d[k] = v``, ``d.x = v``,
        ``d.update(...)``), literals too."""
        return bool(self._stores_by_name()[1].get(name)) or any(
            event.kind == WRITE and event.key is not None and len(event.key) > 1 and event.key[0] == name
            for _, event in self.flow.events())

    def plain_hyperparameter(self, expr, depth: int = 0) -> bool:
        """A hyperparameter ``optax.inject_hyperparams`` copies into new arrays: array-free, and
        no function of the program (a lambda, a def, a ``partial``), whose result it would
        keep as it is when that is an array; an optax schedule of array-free arguments
        computes new arrays."""
        if depth > _MAX_DEPTH or not self.array_free(expr, depth):
            return False
        if type(expr) is cst.Lambda:
            return False
        if type(expr) is cst.Call:
            return self.ctx.imports.resolve(expr.func) not in PARTIAL_NAMES  # a schedule, float(...), ...
        if type(expr) is cst.IfExp:
            return self.plain_hyperparameter(expr.body, depth + 1) and self.plain_hyperparameter(expr.orelse, depth + 1)
        key = ref_key(expr)
        if type(expr) is not cst.Name or key is None:
            return True  # a literal, config.learning_rate, FLAGS.lr
        owner = self.owner_of(key)
        if owner == "param":
            return not self.writes_of(key)  # annotated array-free (``lr: float``), never rebound
        if owner == "global":
            values = self.ctx.module_values(key[0])
            return bool(values) and all(self.plain_hyperparameter(value, depth + 1) for value in values)
        writes = self.writes_of(key) if owner == "local" else ()
        return bool(writes) and all(event.origin_kind == "value" and event.origin is not None
                                    and self.plain_hyperparameter(event.origin, depth + 1) for event in writes)

    def _optimizer_factory(self, name: str) -> bool:
        """Whether the file's top-level function ``name`` (one undecorated def) returns a
        standard optax transform on every ``return`` (see :func:`returns_new_state_optimizer`)."""
        memo = self.ctx.optimizer_factories
        if name not in memo:
            defs = self.ctx.module_functions.get(name, ())
            memo[name] = False  # a factory calling itself: not proved
            memo[name] = len(defs) == 1 and name not in self.ctx.rebound_functions() \
                and returns_new_state_optimizer(defs[0], self.ctx.imports.resolve, self._optimizer_factory)
        return memo[name]

    def inits_new_arrays(self, receiver, depth: int = 0) -> bool:
        """Whether ``receiver.init(x)`` returns new arrays only and keeps none of ``x``'s:
        ``receiver`` is a standard optax transform (:meth:`is_new_state_optimizer`) or a
        flashbax buffer (``fbx.make_flat_buffer(...)``, see ``FLASHBAX_BUFFERS``)."""
        return self.is_new_state_optimizer(receiver, depth) or self.is_flashbax_buffer(receiver, depth)

    def is_flashbax_buffer(self, expr, depth: int = 0) -> bool:
        """Whether ``expr`` is a flashbax buffer of ``FLASHBAX_BUFFERS``, or a name bound only to one."""
        return self.bound_only_to(
            expr, lambda call, inner: self.ctx.imports.resolve(call.func) in FLASHBAX_BUFFERS, depth)

    def is_blackjax_algorithm(self, expr, depth: int = 0) -> bool:
        """Whether ``expr`` is a blackjax sampling algorithm of ``BLACKJAX_ALGORITHMS``, or a name bound only to one."""
        return self.bound_only_to(
            expr, lambda call, inner: self.ctx.imports.resolve(call.func) in BLACKJAX_ALGORITHMS, depth)

    def only_reads(self, func) -> bool:
        """Whether ``func`` is ``obj.method`` where ``obj`` is bound only to a library object
        whose ``method`` keeps and returns nothing of its arguments (``READING_METHODS``:
        ``buffer.sample(state, key)`` of a flashbax buffer, ``vault.write(state)``)."""
        if not isinstance(func, cst.Attribute) or func.attr.value not in _READING_METHOD_NAMES:
            return False  # most calls: no flow query
        method = func.attr.value
        return self.bound_only_to(
            func.value, lambda call, inner: method in READING_METHODS.get(self.ctx.imports.resolve(call.func), ()), 0)

    def library_method(self, call) -> bool:
        """Whether ``call`` is a method of an object bound only to what a library that keeps
        nothing it is given makes (``NON_RETAINING_ROOTS`` but numpy, whose object arrays
        hold what ``a.put(i, w)`` puts there: ``tx = optax.sgd(0.1)``, then
        ``tx.update(grads, opt_state, params)``; ``logging.getLogger()``): not the project's
        method of that name, nor a container's ``update``."""
        if type(call) is not cst.Call or type(call.func) is not cst.Attribute:
            return False
        return self.bound_only_to(call.func.value, lambda made, inner: (
            (qualified := self.ctx.imports.resolve(made.func)) is not None
            and qualified.split(".")[0] in _OBJECTS_KEEP_NOTHING), 0)

    def is_stateless_optimizer(self, expr, depth: int = 0, at: Point | None = None) -> bool:
        """Whether ``expr`` is an optax transform whose ``init`` holds no array
        (``optax.sgd(0.02)``, ``optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1))``,
        or a name bound only to one; with ``at``, the point after a call, only the
        bindings that reach that call count: ``tx = optax.adam(...)`` earlier in a
        notebook does not make a later ``tx = optax.sgd(0.02); tx.init(p)`` hold arrays)."""
        def made_by(call: cst.Call, inner: int) -> bool:
            qualified = self.ctx.imports.resolve(call.func)
            if qualified == "optax.chain":
                return bool(call.args) and all(
                    arg.keyword is None and self.is_stateless_optimizer(arg.value, inner) for arg in call.args)
            if qualified == "optax.sgd" and (len(call.args) > 1 or any(
                    a.keyword is not None and a.keyword.value != "learning_rate" for a in call.args)):
                return False  # momentum, nesterov, accumulator_dtype: a trace state
            return qualified in OPTAX_NO_STATE and all(_is_number(arg.value) for arg in call.args)

        return self.bound_only_to(expr, made_by, depth, at)

    def bound_only_to(self, expr, made_by, depth: int, at: Point | None = None) -> bool:
        """Whether ``expr`` is a call ``made_by(call, depth)`` accepts, or a local or
        module-level name (``tx = optax.adam(1e-3)``) bound only to such calls."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            return made_by(expr, depth + 1)
        key = ref_key(expr)
        if key is None or len(key) != 1:
            return False
        if self.owner_of(key) == "global":
            values = self.ctx.module_values(key[0])
            return bool(values) and all(self.bound_only_to(value, made_by, depth + 1) for value in values)
        if self.owner_of(key) != "local":
            return False
        writes = self.reaching_writes(key, at) if at is not None else self.writes_of(key)
        return bool(writes) and all(
            event.origin_kind == "value" and event.origin is not None
            and self.bound_only_to(event.origin, made_by, depth + 1) for event in writes)

    def array_free(self, expr, depth: int = 0) -> bool:
        """Whether ``expr``'s value provably holds no device array (by origin:
        a literal, a known array-free call, a name bound only to such)."""
        if depth > _MAX_DEPTH or expr is None:
            return False
        # ``type(expr) is``: libcst's node classes have no subclasses, and isinstance
        # against them (ABCs) is slow on this path, the analysis' most frequent
        kind = type(expr)
        if kind in _LITERAL_NODES:
            return True
        if kind is cst.Name and expr.value in ("None", "True", "False"):
            return True
        if kind is cst.Subscript:
            return self.array_free(expr.value, depth + 1)  # x.shape[0], config["lr"]
        if kind is cst.Tuple or kind is cst.List or kind is cst.Set:
            return all(self.array_free(e.value, depth + 1) for e in expr.elements)
        if kind is cst.Dict:
            return all(isinstance(e, cst.DictElement) and self.array_free(e.value, depth + 1)
                       for e in expr.elements)
        if kind is cst.Call:
            if (isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "init" and len(expr.args) == 1
                    and self.is_stateless_optimizer(expr.func.value, depth + 1, self.flow.point_after(expr))):
                return True  # optax.sgd(0.02).init(params): empty states only
            qualified = self.ctx.imports.resolve(expr.func)
            if qualified is None and isinstance(expr.func, cst.Name):
                qualified = expr.func.value  # builtins: len, int, str, ...
            kind = array_free_call(qualified)
            if kind == "always":
                return True
            if kind == "if_args":
                return all(self.array_free(a.value, depth + 1) for a in expr.args)
            return False
        key = ref_key(expr)
        if key is None:
            return False
        resolved = self.ctx.imports.resolve(expr)
        if array_free_call(resolved) == "value":
            return True  # absl.flags.FLAGS
        if resolved is not None and (_is_library_class(resolved) or library_function(resolved)):
            return True  # nnx.Param, optax.ScaleByAdamState: a class; nnx.relu, jax.nn.gelu: a function
        if kind is cst.Attribute:
            if expr.attr.value in METADATA_ATTRIBUTES or expr.attr.value in _FUNCTION_ATTRIBUTES:
                return True
            return self.array_free(expr.value, depth + 1)  # FLAGS.batch_size, config.model
        if len(key) != 1:
            return False
        owner = self.owner_of(key)
        if owner == "param":
            # annotated array-free, and any rebinding in the body array-free too
            return key[0] in self.array_free_params and all(
                event.origin is None or self.array_free(event.origin, depth + 1) for event in self.writes_of(key)) \
                and not self._gains_arrays(key[0], depth)
        if owner == "global":
            if self.ctx.module_values(key[0]) is None and key[0] in self.ctx.module_definitions:
                return True  # a class or function defined at module level, not a value with arrays
            values = self.ctx.module_values(key[0])
            return bool(values) and all(self.array_free(value, depth + 1) for value in values) \
                and not self.ctx.may_gain_arrays(key[0])
        if owner != "local":
            return False
        writes = self.writes_of(key)
        return bool(writes) and all(
            (event.origin_kind == "value" and event.origin is not None
             and self.array_free(event.origin, depth + 1)) or self._structure_part(event) for event in writes) \
            and not self._gains_arrays(key[0], depth, [event.origin for event in writes]) and not (self.is_module and self.ctx.may_gain_arrays(key[0]))

    def _gains_arrays(self, name: str, depth: int, values=None) -> bool:
        """Whether the scope may put an array into the value bound to ``name`` after binding it: an
        attribute or item store (``config.w = jnp.ones(4)``, ``d["w"] = w``) or a container method
        (``layers.append(w)``, ``cfg.update(w=w)``) given a value not proved array-free, or a call
        given it that may store into it (see :mod:`~jaxmem.lint.values.param_stores`; ``values``:
        what ``name`` is bound to, None for a parameter).  A value array-free by its origin may
        still hold arrays stored into it later."""
        if self._store_level(name) != NO_STORE and (values is None or not all(
                is_immutable(value, self.ctx.imports.resolve) for value in values)):
            self._gained_by_call.add(name)
            return True
        if self._stored_into_names is None:
            found: dict[str, list] = {}
            for _, event in self.flow.events():
                key = event.key
                if event.kind == WRITE and key is not None and len(key) > 1 and event.detail != "del" \
                        and not isinstance(event.node, cst.Param):
                    value = event.origin if event.origin_kind == "value" else \
                        event.origin.value if isinstance(event.origin, cst.AugAssign) else None
                    found.setdefault(key[0], []).append(value)
            self._stored_into_names = found
        stored = list(self._stored_into_names.get(name, ()))
        stored += [arg.value for call in self._stores_by_name()[1].get(name, ()) for arg in call.args]
        if not stored or name in self._gaining:
            # asked again while its stores are looked at (``config.path = config.path or default``):
            # what it held before brings it no array, so assume none (the greatest fixpoint)
            return False
        self._gaining.add(name)
        try:
            return any(value is None or not self.array_free(value, depth + 1) for value in stored)
        finally:
            self._gaining.discard(name)

    def _store_level(self, name: str) -> int:
        """What the scope's calls given ``name`` may do to it (``populate(config)``): the
        strongest :meth:`StoreFinder.store_into` answer over them."""
        if self._storing_calls is None:
            finder = self.ctx.store_finder()
            statements = self.ctx.statement_calls()
            found: dict[str, int] = {}
            for call in self.flow.call_nodes:
                for arg, passed in passed_values(call):
                    if found.get(passed, NO_STORE) < STORES:
                        level = counted_level(finder.store_into(call, arg, self.local_names), call, statements)
                        if level > found.get(passed, NO_STORE):
                            found[passed] = level
                            self._storing_call[passed] = call
            self._storing_calls = found
        return self._storing_calls.get(name, NO_STORE)

    def gained_by(self, name: str) -> str | None:
        """Why ``name``, array-free by its origin, was found to hold arrays, when a call may
        have given them (for messages): ``"`populate(config)` (line 27) may store into it"``,
        or None."""
        if name not in self._gained_by_call:
            return None
        call = self._storing_call[name]
        return f"`{self.ctx.text(call, 40)}` (line {self.ctx.positions[call].start.line}) may store into it"

    def _structure_part(self, event) -> bool:
        """``graphdef`` in ``graphdef, state = nnx.split(model)``: a part with no arrays."""
        return (event.origin_kind == "unpack" and isinstance(event.origin, cst.Call)
                and str(ARRAY_FREE_PARTS.get(self.ctx.imports.resolve(event.origin.func), -1)) == event.detail)

    def _arg_reasons(self, call: cst.Call, after: Point, values=None) -> tuple[tuple[str, str], ...]:
        """Per argument of ``call`` (``"0"``, ``"1"``, ... or its keyword), why the
        value it passes may still be held after the donating call: read again,
        the caller's, held by an attribute or a global, passed twice, or made
        (one more call back) from such a value (``gdef, gstate = nnx.split(self)``).
        Arguments that provably hold no arrays are left out, except that for a function
        of another project file, which may store an array into one (``cfg.w = ...``), the
        reasons a mutable one is still held come under ``STORED_SLOT + slot``."""
        if values is None:
            slots = [("*" if arg.star else arg.keyword.value if arg.keyword is not None else str(i), arg.value)
                     for i, arg in enumerate(call.args)]
        else:
            slots = [("", value) for value in values]
        out: list[tuple[str, str]] = []
        seen_args: set[RefKey] = set()
        other_file = values is None and self._calls_another_file(call)
        for slot, value in slots:
            if self.array_free(value):
                if other_file and slot != "*" and (key := ref_key(value)) is not None \
                        and not is_immutable(value, self.ctx.imports.resolve):
                    out.extend((STORED_SLOT + slot, reason) for reason in self._filled_held(key[0], call, after))
                continue
            key = ref_key(value)
            if key is not None:
                if key in seen_args:
                    out.append((slot, f"`{self.ctx.text(value)}`, passed twice"))
                seen_args.add(key)
                if len(key) > 1 and self.owner_of(key) in ("attribute", "global", "param"):
                    out.append((slot, f"`{self.ctx.text(value)}`, which something else still holds"))
            contained = {key[0] for key in self._may_contain(value)}
            out.extend((slot, reason) for reason in self._held_elsewhere(contained, call, after, 0))
        return tuple(out)

    def _calls_another_file(self, call: cst.Call) -> bool:
        """Whether ``call`` calls a function an import names from another project file."""
        qualified = self.ctx.imports.resolve(call.func)
        return qualified is not None and self.ctx.imports.is_project(qualified)

    def _filled_held(self, name: str, call: cst.Call, after: Point) -> list[str]:
        """Why the value ``name`` (which holds no array), once ``call`` stores an array
        into it, still holds that array after the donating call."""
        if self.owner_of((name,)) == "global":
            return [f"`{name}`, a module-level value"]
        return self._held_elsewhere({name}, call, after, 0)

    def _held_elsewhere(self, names, call: cst.Call, after: Point, depth: int) -> list[str]:
        reasons: list[str] = []
        for name in sorted(names):
            if depth < 2 and self.owner_of((name,)) == "local":
                for event in self.view_writes_of(name):
                    # Followed back only through views of their argument
                    # (``gdef, gstate = nnx.split(self)``): other calls make new arrays.
                    if event.origin is not call:
                        inner = self._held_elsewhere(self._names_held_by(event.origin), event.origin, after, depth + 1)
                        reasons.extend(f"`{name}` (made from {why})" for why in inner)
            for key, via in self._aliases((name,)):
                owner = self.owner_of(key)
                named = f"`{key[0]}`" + (f" (through `{via}`)" if via else "")
                if owner == "param":
                    reasons.append(caller_holds(named))
                elif owner == "local" and self.writes_of(key):
                    # written back by nnx.update after a split of it the donated value comes from
                    reads = self.flow.search(after, key, stop_at=self._write_backs(key, after, call)).reads
                    if reads:
                        read_line = self.ctx.positions[reads[0].node].start.line
                        reasons.append(f"{named}, read again at line {read_line}")
                    elif not self.defined_only(key[0]) and (closure_line := self._capture_line(key[0], call)) is not None:
                        reasons.append(f"{named}, which a closure or generator (line {closure_line}) reads "
                                       f"whenever it runs")
                    elif (kept := self._kept_elsewhere(key[0], names, after, call if key == (name,) else None)):
                        reasons.extend(f"{named}, {why}" for why in kept)

            if self.owner_of((name,)) == "local":
                for holder, why in self._made_from_reaching(name, after):
                    reasons.append(f"`{holder}` (made from `{name}` by a call that may keep it), {why}")
        return reasons

    def _write_backs(self, key: RefKey, after: Point, made_by: cst.Call | None = None) -> frozenset[int]:
        """Ids of the ``nnx.update(model, state)`` calls after which the local ``key`` (a graph
        that ``made_by`` or a split being looked at, an unfiltered ``nnx.split``, split) holds
        none of the arrays the donating call before ``after`` deletes: the step returns the
        whole state of what it merged from the split's state, and the update writes that
        result back (nnx_write_back)."""
        found: frozenset[int] = frozenset()
        if len(key) != 1:
            return found
        for split in (made_by, *self._splitting):
            if split is None:
                continue
            memo = (id(split), after)
            if memo not in self._written_back:
                self._written_back[memo] = self._find_write_backs(split, after)
            names, calls = self._written_back[memo]
            if key[0] in names:
                found |= calls
        return found

    def _find_write_backs(self, made_by: cst.Call, after: Point) -> tuple[tuple[str, ...], frozenset[int]]:
        """(the names ``made_by`` splits, the ids of the calls that write them back): see
        :meth:`_write_backs`."""
        nothing = ((), frozenset())
        resolve = self.ctx.imports.resolve
        source = only_argument(made_by) if resolve(made_by.func) in SPLITS else None
        names = graph_names(source) if source is not None else None
        donating = self._call_event_before(after)
        if not names or donating is None:
            return nothing
        donating = donating.node
        parts = {event.detail: event.key[0] for _, event in self.flow.events()
                 if event.kind == WRITE and event.origin is made_by and event.origin_kind == "unpack"
                 and event.key is not None and len(event.key) == 1}
        graphdef, state = parts.get("0"), parts.get("1")
        if set(parts) != {"0", "1"} or not isinstance(donating.func, cst.Name):
            return nothing
        function = self.function_def(donating.func.value, after)
        if function is None:
            return nothing
        positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
        passed = {}
        for index, arg in enumerate(donating.args):
            if arg.star or not isinstance(arg.value, cst.Name):
                continue
            param = arg.keyword.value if arg.keyword is not None else \
                positional[index] if index < len(positional) else None
            passed[arg.value.value] = param
        outputs = {event.detail if event.origin_kind == "unpack" else None
                   for event in self.writes_of((state,)) if event.origin is donating}
        if (passed.get(state) is None or passed.get(graphdef) is None or len(outputs) != 1
                or not all(o is None or o.isdigit() for o in outputs)):
            return nothing
        output = next(iter(outputs))
        graphdef_outputs = {event.detail for event in self.writes_of((graphdef,)) if event.origin is donating}
        if graphdef_outputs - {"0"} or (graphdef_outputs and output != "1"):
            return nothing
        if not returns_whole_state(function, passed[state], passed[graphdef], None if output is None else int(output),
                                   resolve, split_only=bool(graphdef_outputs)):
            return nothing
        # (``graphdef, state = step(graphdef, state)`` when the step returns ``nnx.split(model)``)
        own = lambda event: event.origin is made_by or event.origin is donating
        if not all(own(e) for e in self.reaching_writes((state,), after)) or not all(
                own(e) for e in self.reaching_writes((graphdef,), after)):
            return nothing
        found = set()
        for update in self.flow.call_nodes:
            point = self.flow.point_after(update)
            if (resolve(update.func) in UPDATES and len(update.args) == 2 and point is not None
                    and all(a.keyword is None and not a.star for a in update.args)
                    and graph_names(update.args[0].value) == names
                    and isinstance(update.args[1].value, cst.Name) and update.args[1].value.value == state
                    and all(own(e) for e in self.reaching_writes((state,), point))):
                found.add(id(update))
        return names, frozenset(found)

    def _is_local_object(self, name: str) -> bool:
        """Whether the local ``name`` is bound only to instances of classes (``model =
        MLP(rngs)``, ``nnx.Linear(...)``, ``nnx.merge(graphdef, state)``): calling it runs
        its ``__call__``."""
        writes = self.writes_of((name,)) if self.owner_of((name,)) == "local" else ()
        return bool(writes) and all(isinstance(event.origin, cst.Call) and event.origin_kind != "unpack" and (
            _is_class_call(event.origin) or self.ctx.imports.resolve(event.origin.func) in _NNX_OBJECT_MAKERS)
            for event in writes)

    def _names_held_by(self, call: cst.Call) -> set[str]:
        """The names whose values ``call``'s result may hold: those of its arguments
        (:func:`_names_in`), only the first for an nnx graph view, whose others are
        filters (``nnx.split(model, nnx.Param, Count)``), and a local called as a function
        (``model(x)`` may return one of the Module's own arrays)."""
        if self.ctx.imports.resolve(call.func) in NNX_GRAPH_VIEWS \
                and (node := call_argument(call, 0, "node")) is not None:
            return _names_in_expr(node)
        if isinstance(call.func, cst.Name) and self._is_local_object(call.func.value):
            return _names_in(call) | {call.func.value}  # ``y = model(x)``: may be one of ``model``'s arrays
        return _names_in(call)

    def _made_from(self, name: str) -> tuple[str, ...]:
        """The other locals some write of which is a call that receives the local
        ``name`` and may keep its arrays (``nbrs = neighbor_fn.allocate(positions)``:
        a jax-md neighbor list keeps its positions): they may hold ``name``'s
        buffers after it is donated through another value."""
        if self._made_from_of is None:
            found: dict[str, set[str]] = {}
            for _, event in self.flow.events():
                if (event.kind == WRITE and event.key is not None and len(event.key) == 1
                        and event.detail != "del" and isinstance(event.origin, cst.Call)):
                    for source in self._names_held_by(event.origin):
                        if source != event.key[0]:
                            found.setdefault(source, set()).add(event.key[0])
            self._made_from_of = {
                source: tuple(sorted(holder for holder in holders if self.owner_of((holder,)) == "local"
                                     and (source,) in self._may_contain(cst.Name(holder))))
                for source, holders in found.items()}
        return self._made_from_of.get(name, ())

    def _made_from_reaching(self, name: str, after: Point) -> list[tuple[str, str]]:
        """``(holder, why)`` per local of :meth:`_made_from` whose value at the call just
        before ``after`` may be one made from ``name``, and that is read after it (or
        captured by a closure, which may run later), or kept where the flow does not
        follow it (:meth:`_holder_kept`)."""
        out = []
        for holder in self._made_from(name):
            if not any(isinstance(event.origin, cst.Call)
                       and not {name, holder}.isdisjoint(self._names_held_by(event.origin))
                       for event in self.reaching_writes((holder,), after)):
                continue  # bound to another value by the time of the call (not ``h = Holder(h)``)
            read_line = self._read_line_after(holder, after)
            if read_line is not None:
                out.append((holder, f"read again at line {read_line}"))
            elif (kept := self._holder_kept(holder, name, after)) is not None:
                out.append((holder, kept))
        return out

    def _holder_kept(self, holder: str, name: str, after: Point) -> str | None:
        """Why the local ``holder``, while it holds a value a call made from ``name`` and may
        keep it in (``h = Holder(w)``), may be held beyond what the scope reads: stored into
        a module-level value or an object it does not own (``KEPT.append(h)``, ``box.h =
        h``), captured, yielded, handed to a call that may keep it (``remember(h)``), or the
        object of a method call made for its effect when a class of this file has a method
        of that name that may keep something (``h.register()`` may put ``h`` itself
        anywhere); the same for the locals bound to it, filled with it or made from it in
        turn (``h2 = h``, ``d = {"h": h}``, ``h = Holder(h)``), or one of those read after
        the call.  None when none of these is seen.  Only a making call that sees the value
        ``name`` has at the donating call just before ``after`` counts."""
        call = self._call_event_before(after)
        memo = (holder, name, id(call))
        if memo in self._holders_kept:
            return self._holders_kept[memo]
        writes = self._write_points((holder,))
        # made again from itself (``h = Holder(h)``): it holds the value after that rebinding too
        remade = any(isinstance(event.origin, cst.Call) and holder in self._names_held_by(event.origin)
                     for _, event in writes)
        made: list[Point] | None = None  # the making writes, found when first asked (searches)

        def holds_it(event) -> bool:  # ``holder`` may still hold what a making call bound it to
            nonlocal made
            if remade:
                return True
            if made is None:
                made = [point for point, write in writes
                        if isinstance(write.origin, cst.Call) and name in self._names_held_by(write.origin)
                        and (call is None or self.flow.search(Point(point.node, point.index + 1), (name,),
                                                              until_event=call).reached)]
            return any(self.flow.search(Point(point.node, point.index + 1), (holder,),
                                        until_event=event).reached for point in made)

        self._holders_kept[memo] = found = self._holder_escape(holder, name, after, holds_it, call)
        return found

    def _holder_escape(self, holder: str, name: str, after: Point, holds_it: Callable, call) -> str | None:
        """:meth:`_holder_kept` once ``holds_it`` is known: ``holder`` and the names that
        hold it in turn, each checked for an escape or a read after the call."""
        donating = call.node if call is not None else None
        todo: list[tuple[str, Callable]] = [(holder, holds_it)]
        seen = {holder, name}
        while todo and len(seen) <= _MAX_HOLDERS:
            current, gate = todo.pop()
            why = self._escape_of(current, gate, donating)
            if why is None and current != holder and (line := self._read_line_after(current, after)) is not None:
                why = f"read again at line {line}"
            if why is not None:
                return why if current == holder else f"{why} (through `{current}`)"
            for other in [*(key[0] for key in self.names_holding((current,))), *self._made_from(current)]:
                if other not in seen and self.owner_of((other,)) == "local":
                    seen.add(other)
                    todo.append((other, lambda event: True))
        return None

    def _escape_of(self, holder: str, gate: Callable, donating: cst.Call | None) -> str | None:
        """Why the local ``holder`` may be kept where the flow does not follow it, by the
        events ``gate`` accepts other than the ``donating`` call's own (see
        :meth:`_holder_kept`); None when it is not."""
        for _, event in self.flow.events_about(holder):
            if event.node is donating:
                continue
            why = None
            if event.kind == ESCAPE and event.key is not None and event.key[0] == holder:
                if event.detail != "call":
                    why = "which is kept where jaxmem does not follow it"
                else:
                    kept, key, _ = self.keeping_call(event, holder)
                    if kept and self._kept_beyond_scope(event, key):
                        why = f"which `{self.ctx.text(event.node, 40)}` may keep"
            elif event.kind in (WRITE, ALIAS) and event.key is not None and event.key[0] != holder \
                    and any(source[0] == holder for source in event.sources + event.parts) \
                    and self.owner_of(event.key[:1]) != "local":
                why = f"stored in `{render(event.key)}`"
            if why is not None and gate(event):  # the gate last: it searches the flow
                return f"{why} (line {self.ctx.positions[event.node].start.line})"
        for event in self._method_calls_for_effect().get(holder, ()):
            call = event.node
            if self.ctx.method_keeps(call.func.attr.value) and gate(event):
                line = self.ctx.positions[call].start.line
                return f"whose method `{self.ctx.text(call, 40)}` (line {line}) may keep it"
        return None

    def _method_calls_for_effect(self) -> dict[str, list]:
        """The CALL events of the scope's method calls made for their effect, by the name of
        the object they are called on (``holder.register()``), built once."""
        if self._effect_method_calls is None:
            effects = self.ctx.statement_calls()
            found: dict[str, list] = {}
            for _, event in self.flow.events():
                call = event.node
                if event.kind == CALL_EVENT and type(call) is cst.Call and id(call) in effects \
                        and type(call.func) is cst.Attribute and type(call.func.value) is cst.Name:
                    found.setdefault(call.func.value.value, []).append(event)
            self._effect_method_calls = found
        return self._effect_method_calls

    def _aliases(self, key: RefKey) -> tuple[tuple[RefKey, str], ...]:
        """``key`` and the names it was copied from (``params = initial_params``),
        each with the name it was reached through (worked out once per key)."""
        found = self._aliases_of.get(key)
        if found is None:
            out = [(key, "")]
            for event in self.writes_of(key):
                if event.origin_kind == "value" and event.origin is not None:
                    source = ref_key(event.origin)
                    if source is not None and len(source) == 1 and source != key:
                        out.append((source, key[0]))
            found = self._aliases_of[key] = tuple(out)
        return found


_MAX_HOLDERS = 8  # names followed from a holder made from a donated value (see _holder_kept)


def _is_number(expr) -> bool:
    """``0.02``, ``-1``, ``1e-3``: a numeric literal."""
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _elements(values) -> list:
    """``values`` with literal tuples and lists replaced by their elements, recursively."""
    out = []
    for value in values:
        if isinstance(value, (cst.Tuple, cst.List)) and all(isinstance(e, cst.Element) for e in value.elements):
            out.extend(_elements([e.value for e in value.elements]))
        else:
            out.append(value)
    return out


def _names_in(call: cst.Call) -> set[str]:
    """Names whose values a call receives as arguments (a method's receiver
    rarely shares buffers with its result: ``model.init``, ``tx.update``)."""
    return set().union(*(_names_in_expr(arg.value) for arg in call.args))


def _is_library_class(qualified: str) -> bool:
    """``flax.nnx.Param``: a capitalised name imported from a known library."""
    parts = qualified.lstrip(".").split(".")
    return parts[0] in KNOWN_LIBRARIES and len(parts) > 1 and parts[-1][:1].isupper() and not parts[-1].isupper()


def _is_static_field(call: cst.Call, arg: cst.Arg) -> bool:
    """``tx=`` and ``apply_fn=`` of ``TrainState.create``: static fields, not leaves."""
    return (isinstance(call.func, cst.Attribute) and call.func.attr.value == "create"
            and arg.keyword is not None and arg.keyword.value in STATIC_FIELDS)


# Calls that return an nnx object (flax 0.12.8): the Module rebuilt around a State, a view of one.
_NNX_OBJECT_MAKERS = frozenset({"flax.nnx.merge", "flax.nnx.graph.merge", "flax.nnx.view"})


def _is_class_call(call: cst.Call) -> bool:
    """``MLP(...)``, ``nnx.Linear(...)``: a capitalised callee, a class by convention."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name[:1].isupper()


def _vmapped_rebuild(call: cst.Call, resolve) -> bool:
    """``jax.vmap(lambda q: d.replace(qpos=q))(qs)`` (mjx's batch of data): vmap returns each
    output leaf as a new array (a batched result, or an unbatched one broadcast: jax 0.10.2)
    unless it is a batched input passed through; a body that only rebuilds a value
    (``.replace``, a class) and uses each parameter at most once passes none through twice."""
    func = call.func
    if not isinstance(func, cst.Call) or not func.args or resolve(func.func) != "jax.vmap":
        return False
    function = func.args[0].value
    if not isinstance(function, cst.Lambda) or not isinstance(function.body, cst.Call):
        return False
    body = function.body
    rebuilds = _is_class_call(body) or (isinstance(body.func, cst.Attribute)
                                        and body.func.attr.value in ("replace", "_replace"))
    if not rebuilds or descendants_of_type(body, (cst.NamedExpr, cst.Lambda)):
        return False
    used = [name.value for name in descendants_of_type(body, cst.Name)]
    return all(used.count(param.name.value) <= 1 for param in function.params.params)


def _is_class_name(expr) -> bool:
    """``TrainState`` in ``TrainState.create(...)``: a class, not a value."""
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return name[:1].isupper() and not name.isupper()


def _names_in_expr(expr) -> set[str]:
    """Names whose values ``expr`` may pass on (not callees' function attributes)."""
    names: set[str] = set()
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)  # exact types: libcst's node classes have no subclasses (and isinstance is slow)
        if kind is cst.Name:
            names.add(node.value)
        elif kind is cst.Lambda or kind is cst.FunctionDef:
            continue
        elif kind is cst.Attribute and node.attr.value in _FUNCTION_ATTRIBUTES:
            continue
        else:
            stack.extend(children(node))
    return names


@dataclass(frozen=True)
class FunctionSummary:
    """What a project function's result holds, for its callers (per-file fact).

    ``twice``: why the result holds one value in two places (the EMA helper
    ``TrainState.create(params=params, ema_params=params, ...)``), or None;
    ``returned``: the parameters whose arrays the result may hold as they are
    (in whole or in part), so the caller's argument there shares them.
    A result that holds neither is new memory, as far as its body shows.
    ``keeps``: whether passing it a value may keep that value alive after
    the call (:func:`keeps_arguments`).
    ``made``: the classes of other project files (import-resolved names) whose
    instances the result may hold; the join knows which of them store one value
    twice (``FileFacts.twice_classes``), which this file cannot see.
    ``stores``: the parameters its body stores a non-literal into
    (``cfg.w = jnp.ones(4)``; :meth:`StoreFinder.stored_parameters`): the
    caller's value passed there may hold an array afterwards.
    """

    twice: str | None = None
    returned: tuple[str, ...] = ()
    keeps: bool = False  # may keep an argument after it returns (stores, yields, closures, returns one)
    made: tuple[str, ...] = ()
    stores: tuple[str, ...] = ()


def _standard_optax_call(call: cst.Call, qualified: str | None, is_standard, resolve, array_free,
                         hyperparameter, dicts_of=lambda expr: None) -> bool:
    """``optax.adam(lr)`` (:data:`OPTAX_NEW_STATE`); ``optax.chain`` or a wrapper of
    :data:`OPTAX_WRAPPERS` whose inner transforms ``is_standard`` accepts (no
    ``*transforms``; a mapping of them written in the call or, through ``dicts_of``, the
    dict literals a name is bound to); one of :data:`OPTAX_NEW_STATE_IF_ARRAY_FREE` with
    arguments ``array_free`` accepts; ``optax.inject_hyperparams(optax.adamw)(...)`` with
    hyperparameters ``hyperparameter`` accepts."""
    if any(arg.star for arg in call.args):
        return False
    if qualified == "optax.chain":
        return all(arg.keyword is None and is_standard(arg.value) for arg in call.args)
    if qualified in OPTAX_WRAPPERS:
        return _standard_wrapper(call, OPTAX_WRAPPERS[qualified], is_standard, dicts_of)
    if qualified in OPTAX_NEW_STATE_IF_ARRAY_FREE:
        base = call_argument(call, 0, "base_optimizer") if qualified == "optax.contrib.schedule_free" else None
        if qualified == "optax.contrib.schedule_free" and (base is None or not is_standard(base)):
            return False
        return all(arg.value is base or array_free(arg.value) for arg in call.args)
    if qualified is None and isinstance(call.func, cst.Call) and resolve(call.func.func) in OPTAX_INJECT:
        factory = call_argument(call.func, 0, "inner_factory")
        return factory is not None and not any(arg.star for arg in call.func.args) \
            and resolve(factory) in OPTAX_NEW_STATE - {"optax.chain"} \
            and all(hyperparameter(arg.value) for arg in call.args)
    return qualified in OPTAX_NEW_STATE


def _standard_wrapper(call: cst.Call, wrapper, is_standard, dicts_of=lambda expr: None) -> bool:
    """Whether every inner transform of a wrapper call (see :data:`OPTAX_WRAPPERS`) is standard;
    ``dicts_of``: the dict literals a name given as a mapping is bound to (None: not known)."""
    (keyword, position, form), refused = wrapper
    if any(call_argument(call, at, name) is not None for name, at in refused.items()):
        return False
    if form == "pairs":
        return bool(call.args) and all(
            arg.keyword is None and isinstance(arg.value, cst.Tuple) and len(arg.value.elements) == 2
            and not isinstance(arg.value.elements[1], cst.StarredElement)
            and is_standard(arg.value.elements[1].value) for arg in call.args)
    inner = call_argument(call, position, keyword)
    if form == "mapping":
        mappings = [inner] if isinstance(inner, cst.Dict) else dicts_of(inner) if inner is not None else None
        return bool(mappings) and all(
            isinstance(element, cst.DictElement) and is_standard(element.value)
            for mapping in mappings for element in mapping.elements)
    return inner is not None and is_standard(inner)


def returns_new_state_optimizer(function: cst.FunctionDef, resolve, factory) -> bool:
    """Whether every ``return`` of ``function`` (undecorated, not a generator) gives a
    standard optax transform: a call of :data:`OPTAX_NEW_STATE`, ``optax.chain`` of
    such, ``factory(name)`` for a call of another top-level function, or a local that
    only top-level assignments of such bind (``tx = optax.adamw(lr); return tx``)."""
    from jaxmem.lint.syntax.walk import descendants, target_names

    if function.decorators or function.asynchronous is not None:
        return False  # a decorator may return something else (a cache is fine, but not proved)
    own = list(descendants(function.body, into_scopes=False))
    if any(isinstance(node, (cst.Yield, cst.Global, cst.Nonlocal)) for node in own):
        return False
    returns = [node for node in own if isinstance(node, cst.Return)]
    bound, straight = _scope_bindings(function)
    params = {p.name.value for p in [*function.params.posonly_params, *function.params.params,
                                      *function.params.kwonly_params]}
    # every value a straight-line local is assigned; None for ``a, b = ...`` or ``a = b = ...``
    assigned: dict[str, list] = {}
    for node in own:
        if isinstance(node, cst.Assign):
            single = len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
            for target in node.targets:
                for name in target_names(target.target):
                    assigned.setdefault(name, []).append(node.value if single else None)
        elif isinstance(node, cst.AnnAssign) and node.value is not None and isinstance(node.target, cst.Name):
            assigned.setdefault(node.target.value, []).append(node.value)

    def standard(expr, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Name):
            return expr.value in straight and expr.value not in params and bool(assigned.get(expr.value)) \
                and all(standard(value, depth + 1) for value in assigned[expr.value])
        if not isinstance(expr, cst.Call):
            return False
        qualified = resolve(expr.func)
        if qualified is None and isinstance(expr.func, cst.Name) and expr.func.value not in params \
                and expr.func.value not in bound:
            return factory(expr.func.value)  # a top-level function (no local of that name)
        return _standard_optax_call(expr, qualified, lambda arg: standard(arg, depth + 1), resolve, _is_number,
                                    _is_number)

    return bool(returns) and all(r.value is not None and standard(r.value) for r in returns)


def annotated_array_free(function: cst.FunctionDef, imports) -> frozenset[str]:
    """Parameters annotated with a type that holds no arrays (``config: ConfigDict``,
    ``workdir: str``, ``n: int``)."""
    out = set()
    p = function.params
    for param in [*p.posonly_params, *p.params, *p.kwonly_params]:
        annotation = param.annotation.annotation if param.annotation is not None else None
        if annotation is not None and _array_free_type(annotation, imports):
            out.add(param.name.value)
    return frozenset(out)


def _array_free_type(annotation, imports) -> bool:
    """``int``, ``ConfigDict``, ``Optional[str]``, ``int | None``, ``Union[str, Path]``."""
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return _array_free_type(annotation.left, imports) and _array_free_type(annotation.right, imports)
    if isinstance(annotation, cst.Subscript):
        base = imports.resolve(annotation.value) if imports is not None else None
        base = base or (annotation.value.value if isinstance(annotation.value, cst.Name) else None)
        if base not in ("typing.Optional", "typing.Union", "Optional", "Union"):
            return False
        return all(isinstance(e.slice, cst.Index) and _array_free_type(e.slice.value, imports)
                   for e in annotation.slice)
    resolved = imports.resolve(annotation) if imports is not None else None
    name = resolved or (annotation.value if isinstance(annotation, cst.Name) else None)
    return name is not None and name.lstrip(".") in ARRAY_FREE_TYPES


_Held = tuple[tuple[RefKey, bool], ...]  # (what is held as-is, certainly (or only maybe))
_MAX_HELD = 64  # what one local may hold before the summary gives up (and assumes the worst)
_MAX_KEY = 4  # parts of a held key kept (x.a.b.c...): shorter keys only overlap more


MODULE_HELD = "<global>"  # in FunctionSummary.returned: the result may hold a module-level value
DECORATOR_HELD = "<decorator>"  # in FunctionSummary.returned: a decorator (a cache) may keep the result
_HELD_ELSEWHERE = (MODULE_HELD, DECORATOR_HELD)
_UNKNOWN_RESULT = ("<unknown call>",)  # held twice by the result of a call jaxmem does not know
_TWICE_RESULT = ("<held twice>",)  # held twice by the result of a helper or class that holds one value twice
_CLASS_MADE = "<instance of>"  # (_CLASS_MADE, class, call): an instance of another project file's class
_REBOUND = "<rebound>"  # (_REBOUND, p): what parameter ``p`` holds once the body rebinds it, not the caller's value


def summarize_function(function: cst.FunctionDef, imports, *, certain_only: bool = False,
                       summary_of=None, free: frozenset[str] = frozenset(),
                       new_memory: frozenset[str] = frozenset(),
                       module_names: frozenset[str] = frozenset(), signature_of=None) -> FunctionSummary:
    """The :class:`FunctionSummary` of ``function`` from its body alone.

    Flow-insensitive over the body (a name holds the union of what all its
    assignments hold), through literal containers, constructor-like calls and
    the holding calls of :mod:`jaxmem.lint.values.array_api`.  An unknown call may
    return any of its arguments (a "maybe" hold: it counts for ``returned``,
    not for ``twice``; ``certain_only`` leaves maybe-holds out of ``returned``).
    ``summary_of(name)`` gives the summaries of the file's other top-level
    functions, so a helper calling a helper is followed; with ``signature_of(name)``
    (the helper's :class:`Signature`, None when unknown) its result holds only the
    arguments bound to the parameters it returns.  For a nested def, ``free``
    names the enclosing scopes' variables it reads (tracked like parameters, so a
    result holding one says so in ``returned``) and ``new_memory`` the jitted
    callables it calls (their results are new buffers).  ``module_names`` are the
    file's module-level variables and imported names: a result that may hold one
    (``return CACHE["w"]``, ``return HOLDER.get()``) lists :data:`MODULE_HELD` in
    ``returned``, so no caller takes it for new memory."""
    from jaxmem.lint.syntax.walk import descendants, descendants_of_type

    params = [p.name.value for p in [*function.params.posonly_params, *function.params.params,
                                     *function.params.kwonly_params]]
    if isinstance(function.params.star_arg, cst.Param):
        params.append(function.params.star_arg.name.value)
    if function.params.star_kwarg is not None:
        params.append(function.params.star_kwarg.name.value)
    # a parameter annotated as holding no arrays (``obs_size: int``) is never held
    tracked = set(params) - annotated_array_free(function, imports)
    bound, straight = _scope_bindings(function)
    # a jitted callable's name the body binds itself may be another value
    new_memory = new_memory - set(params) - bound
    holder = _Holdings(imports, tracked | set(free), summary_of, new_memory,
                       frozenset(module_names) - set(params) - set(free), signature_of, function)
    name = function.name.value
    returned, _ = _walk_bindings(holder, function, imports, straight)
    if holder.overflow:
        # too many values flow together to follow: assume the worst, cheaply
        return FunctionSummary(f"`{name}` mixes too many values to summarise", tuple(params))
    # the typed lookup first (most functions have no yield), then only this scope's own
    if descendants_of_type(function.body, (cst.Yield, cst.Await)) and any(
            isinstance(node, (cst.Yield, cst.Await)) for node in descendants(function.body, into_scopes=False)):
        # a generator (or coroutine) object holds its arguments until it runs
        returned.append(tuple(((p,), False) for p in params))
    twice = None
    roots: list[str] = []
    for held in returned:
        key = _first_overlap([key for key, sure in held if sure and key[0] != _CLASS_MADE])
        if twice is None and key is not None:
            twice = (f"`{name}` returns the result of a call jaxmem does not know, which may hold one array twice"
                     if key[0] == _UNKNOWN_RESULT[0] else
                     f"`{name}` returns a value that holds one value in two places" if key[0] == _TWICE_RESULT[0]
                     else f"`{name}` returns `{'.'.join(key[1:] if key[0] == _REBOUND else key)}` in two places")
        roots.extend(key[0] for key, sure in held
                     if (key[0] in holder.params or key[0] in _HELD_ELSEWHERE) and key[0] not in roots
                     and (sure or not certain_only))
    if not certain_only and may_keep_results(function, imports) and DECORATOR_HELD not in roots:
        roots.append(DECORATOR_HELD)
    held_elsewhere = tuple(marker for marker in _HELD_ELSEWHERE if marker in roots)
    made = tuple(dict.fromkeys(key[1] for held in returned for key, _ in held if key[0] == _CLASS_MADE))
    return FunctionSummary(twice, tuple(p for p in params if p in roots) + held_elsewhere, made=made)


_STORING_METHODS = ("__init__", "__post_init__")


def stores_one_value_twice(cls: cst.ClassDef, imports, free_at_call=None, graph_node=None) -> str | None:
    """Why an instance of ``cls`` may hold one array in two places: its ``__init__``
    (or ``__post_init__``) stores one value, a parameter or an array it made, in two
    attributes (``zero = jnp.zeros(n); self.position = zero; self.momentum = zero``:
    donating the instance fails with "Attempt to donate the same buffer twice",
    jax 0.10.2).  None when no such method does; flow-insensitive, like
    :func:`summarize_function` (a name holds what all its assignments hold).
    ``free_at_call(method)``: the parameters a construction passes array-free values
    (:func:`array_free_at_call`); one stored twice is then no array held twice.
    ``graph_node(call)``: whether a call makes an nnx graph node (a Module, a Variable),
    which nnx.jit and nnx.split see once however many attributes hold it."""
    for method in cls.body.body:
        if not isinstance(method, cst.FunctionDef) or method.name.value not in _STORING_METHODS:
            continue
        params = [p.name.value for p in [*method.params.posonly_params, *method.params.params,
                                         *method.params.kwonly_params]]
        if not params:
            continue
        own, params = params[0], set(params[1:]) - annotated_array_free(method, imports)
        if free_at_call is not None:
            params -= free_at_call(method)
        if (aliased := _attribute_stored_again(method, own, graph_node)) is not None:
            return (f"`{cls.name.value}.{method.name.value}` stores `{own}.{aliased}` in a second attribute: "
                    f"an instance may hold one array twice")
        holder = _Holdings(imports, params, function=method)
        _, stored = _walk_bindings(holder, method, imports, straight_line_names(method), own=own)
        key = _first_overlap([key for key, sure in stored
                              if sure and key[0] not in (_UNKNOWN_RESULT[0], _CLASS_MADE)])  # as callers
        if key is not None:
            return (f"`{cls.name.value}.{method.name.value}` stores `{'.'.join(key)}` in two attributes: "
                    f"an instance may hold one array twice")
    return None


def array_free_at_call(method: cst.FunctionDef, call: cst.Call, is_free) -> frozenset[str]:
    """The parameters of ``method`` (an ``__init__``) that ``call`` (a construction) binds to
    values ``is_free`` (an expression predicate) accepts, or leaves at a literal default.
    None of them for ``__post_init__`` (its fields are bound by the dataclass) or a call
    with ``*``/``**`` arguments or more positional arguments than parameters."""
    if method.name.value != "__init__" or any(arg.star for arg in call.args):
        return frozenset()
    p = method.params
    positional = [*p.posonly_params, *p.params][1:]
    given_positionally = [arg.value for arg in call.args if arg.keyword is None]
    if len(given_positionally) > len(positional):
        return frozenset()
    given = {param.name.value: value for param, value in zip(positional, given_positionally)}
    given.update((arg.keyword.value, arg.value) for arg in call.args if arg.keyword is not None)
    free = set()
    for param in [*positional, *p.kwonly_params]:
        name = param.name.value
        if name in given:
            if is_free(given[name]):
                free.add(name)
        elif param.default is not None and _literal_default(param.default):
            free.add(name)
    return frozenset(free)


def _literal_default(expr: cst.BaseExpression) -> bool:
    """A default that holds no array: a number, a string, ``None``, ``True`` or ``False``."""
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"))


def _attribute_stored_again(method: cst.FunctionDef, own: str, graph_node=None) -> str | None:
    """The attribute ``B`` that ``method`` stores again in another attribute of ``own``
    (``self.right = self.left``, ``self.ema = self.params["w"]``): the instance then holds
    B's value twice, whatever made it.  None when it never does.  With ``graph_node``, an
    attribute ``B`` that ``method`` binds only to calls ``graph_node`` accepts, stored again
    whole, is left out (nnx sees a shared Module once)."""
    from jaxmem.lint.syntax.walk import small_statements, suite_statements

    smalls = [small for small in small_statements(suite_statements(method.body), into_scopes=False)
              if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None]
    nodes = set()
    if graph_node is not None:
        made: dict[str, bool] = {}
        for small in smalls:
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            for target in targets:
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                        and target.value.value == own:
                    made[target.attr.value] = made.get(target.attr.value, True) and \
                        isinstance(small.value, cst.Call) and graph_node(small.value)
        nodes = {name for name, node in made.items() if node}
    for small in smalls:
        source = _own_attribute(small.value, own)
        if source is None or (source in nodes and isinstance(small.value, cst.Attribute)
                              and isinstance(small.value.value, cst.Name)):
            continue
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        for target in targets:
            for element in (target.elements if isinstance(target, (cst.Tuple, cst.List)) else [target]):
                stored = element.value if isinstance(element, (cst.Element, cst.StarredElement)) else element
                name = _own_attribute(stored, own)
                if name is not None and name != source:
                    return source
    return None


def _own_attribute(node: cst.BaseExpression, own: str) -> str | None:
    """``B`` of ``own.B``, ``own.B.c`` or ``own.B[i]``: the attribute of ``own`` whose value
    (or part of it) ``node`` is; None for anything else."""
    name = None
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute):
            name = node.attr.value
        node = node.value
    return name if isinstance(node, cst.Name) and node.value == own else None


def _walk_bindings(holder: "_Holdings", function: cst.FunctionDef, imports, straight: frozenset[str], *,
                   own: str | None = None) -> tuple[list[_Held], list]:
    """Bind every assignment of ``function``'s own body in ``holder``, twice over (a
    second pass lets loops' later assignments reach earlier uses); return what each
    ``return`` holds and, with ``own`` (``self``), what is stored in ``own``'s attributes
    instead of bound.  With ``own``, augmented assignments are left out (``self.n += 1``
    makes a new value).  A binding of a name in ``straight`` replaces what it held
    (see :func:`straight_line_names`)."""
    from jaxmem.lint.syntax.walk import small_statements, statements, suite_statements

    kinds = (cst.Assign, cst.AnnAssign) if own is not None else (cst.Assign, cst.AnnAssign, cst.AugAssign)
    smalls = list(small_statements(suite_statements(function.body), into_scopes=False))
    in_loops = {id(small) for loop in statements(suite_statements(function.body), into_scopes=False)
                if isinstance(loop, (cst.For, cst.While))
                for small in small_statements(suite_statements(loop.body), into_scopes=False)}
    nested_defs = [stmt for stmt in statements(suite_statements(function.body), into_scopes=False)
                   if type(stmt) is cst.FunctionDef]
    returned: list[_Held] = []
    stored: list = []
    holder.straight = straight
    for _ in range(2):
        holder.restart()
        returned, stored = [], []
        for small in smalls:
            if isinstance(small, cst.Return) and small.value is not None and own is None:
                returned.append(holder.held(small.value))
            elif own is None and isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                holder.mutate(small.value, id(small) in in_loops)
            elif isinstance(small, kinds) and small.value is not None:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                held = holder.held(small.value)
                prng = own is None and isinstance(small.value, cst.Call) and imports is not None \
                    and is_prng_producer(imports.resolve(small.value.func))
                for target in targets:
                    if own is not None and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                            and target.value.value == own:
                        stored.extend(held)
                    elif isinstance(target, (cst.Subscript, cst.Attribute)):
                        holder.store(target, held, id(small) in in_loops)
                    else:
                        holder.bind(target, held, prng)
        for nested in nested_defs:  # bound after the pass: the next one returns what they keep
            holder.bind(nested.name, holder.closure_held(nested))
            holder.closures.add(nested.name.value)
    return returned, stored


def straight_line_names(function: cst.FunctionDef) -> frozenset[str]:
    """The names (parameters included) that ``function``'s own scope binds only by
    plain assignments at the top level of its body, and that no nested def, class,
    lambda or generator expression mentions.  The top level runs once, in order,
    so at every point the latest such assignment before it (in source order) is
    the only one that reaches: a new one replaces what the name held
    (``state = strip(state); state = step(state); return state`` returns what
    ``step`` made, not the caller's ``state``)."""
    return _scope_bindings(function)[1]


_DEFINITIONS = (cst.FunctionDef, cst.ClassDef)

# Code that runs after the statement defining it (exact types: libcst's node classes have no subclasses).
_RUNS_LATER = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.GeneratorExp})


def _scope_bindings(function: cst.FunctionDef) -> tuple[frozenset[str], frozenset[str]]:
    """``(every name function's own scope binds, its straight-line names)`` from one walk
    of the body (see :func:`straight_line_names`)."""
    from jaxmem.lint.syntax.walk import bound_names, descendants, suite_statements, target_names

    top: set[int] = set()
    assigned: set[str] = set()
    for stmt in suite_statements(function.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                top.update(id(target) for target in small.targets)
                assigned.update(name for target in small.targets for name in target_names(target.target))
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                top.add(id(small))
                assigned.update(target_names(small.target))
    bound_elsewhere: set[str] = set()
    mentioned_later: set[str] = set()  # read by a closure or a lazy generator when it runs, not here
    for node in descendants(function.body, into_scopes=False):
        if type(node) in _RUNS_LATER:
            mentioned_later.update(n.value for n in descendants(node) if isinstance(n, cst.Name))
        if id(node) not in top:
            bound_elsewhere.update(bound_names(node))
    return frozenset(assigned | bound_elsewhere), frozenset(assigned - bound_elsewhere - mentioned_later)


def _first_overlap(keys: list[RefKey]) -> RefKey | None:
    """The first key that overlaps one before it (one value held in two places), or None."""
    for i, key in enumerate(keys):
        if any(overlaps(key, other) for other in keys[:i]):
            return key
    return None


# Decorators that return what the function returns, each call anew: jax's and its
# libraries' transforms (a jit caches compiled code, not results), method kinds, typing.
_TRANSPARENT_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "functools.wraps",
                                     "typing.overload", "abc.abstractmethod"})
_TRANSPARENT_ROOTS = ("jax.", "flax.", "haiku.", "equinox.", "chex.", "typing.", "abc.", "pytest.", "absl.testing.")


def may_keep_results(function: cst.FunctionDef, imports) -> bool:
    """Whether a decorator of ``function`` may hand callers a result it keeps:
    ``functools.lru_cache``/``functools.cache`` return the same arrays to every
    call with the same arguments (donating one deletes the cached value), and a
    decorator jaxmem does not know may do the same."""
    for decorator in function.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            qualified = imports.resolve(expr.func) if imports is not None else None
            if qualified == "functools.partial" and expr.args:
                expr = expr.args[0].value  # @partial(jax.jit, static_argnums=0)
            else:
                expr = expr.func
        qualified = imports.resolve(expr) if imports is not None else None
        if qualified is None and isinstance(expr, cst.Name):
            qualified = expr.value  # builtins: staticmethod, property
        if qualified is None or not (qualified in _TRANSPARENT_DECORATORS or qualified.startswith(_TRANSPARENT_ROOTS)):
            return True
    return False


class _Holdings:
    """What each local name of one body holds as-is, in terms of parameters
    and of locals made fresh (so ``z = zeros(...); return z, z`` is caught)."""

    def __init__(self, imports, params: set[str], summary_of=None, new_memory=frozenset(),
                 module_names=frozenset(), signature_of=None, function: cst.FunctionDef | None = None) -> None:
        self.imports = imports
        self.module_names = module_names  # locals shadow them (see _held)
        self.new_memory = new_memory
        self.params = params
        self.summary_of = summary_of
        self.signature_of = signature_of
        self.function = function
        self._only_called: dict[str, bool] = {}
        self.names: dict[str, _Held] = {}
        self.closures: set[str] = set()  # the nested defs' names (see closure_held)
        self.prng: dict[str, bool] = {}  # name -> every binding is a PRNG key (jax.random.split(...))
        self.stored_into: dict[str, dict[int, _Held]] = {}  # name -> what each store into it put there
        self.overflow = False
        self.straight: frozenset[str] = frozenset()  # see straight_line_names: a binding replaces the last
        self.rebound: set[str] = set()  # parameters in ``straight`` that the body has rebound by now

    def restart(self) -> None:
        """Start a pass over the body: the straight-line names hold again what they
        held on entry (each of their bindings is met again, in order)."""
        for name in self.straight:
            self.names.pop(name, None)
            self.prng.pop(name, None)
        self.rebound.clear()

    def bind(self, target, held: _Held, prng: bool = False) -> None:
        if isinstance(target, cst.Name):
            straight = target.value in self.straight  # this binding replaces the last one
            self.prng[target.value] = prng if straight else self.prng.get(target.value, True) and prng
            # the union with earlier bindings, keeping what one binding holds twice (at most twice)
            merged = [] if straight else list(self.names.get(target.value, ()))
            for h in dict.fromkeys(held):
                need = min(held.count(h), 2)
                merged.extend([h] * max(0, need - merged.count(h)))
            merged = tuple(merged)
            if len(merged) > _MAX_HELD:
                self.overflow = True
                merged = merged[:_MAX_HELD]
            self.names[target.value] = merged
            if straight and target.value in self.params:
                self.rebound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            maybe = tuple((key, False) for key, _ in held)  # unpacking: each part may hold any of it
            for element in target.elements:
                self.bind(element.value, maybe, prng)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, tuple((key, False) for key, _ in held), prng)

    def store(self, target, held: _Held, in_loop: bool) -> None:
        """``d["w"] = w``, ``box.w = w``: the local or parameter under ``target`` now holds
        ``held`` as well, beside what other stores put in it (each statement counted once,
        however many passes; in a loop, twice: one value may land under several keys)."""
        base = base_name(target)
        if base in self.closures:
            # ``energy_fn.model = model`` on a nested def reading ``model``: one object reached
            # two ways, not two leaves of a pytree (a function is none)
            held = tuple((key, False) for key, _ in held)
        if base is not None and (base in self.params or base in self.names):
            self.stored_into.setdefault(base, {})[id(target)] = held + held if in_loop else held
            self.prng[base] = False

    def mutate(self, call: cst.Call, in_loop: bool) -> None:
        """A method call for its effect (``out.append(w)``, ``d.update(w=w)``, ``obj.register(w)``)
        on a local or parameter: the receiver may now hold the arguments (certainly, for the
        builtin containers' mutators)."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return
        held = tuple(h for arg in call.args for h in self.held(arg.value))
        if func.attr.value not in CONTAINER_MUTATORS:
            held = tuple((key, False) for key, _ in held)
        self.store(func.value, held, in_loop)

    def held(self, expr) -> _Held:
        """What the value of ``expr`` holds as-is (a key listed twice: held twice)."""
        out = self._held(expr)
        if len(out) > 4 * _MAX_HELD:
            self.overflow = True
            out = out[:4 * _MAX_HELD]
        return out

    def _held(self, expr) -> _Held:
        if expr is None:
            return ()
        if isinstance(expr, cst.Name):
            stored = tuple(h for part in self.stored_into.get(expr.value, {}).values() for h in part)
            if expr.value in self.rebound:
                # rebound on the straight line: only what it was bound to, as a local's own value
                return (((_REBOUND, expr.value), True),) + self.names[expr.value] + stored
            if expr.value in self.params:
                # the caller's value, or what the body binds the parameter to (``state = make()``)
                return (((expr.value,), True),) + self.names.get(expr.value, ()) + stored
            if expr.value in self.names:
                # the local's own value (returned twice is twice), and what it holds
                return (((expr.value,), True),) + self.names[expr.value] + stored
            if expr.value in self.module_names:
                return (((MODULE_HELD, expr.value), True),)  # a module-level value: not the caller's to donate
            return ()
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in METADATA_ATTRIBUTES or expr.attr.value in _FUNCTION_ATTRIBUTES:
                return ()
            # keys stop growing at _MAX_KEY parts (shorter keys overlap more: conservative)
            return tuple(((key + (expr.attr.value,))[:_MAX_KEY], sure) for key, sure in self.held(expr.value))
        if isinstance(expr, cst.Subscript):
            keys = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
            part = literal_part(keys[0]) if len(keys) == 1 else None
            if part is not None:  # p["w"] and p["b"] are different leaves
                return tuple(((key + (part,))[:_MAX_KEY], sure) for key, sure in self.held(expr.value))
            return self.held(expr.value)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return tuple(h for e in expr.elements for h in self.held(e.value))
        if isinstance(expr, cst.Dict):
            return tuple(h for e in expr.elements for h in self.held(e.value))
        if isinstance(expr, cst.IfExp):
            body = self.held(expr.body)
            return body + tuple(h for h in self.held(expr.orelse) if h not in body)
        if isinstance(expr, cst.BinaryOperation) and may_join_containers(expr):
            # ps + [w], (state,) * 2, d | extra: a new container of the operands' own elements
            return tuple((key, False) for operand in joined_operands(expr) for key, _ in self.held(operand))
        if type(expr) is cst.Lambda:
            return self.closure_held(expr)
        if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison,
                             cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return ()
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.BooleanOperation):
            return tuple((key, False) for key, _ in self.held(expr.left) + self.held(expr.right))
        # comprehensions, awaits, ...: may hold anything they read
        return tuple((key, False) for name in _names_in_expr(expr) for key, _ in self.held(cst.Name(name)))

    def closure_held(self, closure: cst.Lambda | cst.FunctionDef) -> _Held:
        """What a nested def or lambda keeps: the variables of this scope it reads, whose
        values it reads when called (``read_w = lambda: w`` returned beside ``{"w": w}``
        holds ``w`` twice)."""
        return tuple(h for name in sorted(free_names(closure)) for h in self._held(cst.Name(name)))

    def _call(self, call: cst.Call) -> _Held:
        qualified = self.imports.resolve(call.func) if self.imports is not None else None
        if qualified is None and isinstance(call.func, cst.Name):
            qualified = call.func.value  # builtins: len(x), int(x)
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if is_fresh_constructor(qualified, call) or is_host_producer(qualified):
            return ()
        if isinstance(call.func, cst.Name) and call.func.value in self.new_memory:
            return ()  # a jitted callable's result: new buffers
        if isinstance(call.func, cst.Call) and self.imports is not None \
                and self.imports.resolve(call.func.func) in _NEW_RESULT_TRANSFORMS:
            return ()  # jax.jit(init, out_shardings=s)(rng): new buffers (see Provenance.immediate_jit)
        if qualified in TREE_MAPS and call.args and self.imports is not None and maps_to_new_arrays(
                call.args[0].value, self.imports.resolve):
            return ()  # tree_map(jnp.zeros_like, params), tree_map(lambda x: x / 10, params): new arrays
        free = array_free_call(qualified)
        if free == "always":
            return ()  # len(x), optax.adam(lr): no arrays
        if free == "if_args":
            # optax.adam(lr), functools.partial(f, w): no arrays but those its arguments hold
            return tuple(h for arg in call.args for h in self.held(arg.value))
        if qualified is not None and qualified.startswith(("jax.numpy.", "jax.random.", "jax.lax.")) \
                and not returns_an_argument(call):
            return ()  # new arrays (not ``jnp.reshape(x, x.shape)``, which may be ``x`` itself)
        if _is_model_init(call, qualified, method):
            return ()
        if method in _FRESH_METHODS and qualified is None and len(call.args) == 1 and call.args[0].keyword is None \
                and isinstance(call.args[0].value, cst.Name) and self.prng.get(call.args[0].value.value):
            return ()  # network.init(key): new parameters from a PRNG key
        if (trees := mapped_trees(qualified, call)) is not None:
            return tuple(h for tree in trees for h in self.held(tree))  # the very leaves
        effect = call_effect(qualified, method if qualified is None else None, call)
        if effect == NEW:
            return ()
        args = [a for a in call.args if not _is_static_field(call, a)]
        parts = tuple(h for a in args for h in self.held(a.value))
        if isinstance(call.func, cst.Attribute) and qualified is None:
            parts += self.held(call.func.value)
        if effect == TWICE:
            return parts + parts
        helper = self.summary_of(call.func.value) if self.summary_of and isinstance(call.func, cst.Name) else None
        if helper is not None and helper.twice:
            # a helper (or a class) returning one value twice: given ours, or one of its own
            return parts + parts + ((_TWICE_RESULT, True),) * 2
        if effect in (HOLDS, PARTITION, READS) or is_constructor_like(call):
            return parts + self._instances(call, qualified, helper)
        # a helper returning a module-level value or a cached result passes that on
        held_elsewhere = tuple(((marker,), True) for marker in _HELD_ELSEWHERE
                               if helper is not None and marker in helper.returned)
        held_elsewhere += self._instances(call, qualified, helper)
        if helper is not None and (bound := self._returned_arguments(call, helper)) is not None:
            parts = bound
        maybe = tuple((key, False) for key, _ in parts) + held_elsewhere
        if helper is None and method is None and not returns_distinct_arrays(qualified) and not _is_class_call(call):
            # a function jaxmem does not know: its result may hold one array in two places
            # (as :meth:`Provenance._of_call` says of its direct use)
            return maybe + ((_UNKNOWN_RESULT, True),) * 2
        return maybe

    def _instances(self, call: cst.Call, qualified: str | None, helper: FunctionSummary | None) -> _Held:
        """The instances of other project files' classes that ``call``'s result holds: its own
        (``State(p)``, ``State`` imported from the project), and a helper's (``helper.made``);
        keyed by the call, so two calls make two instances."""
        classes = list(helper.made) if helper is not None else []
        if qualified is not None and _is_class_call(call) and self.imports is not None \
                and self.imports.is_project(qualified):
            classes.append(qualified.lstrip("."))
        return tuple(((_CLASS_MADE, name, str(id(call))), True) for name in classes)

    def _returned_arguments(self, call: cst.Call, helper: FunctionSummary) -> _Held | None:
        """What the arguments of a file helper's call that bind the parameters its
        summary returns hold (``_zeros_like(nest)`` returning new arrays: nothing);
        None when the call cannot be mapped or the name may not be the helper."""
        name = call.func.value
        signature = self.signature_of(name) if self.signature_of is not None else None
        if signature is None or not self._only_called_here(name):
            return None
        found = returned_arguments(call, helper.returned, signature)
        return None if found is None else tuple(h for value in found for h in self.held(value))

    def _only_called_here(self, name: str) -> bool:
        """Whether ``name`` is neither a parameter nor bound in the summarised function:
        every mention of it in the body is the callee of a call, so it is the file's helper."""
        if name in self.params or name in self.names or self.function is None:
            return False
        if name not in self._only_called:
            from jaxmem.lint.syntax.walk import descendants_of_type
            mentions = sum(1 for node in descendants_of_type(self.function.body, cst.Name) if node.value == name)
            calls = sum(1 for node in descendants_of_type(self.function.body, cst.Call)
                        if isinstance(node.func, cst.Name) and node.func.value == name)
            self._only_called[name] = mentions == calls
        return self._only_called[name]


def returned_arguments(call: cst.Call, returned, signature) -> list | None:
    """The argument values of ``call`` bound to the parameters named in ``returned`` (a
    callee's :attr:`FunctionSummary.returned`), mapped onto ``signature``: extra positionals
    go to ``*args``, unknown keywords to ``**kwargs``.  None when ``*``/``**`` arguments or a
    mismatch leave the binding unknown."""
    if any(arg.star for arg in call.args):
        return None
    positional = [arg for arg in call.args if arg.keyword is None]
    keywords = [arg for arg in call.args if arg.keyword is not None]
    mapping = map_arguments(len(positional), tuple(arg.keyword.value for arg in keywords), signature)
    if not mapping.resolved:
        return None
    param_of = {number: signature.positional[index].name for index, number in mapping.by_index.items()}
    param_of.update({number: keyword for keyword, number in mapping.by_name.items()})
    rest = next((p.name for p in signature.params if p.kind == VAR_POSITIONAL), None)
    extra = next((p.name for p in signature.params if p.kind == VAR_KEYWORD), None)
    out = []
    for number, arg in enumerate(positional + keywords):
        param = param_of.get(number, rest if arg.keyword is None else extra)
        if param is None or param in returned:
            out.append(arg.value)
    return out


def _position_argument(call: cst.Call) -> list | None:
    """``[position]`` of a blackjax ``init(position, ...)`` call, by position or keyword;
    None (every argument held) when ``*args``/``**kwargs`` may hide it."""
    if any(arg.star for arg in call.args):
        return None
    position = call_argument(call, 0, "position")
    return [position] if position is not None else []


def keeps_arguments(function: cst.FunctionDef, beyond_result: bool = False,
                    call_keeps: Callable[[cst.Call], bool] | None = None, own: str | None = None) -> bool:
    """Whether ``function`` may keep a reference to an argument after it returns:
    it returns one, stores into an attribute or subscript, fills a container
    that is not its own local (or a local one it returns, stores or captures),
    yields, raises it, declares ``global``/``nonlocal``, defines a class or a def other
    than one it only calls (:func:`_only_called`; the body of that one is read as its
    own), makes a lambda over its locals that is not handed straight to a library call
    (``jax.tree.map(lambda x: x / total, sums)`` runs and is dropped), or hands
    one of its locals to a call ``call_keeps`` says may keep it (``register(v)``,
    a function that does; without ``call_keeps`` no call counts).
    ``beyond_result``: what it returns does not count (a caller that follows
    the result sees that: ``jax.tree.map(cast, params)``); ``own``: what it keeps in the
    attributes of that parameter does not either (a method's ``self``: ``self.seen.append(v)``)."""
    from jaxmem.lint.syntax.walk import descendants_of_type, statements, suite_statements
    from jaxmem.lint.values.flow import CONTAINER_METHODS, free_names

    if not beyond_result and summarize_function(function, None, certain_only=True).returned:
        return True
    for stmt in statements(suite_statements(function.body), into_scopes=False):
        if isinstance(stmt, cst.ClassDef) or (isinstance(stmt, cst.FunctionDef)
                                               and not _only_called(stmt, function)):
            return True
    every = {node.value for node in descendants_of_type(function, cst.Name)}
    local = every - free_names(function)
    p = function.params
    params = {q.name.value for q in [*p.posonly_params, *p.params, *p.kwonly_params]}
    containers: set[str] = set()  # own local containers something was put into
    bindings: _Bindings | None = None  # see _own_container, made on first use
    inline: set[int] = set()  # lambdas passed straight to a library call
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Global, cst.Nonlocal, cst.Yield)):
            return True
        if isinstance(node, cst.Raise) and (refs_within(node.exc) or refs_within(node.cause)):
            return True  # ``raise ValueError(value)``: the caller's ``except ... as error`` keeps it
        if isinstance(node, cst.Lambda):
            if id(node) not in inline and bool(free_names(node) & local):
                return True
            continue
        if _stores_through(node, own) is not None:
            return True  # ``box.kept = v``, ``box.kept, n = v, 0``, ``for box.kept in [v]``
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in CONTAINER_METHODS:
                receiver = node.func.value
                if not _rooted_at(receiver, own):  # (``self.seen.append(v)`` fills the object's own)
                    bindings = bindings or _bindings(function)
                    if (root := _own_container(receiver, bindings, local - params)) is None:
                        return True  # a parameter's, an attribute's or a global's container, or another name for one
                    containers.add(root)
            elif call_keeps is not None and _hands_a_local(node, local, own) and call_keeps(node):
                return True
            if _library_root(node.func):
                inline.update(id(arg.value) for arg in node.args if isinstance(arg.value, cst.Lambda))
        stack.extend(children(node))
    return bool(containers) and _escapes(containers, function, returned=not beyond_result, own=own)


_JIT_DECORATORS = frozenset({"jax.jit", "jit", "jax.pmap", "pmap"})


def _only_called(nested: cst.FunctionDef, function: cst.FunctionDef) -> bool:
    """Whether the def ``nested`` of ``function`` is undecorated or jitted (``@jax.jit``,
    ``@functools.partial(jax.jit, ...)``) and its name only ever called there: a closure
    that does not outlive the call (``def pre_pmap(xs): ...`` then ``pre_pmap(tree)``;
    ``@jax.jit def init(*args): return model.init(*args)``, called at once, traced).
    What its body keeps, :func:`keeps_arguments` reads with the enclosing body's."""
    from jaxmem.lint.syntax.walk import descendants_of_type

    if len(nested.decorators) > 1:
        return False
    if nested.decorators:
        decorator = nested.decorators[0].decorator
        if isinstance(decorator, cst.Call):
            if dotted_name(decorator.func) not in ("functools.partial", "partial") or not decorator.args \
                    or decorator.args[0].keyword is not None:
                return False
            decorator = decorator.args[0].value
        if dotted_name(decorator) not in _JIT_DECORATORS:
            return False
    name = nested.name.value
    called = {id(call.func) for call in descendants_of_type(function.body, cst.Call)}
    called |= {id(node.attr) for node in descendants_of_type(function.body, cst.Attribute)}  # ``model.init``: no use
    return all(id(node) in called or node is nested.name
               for node in descendants_of_type(function.body, cst.Name) if node.value == name)


# Calls that make a new container (``list(xs)``, ``collections.defaultdict(list)``).
CONTAINER_MAKERS = frozenset({"list", "dict", "set", "tuple", "collections.deque", "collections.defaultdict",
                              "collections.OrderedDict", "collections.Counter", "deque", "defaultdict",
                              "OrderedDict", "Counter"})


def _own_container(receiver, bindings: "_Bindings", locals_: set[str]) -> str | None:
    """The local whose container ``receiver`` is (``out`` of ``out.append(v)``, of
    ``groups[k].append(v)``) when the name holds a container the function made there
    (``bindings``: :func:`_bindings`): no binding of it to anything else comes before (or
    in a loop around both), and, for an element, nothing is stored into one
    (``groups[k] = theirs``); None otherwise: ``lst = KEPT`` or ``lst = box`` make another
    name for someone else's container, while ``out = summarize(out)`` after the last
    ``out.append(v)`` does not."""
    element = isinstance(receiver, cst.Subscript)
    while isinstance(receiver, cst.Subscript):
        receiver = receiver.value
    if not isinstance(receiver, cst.Name) or receiver.value not in locals_:
        return None
    name = receiver.value
    where = bindings.reads.get(id(receiver))
    if where is None or (element and name in bindings.filled_elements) or name not in bindings.made:
        return None
    index, loops = where
    for other_index, other_loops in bindings.other.get(name, ()):
        if other_index < index or set(other_loops) & set(loops):
            return None
    return name


@dataclass(frozen=True)
class _Bindings:
    """How a function binds its names (:func:`_bindings`), for :func:`_own_container`.
    Each place is ``(order, loops)``: its position in a walk of the body, and the ids of
    the ``for``/``while`` statements around it."""

    made: frozenset[str]  # names some plain assignment binds to a new container (_makes_a_container)
    other: dict[str, list[tuple[int, tuple[int, ...]]]]  # name -> where it is bound to anything else
    filled_elements: frozenset[str]  # names something is stored into an element of (``groups[k] = v``)
    reads: dict[int, tuple[int, tuple[int, ...]]]  # id of each Name node -> where it is


def _bindings(function: cst.FunctionDef) -> _Bindings:
    """How ``function`` binds its names: to a new container by a plain assignment, or to
    anything else (an assignment of another value, a loop or comprehension target,
    ``with ... as``, an unpacking, an assignment expression, a parameter of a nested def
    or lambda); see :class:`_Bindings`."""
    made: set[str] = set()
    other: dict[str, list] = {}
    into: set[str] = set()
    where: dict[int, tuple[int, tuple[int, ...]]] = {}
    counter = 0

    def bound_otherwise(target, loops) -> None:
        for name in [target] if isinstance(target, cst.Name) else descendants_of_type(target, cst.Name):
            other.setdefault(name.value, []).append((counter, loops))

    stack: list[tuple[cst.CSTNode, tuple[int, ...]]] = [(function.body, ())]
    while stack:
        node, loops = stack.pop()
        counter += 1
        kind = type(node)
        if kind is cst.Name:
            where[id(node)] = (counter, loops)
        elif kind is cst.Assign or (kind is cst.AnnAssign and node.value is not None):
            for target in ([t.target for t in node.targets] if kind is cst.Assign else [node.target]):
                if isinstance(target, cst.Name):
                    if _makes_a_container(node.value):
                        made.add(target.value)
                    else:
                        bound_otherwise(target, loops)
                elif isinstance(target, cst.Subscript):
                    if (root := base_name(target)) is not None:
                        into.add(root)
                elif isinstance(target, (cst.Tuple, cst.List)):
                    value = node.value
                    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements) \
                            and all(isinstance(e.value, cst.Name) for e in target.elements):
                        for part, given in zip(target.elements, value.elements):  # a, b = [], []
                            if _makes_a_container(given.value):
                                made.add(part.value.value)
                            else:
                                bound_otherwise(part.value, loops)
                    else:
                        bound_otherwise(target, loops)
        elif kind is cst.For or kind is cst.CompFor or kind is cst.NamedExpr:
            bound_otherwise(node.target, loops)
        elif kind is cst.AsName:
            bound_otherwise(node.name, loops)
        elif kind is cst.Param:
            bound_otherwise(node.name, loops)
        inner = loops + (id(node),) if kind is cst.For or kind is cst.While else loops
        stack.extend((child, inner) for child in reversed(list(children(node))))
    return _Bindings(frozenset(made), other, frozenset(into), where)


def _makes_a_container(value) -> bool:
    """``[]``, ``[v]``, ``{}``, ``{k: v for ...}``, ``list(xs)``, ``collections.defaultdict(list)``:
    a new container (what it is filled with is the enclosing body's to follow); not a
    ``defaultdict`` whose factory may hand out someone else's (``defaultdict(lambda: SEEN)``)."""
    if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.Tuple, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    if not isinstance(value, cst.Call) or (maker := dotted_name(value.func)) not in CONTAINER_MAKERS:
        return False
    if maker.endswith("defaultdict"):
        factory = value.args[0].value if value.args and value.args[0].keyword is None else None
        return factory is None or (isinstance(factory, cst.Name) and factory.value in _NEW_VALUE_FACTORIES)
    return True


# Factories of ``collections.defaultdict`` that make a new value for each missing key.
_NEW_VALUE_FACTORIES = frozenset({"list", "dict", "set", "int", "float", "str", "tuple"})


def _stores_through(node, own: str | None) -> cst.BaseExpression | None:
    """For a node that binds a target holding an attribute or an item other than of ``own``
    (``box.kept = v``, ``box.kept, n = v, 0``, ``for box.kept in [v]``, ``with c(v) as
    box.kept``, ``[0 for box.kept in [v]]``, ``box.total += v``): the value stored there,
    or what it comes from (the iterable, the context manager); None for any other node.
    An annotation without a value (``self.w: int``) stores nothing but is taken to."""
    kind = type(node)
    if kind is cst.Assign:
        targets, value = [t.target for t in node.targets], node.value
    elif kind is cst.AugAssign or kind is cst.AnnAssign:
        targets, value = [node.target], node.value if node.value is not None else node.target
    elif kind is cst.For or kind is cst.CompFor:
        targets, value = [node.target], node.iter
    elif kind is cst.WithItem and node.asname is not None:
        targets, value = [node.asname.name], node.item
    else:
        return None
    if any(not _rooted_at(store, own) for target in targets for store in target_stores(target)):
        return value
    return None


# Methods that keep nothing of the object they are called on after they return: a wait, a
# delete, a list's or a dict's own reordering and removal, a file's or a writer's close.
_KEEP_NOT_THEIR_OBJECT = frozenset({"block_until_ready", "copy_to_host_async", "delete", "is_deleted", "sort",
                                    "reverse", "clear", "pop", "popitem", "remove", "discard", "close", "flush"})


def _hands_a_local(call: cst.Call, local: set[str], own: str | None) -> bool:
    """Whether ``call`` is handed a value a local names: as an argument, or as the object
    whose method it calls (``holder.register()`` may put ``holder`` anywhere), other than
    ``own`` (a method's ``self``, which its callers see) or by a method of
    :data:`_KEEP_NOT_THEIR_OBJECT`."""
    if any(key[0] in local for arg in call.args for key in refs_within(arg.value)):
        return True
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value in _KEEP_NOT_THEIR_OBJECT:
        return False
    root = base_name(func.value)
    return root is not None and root in local and root != own


def _rooted_at(target, name: str | None) -> bool:
    """Whether ``target`` is an attribute or item of the name ``name`` (``self.seen``, ``self.a[k]``)."""
    return name is not None and isinstance(target, (cst.Attribute, cst.Subscript)) and base_name(target) == name


_READING_METHOD_NAMES = frozenset().union(*READING_METHODS.values())
_OBJECTS_KEEP_NOTHING = NON_RETAINING_ROOTS - {"numpy"}  # see Provenance.library_method
_NON_KEEPING_ROOTS = frozenset({"jax", "jnp", "np", "numpy", "optax", "math"})


def _library_root(func) -> bool:
    """``jax.tree_util.tree_map``, ``jnp.where``: a call into a library that keeps no function it is given."""
    while isinstance(func, cst.Attribute):
        func = func.value
    return isinstance(func, cst.Name) and func.value in _NON_KEEPING_ROOTS


def _escapes(names: set[str], function: cst.FunctionDef, returned: bool = True, own: str | None = None) -> bool:
    """Whether a local named in ``names`` is returned (unless not ``returned``), stored
    (other than into the attributes of ``own``), yielded or captured."""
    from jaxmem.lint.syntax.walk import descendants, descendants_of_type
    from jaxmem.lint.values.flow import free_names

    for node in descendants(function.body):
        value = None
        if isinstance(node, cst.Yield) or (returned and isinstance(node, cst.Return)):
            value = node.value
        elif (stored := _stores_through(node, own)) is not None:
            value = stored
        elif isinstance(node, (cst.Lambda, cst.FunctionDef)) and free_names(node) & names:
            return True
        if value is not None and {n.value for n in [value, *descendants_of_type(value, cst.Name)]
                                  if isinstance(n, cst.Name)} & names:
            return True
    return False

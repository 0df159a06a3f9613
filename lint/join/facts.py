"""Per-file facts: definitions plus, for every call that may reach a jitted
callable, what happens to each argument after the call.

Everything here is plain, picklable data, computed from one file alone,
so it can be cached by content hash and computed in worker processes.
Which parameters are donated is decided later, in :mod:`jaxmem.lint.join.checks`,
once the definitions of every file in the run are known.
"""

from __future__ import annotations

import builtins
import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field

import libcst as cst

from jaxmem.lint.callables.definition_scopes import decorator_names
from jaxmem.lint.callables.definitions import (
    MODULE_SCOPE,
    DefinitionFinder,
    DefinitionSite,
    JitDefinition,
    returned_function,
)
from jaxmem.lint.callables.imports import ImportTable, dotted_name
from jaxmem.lint.callables.jit_api import (
    NON_RETAINING_BUILTINS,
    NON_RETAINING_ROOTS,
    PARTIAL_NAMES,
    transform_for,
)
from jaxmem.lint.callables.library_callables import unpacked_all
from jaxmem.lint.callables.signatures import (
    VAR_KEYWORD,
    VAR_POSITIONAL,
    Signature,
    map_arguments,
)
from jaxmem.lint.join.star_arguments import binds_anywhere, literal_elements, passed_arguments, passed_leaves
from jaxmem.lint.join.traced_scopes import traced_functions
from jaxmem.lint.syntax.positions import Positions
from jaxmem.lint.syntax.relevance import name_mentions
from jaxmem.lint.syntax.walk import (
    children,
    descendants,
    descendants_of_type,
    indexed,
    small_statements,
    statements,
    suite_statements,
    target_names,
)
from jaxmem.lint.values.array_api import (
    CALLING_ASSERTIONS,
    KEEPING_FUNCTIONS,
    NEW,
    READING_WRAPPERS,
    READS,
    STAGING_DECORATORS,
    STAGING_HIGHER_ORDER,
    TEST_CASES,
    TRACING_HIGHER_ORDER,
    TRACING_TRANSFORMS,
    TREE_MAPS,
    call_effect,
    saves_synchronously,
)
from jaxmem.lint.values.flow import (
    ALIAS,
    CONTAINER_METHODS,
    ESCAPE,
    WRITE,
    Event,
    Flow,
    FlowBuilder,
    Point,
    direct_refs,
    free_names,
    handed_on,
    view_operands,
)
from jaxmem.lint.values.key_reads import (
    Bindings,
    KeyReads,
    argument_key_reads,
    parameter_key_reads,
)
from jaxmem.lint.values.kept_if import FUNCTION, mark_kept_if
from jaxmem.lint.values.metadata import is_metadata_call
from jaxmem.lint.values.nnx_ownership import (
    CACHED_PARTIALS,
    IMPORTED,
    Factory,
    Ownership,
    bound_arguments,
    factory_return,
    may_be_project_function,
    might_make_nnx_object,
    nnx_classes,
    nnx_factory,
    nnx_ownership,
    occurrences,
    return_refusal,
)
from jaxmem.lint.values.param_stores import (
    NO_STORE,
    STORE_NODES,
    StoreFinder,
    counted_level,
    effect_calls,
    is_immutable,
    passed_values,
    stores_of,
)
from jaxmem.lint.values.provenance import (
    CONTAINER_MAKERS,
    FunctionSummary,
    Origin,
    Provenance,
    annotated_array_free,
    keeps_arguments,
    array_free_at_call,
    stores_one_value_twice,
    summarize_function,
    without_caller_of,
)
from jaxmem.lint.values.refs import RefKey, base_name, ident, kills, overlaps, ref_key, render
from jaxmem.lint.values.usefulness import CalledFunctions, output_reach

LOCAL = "local"
PARAM = "param"
ATTRIBUTE = "attribute"
GLOBAL = "global"


@dataclass(frozen=True)
class Use:
    """A place where a value is read (or kept) after or before a call."""

    line: int
    col: int
    text: str
    kind: str = "read"  # read | loop | call | closure | yield | stored | exit
    callee: str | None = None  # kind "call": the project function called (qualified), for the join


@dataclass(frozen=True)
class ArgFacts:
    """What the calling scope does with one argument of one call."""

    text: str
    line: int
    col: int
    end_line: int
    end_col: int
    key: RefKey | None
    refs: tuple[RefKey, ...]  # every value the argument passes as-is (pytree literals too)
    owner: str  # local | param | attribute | global ("" for temporaries)
    reads_after: tuple[Use, ...] = ()
    reaches_exit: bool = False
    rebound_by_result: bool = False
    rebound_line: int | None = None
    escapes: tuple[Use, ...] = ()
    alias_reads: tuple[Use, ...] = ()
    origins: tuple[Origin, ...] = ()  # how the value was made (local names and temporaries)
    # For a local the call's result rebinds: the callees whose results the writes that reach
    # the call bind it to (``state = step(state)`` in a loop: ``step`` itself), not through other values.
    made_by: tuple[RefKey, ...] = ()
    # An nnx object (a local bound only to calls): whether it owns its arrays (lint.values.nnx_ownership).
    nnx_own: Ownership | None = None
    # A parameter of a nested def: every call of that def (None when not all are seen as plain calls).
    callers: CallerFacts | None = None
    # A pytree written out in the call (``step((params, opt_state), batch)``): each element's own
    # facts, so that donating it is judged element by element.
    parts: tuple[ArgFacts, ...] = ()
    # The parts are what a call may return as they are (``jnp.asarray(x)``, ``x.reshape(n)``):
    # the argument is each part itself, or a copy of it.
    through_view: bool = False
    # ``self.x`` of a method: the class's other methods that use ``self.x`` too (the method's
    # name as ``text``, its first use), for the message that says where else it is held.
    attribute_uses: tuple[Use, ...] = ()

    @property
    def is_temporary(self) -> bool:
        return not self.refs


@dataclass(frozen=True)
class CallFacts:
    """One call that may reach a jitted callable."""

    line: int
    col: int
    end_line: int
    end_col: int
    callee: RefKey
    scope: str  # the function scope the call sits in (for lexical lookup)
    scopes: tuple[str, ...]  # enclosing function scopes, innermost first, then MODULE_SCOPE
    class_scope: str | None
    qualified: str | None  # import-resolved dotted callee, for cross-file lookup
    positional: tuple[ArgFacts, ...]
    keywords: tuple[tuple[str, ArgFacts], ...]
    has_star: bool
    traced: bool
    text: str
    # Traced too while no other file calls these methods (``.name``; lint.join.traced_scopes).
    traced_unless: tuple[str, ...] = ()
    # A module-level call of a name the module binds to several jits, or to a jit and a plain
    # def (a notebook redefining ``train_step``): the lines of the one binding statement that
    # reaches it, when one does; NO_JIT_BINDING when that one is a plain def.
    binding: tuple[int, int] | None = None
    # With ``has_star``: how many positionals come before the first ``*args`` (the rest have
    # no known position), and each ``*``/``**`` argument (only what it passes: its refs).
    leading: int | None = None
    starred: tuple[ArgFacts, ...] = ()

    @property
    def args(self) -> list[ArgFacts]:
        """Every argument, positional then keyword, then ``*``/``**`` ones (which bind no
        argument number)."""
        return list(self.positional) + [arg for _, arg in self.keywords] + list(self.starred)


# How a function's every call is in view (CallerFacts.reach).
NESTED_DEF = "nested def"  # called only by name in its parent's own code
PRIVATE_METHOD = "private method"  # called only through ``self`` in its class's own methods
PRIVATE_FUNCTION = "private function"  # a top-level ``_helper`` called only by name in its file


@dataclass(frozen=True)
class CallerFacts:
    """Every call of a function, for one of its parameters, when all of them are in
    view (``reach``): these are all the values the parameter can hold, and whether
    the caller still holds one can be decided."""

    function: str  # the nested def, the private method or the private function
    parent: str  # the function it is defined in, the method's class, or the module
    param: str
    calls: tuple[tuple[CallFacts, int], ...]  # each call, and which of its args binds ``param``
    # A private method or function: these are all its calls only if no other file
    # of the project names it (decided at the join).
    reach: str = NESTED_DEF


@dataclass
class FileFacts:
    """Everything the rules need from one file."""

    path: str
    module_names: tuple[str, ...] = ()
    definitions: list[JitDefinition] = field(default_factory=list)
    calls: list[CallFacts] = field(default_factory=list)
    functions: dict[str, Signature] = field(default_factory=dict)
    # Top-level functions whose result may hold arrays it did not make (a parameter,
    # or one value twice): name -> what it returns.  Absent: its result is new memory.
    function_summaries: dict[str, FunctionSummary] = field(default_factory=dict)
    # Nested defs called only by name in their parent, by scope name (``train.helper``):
    # what their result holds, as for top-level functions (absent: not summarised).
    nested_summaries: dict[str, tuple[FunctionSummary, Signature]] = field(default_factory=dict)
    # Top-level factories returning a nested def: name -> (its signature, its outputs verdicts),
    # so ``step = other_module.make_step(...)`` jitted in another file gets a signature.
    factories: dict[str, tuple[Signature, tuple]] = field(default_factory=dict)
    # Top-level functions: name -> each parameter's output verdict (usefulness.output_reach),
    # so ``jax.jit(other_module.step)`` in another file knows what its outputs are made of.
    function_outputs: dict[str, tuple] = field(default_factory=dict)
    debug_nans: list[tuple[int, int, str]] = field(default_factory=list)
    referenced: set[str] = field(default_factory=set)  # passed as values: local names, or qualified if imported
    parse_error: tuple[int, int, str] | None = None
    skipped: bool = False
    # Identifiers with a leading underscore its whole text mentions, and ``.name`` for each attribute
    # name (relevance.private_names): a private method, or a jitted attribute, no other file names is
    # called only where jaxmem sees it.
    private_names: frozenset[str] = frozenset()
    # Other modules' names it mentions other than in the calls it records (``fns = [lib.step]``,
    # ``lambda s: step(s)`` after ``from lib import step``), qualified: calls through them are not seen.
    handed_on: frozenset[str] = frozenset()
    # ``(name, target)`` for each project name it imports (``from .steps import step``): another
    # file's ``from this_module import step`` reaches ``target`` (``steps.step``, leading dots dropped).
    reexports: tuple[tuple[str, str], ...] = ()
    # ``(name, mentions, bindings)`` of the names its definitions are bound to (``step``, ``.step`` for
    # ``self.step``; relevance.name_mentions): a mention that is neither a call nor a binding hands it on.
    name_mentions: tuple[tuple[str, int, int], ...] = ()
    # Names handed to a tracing higher-order function (``lax.fori_loop(0, n, body_fn, x)``):
    # such a callable runs traced, where a donation does nothing (JXM003 says nothing of it).
    traced_callables: set[str] = field(default_factory=set)
    # Top-level classes whose code reads no module-level variable: an object they make from
    # arguments that hold no array holds only new arrays (lint.values.nnx_ownership).
    clean_classes: frozenset[str] = frozenset()
    # Top-level classes deriving from an nnx class (``class CNN(nnx.Module)``): what they make is an
    # nnx graph node, which nnx.jit writes back (lint.values.nnx_ownership.nnx_classes).
    nnx_classes: frozenset[str] = frozenset()
    # Top-level classes whose ``__init__`` stores one value in two attributes, with why: an
    # instance may hold one array twice (lint.values.provenance.stores_one_value_twice).
    twice_classes: dict[str, str] = field(default_factory=dict)
    # Top-level classes whose ``__init__`` stores a non-literal into a parameter, with those
    # parameters and the ``__init__``'s signature, ``self`` first
    # (lint.values.param_stores.StoreFinder.class_stores).
    class_stores: dict[str, tuple[tuple[str, ...], Signature]] = field(default_factory=dict)
    # Top-level functions that make nnx objects and hand them out by their final ``return``, with
    # what each returned value is (lint.values.nnx_ownership.nnx_factory): another file's
    # ``model, optimizer = lib.create(0)`` binds what they made.  A function that returns names
    # or a class call but is no such factory maps to why not (for the message).
    nnx_factories: dict[str, Factory | str] = field(default_factory=dict)
    # Names of the methods of its classes that may keep an argument after they return
    # (``Tracker.track`` appends it to ``self.seen``): _Context.method_keeps where parsed,
    # read from the text where not (lint.syntax.keeping_methods).
    keeping_methods: frozenset[str] = frozenset()
    # Whether some reason in its facts holds only if a callee keeps its argument: a method
    # of that name of some class of the project, or a function of another file
    # (lint.values.kept_if); the join settles those (lint.join.kept_if).
    kept_if_marked: bool = False


_BUILTIN_NAMES = frozenset(dir(builtins)) | {"self", "cls", "__class__"}


def _reads_other_than(cls: cst.ClassDef, known: frozenset[str]) -> bool:
    """Whether the class's code reads a module-level name other than ``known`` (its
    methods' parameters and locals, and its own attributes, are other values)."""
    bound = {cls.name.value}
    loaded: set[str] = set()
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef):
            bound.add(stmt.name.value)
            loaded |= free_names(stmt)
            continue
        loaded |= _loaded_names(stmt)
        for small in small_statements([stmt], into_scopes=False):
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    bound.update(target_names(target.target))
            elif isinstance(small, cst.AnnAssign):
                bound.update(target_names(small.target))
    return bool(loaded - known - bound)


def _loaded_names(node) -> set[str]:
    """The names ``node`` mentions as variables (not ``x.attr``'s attribute, not keywords)."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, cst.Attribute):
        return _loaded_names(node.value)
    if isinstance(node, cst.Arg):
        return _loaded_names(node.value)
    out: set[str] = set()
    for child in children(node):
        out |= _loaded_names(child)
    return out


def module_names_for(path: str) -> tuple[str, ...]:
    """Dotted names the file may be imported as: ``a/b/c.py`` -> ``c``, ``b.c``, ``a.b.c``."""
    parts = path.replace("\\", "/").split("/")
    if not parts or not parts[-1].endswith((".py", ".pyi")):
        return ()
    last = parts[-1].rsplit(".", 1)[0]
    parts = [p for p in parts[:-1] if p not in ("", ".", "..")] + ([] if last == "__init__" else [last])
    return tuple(".".join(parts[i:]) for i in range(len(parts) - 1, -1, -1) if parts[i:])


# What can bind a module-level name other than a plain assignment (see ``module_values``).
_MODULE_REBINDINGS = (cst.Global, cst.For, cst.AugAssign, cst.WithItem, cst.AssignTarget)


class _Context:
    """Per-file state while extracting facts."""

    def __init__(self, module: cst.Module, positions, imports: ImportTable, sites: list[DefinitionSite],
                 finder: DefinitionFinder, source: str | None = None) -> None:
        self.finder = finder
        self.module = module
        self.source = source  # the whole file's text (the module may have statements blanked)
        self.importable = True  # whether other files may import this module's names (not a notebook)
        self.namespace_reached = False  # whether code may read or bind module names unnamed (exec, %run)
        self.positions = positions
        self.imports = imports
        self.sites = sites
        self._jit_callees: frozenset | None = None  # see _names_a_jit
        self.local_callees = {site.definition.callee[0] for site in sites if site.definition.callee[0] != "self"}
        module_callees = [site.definition.callee[0] for site in sites
                          if site.definition.scope == MODULE_SCOPE and len(site.definition.callee) == 1]
        plain_defs = _plain_defs(module)
        self.redefined = {name for name in module_callees if module_callees.count(name) > 1 or name in plain_defs}
        self.class_callees = {(site.definition.scope, site.definition.callee) for site in sites}
        self.jitted_functions = {id(site.function_node) for site in sites if site.function_node is not None}
        self.eager_calls = _calls_under_disable_jit(module, imports)
        # Top-level function name -> its defs (a name may be defined twice).
        self.module_functions: dict[str, list[cst.FunctionDef]] = {}
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef):
                self.module_functions.setdefault(stmt.name.value, []).append(stmt)
        self._keeps: dict[str, bool] = {}
        self._keeps_beyond: dict[str, bool] = {}  # see keeps_beyond_result
        # top-level function name -> whether it returns only standard optax transforms
        # (filled by ``Provenance._optimizer_factory``)
        self.optimizer_factories: dict[str, bool] = {}
        self.module_definitions = {stmt.name.value for stmt in module.body
                                   if isinstance(stmt, (cst.FunctionDef, cst.ClassDef))}
        # Names that are modules, classes or functions, never a value's arrays: a call
        # through one (``jnp.zeros(3)``, ``TrainState.create(...)``) is not a method of a value.
        self.imported_names = frozenset(imports.names) | frozenset(self.module_definitions)
        self._module_values: dict[str, list] | None = None
        self._gaining: frozenset[str] | None = None  # see may_gain_arrays
        self._module_variables: frozenset[str] | None = None
        self._rebound_functions: frozenset[str] | None = None
        self._classes: dict[str, list[cst.ClassDef]] | None = None
        self._key_reads: dict[int, KeyReads] = {}  # id(top-level def) -> its parameters' key reads
        self._bindings: Bindings | None = None
        self._nested: dict[int, dict[str, list[cst.FunctionDef]]] = {}  # id(def) -> its own nested defs
        self._unpacked: dict[str, tuple | None] | None = None  # module-level name -> (value, position, targets)
        self._classes_reading: frozenset[str] | None = None
        self._nnx_classes: frozenset[str] | None = None
        self._stores_twice: dict[str, str | None] | None = None  # see class_stores_twice
        self._unclean_for_nnx: dict[str, str | None] | None = None  # see unclean_for_nnx
        self._deferred: set[int] | None = None  # see deferred_calls
        self._store_finder: StoreFinder | None = None  # see store_finder
        self._statement_calls: frozenset[int] | None = None  # see statement_calls
        self._method_keeps: dict[str, bool] | None = None  # see method_keeps
        self._methods: dict[str, list[cst.FunctionDef]] = {}  # the module's classes' methods by name
        self._private_objects: dict[tuple[int, str], bool] = {}  # see private_object
        self._self_contained: dict[str, bool] = {}  # see self_contained_class
        self.kept_if_marked = False  # whether a reason was marked: see marked_kept_if
        self._stored_into: frozenset[str] | None = None  # see stored_into

    def deferred_calls(self) -> set[int]:
        """Ids of the calls in generator expressions and lambdas (of any depth): written in
        one place, run whenever the generator is consumed or the lambda called."""
        if self._deferred is None:
            self._deferred = {id(call) for lazy in descendants_of_type(self.module, (cst.GeneratorExp, cst.Lambda))
                              for call in descendants_of_type(lazy, cst.Call)}
        return self._deferred

    def class_stores_twice(self, name: str, call: cst.Call | None = None, is_free=None) -> str | None:
        """Why an instance of the top-level class ``name`` may hold one array in two places
        (:func:`stores_one_value_twice`; any of its definitions).  nnx classes too: nnx.split
        and nnx.jit see a shared Variable once, but jax.jit flattens an nnx object as a pytree,
        one leaf per place (flax 0.12.8: donating ``Parent()`` whose ``right`` is its ``left``
        fails with "Attempt to donate the same buffer twice").
        ``call`` (a construction of it) and ``is_free`` (an expression predicate): a parameter
        the call binds to an array-free value brings no array in (``Model(2, 64, 3)``: ``dmid``
        passed to two layers is an int)."""
        if self._stores_twice is None:
            self._stores_twice = {
                class_name: next((why for cls in classes if (why := stores_one_value_twice(cls, self.imports))), None)
                for class_name, classes in self.top_level_classes().items()}
        why = self._stores_twice.get(name)
        if why is None or call is None:
            return why
        return next((why for cls in self.top_level_classes()[name]
                     if (why := stores_one_value_twice(
                         cls, self.imports, lambda method: array_free_at_call(method, call, is_free)))), None)

    def unclean_for_nnx(self) -> dict[str, str | None]:
        """Top-level classes whose objects the nnx checks never take as their own, each with
        why when it is not the plain "may hold arrays from elsewhere": those reading a
        module-level value, and those that may hold one array twice even when made from
        array-free arguments (``z = jnp.zeros(n); self.a = z; self.b = z``: nnx.jit and
        nnx.split see a shared Variable or Module once, a shared array twice)."""
        if self._unclean_for_nnx is None:
            unclean: dict[str, str | None] = dict.fromkeys(self.classes_reading_module_values())
            unclean.update((name, why) for name in self.top_level_classes() if (why := self.twice_for_export(name)))
            self._unclean_for_nnx = unclean
        return self._unclean_for_nnx

    def twice_for_export(self, name: str) -> str | None:
        """:meth:`class_stores_twice` as another file sees it: for an nnx class, whose objects
        the nnx checks take only from array-free arguments (or nnx.Rngs, which nnx.jit and
        nnx.split see once), with every parameter array-free."""
        if name not in self.nnx_classes() or self.class_stores_twice(name) is None:
            return self.class_stores_twice(name)
        return next((why for cls in self.top_level_classes()[name]
                     if (why := stores_one_value_twice(cls, self.imports, _every_parameter, self.makes_graph_node))),
                    None)

    def makes_graph_node(self, call: cst.Call) -> bool:
        """Whether ``call`` makes an nnx graph node: one of this file's nnx classes, or an nnx
        class (``nnx.Linear``, ``nnx.Param``, ``nnx.Rngs``)."""
        if isinstance(call.func, cst.Name) and call.func.value in self.nnx_classes():
            return self.imports.resolve(call.func) is None
        qualified = self.imports.resolve(call.func)
        return qualified is not None and qualified.startswith("flax.nnx.") and \
            qualified.rsplit(".", 1)[-1][:1].isupper()

    def private_object(self, name: str, scope: cst.CSTNode) -> bool:
        """Whether the local ``name`` of ``scope`` (a def, or the module) holds only objects
        it keeps to itself, so that what a method keeps in one stays there
        (``t = Tracker(); t.track(w)``, ``Tracker.track`` appending to ``self.seen``): every
        binding makes an instance of a class of :meth:`self_contained_class` (or is a ``class``
        or ``def`` statement of the scope: ``TrainState.create(...)`` of a class made here),
        and the name is used only to call its methods (``t.track(w)``), never handed on,
        stored, captured or read otherwise.  ``t = TRACKER`` or ``t = get_tracker()`` may be an object held
        anywhere, ``REGISTRY.append(t)`` puts it there."""
        key = (id(scope), name)
        if key not in self._private_objects:
            self._private_objects[key] = self._private_object(name, scope)
        return self._private_objects[key]

    def _private_object(self, name: str, scope: cst.CSTNode) -> bool:
        allowed: set[int] = set()  # the Name nodes of the allowed uses, and names that are no use
        bound = False
        for node in descendants(scope):
            kind = type(node)
            if (kind is cst.ClassDef or kind is cst.FunctionDef) and node.name.value == name:
                allowed.add(id(node.name))  # ``class TrainState(...)`` here: ``TrainState.create(...)``
                bound = True
            elif kind is cst.Attribute:
                allowed.add(id(node.attr))
            elif kind is cst.Arg and node.keyword is not None:
                allowed.add(id(node.keyword))
            elif kind is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name \
                    and node.func.value.value == name:
                allowed.add(id(node.func.value))  # t.track(w)
            elif kind is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                    and node.targets[0].target.value == name:
                value = node.value
                if type(value) is not cst.Call or type(value.func) is not cst.Name or value.args \
                        or self.imports.resolve(value.func) is not None \
                        or not self.self_contained_class(value.func.value):
                    return False
                allowed.add(id(node.targets[0].target))
                bound = True
        return bound and all(id(node) in allowed for node in descendants_of_type(scope, cst.Name)
                             if node.value == name)

    def self_contained_class(self, name: str) -> bool:
        """Whether ``name`` is one top-level class of the module, without bases, whose methods
        use ``self`` only through its attributes (``self.seen.append(v)``, ``self.n = 0``) and
        keep what they are given nowhere else (:func:`keeps_arguments` with ``own``): none
        hands the instance on (``REGISTRY.append(self)``, ``return self``), none puts an
        argument into a global or another object, or hands it to a call that may keep it,
        and what they fill is a container the instance made (:func:`_fills_only_its_own_containers`),
        so only names bound to the instance reach what it holds."""
        if name in self._self_contained:
            return self._self_contained[name]
        self._self_contained[name] = False  # while deciding
        classes = self.top_level_classes().get(name, [])
        if len(classes) != 1 or classes[0].bases or classes[0].keywords or classes[0].decorators:
            return False
        methods = {}
        for stmt in classes[0].body.body:
            if isinstance(stmt, cst.FunctionDef):
                if stmt.decorators or not stmt.params.params:
                    return False
                methods[stmt.name.value] = stmt
            elif not isinstance(stmt, (cst.SimpleStatementLine,)) or any(
                    not isinstance(small, (cst.Pass, cst.Expr)) for small in stmt.body):
                return False  # class attributes (a shared list) or nested classes
        for method in methods.values():
            me = method.params.params[0].name.value
            through = {id(node.value) for node in descendants_of_type(method.body, cst.Attribute)}
            if any(node.value == me and id(node) not in through for node in descendants_of_type(method.body, cst.Name)):
                return False

            def keeps(call: cst.Call, me=me) -> bool:
                func = call.func
                if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == me:
                    return func.attr.value not in methods  # its own methods are checked as this one is
                return self.retains(call)

            # what a method keeps other than in the instance: a global, another object, a
            # function that may keep it (``register(v)``), a raised exception
            if keeps_arguments(method, beyond_result=True, call_keeps=keeps, own=me):
                return False
        if not _fills_only_its_own_containers(methods.values()):
            return False
        self._self_contained[name] = True
        return True

    def top_level_classes(self) -> dict[str, list[cst.ClassDef]]:
        """The module's top-level classes by name (a name may be defined twice)."""
        if self._classes is None:
            self._classes = {}
            for stmt in self.module.body:
                if isinstance(stmt, cst.ClassDef):
                    self._classes.setdefault(stmt.name.value, []).append(stmt)
        return self._classes

    def method_keeps(self, name: str) -> bool:
        """Whether a method ``name`` of one of the module's classes may keep an
        argument after it returns (:func:`keeps_arguments`: ``self.kept.append(value)``), so
        a call ``obj.name(w)`` whose result is used may still keep ``w`` in ``obj``.  Decided
        by the name alone: which class ``obj`` is an instance of is not known."""
        if self._method_keeps is None:
            self._method_keeps = {}
            self._methods = {}
            for cls in descendants_of_type(self.module, cst.ClassDef):  # classes in functions too
                for stmt in cls.body.body:
                    if isinstance(stmt, cst.FunctionDef):
                        self._methods.setdefault(stmt.name.value, []).append(stmt)
            for method in self._methods:
                self.method_keeps(method)
        if name not in self._method_keeps:
            self._method_keeps[name] = False  # while deciding: a call of itself keeps what the rest of it does
            self._method_keeps[name] = any(keeps_arguments(stmt, call_keeps=self._known_to_keep)
                                           for stmt in self._methods.get(name, ()))
        return self._method_keeps[name]

    def _known_to_keep(self, call: cst.Call) -> bool:
        """Whether ``call`` is one a method's body is known to keep its argument through
        (:meth:`method_keeps`): a function of this module that may keep one
        (``register(value)``), a method of the module's classes that may, called through
        ``self`` or ``cls``, a standard-library function that keeps what it is given
        (``KEEPING_FUNCTIONS``), or a call handed a lambda or a function of this file that
        may keep its argument.
        Other calls do not count: as for the text of the methods no file of the project
        parses (:func:`maybe_keeping_methods`), which names the same."""
        func = call.func
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value in ("self", "cls"):
            return self.method_keeps(func.attr.value)
        # (a function of another file handed on is no more known than one called by its module)
        return self._known_keeping_call(call, handed_from_elsewhere=False)

    def _known_keeping_call(self, call: cst.Call, handed_from_elsewhere: bool) -> bool:
        """Whether ``call`` is of a function of this module that may keep an argument, of a
        standard-library function that keeps what it is given (``KEEPING_FUNCTIONS``), or is
        handed a function that may keep its argument (of this file, a lambda; with
        ``handed_from_elsewhere``, another file's too, whose summary the join reads)."""
        func = call.func
        if self._names_a_jit(func):
            return False  # traced: its outputs are new buffers, even one that is an input (jax 0.10.2)
        if type(func) is cst.Name and func.value in self.module_functions and self.imports.resolve(func) is None:
            return not self._keeps_no_argument(func.value)
        if self.imports.resolve(func) in KEEPING_FUNCTIONS:
            return True
        handed = self.keeping_function_handed(call)
        return handed is not None if handed_from_elsewhere else handed == ""

    def marked_kept_if(self, reason: str, condition: str | None) -> str:
        """``reason``, marked as holding only under ``condition`` when there is one
        (:func:`mark_kept_if`), which the file's facts then say (``kept_if_marked``)."""
        if condition is None:
            return reason
        self.kept_if_marked = True
        return mark_kept_if(reason, condition)

    def keeping_methods(self) -> frozenset[str]:
        """The names :meth:`method_keeps` says yes to."""
        self.method_keeps("")
        return frozenset(name for name, keeps in self._method_keeps.items() if keeps)

    def may_gain_arrays(self, name: str) -> bool:
        """Whether code anywhere in the module may store something other than a literal into the
        value a module-level ``name`` holds (``CONFIG.w = w``, ``TABLES["a"] = t``,
        ``LAYERS.append(layer)``, also inside functions), or pass it to a call that may
        (``populate(CONFIG)``, see :class:`StoreFinder`): its origin alone no longer proves it
        holds no array.  Names are matched by spelling, whatever scope binds them (safe side)."""
        if self._gaining is None:
            self._module_stores()
        return name in self._gaining

    def stored_into(self, name: str) -> bool:
        """Whether code anywhere in the module stores anything, literals too, into the value a
        name spelled ``name`` holds (``RATES["bias"] = optax.sgd(0.1)``, ``RATES.update(...)``)."""
        if self._stored_into is None:
            self._module_stores()
        return name in self._stored_into

    def _module_stores(self) -> None:
        """One walk of the module for :meth:`may_gain_arrays` and :meth:`stored_into`."""
        gaining: set[str] = set()
        stored: set[str] = set()
        levels: dict[str, int] = {}  # what calls given a name may do to it (see StoreFinder)
        for node in descendants_of_type(self.module, STORE_NODES):
            for target, literal in stores_of(node, CONTAINER_METHODS):
                stored.add(target)
                if not literal:
                    gaining.add(target)
            if isinstance(node, cst.Call):
                for arg, passed in passed_values(node):
                    level = counted_level(self.store_finder().store_into(node, arg), node, self.statement_calls())
                    levels[passed] = max(level, levels.get(passed, NO_STORE))
        resolve = self.imports.resolve
        gaining.update(passed for passed, level in levels.items() if level != NO_STORE and not (
            self.module_values(passed) and all(is_immutable(v, resolve) for v in self.module_values(passed))))
        self._gaining = frozenset(gaining)
        self._stored_into = frozenset(stored)

    def statement_calls(self) -> frozenset[int]:
        """Ids of the calls made for their effect: a statement of their own (``populate(config)``)
        or one whose result is thrown away (``_ = populate(config)``)."""
        if self._statement_calls is None:
            self._statement_calls = effect_calls(self.module)
        return self._statement_calls

    def store_finder(self) -> StoreFinder:
        """Which calls of this file may store into an argument (``populate(config)``)."""
        if self._store_finder is None:
            self._store_finder = StoreFinder(self.imports, self.module_functions, self.top_level_classes())
        return self._store_finder

    def module_values(self, name: str) -> list | None:
        """The values module-level code binds ``name`` to (``tx = optax.adam(1e-3)``),
        or None when it is bound otherwise too (a loop, ``with``, ``global`` in a function)."""
        if self._module_values is None:
            values: dict[str, list] = {}
            for small in small_statements(self.module.body, into_scopes=False):
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name):
                    values.setdefault(small.targets[0].target.value, []).append(small.value)
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value:
                    values.setdefault(small.target.value, []).append(small.value)
            for node in descendants_of_type(self.module, _MODULE_REBINDINGS):
                if isinstance(node, cst.Global):
                    for item in node.names:
                        values[item.name.value] = None
                elif isinstance(node, (cst.For, cst.AugAssign, cst.WithItem, cst.AssignTarget)):
                    target = node.target if not isinstance(node, cst.WithItem) else (
                        node.asname.name if node.asname else None)
                    for bound in target_names(target):
                        if isinstance(node, cst.AssignTarget) and bound in values and values[bound] is not None \
                                and isinstance(node.target, cst.Name):
                            continue  # NAME = value: collected above (at module level) or a local
                        if isinstance(node, cst.AssignTarget) and bound not in values:
                            continue
                        values[bound] = None
            self._module_values = values
        return self._module_values.get(name)

    def module_unpacked(self, name: str) -> tuple | None:
        """``(value, position, number of targets)`` when module-level code binds ``name``
        only by one tuple unpacking (``opt_init, opt_update = optax.adam(lr)``)."""
        if self._unpacked is None:
            self._unpacked = unpacked_all(small_statements(self.module.body, into_scopes=False))
        return None if name in self.module_variables() else self._unpacked.get(name)

    def rebound_functions(self) -> frozenset[str]:
        """Top-level function names bound otherwise too (assigned, imported, a class, a
        ``global`` in a function): a call by the name may not reach the def."""
        if self._rebound_functions is None:
            self.module_values("")
            classes = {stmt.name.value for stmt in self.module.body if isinstance(stmt, cst.ClassDef)}
            other = set(self._module_values) | set(self.imports.names) | classes
            self._rebound_functions = frozenset(name for name in self.module_functions if name in other)
        return self._rebound_functions

    def module_jitted(self) -> frozenset[str]:
        """Top-level names bound once, at module level, to a jitted callable whose results
        are new buffers (``@jax.jit def update``, ``step = jax.jit(update_fn)``; not nnx.jit,
        which hands back the Modules it was given)."""
        names = set()
        for site in self.sites:
            definition = site.definition
            if definition.scope != MODULE_SCOPE or len(definition.callee) != 1 or definition.keeps_module_args:
                continue
            name = definition.callee[0]
            if name in self.module_functions:
                once = len(self.module_functions[name]) == 1 and name not in self.rebound_functions()
            else:
                values = self.module_values(name)
                once = values is not None and len(values) == 1 and name not in self.imports.names
            if once:
                names.add(name)
        return frozenset(names)

    def module_variables(self) -> frozenset[str]:
        """Names bound by module-level code (``CACHE = {...}``, ``for x in ...``), not defs or imports."""
        if self._module_variables is None:
            self.module_values("")
            self._module_variables = frozenset(self._module_values) - self.module_definitions
        return self._module_variables

    def classes_reading_module_values(self) -> frozenset[str]:
        """Top-level classes whose code reads a module-level variable (``self.pe = nnx.Cache(PE)``):
        an object they make may hold arrays another name holds too."""
        if self._classes_reading is None:
            # every name a class reads that is not an import, a top-level def or class, or a
            # builtin counts (cheaper than collecting the module's variables, and never fewer)
            known = self.imported_names | _BUILTIN_NAMES
            self._classes_reading = frozenset(
                stmt.name.value for stmt in self.module.body
                if isinstance(stmt, cst.ClassDef) and _reads_other_than(stmt, known))
        return self._classes_reading

    def nnx_classes(self) -> frozenset[str]:
        """Top-level classes deriving from an nnx class (see :func:`nnx_classes`)."""
        if self._nnx_classes is None:
            self._nnx_classes = nnx_classes(self.module, self.imports)
        return self._nnx_classes

    def immediate_definition(self, expr: cst.Call, scope: str) -> DefinitionSite | None:
        """The definition ``expr`` makes when it jits a function and is called at once."""
        return self.finder.immediate(expr, scope)  # recorded in ``sites`` (the finder's list)

    def text(self, node: cst.CSTNode, limit: int = 60) -> str:
        code = self.positions.code(node).strip()
        code = " ".join(code.split())
        return code if len(code) <= limit else code[: limit - 3] + "..."

    def use(self, event: Event, kind: str | None = None) -> Use:
        pos = self.positions[event.node]
        node = event.node
        if event.kind == ESCAPE and event.detail == "closure":
            what = {cst.Lambda: "a lambda", cst.GeneratorExp: "a generator expression"}.get(type(node))
            text = f"captured by {what or '`' + node.name.value + '`'}"
        else:
            text = self.text(node)
        kind = kind or (event.detail or "read")
        callee = None
        if kind == "call" and isinstance(node, cst.Call) and ref_key(node.func) is not None:
            qualified = self.imports.resolve(node.func)
            if qualified is not None and self.imports.is_project(qualified):
                callee = qualified.lstrip(".")  # another project file's function: the join knows its summary
        return Use(pos.start.line, pos.start.column, text, kind, callee)

    def jitted_argument(self, call: cst.Call):
        """The function ``call`` jits (``step`` in ``jax.pmap(step, ...)``) or traces for a
        table (``hk.experimental.tabulate(step)``), or binds in ``nnx.cached_partial(step, model)``
        (whose calls are calls of ``step``: ``FactExtractor.cached_partial``; a partial used otherwise
        leaves a mention of ``step`` no call accounts for), or None: it is not passed around."""
        qualified = self.imports.resolve(call.func)
        if (qualified in READING_WRAPPERS or qualified in CACHED_PARTIALS) and call.args \
                and call.args[0].keyword is None:
            return call.args[0].value
        found = self.finder.calls.jit_call(call)
        return found[2] if found is not None else None

    def written_argument(self, call: cst.Call):
        """The argument ``call`` only writes into: ``model`` in ``nnx.update(model, state)``
        (flax 0.12.8 sets each Variable to the new array; the old ones, even deleted, are never read)."""
        if self.imports.resolve(call.func) == "flax.nnx.update" and call.args and call.args[0].keyword is None:
            return call.args[0].value
        return None

    def reads_metadata(self, call: cst.Call) -> bool:
        """Whether ``call`` reads only its arguments' metadata (``jnp.shape(x)``)."""
        return is_metadata_call(self.imports.resolve(call.func), call)

    def key_reads(self, call: cst.Call, scope: cst.FunctionDef | None = None) -> dict[int, frozenset[str]]:
        """``id(argument) -> key parts`` for the arguments of a call (in ``scope``, None for
        module-level code) of a function of this file that reads only some constant keys
        of them (``b["k"]``)."""
        func = call.func
        if type(func) is not cst.Name:
            return {}
        name = ident(func.value)
        top = self.module_functions.get(func.value, ())
        nested = self._nested_defs(scope).get(name, ()) if scope is not None else ()
        if len(nested) + len(top) == 0:
            return {}
        function = nested[0] if nested else top[0]
        if id(function) not in self._key_reads:
            self._key_reads[id(function)] = parameter_key_reads(function)
        reads = self._key_reads[id(function)]
        if not any(parts is not None for parts in reads.values()):
            return {}
        if self._bindings is None:
            self._bindings = Bindings(self.module)
        if name in self._bindings.module:
            return {}
        if nested:  # the only binding of ``name`` in its top-level statement
            runs = len(nested) == 1 and self._bindings.count_in(name, scope) == 1
        else:
            runs = len(top) == 1 and self._bindings.count_in(name, scope) == 0
        return argument_key_reads(function, reads, call) if runs else {}

    def function_def(self, name: str, scope: cst.FunctionDef | None, provenance: Provenance, at: Point):
        """The one def ``name`` means at the call before ``at`` in ``scope`` (None: module-level
        code): the def every write of the name reaching the call binds (a notebook may define
        a step again in a later cell), else, for a name the scope never binds, the file's one
        top-level def of it that no assignment rebinds; None otherwise."""
        writes = provenance.reaching_writes((name,), at)
        if writes:
            nodes = {id(event.node): event.node for event in writes}
            only = next(iter(nodes.values())) if len(nodes) == 1 else None
            return only if isinstance(only, cst.FunctionDef) else None
        if name in provenance.local_names or name in self.rebound_functions():
            return None
        defs = self.module_functions.get(name, ())
        return defs[0] if len(defs) == 1 else None

    def _nested_defs(self, scope: cst.FunctionDef) -> dict[str, list[cst.FunctionDef]]:
        """The defs in ``scope``'s own code (not in its nested functions), by name."""
        if id(scope) not in self._nested:
            found: dict[str, list[cst.FunctionDef]] = {}
            for stmt in statements(suite_statements(scope.body), into_scopes=False):
                if isinstance(stmt, cst.FunctionDef):
                    found.setdefault(ident(stmt.name.value), []).append(stmt)
            self._nested[id(scope)] = found
        return self._nested[id(scope)]

    def retains(self, call: cst.Call) -> bool:
        """Whether ``call`` may keep a reference to its arguments."""
        func = call.func
        if isinstance(func, cst.Name):
            if (func.value in NON_RETAINING_BUILTINS and self.keeping_function_handed(call) is None) \
                    or func.value in self.local_callees or self._keeps_no_argument(func.value):
                return False  # (``sorted(xs, key=register)`` may keep what ``register`` does)
        if isinstance(func, cst.Call) and self.imports.resolve(func.func) in READING_WRAPPERS:
            return False  # hk.experimental.tabulate(step)(state, batch): traced for a table, not kept
        if isinstance(func, cst.Call) and self.imports.resolve(func.func) in TRACING_TRANSFORMS:
            return False  # jax.vmap(f)(x): f sees tracers; a result that is x is an alias (direct_refs)
        if isinstance(func, cst.Attribute) and func.attr.value in ("lower", "trace") and self._is_jit(func.value):
            return False  # jax.jit(f).lower(state): traced with the shapes only, keeps no array (jax 0.10.2)
        qualified = self.imports.resolve(func)
        if qualified is not None and qualified.split(".")[0] in NON_RETAINING_ROOTS \
                and self.keeping_function_handed(call) is None:
            return False  # (``jax.tree.map(register, state)`` may keep what ``register`` does)
        if call_effect(qualified, call=call) in (READS, NEW) or saves_synchronously(qualified, call):
            return False  # print, logging, copy.deepcopy, a checkpoint save: nothing kept after the call
        return not self._names_a_jit(func)

    def keeping_function_handed(self, call: cst.Call, value_name: str | None = None) -> str | None:
        """When ``call`` is handed a function that may keep its argument (``register`` in
        ``map(register, [w])``, ``functools.partial(register, w)``, ``Thread(target=register,
        args=(w,))``, ``jax.tree.map(lambda x: kept.append(x), state)``): see
        :meth:`keeping_function`; None when it is handed none.  ``value_name``: the value
        looked at, never taken for the function."""
        func = call.func
        caller = self.imports.resolve(func) or (func.value if type(func) is cst.Name else None)
        if caller is not None and caller.split(".")[0] in NON_RETAINING_ROOTS and caller not in _RUN_ON_VALUES:
            return None  # jax.vmap(f, in_axes=...), jax.jit(f): a wrapper; what runs f sees tracers
        if type(func) is cst.Name and func.value in _CALL_NOTHING_HANDED and self.imports.resolve(func) is None:
            return None  # isinstance(x, core.Learner): a class looked at, never called
        beyond_result = caller in _RESULTS_FOLLOWED_OR_DROPPED
        for arg in call.args:
            if (found := self.keeping_function(arg.value, value_name, beyond_result)) is not None:
                return found
        return None

    def keeping_function(self, value: cst.BaseExpression, value_name: str | None = None,
                         beyond_result: bool = False) -> str | None:
        """Whether ``value`` is a function that may keep its argument: ``""`` for a lambda
        that may (:meth:`_lambda_keeps`) or a function of this file that may (:meth:`retains`;
        with ``beyond_result``, other than in what it returns: :meth:`keeps_beyond_result`),
        ``function:`` and its name for another file's (settled by the join: see
        :mod:`jaxmem.lint.values.kept_if`); None otherwise."""
        kind = type(value)
        if kind is cst.Lambda:
            return "" if self._lambda_keeps(value) else None
        if kind is cst.Name and value.value in self.module_functions and value.value != value_name \
                and self.imports.resolve(value) is None:
            keeps = self.keeps_beyond_result(value.value) if beyond_result else self.retains(cst.Call(func=value))
            return "" if keeps else None
        if (kind is cst.Name or kind is cst.Attribute) and (qualified := self.imports.resolve(value)) is not None \
                and self.imports.is_project(qualified) and not _constant_name(qualified):
            return FUNCTION + qualified.lstrip(".")
        return None

    def _lambda_keeps(self, function: cst.Lambda) -> bool:
        """Whether a lambda may keep what it is called with: it fills a container it does not
        get as a parameter (``lambda x: kept.append(x)``), sets an attribute (``setattr``), or
        calls a function that may keep its argument."""
        params = {param.name.value for param in function.params.params}
        body = function.body
        for call in [body] * (type(body) is cst.Call) + descendants_of_type(body, cst.Call):
            func = call.func
            if type(func) is cst.Attribute and func.attr.value in _LAMBDA_STORES:
                receiver = ref_key(func.value)
                if receiver is None or receiver[0] not in params:
                    return True
            elif (type(func) is cst.Name and func.value == "setattr") or self.keeping_function(func) is not None:
                return True
        return False

    def _is_jit(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a jit made where it is used (``jax.jit(f)``) or a jitted callable's name."""
        if isinstance(expr, cst.Call):
            return transform_for(self.imports.resolve(expr.func)) is not None
        return self._names_a_jit(expr)

    def _names_a_jit(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` names a jitted callable of this module."""
        key = ref_key(expr)
        if key is None:
            return False
        if self._jit_callees is None:  # built once: asked for every call a helper's body makes
            self._jit_callees = frozenset(site.definition.callee for site in self.sites)
        return key in self._jit_callees

    def _keeps_no_argument(self, name: str) -> bool:
        """Whether ``name`` is a top-level function whose body shows it keeps no
        argument (decided on first use: most are never called with a tracked value)."""
        if name not in self._keeps:
            defs = self.module_functions.get(name, ())
            self._keeps[name] = False  # while deciding: a call of itself keeps what the rest of it does
            self._keeps[name] = not defs or any(keeps_arguments(f, call_keeps=self._call_may_keep) for f in defs)
        return not self._keeps[name]

    def _call_may_keep(self, call: cst.Call) -> bool:
        """Whether a call in a function's body may keep what the function hands it, as the
        function's own callers would take it (:meth:`Provenance.keeping_call`): a call made
        for its effect, when it may keep its arguments (:meth:`retains`); a call whose result
        is used is taken to be made for that result, unless it is a function of this module
        that may keep one (``register(value)``), a standard-library function that keeps what
        it is given (``atexit.register``) or a call handed a function that may keep it."""
        if id(call) in self.statement_calls():
            return self.retains(call)
        return self._known_keeping_call(call, handed_from_elsewhere=True)

    def keeps_beyond_result(self, name: str) -> bool:
        """Whether the top-level function ``name`` may keep an argument other than in what it
        returns (:func:`keeps_arguments` with ``beyond_result``; any of its defs may run)."""
        if name not in self._keeps_beyond:
            defs = self.module_functions.get(name, ())
            self._keeps_beyond[name] = False  # while deciding (see _keeps_no_argument)
            self._keeps_beyond[name] = not defs or any(
                keeps_arguments(f, beyond_result=True, call_keeps=self._call_may_keep) for f in defs)
        return self._keeps_beyond[name]

    def might_be_jitted(self, key: RefKey, class_scope: str | None) -> tuple[bool, str | None]:
        """Whether a call through ``key`` could reach a jitted callable (here or elsewhere)."""
        if key[0] in ("self", "cls") and len(key) > 1:
            return (class_scope, ("self",) + key[1:]) in self.class_callees, None
        if key[0] in self.local_callees:
            return True, None
        qualified = self.imports.resolve(_key_expr(key))
        if qualified is None:
            return False, None
        if not self.imports.is_project(qualified):
            return False, None
        return True, qualified


# Calls whose result holds what the functions they run return, as the flow follows it
# (``map``, ``jax.tree.map``: views of their arguments), or that drop it (a thread, a
# debug callback): a function handed to one matters only for what it keeps besides.
_RESULTS_FOLLOWED_OR_DROPPED = frozenset({"map", "filter", "sorted", "min", "max", "jax.debug.callback",
                                          "threading.Thread", "threading.Timer"}) | TREE_MAPS
# Calls of the libraries that keep nothing (``NON_RETAINING_ROOTS``) that run a function
# they are handed on the values they are given, at once (jax 0.10.2): the tree maps, a debug
# callback outside a trace.  Their others wrap the function (``jax.vmap(f)``) or trace it.
_RUN_ON_VALUES = TREE_MAPS | {"jax.tree.map_with_path", "jax.tree_util.tree_map_with_path", "jax.tree.reduce",
                              "jax.tree_util.tree_reduce", "jax.debug.callback"}
def _constant_name(qualified: str) -> bool:
    """Whether the last name of ``qualified`` is spelled as a constant (``decode.EOS_ID``),
    not as a function: PEP 8's names, which a module's functions do not take."""
    last = qualified.rsplit(".", 1)[-1]
    return last.isupper() and any(c.isalpha() for c in last)


# Builtins that never call a function they are handed (``isinstance(x, Learner)``,
# ``getattr(obj, "f", default)``); ``min``, ``max`` and ``sorted`` call their ``key``.
_CALL_NOTHING_HANDED = NON_RETAINING_BUILTINS - {"min", "max", "sorted"}
# Methods a lambda may store what it is called with by (``lambda x: kept.append(x)``).
_LAMBDA_STORES = CONTAINER_METHODS | {"__setitem__", "__setattr__"}

# CallFacts.binding of a call that the one reaching binding sends to an undecorated def
NO_JIT_BINDING = (0, 0)


def _plain_defs(module: cst.Module) -> frozenset[str]:
    """The names module-level code binds with an undecorated def (a notebook's cell that
    defines ``train_step`` again without a jit)."""
    return frozenset(stmt.name.value for stmt in statements(module.body, into_scopes=False)
                     if isinstance(stmt, cst.FunctionDef) and not stmt.decorators)


class _Summaries:
    """Summaries of a file's top-level functions, computed on demand so a
    helper that calls another helper sees its summary (cycles: empty)."""

    def __init__(self, functions: dict[str, list[cst.FunctionDef]], imports: ImportTable,
                 module_names: frozenset[str] = frozenset(), rebound: frozenset[str] = frozenset(),
                 class_twice=None, jitted: frozenset[str] = frozenset()) -> None:
        self.functions = functions
        self.jitted = jitted  # module-level jitted callables: their results are new buffers
        self.class_twice = class_twice  # name -> why an instance of that class may hold an array twice
        self.imports = imports
        self.module_names = module_names  # module-level variables: a result holding one is not new
        self.rebound = rebound  # function names bound otherwise too: their signature is not used
        self.in_progress: set[str] = set()  # recursion: their summary is not known yet
        self.done: dict[str, FunctionSummary] = {}

    def of(self, name: str) -> FunctionSummary | None:
        if name not in self.functions:
            why = self.class_twice(name) if self.class_twice is not None else None
            return FunctionSummary(why) if why else None  # a class whose __init__ stores one value twice
        if name not in self.done:
            self.done[name] = FunctionSummary()  # while in progress
            self.in_progress.add(name)
            twice, returned, made = None, (), ()
            for function in self.functions[name]:  # a name defined twice: either may run
                summary = summarize_function(function, self.imports, summary_of=self.of, new_memory=self.jitted,
                                             module_names=self.module_names, signature_of=self.signature)
                twice = twice or summary.twice
                returned = tuple(dict.fromkeys(returned + summary.returned))
                made = tuple(dict.fromkeys(made + summary.made))
            self.in_progress.discard(name)
            self.done[name] = FunctionSummary(twice, returned, made=made)
        return self.done[name]

    def signature(self, name: str) -> Signature | None:
        """The signature of top-level function ``name`` when it is defined once and
        no module-level assignment or import rebinds the name."""
        functions = self.functions.get(name, ())
        if len(functions) != 1 or name in self.rebound or name in self.in_progress:
            return None  # in progress: a recursive call may return any of its arguments
        return Signature.of(functions[0])


def _key_expr(key: RefKey) -> cst.BaseExpression:
    expr: cst.BaseExpression = cst.Name(key[0])
    for part in key[1:]:
        if part.startswith("["):
            return expr
        expr = cst.Attribute(expr, cst.Name(part))
    return expr


def _handed_on(module: cst.Module, imports: ImportTable, calls, text: str) -> frozenset[str]:
    """The project names (imported from another module, or ``module.name``) that ``module``
    mentions more often than the ``calls`` recorded for them: the other mentions hand the
    callable on, or call it where no call is recorded (in a lambda).  And ``m.*`` for each
    project module ``m`` it imports with ``*``: its calls of ``m``'s names are not recorded."""
    stars = frozenset(f"{star.lstrip('.')}.*" for star in imports.stars if imports.is_project_module(star))
    return stars | _handed_on_by_name(module, imports, calls, text)


def _handed_on_by_name(module: cst.Module, imports: ImportTable, calls, text: str) -> frozenset[str]:
    through = Counter(call.callee[0] for call in calls if call.qualified is not None)
    # Each mention is an occurrence of its local name in ``text``, and so is the import:
    # names with no more occurrences than calls through them plus one need no walk.
    project = {local for local, target in imports.names.items()
               if imports.is_project(target) and text.count(local) > through[local] + 1}
    if not project:
        return frozenset()
    mentioned: Counter = Counter()
    stack = [module]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Import or kind is cst.ImportFrom:
            continue
        if kind is cst.Call and _only_traces_first_argument(node, imports):
            stack.append(node.func)  # ``hk.experimental.tabulate(train.step)``: not handed on
            stack.extend(node.args[1:])
            continue
        if kind is cst.Name and node.value in project:
            mentioned[imports.names[node.value]] += 1
            continue
        if kind is cst.Attribute:
            if (key := ref_key(node)) is not None and key[0] in project:
                qualified = imports.resolve(node)
                if qualified is not None:
                    mentioned[qualified] += 1
                    continue
            # ``.attr`` names a member, never the local of that name:
            # ``jax.tree_util.tree_map`` does not mention ``from pkg import tree_util``.
            stack.append(node.value)
            continue
        stack.extend(children(node))
    called = Counter(call.qualified for call in calls if call.qualified is not None)
    return frozenset(name.lstrip(".") for name, count in mentioned.items() if count > called[name])


def mention_key(definition: JitDefinition) -> str | None:
    """How :attr:`FileFacts.name_mentions` names what a definition is bound to: ``.step`` for
    ``self.step`` (and ``.fns`` for ``self.fns["train"]``), ``step`` at module level (``FNS`` for
    ``FNS["train"]``), ``SCOPE::step`` for a local of function SCOPE."""
    callee = definition.callee
    if callee[0] == "self":
        return "." + callee[1] if len(callee) > 1 else None
    if not callee[0].isidentifier():
        return None  # ``<jax.jit at line 3>``: called where it is made
    return callee[0] if definition.scope == MODULE_SCOPE else f"{definition.scope}::{callee[0]}"


# Code that may read or rebind a module's names without naming them: ``exec``/``eval`` of a
# string, ``globals()``, ``vars()``, IPython's ``get_ipython()`` and ``%run`` (a notebook's
# magic line becomes ``__jaxmem_magic__(run, ...)``; ``%run -i x.py`` runs x.py in the
# notebook's namespace, and ``%run x.py`` copies its globals into it).
_REACHES_NAMESPACE = re.compile(
    r"(?<![.\w])(?<!def )(?:exec|eval|globals|get_ipython)\s*\(|(?<![.\w])vars\s*\(\s*\)|__jaxmem_magic__\(run\b")


_IMPORT_STAR = re.compile(r"\bimport[ \t\\(]*\*")


def _makes_nnx_object(event) -> bool:
    """Whether a WRITE event binds a class call or a view (``model = CNN(...)``)."""
    return event.origin_kind == "value" and isinstance(event.origin, cst.Call) and might_make_nnx_object(event.origin)


_READING_WRAPPER_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in READING_WRAPPERS)


def _only_traces_first_argument(call: cst.Call, imports: ImportTable) -> bool:
    """Whether ``call`` is a reading wrapper (``READING_WRAPPERS``) given a function by name
    (``step``, ``self.step``, ``train.step``) as its first argument."""
    if not call.args or call.args[0].keyword is not None or call.args[0].star != "" \
            or type(call.args[0].value) not in (cst.Name, cst.Attribute):
        return False
    func = call.func
    last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    return last in _READING_WRAPPER_NAMES and imports.resolve(func) in READING_WRAPPERS


def _traced_mentions(module: cst.Module, imports: ImportTable, positions, text: str) -> list[tuple[str, int]]:
    """``(name, line)`` of each function that a reading wrapper only traces
    (``hk.experimental.tabulate(step)``, ``jax.make_jaxpr(step)``, ``jax.eval_shape(step, x)``):
    ``step``, or ``.step`` for ``self.step``.  Such a mention calls nothing with real arrays
    and keeps nothing, so it does not hand the function on."""
    if not any(name in text for name in _READING_WRAPPER_NAMES):
        return []
    found = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call and _only_traces_first_argument(node, imports):
            traced = node.args[0].value
            if type(traced) is cst.Name:
                found.append((traced.value, positions[traced].start.line))
            elif type(traced) is cst.Attribute:
                found.append(("." + traced.attr.value, positions[traced].start.line))
        stack.extend(children(node))
    return found


def _name_mentions(text: str, definitions, functions, positions,
                   traced: list[tuple[str, int]] = ()) -> tuple[tuple[str, int, int], ...]:
    """:func:`relevance.name_mentions` of each definition's name, counted in the lines of the
    function it is local to (a same-named local of another function is another value), else
    in the whole text (an attribute may be used by any method, a global by any function).
    The ``traced`` mentions (:func:`_traced_mentions`) in those lines are not counted."""
    by_scope: dict[str, set[str]] = {}
    for d in definitions:
        key = mention_key(d)
        if key is not None:
            scope, _, name = key.rpartition("::")
            by_scope.setdefault(scope, set()).add(name)
    lines = nodes = None
    out = []
    for scope, names in by_scope.items():
        scoped = text
        first, last = 1, None
        if scope:
            if lines is None:
                lines = text.splitlines(keepends=True)
                nodes = {}
                for function, scopes, _ in functions:  # ``(function, scopes, class_scope)``
                    # a name two defs share (a property's setter) has no one range: the whole text
                    nodes[scopes[0]] = None if scopes[0] in nodes else function
            node = nodes.get(scope)
            if node is not None:
                where = positions[node]
                first, last = where.start.line, where.end.line
                scoped = "".join(lines[first - 1:last])
        out.extend((f"{scope}::{name}" if scope else name,
                    mentions - sum(1 for t, line in traced if t == name and first <= line and (last is None or line <= last)),
                    bindings)
                   for name, mentions, bindings in name_mentions(scoped, names))
    return tuple(sorted(out))


def _function_scopes(body, stack=(), kinds=()):
    """``(function, scopes, class_scope)`` for every def in ``body``, nested ones too.

    ``scopes`` is the function's own scope name, then its enclosing
    function scopes (innermost first), then MODULE_SCOPE; ``class_scope``
    is the class whose ``self`` the function sees.
    """
    for stmt in statements(body, into_scopes=False):
        if isinstance(stmt, cst.FunctionDef):
            class_scope = None
            if "class" in kinds:
                i = len(kinds) - 1 - kinds[::-1].index("class")
                class_scope = "class:" + stack[i]
            name = stmt.name.value if not stack else f"{stack[-1]}.{stmt.name.value}"
            enclosing = tuple(s for s, k in zip(reversed(stack), reversed(kinds)) if k == "function")
            yield stmt, (name,) + enclosing + (MODULE_SCOPE,), class_scope
            yield from _function_scopes(suite_statements(stmt.body), stack + (name,), kinds + ("function",))
        elif isinstance(stmt, cst.ClassDef):
            name = stmt.name.value if not stack else f"{stack[-1]}.{stmt.name.value}"
            yield from _function_scopes(suite_statements(stmt.body), stack + (name,), kinds + ("class",))


def _fills_only_its_own_containers(methods) -> bool:
    """Whether the methods (each with its instance as its first parameter) store into, or
    fill, only attributes of the instance that they bound to new containers: ``self.seen
    = []`` then ``self.seen.append(v)``, not ``self.seen = SEEN`` (a module's list) or
    ``self.box = box`` then ``self.box.kept = v`` (the caller's object), and nothing deeper
    (``self.a.b.append(v)``)."""
    made: dict[str, bool] = {}  # attribute -> every value bound to it is a new empty container
    filled: set[str] = set()
    for method in methods:
        me = method.params.params[0].name.value
        for node in descendants(method.body):
            kind = type(node)
            if kind is cst.Assign or kind is cst.AnnAssign or kind is cst.AugAssign:
                targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
                for target in targets:
                    attribute = _own_attribute(target, me)
                    if attribute is not None and kind is not cst.AugAssign:
                        made[attribute] = made.get(attribute, True) and _new_container(node.value)
                    elif isinstance(target, (cst.Attribute, cst.Subscript)):
                        base = _own_attribute(target.value, me)
                        if base is None and base_name(target) == me:
                            return False  # self.a.b.c = v, self.a[k][j] = v
                        if base is not None:
                            filled.add(base)
            elif kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in CONTAINER_METHODS:
                base = _own_attribute(node.func.value, me)
                if base is None and base_name(node.func.value) == me:
                    return False  # self.a.b.append(v)
                if base is not None:
                    filled.add(base)
    return all(made.get(attribute, False) for attribute in filled)


def _own_attribute(expr, me: str) -> str | None:
    """``seen`` for ``self.seen`` (``me`` being ``self``), else None."""
    if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == me:
        return expr.attr.value
    return None


def _new_container(value) -> bool:
    """``[]``, ``{}``, ``list()``, ``collections.defaultdict(list)``: a new, empty container
    (of ``CONTAINER_MAKERS``, given at most factories of new values), that holds nothing
    of anyone else's."""
    kind = type(value)
    if kind in (cst.List, cst.Dict, cst.Set, cst.Tuple):
        return not value.elements
    return kind is cst.Call and dotted_name(value.func) in CONTAINER_MAKERS - {"tuple"} and all(
        type(arg.value) is cst.Name and arg.value.value in ("list", "dict", "set", "int", "float")
        for arg in value.args)


def _owner(key: RefKey, flow: Flow, params: set[str], assigned: set[str], is_module: bool, self_name: str | None) -> str:
    """Who owns the value ``key`` names, seen from the scope of ``flow``."""
    root = key[0]
    if root in flow.globals:
        return GLOBAL
    if self_name is not None and root == self_name and len(key) > 1:
        return ATTRIBUTE
    if root in params:
        return PARAM
    if is_module:
        return LOCAL
    return LOCAL if root in assigned else GLOBAL  # not assigned here: a free variable


def _assigned_names(flow: Flow) -> set[str]:
    return {e.key[0] for _, e in flow.events() if e.kind == WRITE and e.key is not None and len(e.key) == 1}


class FactExtractor:
    """Computes :class:`FileFacts` for one parsed module."""

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx
        self._arg_ids: dict[int, set[int]] = {}  # id(call) -> ids of its argument values, asked per argument
        self._builtin: dict[str, bool] = {}  # see builtin
        # Functions with nested defs, by scope name (None: the name is used twice), for CallerFacts.
        self.parents: dict[str, _Scope | None] = {}
        self.functions: dict[str, cst.FunctionDef | None] = {}  # every def by scope name (None: twice)
        self.scope: _Scope | None = None
        self.depth = 0
        self.children: dict[str, list[cst.FunctionDef]] = {}  # parent scope -> its nested defs
        # (def, scopes, class scope) of the file's top-level functions and methods: a private
        # function's callers (CallerFacts); and the module's own code, once extracted.
        self.top_level: list[tuple[cst.FunctionDef, tuple[str, ...], str | None]] = []
        self.module_scope: _Scope | None = None
        self.summaries: _Summaries | None = None
        self.nested_summaries: dict[str, tuple[FunctionSummary, Signature]] = {}
        self._caller_calls: dict[tuple[int, int], CallFacts] = {}
        self._assigned_in_file: dict[str, bool] = {}  # a method name -> the file assigns or annotates it
        self._method_scopes: dict[int, _Scope] = {}
        self._function_calls: dict[int, list | None] = {}  # id(private def) -> its calls in view
        self._attribute_uses: dict[tuple, tuple[Use, ...]] = {}  # see attribute_uses
        self._signatures: dict[int, Signature] = {}  # id(def) -> its signature, see callers_of
        self._occurrences: dict[int, dict] = {}  # id(scope node) -> its names' occurrences (nnx_ownership)
        self._nnx_own: dict[tuple[int, str, int], Ownership | None] = {}  # (scope, name, binding)
        self._nnx_factories: dict[str, Factory | str] = {}  # a top-level function -> see nnx_factory
        self._module_provenance: Provenance | None = None  # the module's own code (nnx objects it makes)
        self.module_flow: Flow | None = None  # the module's flow, built before any scope is analysed
        self.mentions_nnx = True  # the file's text has the word (nnx objects and factories are possible)
        self._defaults_provenance: Provenance | None = None  # the module's, for factories' parameter defaults
        self._cached_partials: dict[tuple[int, str], tuple | None] = {}  # (id(flow), name) -> cached_partial
        self._names_cached_partial: bool | None = None  # the file's text has the word (asked once)

    def _module_function(self, name: str):
        """``(summary, signature)`` of the file's top-level function ``name`` (one def), or None."""
        defs = self.ctx.module_functions.get(name, ())
        if self.summaries is None or len(defs) != 1:
            return None
        return self.summaries.of(name), Signature.of(defs[0])

    def calls_in(self, flow: Flow, scopes, class_scope, traced, params, self_name, is_module,
                 array_free_params=frozenset(), function: cst.FunctionDef | None = None, parent: bool = False):
        """Facts for every call in ``flow`` that may reach a jitted callable."""
        self.scope = self._new_scope(flow, scopes, class_scope, traced, params, self_name, is_module,
                                     array_free_params, function)
        self.provenance = self.scope.provenance
        if is_module:
            self._module_provenance = self.provenance
            self.module_scope = self.scope
        if parent:
            self.parents[scopes[0]] = None if scopes[0] in self.parents else self.scope
            self.provenance.nested_functions = self.summarize_nested(self.scope)
        out: list[CallFacts] = []
        for call in flow.call_nodes:
            key = ref_key(call.func)
            qualified = None
            if key is None:
                # jax.jit(f, donate_argnums=0)(x): a definition used once, right here
                site = self.ctx.immediate_definition(call.func, scopes[0]) if isinstance(call.func, cst.Call) else None
                if site is None:
                    continue
                key = site.definition.callee
            else:
                maybe, qualified = self.ctx.might_be_jitted(key, class_scope)
                bound = None
                if not maybe:
                    partial = self.cached_partial(key, flow, class_scope)
                    if partial is None or not self._bound_unchanged(partial[2], call, flow):
                        continue
                    key, qualified, bound = partial
            point = flow.point_after(call)
            eager = traced or id(call) in self.ctx.eager_calls
            out.append(self.call_facts(call, key, qualified, flow, point, scopes, class_scope, eager,
                                       params, self.scope.assigned, self_name, is_module, bound))
        return out

    def cached_partial(self, key: RefKey, flow: Flow, class_scope: str | None):
        """``(callee, qualified, partial call)`` when ``key`` is a name of this scope bound once,
        by ``p = nnx.cached_partial(f, a, b)`` of a name ``f`` that may be jitted, and the file
        mentions ``p`` only there and in calls of it in this scope: each call ``p(x)`` is a call
        ``f(a, b, x)`` (flax 0.12.8: the partial holds ``a`` and ``b`` and passes them first)."""
        if len(key) != 1:
            return None
        if self._names_cached_partial is None:  # no such word in the file: no such call (most files)
            self._names_cached_partial = "cached_partial" in self._source()
        if not self._names_cached_partial:
            return None
        memo_key = (id(flow), key[0])
        if memo_key not in self._cached_partials:
            self._cached_partials[memo_key] = self._find_cached_partial(key[0], flow, class_scope)
        return self._cached_partials[memo_key]

    def _source(self) -> str:
        """The file's text as analysed."""
        return self.ctx.source if self.ctx.source is not None else self.ctx.module.code

    def _bound_unchanged(self, partial: cst.Call, call: cst.Call, flow: Flow) -> bool:
        """Whether each name ``partial`` binds holds at ``call`` the value it held when the
        partial was made (``model = Model()`` again in between: the partial keeps the old one,
        which the facts of ``call``'s arguments would not describe)."""
        made, called = flow.point_after(partial), flow.point_after(call)
        if made is None or called is None:
            return False
        for value in bound_arguments(partial):
            key = ref_key(value)
            if key is not None and len(key) == 1 and [id(e) for e in self.provenance.reaching_writes(key, made)] \
                    != [id(e) for e in self.provenance.reaching_writes(key, called)]:
                return False
        return True

    def _find_cached_partial(self, name: str, flow: Flow, class_scope: str | None):
        writes = self.provenance.writes_of((name,))
        if len(writes) != 1 or writes[0].origin_kind != "value" or not isinstance(writes[0].origin, cst.Call):
            return None
        partial = writes[0].origin
        if self.ctx.imports.resolve(partial.func) not in CACHED_PARTIALS or not partial.args:
            return None
        if any(arg.star or (arg.keyword is not None and arg.keyword.value not in ("graph", "graph_updates"))
               for arg in partial.args) or partial.args[0].keyword is not None:
            return None
        function = partial.args[0].value
        if not isinstance(function, cst.Name):
            return None
        maybe, qualified = self.ctx.might_be_jitted((function.value,), class_scope)
        calls = [call for call in flow.call_nodes if isinstance(call.func, cst.Name) and call.func.value == name]
        if not maybe or self.ctx.namespace_reached \
                or len(re.findall(rf"(?<![.\w]){re.escape(name)}\b", self._source())) != 1 + len(calls):
            return None  # ``run(p)``, ``p.func``, a call in a nested def: calls jaxmem does not see
        return (function.value,), qualified, partial

    def _new_scope(self, flow, scopes, class_scope, traced, params, self_name, is_module,
                   array_free_params=frozenset(), function: cst.FunctionDef | None = None) -> _Scope:
        assigned = _assigned_names(flow)
        provenance = Provenance(
            flow, self.ctx, lambda key: _owner(key, flow, params, assigned, is_module, self_name), class_scope,
            array_free_params)
        provenance.module_function = self._module_function
        provenance.function_def = lambda name, at: self.ctx.function_def(name, function, provenance, at)
        provenance.is_module = is_module
        provenance.private_object = lambda name: self.ctx.private_object(name, function or self.ctx.module)
        if not is_module:
            provenance.local_names = frozenset(params) | frozenset(assigned)
        return _Scope(function, flow, tuple(scopes), class_scope, traced, frozenset(params), assigned,
                      self_name, provenance)

    def method_scope(self, method: cst.FunctionDef, class_name: str) -> _Scope:
        """The scope of ``method`` of top-level class ``class_name`` (see :meth:`top_level_scope`)."""
        return self.top_level_scope(method, (f"{class_name}.{method.name.value}", MODULE_SCOPE),
                                    "class:" + class_name)

    def top_level_scope(self, function: cst.FunctionDef, scopes: tuple[str, ...], class_scope: str | None) -> _Scope:
        """The scope of a top-level function or method, built once (its calls are extracted
        later, in file order; a private method's or function's callers may need it first)."""
        if id(function) not in self._method_scopes:
            flow = _flow_builder(self.ctx, function).build_function(function)
            sig = Signature.of(function)
            params = {p.name for p in sig.params}
            self_name = (sig.params[0].name if sig.params else "self") if class_scope is not None else None
            self._method_scopes[id(function)] = self._new_scope(
                flow, scopes, class_scope,
                id(function) in self.ctx.jitted_functions or _staged(function, self.ctx.imports), params, self_name,
                False, annotated_array_free(function, self.ctx.imports), function)
        return self._method_scopes[id(function)]

    def call_facts(self, call, key, qualified, flow, point, scopes, class_scope, traced, params, assigned,
                   self_name, is_module, partial: cst.Call | None = None) -> CallFacts:
        """The facts of ``call``; with ``partial`` (``nnx.cached_partial(f, a, b)``, see
        :meth:`cached_partial`), of the call of ``f`` it makes: ``a`` and ``b`` first."""
        ctx = self.ctx
        node_events = flow.nodes[point.node].events
        result_writes = [e for e in node_events[point.index:] if e.kind == WRITE and e.key is not None]
        positional: list[ArgFacts] = []
        keywords: list[tuple[str, ArgFacts]] = []
        starred: list[ArgFacts] = []
        leading = None  # plain positionals before the first ``*args`` that is not spread
        owner_of = lambda k: _owner(k, flow, params, assigned, is_module, self_name)  # noqa: E731
        arguments, spread = passed_arguments(
            call, flow, point, is_local=lambda k: owner_of(k) == LOCAL, outlives_scope=is_module,
            held_elsewhere=lambda k: self.escapes_before(k, call, flow, point, params, assigned, self_name, is_module),
            builtin=self.builtin,
            imported=ctx.imported_names)
        leaves = [[arg.value] if arg.star else passed_leaves(arg.value, ctx.imported_names) for arg in arguments]
        if spread or any(found != [arg.value] for found, arg in zip(leaves, arguments)):
            # what each argument passes as it is: a pytree written out as its elements,
            # ``jnp.asarray(x)`` as ``x`` (see arg_facts)
            values = tuple(leaf for found in leaves for leaf in found)
        else:
            values = None
        if partial is not None:
            positional.extend(self.bound_facts(value, partial, call, flow, point, result_writes, params, assigned,
                                               self_name, is_module) for value in bound_arguments(partial))
        for arg in arguments:
            if arg.star:
                if arg.star == "*" and leading is None:
                    leading = len(positional)
                starred.append(self.starred_facts(arg.value))
                continue
            facts = self.arg_facts(arg.value, call, flow, point, result_writes, params, assigned, self_name, is_module,
                                   values)
            if arg.keyword is None:
                positional.append(facts)
            else:
                keywords.append((arg.keyword, facts))
        pos = ctx.positions[call]
        if key[0] == "cls":
            key = ("self",) + key[1:]
        return CallFacts(
            line=pos.start.line, col=pos.start.column, end_line=pos.end.line, end_col=pos.end.column,
            callee=key, scope=scopes[0], scopes=tuple(scopes), class_scope=class_scope, qualified=qualified,
            positional=tuple(positional), keywords=tuple(keywords), has_star=bool(starred),
            traced=traced, text=ctx.text(call),
            leading=(len(positional) if leading is None else leading) if starred else None,
            starred=tuple(starred),
            binding=(self.reaching_binding(partial or call, key, flow.point_after(partial) if partial else point)
                     if is_module and len(key) == 1 else None),
        )

    def bound_facts(self, value, partial: cst.Call, call, flow, point, result_writes, params, assigned, self_name,
                    is_module) -> ArgFacts:
        """The facts of ``value``, bound by ``partial`` and passed again by each of its calls
        (``call`` one of them): as an argument of ``call``; a value that is not an nnx graph
        node (whose arrays nnx.jit writes back into the object) is held by the partial."""
        facts = self.arg_facts(value, call, flow, point, result_writes, params, assigned, self_name, is_module)
        if facts.nnx_own is not None and facts.nnx_own.node and not facts.nnx_own.factories:
            return facts  # (another module's factory: only the join knows what it made)
        where = self.ctx.positions[partial].start
        held = Use(where.line, where.column, f"`{facts.text}` is bound by `{self.ctx.text(partial)[:60]}` "
                   f"(line {where.line}): every call of the partial passes it again", "stored")
        return dataclasses.replace(facts, escapes=facts.escapes + (held,))

    def reaching_binding(self, call: cst.Call, key: RefKey, point: Point) -> tuple[int, int] | None:
        """The lines of the one statement binding module-level name ``key`` that reaches the
        module-level ``call`` before ``point``, when the module binds it to several jits: the
        call reaches that one only.  None when several bindings may reach it, when the call
        runs later than where it is written (in a generator expression or a lambda), or when
        code jaxmem does not follow may rebind the name (``global`` in a function,
        ``import *``, ``exec``/``globals()``/``%run``)."""
        name = key[0]
        if name not in self.ctx.redefined or self.ctx.namespace_reached or id(call) in self.ctx.deferred_calls():
            return None
        source = self._source()
        if _IMPORT_STAR.search(source) or re.search(rf"\bglobal\b[^\n]*\b{re.escape(name)}\b", source):
            return None
        reaching = self.provenance.reaching_writes(key, point)
        if len(reaching) != 1:
            return None
        node = reaching[0].node
        if isinstance(node, cst.FunctionDef) and not node.decorators:
            return NO_JIT_BINDING  # a plain def: the call runs it, no jit
        where = self.ctx.positions[node]
        decorators = getattr(node, "decorators", ())
        first = self.ctx.positions[decorators[0]].start.line if decorators else where.start.line
        return first, where.end.line

    def builtin(self, name: str) -> bool:
        """Whether ``name`` is Python's builtin throughout the file (nothing binds it)."""
        if name not in self._builtin:
            self._builtin[name] = name not in self.ctx.imported_names and not binds_anywhere(self.ctx.module, name)
        return self._builtin[name]

    def starred_facts(self, value) -> ArgFacts:
        """A ``*``/``**`` argument: what it passes as-is, so that a donated argument the
        same call also passes through it is seen (it is never bound to a parameter)."""
        ctx = self.ctx
        pos = ctx.positions[value]
        return ArgFacts(text=ctx.text(value), line=pos.start.line, col=pos.start.column, end_line=pos.end.line,
                        end_col=pos.end.column, key=ref_key(value), refs=direct_refs(value, ctx.imported_names),
                        owner="")

    def arg_facts(self, value, call, flow: Flow, point: Point, result_writes, params, assigned, self_name, is_module,
                  values=None):
        """What the scope does with ``value``, an argument of ``call`` (``values``: every value
        the call passes, when a spread ``*args``/``**kwargs`` makes them differ from its syntax)."""
        ctx = self.ctx
        pos = ctx.positions[value]
        key = ref_key(value)
        refs = direct_refs(value, ctx.imported_names)
        if key is None and refs:
            # jnp.asarray(np_batch): host NumPy data is copied in, donation cannot delete it
            refs = tuple(ref for ref in refs if not self.provenance.key_holds_host_data(ref, point))
        base = dict(text=ctx.text(value), line=pos.start.line, col=pos.start.column,
                    end_line=pos.end.line, end_col=pos.end.column, key=key, refs=refs)
        if key is None and refs and (elements := literal_elements(value)) is not None:
            parts = tuple(self.arg_facts(element, call, flow, point, result_writes, params, assigned, self_name,
                                         is_module, values) for element in elements)
            return ArgFacts(owner="", parts=parts, **base)
        if key is None and refs and isinstance(value, cst.Call) \
                and (operands := view_operands(value, ctx.imported_names)):
            parts = tuple(self.arg_facts(operand, call, flow, point, result_writes, params, assigned, self_name,
                                         is_module, values) for operand in operands)
            return ArgFacts(owner="", parts=parts, through_view=True, **base)
        if key is None:
            origins = () if refs else tuple(self.provenance.of_expr(value, point, 0))
            return ArgFacts(owner="", origins=origins, **base)
        owner = _owner(key, flow, params, assigned, is_module, self_name)
        if owner == PARAM and len(key) == 1 and not self.provenance.entry_value_reaches(key, point):
            owner = LOCAL  # rebound on every path before the call: what it holds was made here
        callers = None
        # A parameter the scope also rebinds (``state = step(state, batch)`` in a loop) holds
        # the caller's value on the first pass only: the callers decide that one, the origins
        # of the scope's own writes the others.
        rebound_param = False
        if owner == PARAM and _holds_entry_value(flow, key[0], call):
            callers = self.callers_of(key[0])
        elif owner == PARAM and len(key) == 1 and _only_rebound(flow, key[0]):
            callers = self.callers_of(key[0])
            rebound_param = callers is not None
        origins = ()
        if (owner == LOCAL and len(key) == 1) or rebound_param:
            origins = tuple(self.provenance.of_key(key, point, entry=not rebound_param))
            if rebound_param:  # whether the caller holds the first value is the callers' to decide
                origins = tuple(without_caller_of(origin, key[0]) for origin in origins)
            if origins and (beside := self.provenance.passed_beside(value, call, point, values)) is not None:
                origins += (beside,)
        if id(call) not in self._arg_ids:
            self._arg_ids[id(call)] = {id(a.value) for a in call.args}
        arg_nodes = self._arg_ids[id(call)]
        result = flow.search(point, key)
        reads = []
        for event in result.reads:
            in_this_call = id(event.node) in arg_nodes or _inside(event.node, call, ctx)
            reads.append(ctx.use(event, "loop" if in_this_call else "read"))
        rebound_by_result = False
        rebound_line = None
        result_keys = {e.key for e in result_writes}
        for event in result.kills:
            if any(event is w for w in result_writes) or any(
                any(overlaps(s, r) for r in result_keys) for s in event.sources
            ):
                rebound_by_result = True
                rebound_line = ctx.positions[event.node].start.line
        if result.kills and rebound_line is None:
            rebound_line = ctx.positions[result.kills[0].node].start.line
        if rebound_by_result and (result.reads or result.reached_exit):
            # Rebound on some paths only.
            rebound_by_result = not result.reads and not result.reached_exit
        made_by = tuple(self.provenance.made_by(key, point)) if origins and rebound_by_result else ()
        escapes, alias_reads = self.escapes_before(key, call, flow, point, params, assigned, self_name, is_module)
        # A closure reads the variable when it runs, not the value it saw: it
        # can observe the donated buffer only if it runs (some call happens)
        # before the variable is rebound.
        rebound_here = any(kills(w.key, key) for w in result_writes)
        if key[0] in flow.captured and not rebound_here and not flow.rebound_before_any_call(point, key):
            escapes.append(Use(pos.start.line, pos.start.column, f"`{key[0]}` is captured by a function", "closure"))
        nnx_own = None
        if owner == LOCAL and len(key) == 1:
            nnx_own = self.nnx_own(key[0], point)
        elif owner == GLOBAL and len(key) == 1 and len(self.scope.scopes) == 2 and key[0] not in flow.globals \
                and not self.ctx.importable:
            # A notebook's top-level function reads the notebook's object.  In a module another
            # file may import the object and hold its arrays while it calls the function.
            nnx_own = self.module_nnx_own(key[0])
        attribute_uses = ()
        if owner == ATTRIBUTE and len(key) == 2 and key[0] == self_name and self.scope.class_scope is not None:
            attribute_uses = self.attribute_uses(self.scope.class_scope, key[1], self.scope.function)
        return ArgFacts(
            owner=owner, reads_after=tuple(reads), reaches_exit=result.reached_exit,
            rebound_by_result=rebound_by_result, rebound_line=rebound_line, escapes=tuple(escapes),
            alias_reads=tuple(alias_reads), origins=origins, made_by=made_by, callers=callers, nnx_own=nnx_own,
            attribute_uses=attribute_uses, **base,
        )

    def attribute_uses(self, class_scope: str, attribute: str, function) -> tuple[Use, ...]:
        """The other methods of the top-level class ``class_scope`` that use ``self.<attribute>``
        (through their own first parameter), each with its first use, in the class's order."""
        memo = (class_scope, attribute, id(function))
        if memo not in self._attribute_uses:
            found = []
            classes = self.ctx.top_level_classes().get(class_scope.removeprefix("class:"), ())
            for method in classes[0].body.body if len(classes) == 1 else ():
                if not isinstance(method, cst.FunctionDef) or method is function:
                    continue
                params = method.params.posonly_params or method.params.params
                if not params or "staticmethod" in decorator_names(method):
                    continue
                own = params[0].name.value
                use = next((node for node in descendants_of_type(method, cst.Attribute)
                            if node.attr.value == attribute and isinstance(node.value, cst.Name)
                            and node.value.value == own), None)
                if use is not None:
                    where = self.ctx.positions[use].start
                    found.append(Use(where.line, where.column, method.name.value, "attribute"))
            self._attribute_uses[memo] = tuple(found)
        return self._attribute_uses[memo]

    def nnx_own(self, name: str, point: Point) -> Ownership | None:
        """Whether the local ``name`` of the current scope, an nnx object, owns its arrays
        at the call before ``point`` (the object the one assignment reaching it makes)."""
        scope = self.scope.function if self.scope.function is not None else self.ctx.module
        if scope is self.ctx.module and self.ctx.namespace_reached:
            return None  # ``exec(...)``, ``globals()``, ``%run``: uses of the object jaxmem cannot see
        made = self.provenance.nnx_made.get(name)
        if made is None:  # asked at every call that passes the name
            kinds = [self._makes_nnx_object(event, self.provenance) for event in self.provenance.writes_of((name,))]
            made = self.provenance.nnx_made[name] = (any(kinds), all(kinds))
        if not made[0]:
            return self._refused_factory(name, point)  # not made by a class call or a view: no scope walk needed
        reaching = self.provenance.reaching_writes((name,), point)
        binding = reaching[0].origin if len(reaching) == 1 and self._makes_nnx_object(reaching[0], self.provenance) \
            else None
        if binding is None and not made[1]:
            return None
        return self._ownership(scope, name, self.provenance, binding)

    def _refused_factory(self, name: str, point: Point) -> Ownership | None:
        """Why the object ``name`` may share its arrays when the one assignment reaching ``point``
        binds it to what a function of this file returns, and that function is no factory
        jaxmem proves (``model = make_model(rngs)``, see :meth:`factory_refusal`); None otherwise."""
        if not self.mentions_nnx:
            return None
        reaching = self.provenance.reaching_writes((name,), point)
        call = reaching[0].origin if len(reaching) == 1 and reaching[0].origin_kind in ("value", "unpack") else None
        func = call.func if isinstance(call, cst.Call) else None
        if not isinstance(func, cst.Name) or func.value not in self.ctx.module_functions \
                or func.value in self.provenance.local_names or (why := self.factory_refusal(func.value)) is None:
            return None
        return Ownership(f"`{name}` is made by `{func.value}`, which jaxmem does not take for a factory of new "
                         f"nnx objects: {why}")

    def module_nnx_own(self, name: str) -> Ownership | None:
        """Whether the notebook-level nnx object ``name``, which a top-level function reads
        (``eval_step(model, batch, eval_metrics)`` in a notebook's ``evaluate()``), owns its
        arrays: every module-level binding makes one, and no use anywhere in the module
        takes its arrays (a call in a function may run after any statement, so no use
        counts as late)."""
        provenance = self._module_provenance
        if provenance is None or self.ctx.namespace_reached:
            return None
        made = [self._makes_nnx_object(event, provenance) for event in provenance.writes_of((name,))]
        if not made or not all(made):
            return None
        return self._ownership(self.ctx.module, name, provenance, None)

    def _ownership(self, scope, name: str, provenance: Provenance, binding: cst.Call | None) -> Ownership | None:
        """:func:`nnx_ownership` of ``name`` in ``scope``, memoised per scope, name and binding."""
        memo = (id(scope), name, id(binding))
        if memo not in self._nnx_own:
            if id(scope) not in self._occurrences:
                self._occurrences[id(scope)] = occurrences(scope)
            self._nnx_own[memo] = nnx_ownership(name, self._occurrences[id(scope)], self.ctx.imports, provenance,
                                                self.ctx.positions, self.ctx.unclean_for_nnx(),
                                                binding, self.ctx.nnx_classes(), self._factories_for(provenance))
        return self._nnx_own[memo]

    def _makes_nnx_object(self, event, provenance: Provenance) -> bool:
        """Whether a WRITE event binds a class call or a view (``model = CNN(...)``), or what a
        factory function of this file returns (``model, optimizer = create(0)``)."""
        if _makes_nnx_object(event):
            return True
        call = event.origin
        return event.origin_kind in ("value", "unpack") and isinstance(call, cst.Call) \
            and self._factories_for(provenance)(call.func) is not None

    def _factories_for(self, provenance: Provenance):
        """``func -> Factory | None`` for calls in the scope of ``provenance``: what the file's
        top-level function a call names returns when the scope does not bind the name itself
        (:meth:`nnx_factory`); ``IMPORTED`` for a function of another project module (the join
        reads what it returns from that module's facts)."""
        local = provenance.local_names

        def factory(func) -> Factory | None:
            if isinstance(func, cst.Name) and func.value in self.ctx.module_functions:
                return None if func.value in local else self.nnx_factory(func.value)
            qualified = self.ctx.imports.resolve(func)
            if qualified is None or not may_be_project_function(qualified) \
                    or qualified.rsplit(".", 1)[-1][:1].isupper() or (isinstance(func, cst.Name) and func.value in local):
                return None
            return IMPORTED

        return factory

    def nnx_factory(self, name: str) -> Factory | None:
        """What the file's one top-level function ``name``, which no other binding of the name
        hides, returns when it makes nnx objects (:func:`nnx_factory`, its parameters taken to
        hold no array: each call's arguments are checked), memoised; None otherwise."""
        found = self._factory_or_refusal(name)
        return found if isinstance(found, Factory) else None

    def factory_refusal(self, name: str) -> str | None:
        """Why the file's top-level function ``name`` is no factory :meth:`nnx_factory` proves
        (None: it is one)."""
        found = self._factory_or_refusal(name)
        return found if isinstance(found, str) else None

    def _factory_or_refusal(self, name: str) -> Factory | str:
        if name not in self._nnx_factories:
            self._nnx_factories[name] = "it calls itself"  # while it is analysed: that proves nothing
            defs = self.ctx.module_functions.get(name, ())
            if len(defs) != 1 or name in self.ctx.rebound_functions():
                self._nnx_factories[name] = "the file binds the name to something else too"
            elif (why := return_refusal(defs[0])) is not None:
                self._nnx_factories[name] = why
            else:
                function = defs[0]
                flow = _flow_builder(self.ctx, function).build_function(function)
                params = frozenset(param.name for param in Signature.of(function).params)
                scope = self._new_scope(flow, (name, MODULE_SCOPE), None, False, params, None, False, params, function)
                if self._defaults_provenance is None:  # a default is evaluated where the def runs: the module
                    self._defaults_provenance = self._new_scope(
                        self.module_flow, (MODULE_SCOPE,), None, False, set(), None, True).provenance
                self._nnx_factories[name] = nnx_factory(
                    function, self.ctx.imports, scope.provenance, self.ctx.positions, self.ctx.unclean_for_nnx(),
                    self.ctx.nnx_classes(), self._factories_for(scope.provenance), self._defaults_provenance)
        return self._nnx_factories[name]

    def _kept_through_holders(self, key: RefKey, source: RefKey, flow: Flow, point: Point, owner_of) -> list[Use]:
        """Why the local ``source`` that ``key`` holds may be kept by a call given another name
        for it or for a part of it (``for v in [w]: register(v)``; :meth:`Provenance.names_holding`):
        the first such call that keeps it whatever the project is, alone, else every one that
        may (marked: :mod:`jaxmem.lint.values.kept_if`)."""
        ctx = self.ctx
        marked: list[Use] = []
        for holder in self.provenance.names_holding(source):
            if holder[0] == key[0] or holder[0] == source[0]:
                continue
            name = holder[0]
            for keeping, condition in handed_on(flow, name, self.provenance.library_method,
                                                lambda event: self._kept_by_call(event, name, flow, point, owner_of)):
                why = (f"`{render(key)}` holds `{render(source)}`, which `{ctx.text(keeping.node, 40)}` may keep "
                       f"(through `{name}`)")
                use = Use(*_line_col(ctx, keeping.node), ctx.marked_kept_if(why, condition), "borrowed")
                if condition is None:
                    return [use]
                marked.append(use)
        return marked

    def _kept_by_call(self, event, name: str, flow: Flow, point: Point, owner_of) -> tuple[bool, str | None]:
        """Whether ``event`` hands the local ``name`` to a call that may keep it
        (:meth:`Provenance.keeping_call`: ``register(w)``, ``logger.log(w)``) where its keeping
        matters: a function, which may keep it anywhere; a method whose receiver is not local
        (the caller or the object may read it later), or is read after the donating call at
        ``point``, or is read by a closure; with the condition the keeping depends on, if any
        (:mod:`jaxmem.lint.values.kept_if`)."""
        kept, receiver, condition = self.provenance.keeping_call(event, name)
        if not kept or self._keeps_nothing(event.node):
            return False, None
        if receiver is None or owner_of(receiver[:1]) != LOCAL \
                or not self.provenance.private_receiver(event.node, receiver):
            return True, condition
        return bool(flow.search(point, receiver[:1]).reads) or receiver[0] in flow.captured, condition

    def _keeps_nothing(self, node) -> bool:
        """Whether a call that received the value provably keeps no reference to it
        (:meth:`Provenance.keeps_nothing`), or is an assertion of a test case."""
        if not isinstance(node, cst.Call):
            return False
        # self.assertIsInstance(state, dict) in a unittest/absltest TestCase
        return self.provenance.keeps_nothing(node) or self._test_assertion(node.func)

    def _test_assertion(self, func) -> bool:
        """Whether ``func`` is ``self.assertX`` in a method of a top-level class whose bases are
        all library test cases (``absltest.TestCase``, ``parameterized.TestCase``, ...): their
        assertion methods compare their arguments and keep none.  Not the ones that call a
        callable they are given (``assertRaises``, ``assertWarns``, ``assertLogs``), nor one the
        class defines or the file assigns (``TestCase.assertEqual = ...``)."""
        scope = self.scope
        if not isinstance(func, cst.Attribute) or not func.attr.value.startswith("assert") \
                or scope is None or scope.class_scope is None or scope.function is None \
                or not isinstance(func.value, cst.Name) or func.value.value != scope.self_name:
            return False
        name = func.attr.value
        if any(word in name for word in CALLING_ASSERTIONS):
            return False
        if any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
               for d in scope.function.decorators):
            return False  # the first parameter is not the instance
        classes = self.ctx.top_level_classes().get(scope.class_scope[len("class:"):], ())
        if len(classes) != 1 or not classes[0].bases or any(
                isinstance(stmt, cst.FunctionDef) and stmt.name.value == name for stmt in classes[0].body.body):
            return False
        if self.ctx.source is None:
            return False
        if name not in self._assigned_in_file:  # asked once per name: a test file asserts often
            self._assigned_in_file[name] = re.search(rf"\b{re.escape(name)}\s*(=[^=]|:)", self.ctx.source) is not None
        if self._assigned_in_file[name]:
            return False  # assigned or annotated somewhere in the file
        return all(arg.keyword is None and self.ctx.imports.resolve(arg.value) in TEST_CASES
                   for arg in classes[0].bases)

    def summarize_nested(self, parent: _Scope) -> dict[str, tuple[FunctionSummary, Signature]]:
        """Summaries of the nested defs of ``parent`` that only plain calls in its own code
        reach (also recorded in ``self.nested_summaries``), by name."""
        if self.parents.get(parent.scopes[0]) is not parent:
            return {}
        names = {}
        for function in self.children.get(parent.scopes[0], ()):
            scope = f"{parent.scopes[0]}.{function.name.value}"
            if self.functions.get(scope) is not function or function.decorators or not _plain_calls(function, parent):
                continue
            visible = (scope,) + parent.scopes
            jitted = frozenset(site.definition.callee[0] for site in self.ctx.sites
                               if site.definition.scope in visible and len(site.definition.callee) == 1)
            signature = Signature.of(function)
            summary = summarize_function(function, self.ctx.imports, summary_of=self.summaries.of,
                                         signature_of=self.summaries.signature,
                                         free=frozenset(free_names(function)) - jitted, new_memory=jitted,
                                         module_names=self.summaries.module_names)
            if not set(summary.returned) <= {p.name for p in signature.params}:
                continue  # it may return a variable of the parent, which still holds it
            self.nested_summaries[scope] = (summary, signature)
            names[function.name.value] = (summary, signature)
        return names

    def callers_of(self, param: str) -> CallerFacts | None:
        """Every call of the current scope's function, when it is a nested def that
        nothing but plain calls in its parent's own code can reach (or a private
        method called only through ``self`` in its class), and each call binds
        ``param`` to an argument (not its default, not ``*args``)."""
        scope = self.scope
        if scope is None or scope.function is None or self.depth >= _MAX_CALLER_DEPTH:
            return None
        function = scope.function
        signature = self._signatures.get(id(function))
        if signature is None:  # asked once per parameter
            signature = self._signatures[id(function)] = Signature.of(function)
        found = signature.by_name(param)
        if function.decorators or found is None or found.kind in (VAR_POSITIONAL, VAR_KEYWORD) \
                or function.asynchronous is not None or _has_yield(function):
            return None
        if len(scope.scopes) == 2 and scope.class_scope is not None:
            return self._private_method_callers(function, scope, signature, param)
        if len(scope.scopes) == 2:
            return self._private_function_callers(function, scope, signature, param)
        if len(scope.scopes) < 3:
            return None
        parent = self.parents.get(scope.scopes[1])
        if parent is None or parent.traced or self.functions.get(scope.scopes[0]) is not function \
                or scope.scopes[0] != f"{scope.scopes[1]}.{function.name.value}":
            return None  # a method of a class inside the parent, a name defined twice, ...
        calls = _plain_calls(function, parent)
        if not calls:
            return None
        out = self._facts_of_calls([(call, parent) for call in calls], signature, param, 0)
        return CallerFacts(function.name.value, parent.scopes[0], param, out) if out is not None else None

    def _private_method_callers(self, function: cst.FunctionDef, scope: _Scope, signature: Signature,
                                param: str) -> CallerFacts | None:
        """:meth:`callers_of` for a method of a top-level class whose name is private
        (``_helper``): every mention of the name in the file is its def or a call
        ``self._helper(...)`` in one of the class's own methods (counted in the whole
        text, comments and strings too).  The join checks that no other file names it."""
        name = function.name.value
        class_name = scope.scopes[0][: -len(name) - 1]
        classes = self.ctx.top_level_classes().get(class_name, ())
        if not name.startswith("_") or name.startswith("__") or len(classes) != 1 or self.ctx.source is None \
                or self.functions.get(scope.scopes[0]) is not function or signature.index_of(param) == 0:
            return None
        calls = []
        for method in classes[0].body.body:
            if not isinstance(method, cst.FunctionDef):
                continue
            caller = self.method_scope(method, class_name) if method is not function else scope
            for call in caller.flow.call_nodes:
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == name and isinstance(func.value, cst.Name) \
                        and func.value.value == caller.self_name:
                    if caller.traced:
                        return None  # called while tracing: the values are tracers
                    calls.append((call, caller))
        if not calls or len(re.findall(rf"\b{re.escape(name)}\b", self.ctx.source)) != 1 + len(calls):
            return None  # mentioned elsewhere: passed as a value, called from a nested def, ...
        out = self._facts_of_calls(calls, signature, param, 1)
        if out is None:
            return None
        return CallerFacts(name, class_name, param, out, reach=PRIVATE_METHOD)

    def _private_function_callers(self, function: cst.FunctionDef, scope: _Scope, signature: Signature,
                                  param: str) -> CallerFacts | None:
        """:meth:`callers_of` for a top-level function whose name is private (``_advance``),
        defined once: every mention of the name in the file is its def or a call
        ``_advance(...)`` in the module's own code, a top-level function or a method of a
        top-level class (counted in the whole text, comments and strings too), none of them
        traced.  The join checks that no other file names it."""
        if id(function) not in self._function_calls:  # asked once per parameter
            self._function_calls[id(function)] = self._private_function_calls(function, scope)
        calls = self._function_calls[id(function)]
        if calls is None:
            return None
        out = self._facts_of_calls(calls, signature, param, 0)
        if out is None:
            return None
        return CallerFacts(function.name.value, "this module", param, out, reach=PRIVATE_FUNCTION)

    def _private_function_calls(self, function: cst.FunctionDef, scope: _Scope) -> list | None:
        """``(call, caller scope)`` of every call of the private top-level ``function``
        (see :meth:`_private_function_callers`), or None when not all are in view."""
        name = function.name.value
        if not name.startswith("_") or name.startswith("__") or self.ctx.source is None or self.module_scope is None \
                or self.functions.get(scope.scopes[0]) is not function \
                or len(self.ctx.module_functions.get(name, ())) != 1:
            return None
        mentions = len(re.findall(rf"\b{re.escape(name)}\b", self.ctx.source))
        if mentions < 2:
            return None
        callers = [self.module_scope]
        for other, scopes, class_scope in self.top_level:  # a flow only for those that call it
            if other is function:
                callers.append(scope)
            elif any(isinstance(call.func, cst.Name) and call.func.value == name
                     for call in descendants_of_type(other, cst.Call)):
                callers.append(self.top_level_scope(other, scopes, class_scope))
        calls = []
        for caller in callers:
            for call in caller.flow.call_nodes:
                if isinstance(call.func, cst.Name) and call.func.value == name:
                    if caller.traced:
                        return None  # called while tracing: the values are tracers
                    calls.append((call, caller))
        if not calls or mentions != 1 + len(calls):
            return None  # mentioned elsewhere: passed as a value, called from a nested def, ...
        return calls

    def _facts_of_calls(self, calls: list[tuple[cst.Call, _Scope]], signature: Signature, param: str,
                        shift: int) -> tuple[tuple[CallFacts, int], ...] | None:
        """Each call's facts, seen from the scope it is in, and which argument binds
        ``param``; None when one does not bind it or passes what the function may read."""
        saved = self.scope, self.provenance
        self.depth += 1
        try:
            out = []
            for call, caller in calls:
                self.scope, self.provenance = caller, caller.provenance
                point = caller.flow.point_after(call)
                if point is None:
                    return None
                memo = (id(call), self.depth)  # one call's facts serve each of the def's parameters
                if memo not in self._caller_calls:
                    self._caller_calls[memo] = self.call_facts(
                        call, ref_key(call.func), None, caller.flow, point, caller.scopes, caller.class_scope,
                        caller.traced, caller.params, caller.assigned, caller.self_name, False)
                facts = self._caller_calls[memo]
                # mapped as the facts number the arguments (a spread ``*args`` passes its elements)
                mapping = map_arguments(len(facts.positional), tuple(name for name, _ in facts.keywords), signature,
                                        shift, facts.has_star, facts.leading)
                index = signature.index_of(param)
                number = mapping.by_index.get(index) if index is not None else None
                number = mapping.by_name.get(param, number)
                if not mapping.resolved or number is None:
                    return None
                passed = facts.args[number]
                if any(ref[0] in caller.flow.captured for ref in passed.refs):
                    return None  # a closure of the caller (the def itself) may read it during the call
                out.append((facts, number))
        finally:
            self.scope, self.provenance = saved
            self.depth -= 1
        return tuple(out)

    def escapes_before(self, key, call, flow: Flow, point: Point, params, assigned, self_name, is_module):
        """Aliases and escapes of ``key``'s value that reach ``call``: names bound to it
        or to a part of it (``a = s``, ``j = a``, ``v`` in ``for v in s.values()``: followed
        through ``_MAX_ALIAS_HOPS`` names), containers that store it, calls that keep it."""
        escapes: list[Use] = []
        alias_reads: list[Use] = []
        owner_of = lambda k: _owner(k, flow, params, assigned, is_module, self_name)  # noqa: E731
        self._aliases_of(key, call, flow, point, owner_of, escapes, alias_reads, {key}, 0, None, False)
        return escapes, alias_reads

    def _aliases_of(self, key, call, flow: Flow, point: Point, owner_of, escapes: list[Use],
                    alias_reads: list[Use], seen: set, hops: int, made: Point | None, maybe: bool) -> None:
        """``made``: for an alias (``hops`` > 0), the point where ``key`` got the value;
        ``maybe``: it got it through a call that may return a new value instead."""
        ctx = self.ctx
        # the others cannot overlap ``key``, and from the others no path leads to the call
        about = flow.events_about_reaching(key[0], flow.nodes_reaching(call))
        after_call = flow.point_after(call)
        # the events whose value of ``key`` reaches the call: one walk back from it
        reaching = flow.events_reaching(key, Point(after_call.node, after_call.index - 1), about) \
            if not hops and about and after_call is not None else None
        for p, event in about:
            if made is not None and not flow.search(made, key, until_event=event).reached:
                continue  # ``key`` holds another value by then (``R = state.x`` ... ``R = new``)
            if event.kind == ESCAPE and event.key is None:
                continue  # closures: see arg_facts
            elif event.kind == ESCAPE and overlaps(event.key, key):
                kind = event.detail
            elif event.kind in (WRITE, ALIAS) and any(overlaps(s, key) for s in event.sources + event.parts) \
                    and event.key != key:
                kind = "alias"
            elif event.kind == WRITE and event.key == key and event.sources and event.detail != "del" and not hops:
                kind = "borrowed"  # key = other: donating key deletes other's buffer too
            else:
                continue
            if event.node is call or _inside(event.node, call, ctx):
                continue
            # the value made here is the one the call sees: the donated key (or, for an alias of an
            # alias, the name bound here) is not rebound between here and the call
            after_event = Point(p.node, p.index + 1)
            if not hops and (id(event) not in reaching if reaching is not None
                             else not flow.search(after_event, key, until_call=call).reached):
                continue
            if kind == "alias" and event.key is not None \
                    and not flow.search(after_event, event.key, until_call=call).reached:
                continue  # ``j = s[i]`` then ``j = 2 * j`` before the call: ``j`` no longer holds it
            if kind == "borrowed":
                for source in event.sources:
                    if overlaps(source, key):
                        continue
                    source_owner = owner_of(source)
                    if source_owner != LOCAL:
                        escapes.append(Use(*_line_col(ctx, event.node), f"`{render(key)}` is `{render(source)}`, "
                                           f"which {'the caller' if source_owner == PARAM else 'something else'} "
                                           f"may still hold", "borrowed"))
                    for read in flow.search(point, source).reads:
                        alias_reads.append(ctx.use(read, "alias" if _holds_as_is(event, source) else "maybe-alias"))
                    made_here = event.origin
                    kept = handed_on(flow, source[0], lambda node: (made_here is not None and (
                        node is made_here or _inside(node, made_here, ctx))) or self.provenance.library_method(node),
                        lambda event: self._kept_by_call(event, source[0], flow, point, owner_of), p) \
                        if source_owner == LOCAL else []
                    for keeping, condition in kept:
                        why = f"`{render(key)}` holds `{render(source)}`, which `{ctx.text(keeping.node, 40)}` may keep"
                        escapes.append(Use(*_line_col(ctx, keeping.node), ctx.marked_kept_if(why, condition), "borrowed"))
                    if source_owner == LOCAL and not kept:
                        escapes += self._kept_through_holders(key, source, flow, point, owner_of)
                    if source_owner == LOCAL and source[0] in flow.captured \
                            and not self.provenance.defined_only(source[0]):
                        closure = self.provenance.capturing_closure(source[0], made_here)
                        if closure is not None:
                            what = "generator expression" if type(closure) is cst.GeneratorExp else "closure"
                            escapes.append(Use(*_line_col(ctx, closure), f"`{render(key)}` holds "
                                               f"`{render(source)}`, which a {what} reads whenever it runs",
                                               "borrowed"))
                continue
            if kind != "alias":
                if kind == "call" and self._keeps_nothing(event.node):
                    continue
                escapes.append(ctx.use(event, kind))
                continue
            target = event.key
            if event.kind == ALIAS or owner_of(target) != LOCAL or target[0] in flow.captured:
                escapes.append(Use(*_line_col(ctx, event.node), f"stored in `{render(target)}`", "stored"))
            through_call = maybe or not _holds_as_is(event, key)
            after = flow.search(point, target)
            for read in after.reads:
                alias_reads.append(ctx.use(read, "maybe-alias" if through_call else "alias"))
            if hops < _MAX_ALIAS_HOPS and target not in seen:
                seen.add(target)  # ``j = a`` after ``a = s``: ``j`` holds ``s``'s arrays too
                self._aliases_of(target, call, flow, point, owner_of, escapes, alias_reads, seen, hops + 1,
                                 after_event, through_call)


_MAX_ALIAS_HOPS = 4  # a = s; b = a; ...: how many names an alias is followed through


def _holds_as_is(event: Event, key) -> bool:
    """Whether the alias ``event`` makes surely holds ``key``'s arrays: a name, attribute
    or constant subscript of it, a literal container of such, an element a loop takes from
    it, a container it is stored in; not the result of a call (``x.reshape(n)``,
    ``state.get_params()``: maybe the very array, maybe a new one)."""
    if event.kind == ALIAS or event.origin_kind == "iter":
        return True
    if not any(overlaps(s, key) for s in event.sources):
        return False  # only through ``parts``: a method jaxmem does not know
    origin = event.origin
    if event.origin_kind == "value" and isinstance(origin, (cst.Tuple, cst.List, cst.Dict)):
        return all(ref_key(e.value) is not None for e in origin.elements
                   if isinstance(e, (cst.Element, cst.DictElement)))
    return event.origin_kind in ("value", "unpack") and origin is not None and ref_key(origin) is not None


_MAX_CALLER_DEPTH = 3  # nested defs calling nested defs: how far "the caller's caller" is followed
_DYNAMIC_LOOKUPS = frozenset({"locals", "vars", "eval", "exec", "globals"})


@dataclass
class _Scope:
    """A function scope whose flow and provenance outlive its own extraction."""

    function: cst.FunctionDef | None
    flow: Flow
    scopes: tuple[str, ...]
    class_scope: str | None
    traced: bool
    params: frozenset[str]
    assigned: set[str]
    self_name: str | None
    provenance: Provenance


def _only_rebound(flow: Flow, param: str) -> bool:
    """Whether every write to ``param`` rebinds the name as a whole (none into it)."""
    return all(event.key == (param,) for _, event in flow.writes_under(param))


def _holds_entry_value(flow: Flow, param: str, call: cst.Call) -> bool:
    """Whether ``param`` (and every part of it) still holds what the caller passed when
    ``call`` runs: no write to it, or into it (``param.x = other``), reaches the call."""
    writes = flow.writes_under(param)
    if not writes:
        return True
    after = flow.point_after(call)
    if after is not None and after.index and flow.nodes[after.node].events[after.index - 1].node is call:
        return not flow.writes_reaching((param,), Point(after.node, after.index - 1), writes)
    return not any(flow.search(Point(point.node, point.index + 1), (param,), until_call=call).reached
                   for point, _ in writes)


def _staged(function: cst.FunctionDef, imports: ImportTable) -> bool:
    """Whether a decorator stages ``function``'s body whenever it runs: ``@partial(shard_map, ...)``,
    ``@jax.shard_map(mesh=...)``, ``@jax.shard_map``; calls in it see tracers and donate nothing."""
    for decorator in function.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            if imports.resolve(expr.func) in PARTIAL_NAMES and expr.args and expr.args[0].keyword is None:
                expr = expr.args[0].value
            else:
                expr = expr.func
        if imports.resolve(expr) in STAGING_DECORATORS:
            return True
    return False


def _has_yield(function: cst.FunctionDef) -> bool:
    """Whether ``function`` is a generator (its arguments live on in the generator object)."""
    return bool(descendants_of_type(function.body, (cst.Yield, cst.Await)))


def _plain_calls(function: cst.FunctionDef, parent: _Scope) -> list[cst.Call] | None:
    """The calls of nested def ``function`` in ``parent``, when its name is used nowhere
    else in ``parent`` (not passed, returned, stored, rebound, captured or called from
    another scope), else None."""
    name = function.name.value
    direct = {id(call.func): call for call in parent.flow.call_nodes}
    calls = []
    for node in descendants_of_type(parent.function.body, cst.Name):
        if node.value in _DYNAMIC_LOOKUPS:
            return None
        if node.value != name or node is function.name:
            continue
        call = direct.get(id(node))
        if call is None:
            return None
        calls.append(call)
    return calls


def _calls_under_disable_jit(module: cst.Module, imports: ImportTable) -> set[int]:
    """Ids of the calls inside ``with jax.disable_jit():``: they run eagerly and donate nothing."""
    found: set[int] = set()
    for stmt in statements(module.body):
        if not isinstance(stmt, cst.With):
            continue
        if not any(isinstance(item.item, cst.Call) and imports.resolve(item.item.func) == "jax.disable_jit"
                   for item in stmt.items):
            continue
        stack: list[cst.CSTNode] = [stmt.body]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call):
                found.add(id(node))
            stack.extend(children(node))
    return found


def _line_col(ctx: _Context, node) -> tuple[int, int]:
    pos = ctx.positions[node]
    return pos.start.line, pos.start.column


def _inside(node, call: cst.Call, ctx: _Context) -> bool:
    """Whether ``node`` lies within ``call``'s source range."""
    try:
        a = ctx.positions[node]
        b = ctx.positions[call]
    except KeyError:
        return False
    return (a.start.line, a.start.column) >= (b.start.line, b.start.column) and (a.end.line, a.end.column) <= (
        b.end.line, b.end.column
    )


def _is_debug_nans(call: cst.Call, imports: ImportTable) -> bool:
    qualified = imports.resolve(call.func) or ""
    if not qualified.endswith("config.update") or len(call.args) < 2:
        return False
    first, second = call.args[0].value, call.args[1].value
    return (
        isinstance(first, cst.SimpleString)
        and first.evaluated_value == "jax_debug_nans"
        and isinstance(second, cst.Name)
        and second.value == "True"
    )


def _debug_nans(ctx: _Context) -> list[tuple[int, int, str]]:
    """Where ``jax_debug_nans`` is switched on (config.update or assignment)."""
    found = []
    for small in small_statements(ctx.module.body):
        value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
        if isinstance(value, cst.Call) and _is_debug_nans(value, ctx.imports):
            found.append((*_line_col(ctx, value), ctx.text(value)))
        elif isinstance(small, cst.Assign) and isinstance(value, cst.Name) and value.value == "True":
            for target in small.targets:
                key = ref_key(target.target)
                if key and key[-1] == "jax_debug_nans":
                    found.append((*_line_col(ctx, small), ctx.text(small)))
    return found


# Calls that stage a function handed to them: the loops and branches, and ``jax.shard_map``
# called on a function (``jax.shard_map(body, mesh=...)``, the decorator's other spelling).
_STAGING_CALLS = STAGING_HIGHER_ORDER | STAGING_DECORATORS


_LAST_PARTS = {table: frozenset(name.rsplit(".", 1)[-1] for name in table)
               for table in (TRACING_HIGHER_ORDER, _STAGING_CALLS)}


def _calls_of(calls, imports: ImportTable, table: frozenset[str]):
    """The calls among ``calls`` of a function in ``table`` (one of ``_LAST_PARTS``'s); the
    name's last part is compared first, so most calls are never resolved."""
    last_parts = _LAST_PARTS[table]
    for call in calls:
        func = call.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if last in last_parts and imports.resolve(func) in table:
            yield call


def _traced_callables(flow: Flow, imports: ImportTable) -> set[str]:
    """Names ``flow``'s calls hand to a tracing higher-order function (``TRACING_HIGHER_ORDER``)."""
    found: set[str] = set()
    for call in _calls_of(flow.call_nodes, imports, TRACING_HIGHER_ORDER):
        found.update(arg.value.value for arg in call.args if isinstance(arg.value, cst.Name))
    return found


def _only_staged(module: cst.Module, imports: ImportTable, source: str | None) -> frozenset[str]:
    """Names of functions that run only staged: every mention of the name in the file
    (comments and strings included) is its one ``def`` or an argument of a staging
    call (``jax.lax.scan(one_step, state, keys)``, ``lax.switch(i, [f, g], x)``,
    ``jax.shard_map(body, mesh=mesh, ...)``), which traces it, so a donation in its body
    does nothing."""
    if source is None:
        return frozenset()
    handed = _handed_to_staging(module, imports)
    return frozenset(name for name, count in handed.items()
                     if len(re.findall(rf"\b{re.escape(name)}\b", source)) == 1 + count)


def _handed_to_staging(node: cst.CSTNode, imports: ImportTable) -> dict[str, int]:
    """How many times each name is handed to a staging call (``_STAGING_CALLS``) inside ``node``
    (an argument, or an element of a list or tuple argument: ``lax.switch(i, [f, g], x)``)."""
    handed: dict[str, int] = {}
    for call in _calls_of(descendants_of_type(node, cst.Call), imports, _STAGING_CALLS):
        for arg in call.args:
            values = [e.value for e in arg.value.elements] if isinstance(arg.value, (cst.List, cst.Tuple)) \
                else [arg.value]
            for value in values:
                if isinstance(value, cst.Name):
                    handed[value.value] = handed.get(value.value, 0) + 1
    return handed


def _staged_in_parent(functions, by_scope: dict[str, cst.FunctionDef | None], imports: ImportTable,
                      positions: Positions) -> set[int]:
    """Ids of the nested defs that run only staged: every mention of the name in the text of
    the enclosing function (comments and strings included) is its one ``def`` or an argument
    of a staging call there.  A nested def's name is local to its parent
    (a ``global`` or ``nonlocal`` of it is a mention too), so the file-wide count of
    :func:`_only_staged` is not needed; test files define a ``step_fn`` in every test.
    ``by_scope`` maps a scope name to its function (None when two defs share the name)."""
    handed_in: dict[int, dict[str, int]] = {}
    found: set[int] = set()
    for function, scopes, _ in functions:
        if len(scopes) < 3 or scopes[0] != f"{scopes[1]}.{function.name.value}":
            continue  # not nested in a function, or a method of a class inside one
        parent = by_scope.get(scopes[1])
        if parent is None:
            continue
        if id(parent) not in handed_in:
            handed_in[id(parent)] = _handed_to_staging(parent, imports)
        name = function.name.value
        count = handed_in[id(parent)].get(name, 0)
        if count and len(re.findall(rf"\b{re.escape(name)}\b", positions.code(parent))) == 1 + count:
            found.add(id(function))
    return found


def _every_parameter(method: cst.FunctionDef) -> frozenset[str]:
    p = method.params
    return frozenset(param.name.value for param in [*p.posonly_params, *p.params, *p.kwonly_params])


def _flow_builder(ctx: _Context, scope: cst.FunctionDef | None = None) -> FlowBuilder:
    return FlowBuilder(ctx.retains, ctx.reads_metadata, ctx.jitted_argument, ctx.written_argument,
                       lambda call: ctx.key_reads(call, scope), ctx.imported_names,
                       lambda call: ctx.keeping_function_handed(call) is not None)


def extract(path: str, module: cst.Module, *, extra_wrappers=(), public_module=False,
            source: str | None = None, own_packages=()) -> tuple[FileFacts, list[DefinitionSite]]:
    """Facts of an already parsed module (``source``: the file's whole text, of which
    ``module`` may have statements blanked; ``own_packages``: see ``Settings.own_packages``)."""
    with indexed(module):
        return _extract(path, module, extra_wrappers, public_module, source, own_packages)


def _extract(path, module, extra_wrappers, public_module, source, own_packages):
    positions = Positions(module)
    imports = ImportTable.from_module(module, own_packages)
    finder = DefinitionFinder(module, positions, imports, extra_wrappers=extra_wrappers, public_module=public_module)
    sites = finder.run()
    ctx = _Context(module, positions, imports, sites, finder, source)
    ctx.importable = not path.endswith(".ipynb")  # another file may import a module's globals, not a notebook's
    ctx.namespace_reached = _REACHES_NAMESPACE.search(source if source is not None else module.code) is not None
    facts = FileFacts(path=path, module_names=module_names_for(path))
    facts.definitions = [site.definition for site in sites]
    classes = frozenset(stmt.name.value for stmt in module.body if isinstance(stmt, cst.ClassDef))
    if classes:  # most files have none
        facts.clean_classes = classes - ctx.classes_reading_module_values()
        facts.nnx_classes = ctx.nnx_classes()
        facts.twice_classes = {name: why for name in sorted(classes) if (why := ctx.twice_for_export(name))}
        for name in sorted(classes):
            if (found := ctx.store_finder().class_stores(name)) is not None:
                stored, init = found
                facts.class_stores[name] = (stored, Signature.of(init))
    facts.functions = {
        stmt.name.value: Signature.of(stmt) for stmt in module.body if isinstance(stmt, cst.FunctionDef)
    }
    summaries = _Summaries(ctx.module_functions, imports, ctx.module_variables(), ctx.rebound_functions(),
                           ctx.class_stores_twice, ctx.module_jitted())
    helpers = CalledFunctions.of_scope(module, imports)
    for stmt in module.body:
        if not isinstance(stmt, cst.FunctionDef):
            continue
        summary = summaries.of(stmt.name.value)
        if not ctx._keeps_no_argument(stmt.name.value):
            summary = dataclasses.replace(summary, keeps=True)
        if len(ctx.module_functions.get(stmt.name.value, ())) == 1 \
                and (stores := ctx.store_finder().stored_parameters(stmt)):
            summary = dataclasses.replace(summary, stores=stores)
        if summary != FunctionSummary():
            facts.function_summaries[stmt.name.value] = summary
        if (made := returned_function(stmt)) is not None:
            inner = CalledFunctions.of_scope(stmt, imports, helpers)
            facts.factories[stmt.name.value] = (Signature.of(made), tuple(output_reach(made, imports, helpers=inner).items()))
        facts.function_outputs[stmt.name.value] = tuple(output_reach(stmt, imports, helpers=helpers).items())
    extractor = FactExtractor(ctx)
    extractor.summaries = summaries
    module_flow = extractor.module_flow = _flow_builder(ctx).build_module(module)
    extractor.mentions_nnx = "nnx" in (source if source is not None else module.code)
    if extractor.mentions_nnx:  # a factory's objects come from nnx classes
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef) and factory_return(stmt) is not None:
                name = stmt.name.value
                facts.nnx_factories[name] = extractor.nnx_factory(name) or extractor.factory_refusal(name)

    facts.calls.extend(extractor.calls_in(module_flow, (MODULE_SCOPE,), None, False, set(), None, True))
    facts.referenced |= module_flow.passed
    facts.traced_callables |= _traced_callables(module_flow, imports)

    functions = list(_function_scopes(module.body))
    only_staged = _only_staged(module, imports, source)
    if facts.definitions:
        text = source if source is not None else module.code
        facts.name_mentions = _name_mentions(text, facts.definitions, functions, positions,
                                             _traced_mentions(module, imports, positions, text))
    parents = {scopes[1] for _, scopes, _ in functions if len(scopes) > 2}
    for function, scopes, _ in functions:
        extractor.functions[scopes[0]] = None if scopes[0] in extractor.functions else function
        if len(scopes) > 2:
            extractor.children.setdefault(scopes[1], []).append(function)
    staged_in_parent = _staged_in_parent(functions, extractor.functions, imports, positions)
    base = {id(function) for function, _, _ in functions
            if id(function) in ctx.jitted_functions or _staged(function, imports) or function.name.value in only_staged
            or id(function) in staged_in_parent}
    traced_by = traced_functions(functions, base, imports, source, ctx.top_level_classes())
    extractor.top_level = [(function, scopes, class_scope) for function, scopes, class_scope in functions
                           if len(scopes) == 2]
    for function, scopes, class_scope in functions:
        flow = _flow_builder(ctx, function).build_function(function)
        sig = Signature.of(function)
        params = {p.name for p in sig.params}
        self_name = sig.params[0].name if class_scope and sig.params else None
        if class_scope and self_name is None:
            self_name = "self"
        # traced whatever other files do, or only while no other file calls the methods in `unless`
        unless = traced_by.get(id(function))
        calls = extractor.calls_in(flow, scopes, class_scope, unless == frozenset(), params, self_name, False,
                                   annotated_array_free(function, imports), function, scopes[0] in parents)
        if unless:
            calls = [dataclasses.replace(call, traced_unless=tuple(sorted(unless))) for call in calls]
        facts.calls.extend(calls)
        facts.traced_callables |= _traced_callables(flow, imports)
        # a local passed around is that scope's own: another scope's same-named local is not it
        local = (params | _assigned_names(flow)) - flow.globals  # not its `global`/`nonlocal` names
        facts.referenced |= {f"{scopes[0]}::{name}" if name in local else name for name in flow.passed}

    facts.nested_summaries = extractor.nested_summaries
    facts.definitions = [site.definition for site in ctx.sites]  # with the immediate ones
    # A name passed around as a value matters to the file that defines it, or,
    # when imported, to the module it comes from: record imported ones qualified.
    facts.referenced = {imports.names.get(name, name).lstrip(".") for name in facts.referenced}
    facts.handed_on = _handed_on(module, imports, facts.calls, source if source is not None else module.code)
    facts.reexports = tuple(sorted((name, target.lstrip(".")) for name, target in imports.names.items()
                                   if "." in target.lstrip(".") and imports.is_project(target)))
    facts.debug_nans = _debug_nans(ctx)
    facts.kept_if_marked = ctx.kept_if_marked
    if "class" in (source if source is not None else module.code):
        facts.keeping_methods = ctx.keeping_methods()
    return facts, sites

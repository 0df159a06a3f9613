"""Which calls may store an array into a value they are given (``populate(config)``).

A value that holds no device array by its origin (``config = ConfigDict()``,
``options = {}``) stops being array-free when the program stores an array into
it.  Stores written in the same scope are seen by the provenance; this module
answers for the stores a *call* may make into an argument:

* a library function (``jax``, ``optax``, ``ml_collections``, the standard
  library, ... see :data:`~jaxmem.lint.callables.project_names.LIBRARY_ROOTS`)
  and a builtin other than ``setattr`` store nothing into their arguments;
* a function or class of the same file is read: it stores into a parameter
  when its body (nested functions included) assigns a non-literal to an
  attribute or item of it, calls a container method of it with a non-literal,
  ``setattr``s it, or hands it to a call that may store into it (followed a
  few calls deep);
* anything else (a method of an object, another file's function) is not seen.

A call not seen counts only when it is a statement of its own, made for its
effect (``populate(config)``, ``build_layers(layers, rngs)``); one whose result
is used (``state = State(params, config)``) is taken to make that result
(:func:`counted_level`).  Inside a def the same holds: a parameter it hands to a
call not seen, made for its effect (``fill(cfg)`` of another file), counts as
stored into, so its callers (in this file or, through ``FunctionSummary.stores``,
in others) see the store.  Nothing is stored into a number, a string or a tuple
(:func:`is_immutable`).
"""

from __future__ import annotations

import builtins

import libcst as cst

from jaxmem.lint.syntax.walk import descendants_of_type
from jaxmem.lint.values.nnx_ownership import is_literal
from jaxmem.lint.values.refs import base_name

# Methods that put their arguments into the container they are called on (``layers.append(w)``).
CONTAINER_MUTATORS = frozenset({"append", "appendleft", "insert", "add", "extend", "extendleft", "update",
                                "setdefault", "__setitem__"})
_BUILTINS = frozenset(dir(builtins)) - {"setattr"}
_MAX_DEPTH = 4  # calls followed through before assuming a store


# What a call may do to an argument, weakest first (see :meth:`StoreFinder.store_into`).
NO_STORE, UNSEEN, STORES = 0, 1, 2


class StoreFinder:
    """Answers :meth:`store_into` for the calls of one file, remembering each function's answer."""

    def __init__(self, imports, functions, classes) -> None:
        self.imports = imports
        self.functions = functions  # top-level name -> [FunctionDef]
        self.classes = classes  # top-level name -> [ClassDef]
        self._stored: dict[int, dict[str, int]] = {}  # id(FunctionDef) -> parameter -> STORES or UNSEEN

    def store_into(self, call: cst.Call, argument: cst.Arg, local_names=frozenset(), depth: int = 0) -> int:
        """What ``call`` may do to the value ``argument`` passes: :data:`STORES` (a def of this
        file or ``setattr`` stores a non-literal into it), :data:`UNSEEN` (a call whose body
        this file does not hold: a method, another file's function), or :data:`NO_STORE`.
        ``local_names``: the names the calling scope binds (a call by one is not the file's def)."""
        func = call.func
        qualified = self.imports.resolve(func)
        if qualified is not None:
            return UNSEEN if self.imports.is_project(qualified) else NO_STORE
        if not isinstance(func, cst.Name):
            return UNSEEN
        name = func.value
        if name == "setattr":
            first = call.args[0] is argument and len(call.args) > 2 and not is_literal(call.args[2].value)
            return STORES if first else NO_STORE
        if name in local_names:
            return UNSEEN
        if name in _BUILTINS and name not in self.functions and name not in self.classes:
            return NO_STORE
        function, shift = self._callee(name)
        if function is None:
            return UNSEEN
        if function is _NO_INIT:
            return NO_STORE
        param = _parameter_for(function, call, argument, shift)
        if param is None:
            return max(self._stored_params(function, depth).values(), default=NO_STORE)  # ``*args``: any
        return self._stored_params(function, depth).get(param, NO_STORE)

    def stored_parameters(self, function: cst.FunctionDef) -> tuple[str, ...]:
        """The parameters ``function``'s body (or a def of this file it hands them to) stores a
        non-literal into (:data:`STORES`), for its callers in other files (``FunctionSummary.stores``)."""
        return tuple(name for name, level in self._stored_params(function, 0).items() if level == STORES)

    def class_stores(self, name: str) -> tuple[tuple[str, ...], cst.FunctionDef] | None:
        """For the file's top-level class ``name``, the parameters its one ``__init__`` stores a
        non-literal into (``self`` aside) and that ``__init__``, for its callers in other files;
        None when it stores into none or its code on the arguments is not read (as
        :meth:`store_into` takes a call whose result is used, see :func:`counted_level`)."""
        if len(self.classes.get(name, ())) != 1 or name in self.functions:
            return None
        init, _ = self._callee(name)
        if init is None or init is _NO_INIT:
            return None
        positional = [*init.params.posonly_params, *init.params.params]
        receiver = positional[0].name.value if positional else None  # ``self``: what ``__init__`` is for
        stored = tuple(name for name in self.stored_parameters(init) if name != receiver)
        return (stored, init) if stored else None

    def _callee(self, name: str) -> tuple[cst.FunctionDef | None, int]:
        """The one top-level def ``name`` calls, with how many leading parameters the call
        does not fill (1 for a class's ``__init__``); ``(None, 0)`` when not known."""
        defs = self.functions.get(name, ())
        classes = self.classes.get(name, ())
        if len(defs) == 1 and not classes:
            return (None, 0) if defs[0].decorators else (defs[0], 0)
        if len(classes) != 1 or defs:
            return None, 0
        cls = classes[0]
        methods = [stmt for stmt in cls.body.body if isinstance(stmt, cst.FunctionDef)]
        if {m.name.value for m in methods} & {"__new__", "__post_init__", "__init_subclass__"} or cls.keywords:
            return None, 0  # runs code of its own on the arguments (a dataclass's __post_init__), or a metaclass
        inits = [m for m in methods if m.name.value == "__init__"]
        if len(inits) == 1 and not inits[0].decorators:
            return inits[0], 1
        if not inits and all((base_of := self.imports.resolve(base.value)) is not None
                             and not self.imports.is_project(base_of) for base in cls.bases):
            return _NO_INIT, 0  # a dataclass, or a library base's __init__ (nnx.Module, NamedTuple)
        return None, 0

    def _stored_params(self, function: cst.FunctionDef, depth: int) -> dict[str, int]:
        """The parameters of ``function`` its body may store a non-literal into, each with
        :data:`STORES` or :data:`UNSEEN` (handed to a call not seen)."""
        if id(function) in self._stored:
            return self._stored[id(function)]
        params = _param_names(function)
        if depth > _MAX_DEPTH:
            return dict.fromkeys(params, UNSEEN)
        stored: dict[str, int] = {}
        self._stored[id(function)] = stored  # while in progress: a recursive call adds nothing more
        for_effect = effect_calls(function.body)
        for node in descendants_of_type(function.body, STORE_NODES):
            for name, literal in stores_of(node, CONTAINER_MUTATORS):
                if name in params and not literal:
                    stored[name] = STORES
            if isinstance(node, cst.Call):
                for arg, name in passed_values(node):
                    if name in params:
                        level = self.store_into(node, arg, params, depth + 1)
                        if level == UNSEEN and id(node) in for_effect:
                            level = STORES  # ``fill(cfg)`` of another file, made for its effect: see counted_level
                        if level > stored.get(name, NO_STORE):
                            stored[name] = level
        return stored


_IMMUTABLE_CALLS = frozenset({"len", "int", "float", "str", "bool", "complex", "round", "abs", "hash", "tuple",
                              "frozenset", "range", "repr", "format", "ord", "chr", "bytes"})
_METADATA = frozenset({"shape", "ndim", "dtype", "size"})


def is_immutable(value, resolve) -> bool:
    """Whether nothing can be stored into what ``value`` evaluates to: a number, a string, a
    tuple of such, ``len(x)``, ``x.shape``.  ``resolve``: the file's import resolver."""
    if is_literal(value) or isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                                                cst.Lambda, cst.Imaginary)):
        return True
    if isinstance(value, cst.Tuple):
        return all(isinstance(e, cst.Element) and is_immutable(e.value, resolve) for e in value.elements)
    if isinstance(value, cst.Attribute) and value.attr.value in _METADATA:
        return True
    if isinstance(value, cst.Call):
        qualified = resolve(value.func) or (value.func.value if isinstance(value.func, cst.Name) else None)
        return qualified in _IMMUTABLE_CALLS
    return False


def counted_level(level: int, call: cst.Call, statement_calls) -> int:
    """``level`` as it counts for a value given to ``call``: a call not seen stores into its
    arguments only when it is made for its effect, as a statement of its own
    (``populate(config)``, ``build_layers(layers, rngs)``) or with its result thrown away
    (``_ = populate(config)``); one whose result the program uses (``state = State(params,
    config)``) is taken to make that result."""
    if level == UNSEEN and id(call) not in statement_calls:
        return NO_STORE
    return level


def effect_calls(node: cst.CSTNode) -> frozenset[int]:
    """Ids of the calls under ``node`` made for their effect: a statement of their own
    (``populate(config)``) or one whose result is thrown away (``_ = populate(config)``)."""
    return frozenset(id(stmt.value) for stmt in descendants_of_type(node, (cst.Expr, cst.Assign))
                     if isinstance(stmt.value, cst.Call) and (isinstance(stmt, cst.Expr) or all(
                         isinstance(t.target, cst.Name) and t.target.value == "_" for t in stmt.targets)))


STORE_NODES = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Call)  # what :func:`stores_of` reads


def stores_of(node, methods):
    """``(name, literal)`` for each value ``node`` (one of :data:`STORE_NODES`) stores into: an
    attribute or item assignment (``cfg.w = v``, ``d[k] += v``) or a call of one of ``methods``
    on it (``layers.append(v)``); ``literal``: what is stored is only literals."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in methods \
                and (name := base_name(func.value)) is not None:
            yield name, all(is_literal(arg.value) for arg in node.args)
        return
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    for target in targets:
        if isinstance(target, (cst.Attribute, cst.Subscript)) and (name := base_name(target)) is not None:
            yield name, node.value is not None and is_literal(node.value)


def passed_values(call: cst.Call):
    """``(argument, name)`` for each argument of ``call`` that passes the value a name holds or
    a part of it (``config``, ``config.model``, ``options["w"]``); not ``*args``/``**kwargs``."""
    for arg in call.args:
        if not arg.star and isinstance(arg.value, (cst.Name, cst.Attribute, cst.Subscript)):
            name = base_name(arg.value)
            if name is not None:
                yield arg, name


_NO_INIT = cst.FunctionDef(name=cst.Name("__init__"), params=cst.Parameters(), body=cst.IndentedBlock(body=[]))


def _param_names(function: cst.FunctionDef) -> set[str]:
    p = function.params
    names = {q.name.value for q in [*p.posonly_params, *p.params, *p.kwonly_params]}
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    return names


def _parameter_for(function: cst.FunctionDef, call: cst.Call, argument: cst.Arg, shift: int) -> str | None:
    """The parameter of ``function`` that ``argument`` of ``call`` binds, or None."""
    p = function.params
    if argument.keyword is not None:
        named = [q for q in [*p.params, *p.kwonly_params] if q.name.value == argument.keyword.value]
        return named[0].name.value if named else None
    positional = [q for q in [*p.posonly_params, *p.params]][shift:]
    index = 0
    for arg in call.args:
        if arg is argument:
            break
        if arg.star:
            return None
        if arg.keyword is None:
            index += 1
    return positional[index].name.value if index < len(positional) else None

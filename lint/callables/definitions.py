"""Find jitted callables in one module, in every decorator and wrapper form.

Reading a single jit expression is :mod:`jit_calls`' job and normalising its
donation keywords :mod:`specs`'; this module walks the scopes and records one
definition per form: decorators (``_visit_function``), wrapping assignments
and containers of jits (``_visit_value``), factories that return a jit or a
nested function, and jits called where they are made (``immediate``).

Produces ``DefinitionSite`` objects (with the libcst nodes, for the codemod)
whose ``definition`` is a plain, picklable ``JitDefinition`` (for the rules).
Resolution goes through the module's imports, so ``import jax as j``,
``from jax import jit``, ``import functools as ft`` all work.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import libcst as cst

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.jit_api import Transform
from jaxmem.lint.callables.jit_calls import JitCallReader
from jaxmem.lint.callables.library_callables import (
    KnownCallable,
    library_function,
    library_method,
    makes_optax_transform,
    optax_field,
    transform_updates,
    unpacked_in,
    vmapped,
)
from jaxmem.lint.callables.signatures import Signature
from jaxmem.lint.callables.specs import DonationSpec, read_spec
from jaxmem.lint.syntax.positions import Positions
from jaxmem.lint.syntax.walk import blocks_of, bound_names, descendants, small_statements, suite_statements
from jaxmem.lint.values.output_parts import returned_parts
from jaxmem.lint.values.refs import RefKey, ident, literal_part, ref_key, render
from jaxmem.lint.values.usefulness import UNUSED, UNUSED_KEPT, output_reach

__all__ = ["DECORATOR", "DECORATOR_CALL", "DECORATOR_PARTIAL", "IMMEDIATE", "MODULE_SCOPE", "WRAP_CALL",
           "DefinitionFinder", "DefinitionSite", "DonationSpec", "JitDefinition", "find_definitions",
           "parse_definitions", "returned_function", "with_unused_kept"]

MODULE_SCOPE = "<module>"

# Forms of definition, i.e. where the donation spec lives.
DECORATOR = "decorator"  # @jax.jit
DECORATOR_CALL = "decorator_call"  # @jax.jit(donate_argnums=0)
DECORATOR_PARTIAL = "decorator_partial"  # @partial(jax.jit, donate_argnums=0)
WRAP_CALL = "call"  # step = jax.jit(fn, donate_argnums=0)
IMMEDIATE = "immediate"  # jax.jit(fn, donate_argnums=0)(x): defined and called at once (never fixed)


@dataclass(frozen=True)
class JitDefinition:
    """A jitted callable, as the rules see it (plain data)."""

    scope: str
    callee: RefKey
    wrapped: str | None
    transform: str
    form: str
    line: int
    col: int
    end_line: int
    end_col: int
    signature: Signature | None
    shift: int
    spec: DonationSpec
    public: bool
    donates_keywords: bool = True
    keeps_module_args: bool = False
    wrapped_qualname: str | None = None
    problems: tuple[str, ...] = ()
    # Parameter name -> whether an output can take its buffers (see
    # :mod:`jaxmem.lint.values.usefulness`); None when the body is not visible.
    outputs: tuple[tuple[str, str], ...] | None = None
    keeps_unused: bool = False  # keep_unused=True: an unread argument stays an argument
    # Per returned part, the parameters that reach it (see :mod:`jaxmem.lint.values.output_parts`):
    # two donated parameters that reach only shared parts compete for one buffer.
    output_parts: tuple[frozenset[str], ...] | None = None
    # ``f = make()``/``self.f = self._make()``: the factory whose call made it (its one jit node is
    # every caller's), and whether this file calls it other than to bind a definition.
    made_by: str | None = None
    made_elsewhere: bool = False

    def output_verdict(self, name: str) -> str | None:
        """``preserved | maybe | none | scalar | prng`` for parameter ``name``, if the body is known."""
        if self.outputs is None:
            return None
        return dict(self.outputs).get(name)

    @property
    def function(self) -> str:
        """The name call sites use, e.g. ``p_train_step`` or ``self._step``."""
        return render(self.callee)


@dataclass
class DefinitionSite:
    """A definition plus the nodes an edit needs."""

    definition: JitDefinition
    transform: Transform
    jit_node: cst.CSTNode  # the Decorator, or the jit Call
    options: cst.Call | None  # the call whose keywords hold the spec
    function_node: cst.FunctionDef | cst.Lambda | None


@dataclass
class _Scope:
    name: str
    kind: str  # "module" | "function" | "class"
    node: cst.CSTNode | None
    class_name: str | None = None
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    constants: dict[str, cst.BaseExpression] = field(default_factory=dict)


def _single_assignments(body) -> dict[str, cst.BaseExpression]:
    """Names assigned exactly once at the top of ``body`` (for constant propagation)."""
    seen: dict[str, cst.BaseExpression] = {}
    repeated: set[str] = set()
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    name = target.value
                    if name in seen:
                        repeated.add(name)
                    seen[name] = small.value
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)) and isinstance(small.target, cst.Name):
                repeated.add(small.target.value)
    return {k: v for k, v in seen.items() if k not in repeated}


def _bindings(body) -> dict[str, list]:
    """Each name ``body`` binds, its nested blocks included (``with``, ``if``, loops),
    nested scopes not, with one entry per binding: the ``cst.Assign`` of an
    assignment, else None."""
    found: dict[str, list] = {}
    assign = None
    for stmt in body:
        for node in (stmt, *descendants(stmt, into_scopes=False)):
            if type(node) is cst.Assign:
                assign = node  # its targets come next (pre-order)
            binding = assign if type(node) is cst.AssignTarget else None
            for name in bound_names(node):
                found.setdefault(ident(name), []).append(binding)
    return found


def _functions_in(body) -> dict[str, cst.FunctionDef]:
    return {stmt.name.value: stmt for stmt in body if isinstance(stmt, cst.FunctionDef)}


def _body_of(node) -> list:
    return suite_statements(node.body)


def _scope_body(scope: _Scope) -> list:
    """The statements of a module or function scope."""
    return scope.node.body if isinstance(scope.node, cst.Module) else _body_of(scope.node)


def _decorator_names(node: cst.FunctionDef) -> set[str | None]:
    """The last name of each decorator of ``node`` (``property``, ``staticmethod``, ``cached_property``)."""
    return {d.decorator.value if isinstance(d.decorator, cst.Name)
            else getattr(getattr(d.decorator, "attr", None), "value", None) for d in node.decorators}


@dataclass
class _Product:
    """The jitted callable a factory returns: what its definitions are made of."""

    transform: Transform
    form: str
    options: cst.Call | None
    signature: Signature | None
    wrapped: str | None
    function_node: object
    wrapped_qualname: str | None
    jit_node: cst.CSTNode  # the returned jit call, or the nested def's decorator
    scopes: list[_Scope]  # the factory's body is the innermost

    def fields(self) -> dict:
        """``DefinitionFinder._add``'s keywords for a definition made by this factory."""
        return dict(transform=self.transform, form=self.form, jit_node=self.jit_node, options=self.options,
                    signature=self.signature, wrapped=self.wrapped, function_node=self.function_node, shift=0,
                    wrapped_qualname=self.wrapped_qualname)


class DefinitionFinder:
    """Walks one module and collects its jitted callables."""

    def __init__(
        self,
        module: cst.Module,
        positions,
        imports: ImportTable,
        *,
        extra_wrappers: tuple[str, ...] = (),
        public_module: bool = False,
    ) -> None:
        self.module = module
        self.positions = positions
        self.imports = imports
        self.calls = JitCallReader(imports, extra_wrappers)
        self.public_module = public_module
        self.sites: list[DefinitionSite] = []
        self.module_functions = _functions_in(module.body)
        self._globals: frozenset[str] | None = None
        self._scope_bindings: dict[int, dict[str, list]] = {}  # scope node id -> name -> its bindings
        self.factories: dict[str, DefinitionSite] = {}
        self._update_names: dict[int, frozenset[str]] = {}  # scope node id -> names bound to an optax update

    # -- wrapped function --------------------------------------------------

    def signature_of_wrapped(
        self, expr: cst.BaseExpression | None, scopes: list[_Scope]
    ) -> tuple[Signature | None, str | None, cst.FunctionDef | cst.Lambda | None, str | None]:
        """``(signature, wrapped_name, node, qualified_if_imported)`` of a jitted expression."""
        if expr is None:
            return None, None, None, None
        if isinstance(expr, cst.Lambda):
            return Signature.of(expr), "<lambda>", expr, None
        if isinstance(expr, cst.Name):
            for scope in reversed(scopes):
                if scope.kind != "class" and expr.value in scope.functions:
                    node = scope.functions[expr.value]
                    return Signature.of(node), expr.value, node, None
            made = self._made_by_factory(expr.value, scopes)
            if made is not None:
                return made
            known = self._unpacked_library_function(expr.value, scopes)
            if known is not None:
                return known.signature, expr.value, known, None
            qualified = self.imports.resolve(expr)
            known = library_function(qualified)
            if known is not None:
                return known.signature, expr.value, known, None  # from mujoco.mjx import step; jax.jit(step)
            return None, expr.value, None, qualified
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            cls = next((s for s in reversed(scopes) if s.kind == "class"), None)
            if cls is not None and expr.value.value in ("self", "cls") and expr.attr.value in cls.functions:
                node = cls.functions[expr.attr.value]
                sig = Signature.of(node)
                is_static = any(
                    isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators
                )
                return (sig if is_static else sig.drop_leading(1)), expr.attr.value, node, None
            known = self._library_method(expr.value.value, expr.attr.value, scopes)
            if known is not None:
                return known.signature, expr.attr.value, known, None  # jax.jit(tx.update), jax.jit(buffer.add)
            qualified = self.imports.resolve(expr)
            known = library_function(qualified)
            if known is not None:
                return known.signature, expr.attr.value, known, None  # jax.jit(mjx.step)
            return None, expr.attr.value, None, qualified
        if isinstance(expr, cst.Call) and self.imports.resolve(expr.func) == "jax.vmap" and expr.args:
            # jax.jit(jax.vmap(mjx.step, in_axes=(None, 0))): only a library contract is carried over
            sig, name, known, _ = self.signature_of_wrapped(expr.args[0].value, scopes)
            known = vmapped(known, expr) if isinstance(known, KnownCallable) else None
            if known is not None:
                return sig, name, known, None
            return None, None, None, None
        if isinstance(expr, cst.Call) and self.calls.is_partial(expr.func) and expr.args:
            inner_sig, name, node, qual = self.signature_of_wrapped(expr.args[0].value, scopes)
            bound = [a for a in expr.args[1:] if a.keyword is None and not a.star]
            keywords = frozenset(a.keyword.value for a in expr.args[1:] if a.keyword is not None)
            if any(a.star for a in expr.args[1:]):
                return None, name, node, qual
            return (inner_sig.drop_leading(len(bound), keywords) if inner_sig else None), name, node, qual
        return None, None, None, None

    def _library_method(self, name: str, method: str, scopes: list[_Scope]) -> KnownCallable | None:
        """The contract of ``name.<method>`` when ``name`` is bound only to a library
        object jaxmem knows (an optax transform, a flashbax buffer): ``name = value``."""
        assign = self._sole_assignment(name, scopes)
        if assign is None or not any(isinstance(t.target, cst.Name) for t in assign.targets):
            return None
        return library_method(assign.value, method, self.imports)

    def _unpacked_library_function(self, name: str, scopes: list[_Scope]) -> KnownCallable | None:
        """``opt_init, opt_update = optax.adam(lr)``: the optax function ``name`` is bound to."""
        assign = self._sole_assignment(name, scopes)
        found = unpacked_in([assign], name) if assign is not None else None
        if found is None:
            return None
        value, position, targets = found
        return optax_field(position, targets) if makes_optax_transform(value, self.imports) else None

    def _sole_assignment(self, name: str, scopes: list[_Scope]) -> cst.Assign | None:
        """The assignment that is the only binding of ``name`` in the innermost enclosing
        scope that binds it; None when that scope binds it otherwise (a parameter, a loop,
        ``with ... as``, ``global``) or more than once: any other binding may hand out
        another object."""
        for scope in reversed(scopes):
            if scope.kind == "class" or scope.node is None:
                continue
            if isinstance(scope.node, (cst.FunctionDef, cst.Lambda)) and \
                    ident(name) in {param.name for param in Signature.of(scope.node).params}:
                return None
            key = id(scope.node)
            if key not in self._scope_bindings:
                self._scope_bindings[key] = _bindings(_scope_body(scope))
            bindings = self._scope_bindings[key].get(ident(name))
            if not bindings:
                continue
            if len(bindings) > 1 or (isinstance(scope.node, cst.Module) and name in self._declared_global()):
                return None  # bound twice, or a function rebinds the module's name
            return bindings[0]
        return None

    def _declared_global(self) -> frozenset[str]:
        """Names some function of the module declares ``global``."""
        if self._globals is None:
            self._globals = frozenset(item.name.value for node in descendants(self.module)
                                      if isinstance(node, cst.Global) for item in node.names)
        return self._globals

    def _preserving_names(self, scopes: list[_Scope]) -> frozenset[str]:
        """Names the enclosing scopes bind to an optax transform's ``update``
        (``opt_init, opt_update = optax.adam(lr)``), for a jitted body that calls them."""
        names = set()
        for scope in scopes:
            if scope.kind == "class" or scope.node is None:
                continue
            if id(scope.node) not in self._update_names:
                self._update_names[id(scope.node)] = transform_updates(_scope_body(scope), self.imports)
            names |= self._update_names[id(scope.node)]
        return frozenset(names)

    def immediate(self, expr: cst.Call, scope_name: str) -> DefinitionSite | None:
        """``jax.jit(f, donate_argnums=0)`` called where it is made, in scope ``scope_name``."""
        found = self.calls.jit_call(expr)
        if found is None or found[2] is None:
            return None
        transform, options, wrapped_expr = found
        root = _Scope(MODULE_SCOPE, "module", self.module)
        root.functions = self.module_functions
        root.constants = _single_assignments(self.module.body)
        scopes = [root] if scope_name == MODULE_SCOPE else [root, _Scope(scope_name, "function", None)]
        sig, wrapped, fn_node, qual = self.signature_of_wrapped(wrapped_expr, scopes)
        pos = self._position(expr)
        return self._add(
            scopes=scopes, callee=(f"<{transform.name} at line {pos.start.line}>",), transform=transform,
            form=IMMEDIATE, jit_node=expr, options=options, signature=sig, wrapped=wrapped,
            function_node=fn_node, shift=0, wrapped_qualname=qual,
        )

    def _made_by_factory(self, name: str, scopes: list[_Scope]):
        """``train_step = get_train_step(model, lr)``: the function a factory returns.

        Same file: the factory's nested ``def`` (or ``lambda``) it returns.
        Another file: the factory's qualified name, for the join to look up
        (``wrapped_qualname`` ending in ``()``).
        """
        for scope in reversed(scopes):
            if scope.kind == "class":
                continue
            value = scope.constants.get(name)
            if not isinstance(value, cst.Call):
                continue
            factory_name = value.func.value if isinstance(value.func, cst.Name) else None
            factory = self.module_functions.get(factory_name) if factory_name else None
            if factory is not None:
                returned = returned_function(factory)
                if returned is not None:
                    return Signature.of(returned), name, returned, None
                return None
            qualified = self.imports.resolve(value.func)
            if qualified is not None:
                return None, name, None, qualified + "()"
            return None
        return None

    # -- walking -----------------------------------------------------------

    def run(self) -> list[DefinitionSite]:
        """Collect every definition site in the module."""
        self.calls.find_project_wrappers(self.module.body)
        root = _Scope(MODULE_SCOPE, "module", self.module)
        root.functions = _functions_in(self.module.body)
        root.constants = _single_assignments(self.module.body)
        self._walk_body(self.module.body, [root])
        self._mark_factories_called_elsewhere()
        return self.sites

    def _mark_factories_called_elsewhere(self) -> None:
        """``made_elsewhere`` on each definition whose factory this file calls more often than it
        binds definitions from it (``make()(x)``, ``steps = [make()]``): those share its jit node."""
        bound = Counter(site.definition.made_by for site in self.sites if site.definition.made_by)
        if not bound:
            return
        called = Counter(render(key) for node in descendants(self.module) if type(node) is cst.Call
                         and (key := ref_key(node.func)) is not None and render(key) in bound)
        for site in self.sites:
            made_by = site.definition.made_by
            if made_by and called[made_by] > bound[made_by]:
                site.definition = replace(site.definition, made_elsewhere=True)

    def _walk_body(self, body, scopes: list[_Scope]) -> None:
        for stmt in body:
            self._walk_statement(stmt, scopes)

    def _walk_statement(self, stmt, scopes: list[_Scope]) -> None:
        if isinstance(stmt, cst.FunctionDef):
            self._visit_function(stmt, scopes)
            inner = _Scope(self._scope_name(scopes, stmt.name.value), "function", stmt)
            inner.functions = _functions_in(_body_of(stmt))
            inner.constants = _single_assignments(_body_of(stmt))
            self._walk_body(_body_of(stmt), scopes + [inner])
            return
        if isinstance(stmt, cst.ClassDef):
            cls = _Scope(self._scope_name(scopes, stmt.name.value), "class", stmt, class_name=stmt.name.value)
            cls.functions = _functions_in(_body_of(stmt))
            cls.constants = _single_assignments(_body_of(stmt))
            self._walk_body(_body_of(stmt), scopes + [cls])
            self._add_property_aliases(cls, scopes + [cls])
            return
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        self._visit_assignment(target.target, small.value, scopes)
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    self._visit_assignment(small.target, small.value, scopes)
            return
        # Compound statements: walk their blocks in the same scope.
        for block in blocks_of(stmt):
            self._walk_body(block, scopes)

    def _add_property_aliases(self, cls: _Scope, scopes: list[_Scope]) -> None:
        """``@property def step(self): return self._compiled_step``: calls through ``self.step``
        reach the jit bound to ``self._compiled_step`` (a second name of its jit node)."""
        visible = f"class:{cls.name}"
        for name, method in cls.functions.items():
            if not _decorator_names(method) & {"cached_property", "property"}:
                continue
            returned = {ref_key(small.value) for small in small_statements(_body_of(method), into_scopes=False)
                        if isinstance(small, cst.Return) and small.value is not None}
            for site in [s for s in self.sites if s.definition.scope == visible]:
                if site.definition.callee in returned and site.definition.callee != ("self", name):
                    alias = replace(site.definition, callee=("self", ident(name)),
                                    public=self._is_public(scopes, name))
                    self.sites.append(replace(site, definition=alias))

    @staticmethod
    def _scope_name(scopes: list[_Scope], name: str) -> str:
        parent = scopes[-1].name
        return name if parent == MODULE_SCOPE else f"{parent}.{name}"

    def _env(self, scopes: list[_Scope]) -> dict:
        env: dict = {}
        for scope in scopes:
            env.update(scope.constants)
        return env

    def _visible_scope(self, scopes: list[_Scope], key: RefKey) -> str:
        """The scope in which calls can see ``key``."""
        cls = next((s for s in reversed(scopes) if s.kind == "class"), None)
        if key[0] in ("self", "cls") and cls is not None:
            return f"class:{cls.name}"
        current = scopes[-1]
        if current.kind == "class":
            # class attribute ``step = jax.jit(...)``: callers use self.step
            return f"class:{current.name}"
        return current.name

    def _is_public(self, scopes: list[_Scope], name: str) -> bool:
        if not self.public_module or name.startswith("_"):
            return False
        return all(s.kind in ("module", "class") and not s.name.split(".")[-1].startswith("_") for s in scopes)

    def _position(self, node: cst.CSTNode):
        return self.positions[node]

    def _add(
        self,
        *,
        scopes: list[_Scope],
        callee: RefKey,
        transform: Transform,
        form: str,
        jit_node: cst.CSTNode,
        options: cst.Call | None,
        signature: Signature | None,
        wrapped: str | None,
        function_node,
        shift: int,
        wrapped_qualname: str | None = None,
        public_name: str | None = None,
        env_scopes: list[_Scope] | None = None,
        made_by: str | None = None,
    ) -> DefinitionSite:
        """Record a definition visible from ``scopes``; its spec's constants
        resolve in ``env_scopes`` (a factory's body), by default ``scopes``."""
        known = function_node if isinstance(function_node, KnownCallable) else None
        function_node = None if known is not None else function_node
        preserving = self._preserving_names(scopes) if function_node is not None else frozenset()
        spec, problems = read_spec(transform, options, signature, self._env(env_scopes or scopes))
        pos = self._position(jit_node)
        visible = self._visible_scope(scopes, callee)
        if callee[0] == "cls":
            callee = ("self",) + callee[1:]
        definition = JitDefinition(
            scope=visible,
            callee=callee,
            wrapped=wrapped,
            transform=transform.name,
            form=form,
            line=pos.start.line,
            col=pos.start.column,
            end_line=pos.end.line,
            end_col=pos.end.column,
            signature=signature,
            shift=shift,
            spec=spec,
            public=self._is_public(scopes, public_name or render(callee)),
            donates_keywords=transform.donates_keywords,
            keeps_module_args=transform.keeps_module_args,
            wrapped_qualname=wrapped_qualname,
            problems=problems,
            outputs=(known.outputs if known is not None else None if function_node is None
                     else _outputs(function_node, options, self.imports, preserving)),
            keeps_unused=_keeps_unused(options),
            output_parts=(known.parts if known is not None else None if function_node is None
                          else returned_parts(function_node, self.imports, preserving)),
            made_by=made_by,
        )
        site = DefinitionSite(definition, transform, jit_node, options, function_node)
        self.sites.append(site)
        return site

    def _jit_decorator(self, node: cst.FunctionDef) -> tuple[Transform, str, cst.Call | None, cst.Decorator] | None:
        """``(transform, form, options, decorator)`` of the first decorator of ``node`` that jits it."""
        for decorator in node.decorators:
            expr = decorator.decorator
            transform = self.calls.transform_of(expr)
            if transform is not None:
                return transform, DECORATOR, None, decorator
            found = self.calls.jit_call(expr)
            if found is not None and found[2] is None:
                form = DECORATOR_PARTIAL if self.calls.is_partial(expr.func) else DECORATOR_CALL
                return found[0], form, found[1], decorator
        return None

    def _visit_function(self, node: cst.FunctionDef, scopes: list[_Scope]) -> None:
        in_class = scopes[-1].kind == "class"
        decorator_names = _decorator_names(node)
        is_static = "staticmethod" in decorator_names
        jitted = self._jit_decorator(node)
        if jitted is not None:
            transform, form, options, decorator = jitted
            callee: RefKey = ("self", ident(node.name.value)) if in_class else (ident(node.name.value),)
            self._add(
                scopes=scopes,
                callee=callee,
                transform=transform,
                form=form,
                jit_node=decorator,
                options=options,
                signature=Signature.of(node),
                wrapped=node.name.value,
                function_node=node,
                shift=1 if in_class and not is_static else 0,
                public_name=node.name.value,
            )
            return
        # Factories: ``def make_step(...): ... return jax.jit(step, ...)``, or a jitted nested def returned.
        made = self._factory_product(node, scopes)
        if made is None:
            return
        if decorator_names & {"cached_property", "property"}:
            if in_class:
                self._add(scopes=made.scopes, callee=("self", node.name.value), **made.fields())
        elif not in_class:
            # Registered lazily: the callee is whatever the caller binds.
            self.factories[node.name.value] = made

    def _factory_product(self, node: cst.FunctionDef, scopes: list[_Scope]) -> _Product | None:
        """The jitted callable ``node`` returns, made in its body: ``return jax.jit(step, ...)``,
        or ``return step`` for a nested ``def step`` under a jit decorator."""
        inner_scope = _Scope(self._scope_name(scopes, node.name.value), "function", node)
        inner_scope.functions = _functions_in(_body_of(node))
        inner_scope.constants = _single_assignments(_body_of(node))
        inner = scopes + [inner_scope]
        returned_call, returned_found = self.calls.returned_jit(node)
        if returned_call is not None:
            transform, options, wrapped_expr = returned_found
            sig, wrapped, fn_node, qual = self.signature_of_wrapped(wrapped_expr, inner)
            return _Product(transform, WRAP_CALL, options, sig, wrapped, fn_node, qual, returned_call, inner)
        returned = returned_function(node)
        jitted = self._jit_decorator(returned) if isinstance(returned, cst.FunctionDef) else None
        if jitted is None:
            return None
        transform, form, options, decorator = jitted
        return _Product(transform, form, options, Signature.of(returned), returned.name.value, returned, None,
                        decorator, inner)

    def _method_factory(self, value: cst.BaseExpression, scopes: list[_Scope]) -> _Product | None:
        """``self._make_step()``: what a method of the enclosing class returns, when it is a jitted
        callable made in its body (see :meth:`_factory_product`)."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and isinstance(value.func.value, cst.Name) and value.func.value.value in ("self", "cls")):
            return None
        at = next((i for i in range(len(scopes) - 1, -1, -1) if scopes[i].kind == "class"), None)
        method = scopes[at].functions.get(value.func.attr.value) if at is not None else None
        if method is None or _decorator_names(method) & {"cached_property", "property", "staticmethod"}:
            return None
        return self._factory_product(method, scopes[:at + 1])

    def _visit_assignment(self, target: cst.BaseExpression, value: cst.BaseExpression, scopes) -> None:
        key = ref_key(target)
        if key is None:
            return
        if isinstance(value, cst.Dict):
            # self.fns = {"train": jax.jit(step)}: callers use self.fns["train"]
            for element in value.elements:
                part = literal_part(element.key) if isinstance(element, cst.DictElement) else None
                if part is not None:
                    self._visit_value(key + (part,), element.value, scopes)
            return
        self._visit_value(key, value, scopes)

    def _visit_value(self, key: RefKey, value: cst.BaseExpression, scopes) -> None:
        # ``a or b`` and ``x if c else y``: any branch that jits defines it.
        if isinstance(value, cst.BooleanOperation):
            self._visit_value(key, value.left, scopes)
            self._visit_value(key, value.right, scopes)
            return
        if isinstance(value, cst.IfExp):
            self._visit_value(key, value.body, scopes)
            self._visit_value(key, value.orelse, scopes)
            return
        value = _compiled_jit(value, self.calls) or value
        found = self.calls.jit_call(value)
        if found is not None:
            transform, options, wrapped_expr = found
            if wrapped_expr is None:
                return  # step = jax.jit(donate_argnums=0): a decorator factory, not a callable
            sig, wrapped, fn_node, qual = self.signature_of_wrapped(wrapped_expr, scopes)
            self._add(
                scopes=scopes, callee=key, transform=transform, form=WRAP_CALL, jit_node=value,
                options=options, signature=sig, wrapped=wrapped, function_node=fn_node, shift=0,
                wrapped_qualname=qual,
            )
            return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in self.factories:
            made, factory = self.factories[value.func.value], value.func.value
        else:
            made = self._method_factory(value, scopes)
            factory = render(ref_key(value.func)) if made is not None else None
        if made is not None:
            self._add(scopes=scopes, callee=key, env_scopes=made.scopes, made_by=factory, **made.fields())


def _compiled_jit(value: cst.BaseExpression, calls: JitCallReader) -> cst.Call | None:
    """The jit of ``jax.jit(f, donate_argnums=1).lower(m, d).compile()``, compiled ahead of
    time: the result takes the jit's arguments and donates as it does.  None for any other
    value, and when the jit has static arguments (the compiled callable no longer takes them)."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "compile"
            and isinstance(value.func.value, cst.Call) and isinstance(value.func.value.func, cst.Attribute)
            and value.func.value.func.attr.value == "lower"):
        return None
    jitted = value.func.value.func.value
    found = calls.jit_call(jitted)
    if found is None or any(arg.keyword is not None and arg.keyword.value in ("static_argnums", "static_argnames")
                            for arg in found[1].args):
        return None
    return jitted


def returned_function(function: cst.FunctionDef) -> cst.FunctionDef | cst.Lambda | None:
    """The nested ``def`` or ``lambda`` a factory returns (``def make(): def step(...): ...; return step``)."""
    nested = _functions_in(_body_of(function))
    for small in small_statements(_body_of(function), into_scopes=False):
        if isinstance(small, cst.Return):
            if isinstance(small.value, cst.Lambda):
                return small.value
            if isinstance(small.value, cst.Name) and small.value.value in nested:
                return nested[small.value.value]
    return None


def find_definitions(
    module: cst.Module,
    positions,
    imports: ImportTable | None = None,
    *,
    extra_wrappers: tuple[str, ...] = (),
    public_module: bool = False,
) -> list[DefinitionSite]:
    """Every jitted callable in ``module``.

    ``positions`` maps nodes to source ranges (:class:`jaxmem.lint.syntax.positions.Positions`).
    """
    imports = imports or ImportTable.from_module(module)
    finder = DefinitionFinder(
        module, positions, imports, extra_wrappers=extra_wrappers, public_module=public_module
    )
    return finder.run()


def parse_definitions(source: str, **kwargs) -> tuple[cst.Module, list[DefinitionSite]]:
    """Parse ``source`` and find its definitions (convenience for the codemod and tests)."""
    module = cst.parse_module(source)
    return module, find_definitions(module, Positions(module), **kwargs)


def _keeps_unused(options: cst.Call | None) -> bool:
    """Whether the transform's options say ``keep_unused=True``."""
    return options is not None and any(
        arg.keyword is not None and arg.keyword.value == "keep_unused"
        and isinstance(arg.value, cst.Name) and arg.value.value == "True" for arg in options.args)


def _outputs(function_node, options: cst.Call | None, imports, preserving=frozenset()) -> tuple[tuple[str, str], ...]:
    """Each parameter's output verdict (see :func:`with_unused_kept`)."""
    return with_unused_kept(tuple(output_reach(function_node, imports, preserving).items()), _keeps_unused(options))


def with_unused_kept(outputs: tuple[tuple[str, str], ...], kept: bool) -> tuple[tuple[str, str], ...]:
    """``outputs`` where an unread parameter stays an argument only with ``keep_unused=True``
    (jit and pmap drop unused arguments, donated or not: jax 0.10.2)."""
    return tuple((name, UNUSED_KEPT if kept and verdict == UNUSED else verdict) for name, verdict in outputs)

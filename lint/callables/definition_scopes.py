"""The scopes the definition walker passes down (module, class, function) and
the questions every definition form asks of them: which functions and
constants a body holds, which scope a name is visible in, what a function
returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from jaxmem.lint.callables.definition_types import MODULE_SCOPE
from jaxmem.lint.syntax.walk import bound_names, descendants, small_statements, suite_statements
from jaxmem.lint.values.refs import RefKey, ident


@dataclass
class Scope:
    """One enclosing module, class or function, with its functions and constants."""

    name: str
    kind: str  # "module" | "function" | "class"
    node: cst.CSTNode | None
    class_name: str | None = None
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    constants: dict[str, cst.BaseExpression] = field(default_factory=dict)

    @classmethod
    def of_module(cls, module: cst.Module) -> Scope:
        """The module's own scope."""
        return cls._of_body(MODULE_SCOPE, "module", module, module.body)

    @classmethod
    def of_function(cls, name: str, node: cst.FunctionDef) -> Scope:
        """The body of ``def`` ``node``, named ``name`` (dotted under its parents)."""
        return cls._of_body(name, "function", node, body_of(node))

    @classmethod
    def of_class(cls, name: str, node: cst.ClassDef) -> Scope:
        """The body of ``class`` ``node``, named ``name`` (dotted under its parents)."""
        return cls._of_body(name, "class", node, body_of(node), class_name=node.name.value)

    @classmethod
    def _of_body(cls, name: str, kind: str, node: cst.CSTNode, body, class_name: str | None = None) -> Scope:
        scope = cls(name, kind, node, class_name=class_name)
        scope.functions = functions_in(body)
        scope.constants = single_assignments(body)
        return scope


def single_assignments(body) -> dict[str, cst.BaseExpression]:
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


def bindings(body) -> dict[str, list]:
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


def functions_in(body) -> dict[str, cst.FunctionDef]:
    """The functions ``body`` defines at its top, by name."""
    return {stmt.name.value: stmt for stmt in body if isinstance(stmt, cst.FunctionDef)}


def body_of(node) -> list:
    """The statements of a ``def`` or ``class``."""
    return suite_statements(node.body)


def scope_body(scope: Scope) -> list:
    """The statements of a module or function scope."""
    return scope.node.body if isinstance(scope.node, cst.Module) else body_of(scope.node)


PROPERTY_DECORATORS = frozenset({"cached_property", "property"})


def last_name(expr: cst.BaseExpression) -> str | None:
    """``jit`` of ``jax.jit`` or ``jit``; None for any other expression."""
    if isinstance(expr, cst.Name):
        return expr.value
    return expr.attr.value if isinstance(expr, cst.Attribute) else None


def decorator_names(node: cst.FunctionDef) -> set[str | None]:
    """The last name of each decorator of ``node`` (``property``, ``staticmethod``, ``cached_property``)."""
    return {last_name(d.decorator) for d in node.decorators}


def returned_function(function: cst.FunctionDef) -> cst.FunctionDef | cst.Lambda | None:
    """The nested ``def`` or ``lambda`` a factory returns (``def make(): def step(...): ...; return step``)."""
    nested = functions_in(body_of(function))
    for small in small_statements(body_of(function), into_scopes=False):
        if isinstance(small, cst.Return):
            if isinstance(small.value, cst.Lambda):
                return small.value
            if isinstance(small.value, cst.Name) and small.value.value in nested:
                return nested[small.value.value]
    return None


def enclosing_class(scopes: list[Scope]) -> Scope | None:
    """The innermost class among ``scopes``."""
    return next((s for s in reversed(scopes) if s.kind == "class"), None)


def scope_name(scopes: list[Scope], name: str) -> str:
    """The name of a scope called ``name`` opened inside ``scopes``."""
    parent = scopes[-1].name
    return name if parent == MODULE_SCOPE else f"{parent}.{name}"


def visible_scope(scopes: list[Scope], key: RefKey) -> str:
    """The scope in which calls can see ``key``."""
    cls = enclosing_class(scopes)
    if key[0] in ("self", "cls") and cls is not None:
        return f"class:{cls.name}"
    current = scopes[-1]
    if current.kind == "class":
        # class attribute ``step = jax.jit(...)``: callers use self.step
        return f"class:{current.name}"
    return current.name


def constants_seen(scopes: list[Scope]) -> dict:
    """The constants visible from the innermost of ``scopes`` (inner ones shadow outer ones)."""
    env: dict = {}
    for scope in scopes:
        env.update(scope.constants)
    return env

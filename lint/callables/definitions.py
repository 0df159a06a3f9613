"""Find jitted callables in one module, in every decorator and wrapper form.

Reading a single jit expression is :mod:`jit_calls`' job and normalising its
donation keywords :mod:`specs`'; this module walks the scopes and hands each
statement to the form that recognises it, one module per form:

- :mod:`forms_decorated`: ``@jax.jit``, ``@jax.jit(...)``, ``@partial(jax.jit, ...)``;
- :mod:`forms_assigned`: ``f = jax.jit(g, ...)``, dict elements, ``a or b``,
  ``x if c else y``, ``jax.jit(g).lower(...).compile()``;
- :mod:`forms_factories`: jits a function, method or property returns, and the
  names their calls are bound to;
- :mod:`forms_property_aliases`: ``@property`` returning a jitted attribute;
- :mod:`forms_immediate`: ``jax.jit(f, ...)(x)`` (asked for by the join).

What a jit wraps is :mod:`wrapped_functions`' job; :mod:`definition_builder`
turns what a form found into a ``DefinitionSite`` (with the libcst nodes, for
the codemod) whose ``definition`` is a plain, picklable ``JitDefinition`` (for
the rules; both in :mod:`definition_types`). Resolution goes through the
module's imports, so ``import jax as j``, ``from jax import jit``,
``import functools as ft`` all work.
"""

from __future__ import annotations

import libcst as cst

from jaxmem.lint.callables.definition_builder import DefinitionBuilder, with_unused_kept
from jaxmem.lint.callables.definition_scopes import Scope, body_of, functions_in, returned_function, scope_name
from jaxmem.lint.callables.definition_types import (
    DECORATOR,
    DECORATOR_CALL,
    DECORATOR_PARTIAL,
    IMMEDIATE,
    MODULE_SCOPE,
    WRAP_CALL,
    DefinitionSite,
    JitDefinition,
)
from jaxmem.lint.callables.forms_assigned import add_wrap_call, assigned_values
from jaxmem.lint.callables.forms_decorated import add_decorated
from jaxmem.lint.callables.forms_factories import Product, add_factory, add_made, mark_factories_called_elsewhere
from jaxmem.lint.callables.forms_immediate import add_immediate
from jaxmem.lint.callables.forms_property_aliases import add_property_aliases
from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.jit_calls import JitCallReader
from jaxmem.lint.callables.specs import DonationSpec
from jaxmem.lint.callables.wrapped_functions import WrappedFunctions
from jaxmem.lint.syntax.positions import Positions
from jaxmem.lint.syntax.walk import blocks_of

__all__ = ["DECORATOR", "DECORATOR_CALL", "DECORATOR_PARTIAL", "IMMEDIATE", "MODULE_SCOPE", "WRAP_CALL",
           "DefinitionFinder", "DefinitionSite", "DonationSpec", "JitDefinition", "find_definitions",
           "parse_definitions", "returned_function", "with_unused_kept"]


class DefinitionFinder:
    """Walks one module's scopes and hands each statement to the definition forms."""

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
        self.calls = JitCallReader(imports, extra_wrappers)
        self.module_functions = functions_in(module.body)
        self.wrapped = WrappedFunctions(module, imports, self.calls, self.module_functions)
        self.builder = DefinitionBuilder(positions, imports, public_module=public_module)
        self.sites: list[DefinitionSite] = self.builder.sites
        self.factories: dict[str, Product] = {}  # module-level factory name -> the jit it returns

    def run(self) -> list[DefinitionSite]:
        """Collect every definition site in the module."""
        self.calls.find_project_wrappers(self.module.body)
        self._walk_body(self.module.body, [Scope.of_module(self.module)])
        mark_factories_called_elsewhere(self.sites, self.module)
        return self.sites

    def immediate(self, expr: cst.Call, scope_name: str) -> DefinitionSite | None:
        """``jax.jit(f, donate_argnums=0)`` called where it is made, in scope ``scope_name``."""
        return add_immediate(self, expr, scope_name)

    def _walk_body(self, body, scopes: list[Scope]) -> None:
        for stmt in body:
            self._walk_statement(stmt, scopes)

    def _walk_statement(self, stmt, scopes: list[Scope]) -> None:
        if isinstance(stmt, cst.FunctionDef):
            if not add_decorated(self, stmt, scopes):
                add_factory(self, stmt, scopes)
            inner = Scope.of_function(scope_name(scopes, stmt.name.value), stmt)
            self._walk_body(body_of(stmt), scopes + [inner])
            return
        if isinstance(stmt, cst.ClassDef):
            cls = Scope.of_class(scope_name(scopes, stmt.name.value), stmt)
            self._walk_body(body_of(stmt), scopes + [cls])
            add_property_aliases(self.builder, cls, scopes + [cls])
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

    def _visit_assignment(self, target: cst.BaseExpression, value: cst.BaseExpression, scopes: list[Scope]) -> None:
        for key, part in assigned_values(target, value):
            if not add_wrap_call(self, key, part, scopes):
                add_made(self, key, part, scopes)


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

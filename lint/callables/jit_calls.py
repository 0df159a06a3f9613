"""Reading a jit expression: which transform it names, which call holds its options, what it wraps.

``jax.jit(f, ...)``, ``jax.jit(...)`` (a decorator factory), ``partial(jax.jit, ...)``,
``jax.jit(...)(f)``, configured wrappers, and the project's own wrappers
(``def my_jit(fn, donate_argnums=()): return jax.jit(fn, donate_argnums=...)``).
"""

from __future__ import annotations

import libcst as cst

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.jit_api import PARTIAL_NAMES, Transform, transform_for
from jaxmem.lint.callables.signatures import Signature
from jaxmem.lint.callables.specs import keyword_arg
from jaxmem.lint.syntax.walk import small_statements, suite_statements


class JitCallReader:
    """Recognises jit expressions through one module's imports."""

    def __init__(self, imports: ImportTable, extra_wrappers: tuple[str, ...] = ()) -> None:
        self.imports = imports
        self.extra_wrappers = tuple(extra_wrappers)
        self.wrappers: dict[str, Transform] = {}  # the project's own wrappers, by function name

    def transform_of(self, expr: cst.BaseExpression) -> Transform | None:
        """The transform ``expr`` names (``jax.jit``, ``nnx.jit``, a wrapper...)."""
        qualified = self.imports.resolve(expr)
        found = transform_for(qualified, self.extra_wrappers)
        if found is not None:
            return found
        if isinstance(expr, cst.Name):
            if expr.value in self.wrappers:
                return self.wrappers[expr.value]
            return transform_for(expr.value, self.extra_wrappers)
        return None

    def is_partial(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` names ``functools.partial``."""
        return self.imports.resolve(expr) in PARTIAL_NAMES

    def jit_call(self, expr: cst.BaseExpression) -> tuple[Transform, cst.Call, cst.BaseExpression | None] | None:
        """``(transform, options_call, wrapped_fn)`` when ``expr`` jits a function.

        Understands ``jax.jit(f, ...)``, ``jax.jit(...)`` (a decorator
        factory: wrapped None) and ``partial(jax.jit, ...)``.
        """
        if not isinstance(expr, cst.Call):
            return None
        transform = self.transform_of(expr.func)
        if transform is not None:
            first = expr.args[0] if expr.args and expr.args[0].keyword is None and not expr.args[0].star else None
            return transform, expr, first.value if first is not None else None
        if self.is_partial(expr.func) and expr.args and expr.args[0].keyword is None:
            transform = self.transform_of(expr.args[0].value)
            if transform is not None:
                return transform, expr, None
        # jax.jit(...)(f): decorator factory applied in a call
        if isinstance(expr.func, cst.Call) and expr.args and expr.args[0].keyword is None:
            inner = self.jit_call(expr.func)
            if inner is not None and inner[2] is None:
                return inner[0], inner[1], expr.args[0].value
        return None

    def find_project_wrappers(self, body) -> None:
        """Project wrappers: ``def my_jit(fn, donate_argnums=()): return jax.jit(fn, donate_argnums=...)``."""
        for stmt in body:
            if not isinstance(stmt, cst.FunctionDef):
                continue
            sig = Signature.of(stmt)
            if not sig.positional or sig.by_name("donate_argnums") is None and not sig.has_var_keyword:
                continue
            forwarded = self._forwards_donation(stmt, sig.positional[0].name)
            if forwarded is not None:
                self.wrappers[stmt.name.value] = Transform(
                    stmt.name.value,
                    argnums_kw="donate_argnums",
                    argnames_kw="donate_argnames" if sig.by_name("donate_argnames") or sig.has_var_keyword else None,
                    donates_keywords=forwarded.donates_keywords,
                )

    def returned_jit(self, function: cst.FunctionDef):
        """``(return_value, (transform, options, wrapped))`` for the first
        ``return jax.jit(f, ...)`` directly in ``function`` (not in nested defs)."""
        for small in small_statements(suite_statements(function.body), into_scopes=False):
            if isinstance(small, cst.Return) and small.value is not None:
                found = self.jit_call(small.value)
                if found is not None and found[2] is not None:
                    return small.value, found
        return None, None


    def _forwards_donation(self, function: cst.FunctionDef, param: str) -> Transform | None:
        """The transform when ``function`` returns a jit of its parameter ``param``
        that forwards ``donate_argnums`` (a project wrapper)."""
        value, found = self.returned_jit(function)
        if found is None:
            return None
        transform, options, wrapped = found
        if isinstance(wrapped, cst.Name) and wrapped.value == param:
            if keyword_arg(options, "donate_argnums") is not None or any(a.star == "**" for a in options.args):
                return transform
        return None

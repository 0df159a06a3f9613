"""Turn what a definition form found into a ``DefinitionSite``: the donation
spec read with the constants in scope, the scope callers see it in, whether it
is public, and each parameter's output verdict when the body is visible."""

from __future__ import annotations

import libcst as cst

from jaxmem.lint.callables.definition_scopes import Scope, constants_seen, scope_body, visible_scope
from jaxmem.lint.callables.definition_types import DefinitionSite, JitDefinition
from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.jit_api import Transform
from jaxmem.lint.callables.library_callables import KnownCallable, transform_updates
from jaxmem.lint.callables.signatures import Signature
from jaxmem.lint.callables.specs import read_spec
from jaxmem.lint.values.output_parts import returned_parts
from jaxmem.lint.values.refs import RefKey, render
from jaxmem.lint.values.usefulness import UNUSED, UNUSED_KEPT, CalledFunctions, output_reach


class DefinitionBuilder:
    """Builds one module's definition sites, in the order the forms find them (``sites``)."""

    def __init__(self, positions, imports: ImportTable, *, public_module: bool = False) -> None:
        self.positions = positions
        self.imports = imports
        self.public_module = public_module
        self.sites: list[DefinitionSite] = []
        self._update_names: dict[int, frozenset[str]] = {}  # scope node id -> names bound to an optax update
        self._called: dict[tuple[int, ...], CalledFunctions | None] = {}  # scope node ids -> their functions

    def add(
        self,
        *,
        scopes: list[Scope],
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
        env_scopes: list[Scope] | None = None,
        made_by: str | None = None,
    ) -> DefinitionSite:
        """Record a definition visible from ``scopes``; its spec's constants
        resolve in ``env_scopes`` (a factory's body), by default ``scopes``."""
        known = function_node if isinstance(function_node, KnownCallable) else None
        function_node = None if known is not None else function_node
        # the body's free names resolve where it is written (a factory's body for a made jit)
        body_scopes = env_scopes or scopes
        preserving = self._preserving_names(body_scopes) if function_node is not None else frozenset()
        helpers = self._called_functions(body_scopes) if function_node is not None else None
        spec, problems = read_spec(transform, options, signature, constants_seen(env_scopes or scopes))
        pos = self.positions[jit_node]
        visible = visible_scope(scopes, callee)
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
            public=self.is_public(scopes, public_name or render(callee)),
            donates_keywords=transform.donates_keywords,
            keeps_module_args=transform.keeps_module_args,
            wrapped_qualname=wrapped_qualname,
            problems=problems,
            outputs=(known.outputs if known is not None else None if function_node is None
                     else _outputs(function_node, options, self.imports, preserving, helpers)),
            keeps_unused=_keeps_unused(options),
            output_parts=(known.parts if known is not None else None if function_node is None
                          else returned_parts(function_node, self.imports, preserving, helpers)),
            made_by=made_by,
        )
        site = DefinitionSite(definition, transform, jit_node, options, function_node)
        self.sites.append(site)
        return site

    def is_public(self, scopes: list[Scope], name: str) -> bool:
        """Whether ``name``, defined in ``scopes``, is part of a public module's API."""
        if not self.public_module or name.startswith("_"):
            return False
        return all(s.kind in ("module", "class") and not s.name.split(".")[-1].startswith("_") for s in scopes)

    def _preserving_names(self, scopes: list[Scope]) -> frozenset[str]:
        """Names the enclosing scopes bind to an optax transform's ``update``
        (``opt_init, opt_update = optax.adam(lr)``), for a jitted body that calls them."""
        names = set()
        for scope in scopes:
            if scope.kind == "class" or scope.node is None:
                continue
            if id(scope.node) not in self._update_names:
                self._update_names[id(scope.node)] = transform_updates(scope_body(scope), self.imports)
            names |= self._update_names[id(scope.node)]
        return frozenset(names)

    def _called_functions(self, scopes: list[Scope]) -> CalledFunctions | None:
        """The functions of the enclosing module and function scopes a jitted body may call
        by name (class bodies are not visible from their methods)."""
        visible = tuple(scope for scope in scopes if scope.kind != "class")
        if not visible or any(scope.node is None for scope in visible):
            return None  # a scope whose body is not at hand may bind any name
        key = tuple(id(scope.node) for scope in visible)
        if key not in self._called:
            outer = self._called_functions(list(visible[:-1])) if len(visible) > 1 else None
            self._called[key] = CalledFunctions.of_scope(visible[-1].node, self.imports, outer)
        return self._called[key]


def _keeps_unused(options: cst.Call | None) -> bool:
    """Whether the transform's options say ``keep_unused=True``."""
    return options is not None and any(
        arg.keyword is not None and arg.keyword.value == "keep_unused"
        and isinstance(arg.value, cst.Name) and arg.value.value == "True" for arg in options.args)


def _outputs(function_node, options: cst.Call | None, imports, preserving=frozenset(),
             helpers: CalledFunctions | None = None) -> tuple[tuple[str, str], ...]:
    """Each parameter's output verdict (see :func:`with_unused_kept`)."""
    return with_unused_kept(tuple(output_reach(function_node, imports, preserving, helpers).items()),
                            _keeps_unused(options))


def with_unused_kept(outputs: tuple[tuple[str, str], ...], kept: bool) -> tuple[tuple[str, str], ...]:
    """``outputs`` where an unread parameter stays an argument only with ``keep_unused=True``
    (jit and pmap drop unused arguments, donated or not: jax 0.10.2)."""
    return tuple((name, UNUSED_KEPT if kept and verdict == UNUSED else verdict) for name, verdict in outputs)

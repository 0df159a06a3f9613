"""Property aliases: ``@property def step(self): return self._compiled_step`` makes
``self.step`` a second name of the jit bound to ``self._compiled_step``."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from jaxmem.lint.callables.definition_builder import DefinitionBuilder
from jaxmem.lint.callables.definition_scopes import PROPERTY_DECORATORS, Scope, body_of, decorator_names
from jaxmem.lint.syntax.walk import small_statements
from jaxmem.lint.values.refs import ident, ref_key


def add_property_aliases(builder: DefinitionBuilder, cls: Scope, scopes: list[Scope]) -> None:
    """Record ``self.<property>`` for each definition of class ``cls`` a property of it returns
    (``scopes`` end with ``cls``), once the class body has been walked."""
    visible = f"class:{cls.name}"
    for name, method in cls.functions.items():
        if not decorator_names(method) & PROPERTY_DECORATORS:
            continue
        returned = {ref_key(small.value) for small in small_statements(body_of(method), into_scopes=False)
                    if isinstance(small, cst.Return) and small.value is not None}
        for site in [s for s in builder.sites if s.definition.scope == visible]:
            if site.definition.callee in returned and site.definition.callee != ("self", name):
                alias = replace(site.definition, callee=("self", ident(name)), public=builder.is_public(scopes, name))
                builder.sites.append(replace(site, definition=alias))

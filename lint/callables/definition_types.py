"""Jitted-callable definitions as plain data: the forms a definition takes,
``JitDefinition`` (picklable, for the rules) and ``DefinitionSite`` (with the
libcst nodes an edit needs, for the codemod)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from jaxmem.lint.callables.jit_api import Transform
from jaxmem.lint.callables.signatures import Signature
from jaxmem.lint.callables.specs import DonationSpec
from jaxmem.lint.values.refs import RefKey, render

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
    # ``@logged`` above ``@jax.jit``: a decorator applied after the jit, which decides what each
    # call passes to it and may read the arguments afterwards (its name; None when there is none).
    wrapped_by: str | None = None

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

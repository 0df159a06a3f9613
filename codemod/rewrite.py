"""Turn a :class:`~jaxmem.codemod.planning.SitePlan` into new libcst nodes.

Two shapes of edit: extend the keyword arguments of the call that holds
the spec (``jax.jit(f, ...)``, ``@jax.jit(...)``, ``@partial(jax.jit, ...)``),
or turn a bare decorator into a call (``@partial(jax.jit, donate_argnums=0)``,
``@jax.jit(donate_argnums=0)``, ``@eqx.filter_jit(donate="all")``).
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from jaxmem.codemod.layout import append_items
from jaxmem.codemod.literals import extend_spec_value, is_editable_spec, new_spec_value, quote_of
from jaxmem.codemod.planning import KeywordEdit

NO_SPACE = cst.SimpleWhitespace("")


class CannotEdit(Exception):
    """The existing spec cannot be extended mechanically; the message says why."""


def _keyword_arg(call: cst.Call, keyword: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    return None


def _equal_like(args: Sequence[cst.Arg]) -> cst.AssignEqual:
    """``=`` spaced the way the call's other keywords are (PEP 8: no spaces)."""
    for arg in args:
        if arg.keyword is not None and isinstance(arg.equal, cst.AssignEqual):
            return arg.equal
    return cst.AssignEqual(whitespace_before=NO_SPACE, whitespace_after=NO_SPACE)


def check_editable(call: cst.Call | None, edits: Sequence[KeywordEdit], module: cst.Module) -> None:
    """Raise :class:`CannotEdit` when an existing keyword of ``edits`` is not a literal."""
    if call is None:
        return
    for edit in edits:
        arg = _keyword_arg(call, edit.keyword)
        if arg is None or edit.replace is not None:
            continue
        if not is_editable_spec(arg.value):
            spelled = " ".join(module.code_for_node(arg.value).split())
            wanted = ", ".join(repr(v) for v in edit.values)
            raise CannotEdit(
                f"`{edit.keyword}` is spelled `{spelled}`; jaxmem-fix only extends literals, "
                f"add {wanted} there by hand"
            )


def with_donation(call: cst.Call, edits: Sequence[KeywordEdit], quote: str) -> cst.Call:
    """``call`` with every keyword of ``edits`` extended or added."""
    args = list(call.args)
    added: list[cst.Arg] = []
    for edit in edits:
        position = next(
            (i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == edit.keyword), None
        )
        if position is not None:
            arg = args[position]
            args[position] = arg.with_changes(value=_new_value(arg.value, edit, quote_of(arg.value) or quote))
        else:
            added.append(
                cst.Arg(
                    keyword=cst.Name(edit.keyword),
                    value=_fresh_value(edit, quote),
                    equal=_equal_like(args),
                )
            )
    if added:
        args = append_items(args, added, opening=call.whitespace_before_args)
    return call.with_changes(args=args)


def _new_value(existing: cst.BaseExpression, edit: KeywordEdit, quote: str) -> cst.BaseExpression:
    if edit.replace is not None:
        return cst.SimpleString(f"{quote}{edit.replace}{quote}")
    return extend_spec_value(existing, edit.values, quote)


def _fresh_value(edit: KeywordEdit, quote: str) -> cst.BaseExpression:
    if edit.replace is not None:
        return cst.SimpleString(f"{quote}{edit.replace}{quote}")
    return new_spec_value(edit.values, quote)


def decorator_as_partial(
    decorator: cst.Decorator, partial: cst.BaseExpression, edits: Sequence[KeywordEdit], quote: str
) -> cst.Decorator:
    """``@jax.jit`` -> ``@partial(jax.jit, donate_argnums=0)``."""
    call = cst.Call(func=partial, args=[cst.Arg(decorator.decorator)])
    return decorator.with_changes(decorator=with_donation(call, edits, quote))


def decorator_as_factory(decorator: cst.Decorator, edits: Sequence[KeywordEdit], quote: str) -> cst.Decorator:
    """``@jax.jit`` -> ``@jax.jit(donate_argnums=0)`` (jax >= 0.8.1, equinox, ...)."""
    call = cst.Call(func=decorator.decorator, args=[])
    return decorator.with_changes(decorator=with_donation(call, edits, quote))

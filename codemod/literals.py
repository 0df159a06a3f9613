"""Donation spec values as libcst literals: build them, extend them.

Only literal specs are edited (``0``, ``(0, 1)``, ``[0]``, ``"state"``,
``("a", "b")``); a spec spelled through a variable, a call or a condition
is left to the author, because the edit would belong somewhere else.
"""

from __future__ import annotations

from typing import Iterable, Union

import libcst as cst

from jaxmem.codemod.layout import append_items

SpecItem = Union[int, str]


def item_literal(value: SpecItem, quote: str = '"') -> cst.BaseExpression:
    """``2`` -> ``Integer("2")``; ``"state"`` -> a string in ``quote`` quotes."""
    if isinstance(value, str):
        return cst.SimpleString(f"{quote}{value}{quote}")
    if value < 0:
        return cst.UnaryOperation(cst.Minus(), cst.Integer(str(-value)))
    return cst.Integer(str(value))


def new_spec_value(values: Iterable[SpecItem], quote: str = '"') -> cst.BaseExpression:
    """The value of a new keyword: one item as is, several as a tuple."""
    items = list(values)
    if len(items) == 1:
        return item_literal(items[0], quote)
    return cst.Tuple([cst.Element(item_literal(v, quote)) for v in items])


def _is_scalar_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.SimpleString)):
        return not expr.lpar
    return (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, cst.Integer)
        and not expr.lpar
    )


def is_editable_spec(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is a literal spec that :func:`extend_spec_value` can extend."""
    if _is_scalar_literal(expr):
        return True
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(
            isinstance(element, cst.Element) and _is_scalar_literal(element.value)
            for element in expr.elements
        )
    return False


def quote_of(expr: cst.BaseExpression) -> str | None:
    """The quote character of the first plain string in ``expr``, if any."""
    strings = [expr] if isinstance(expr, cst.SimpleString) else [
        e.value for e in getattr(expr, "elements", ()) if isinstance(e.value, cst.SimpleString)
    ]
    for string in strings:
        if string.prefix == "" and string.quote in ('"', "'"):
            return string.quote
    return None


def extend_spec_value(expr: cst.BaseExpression, values: Iterable[SpecItem], quote: str = '"') -> cst.BaseExpression:
    """``expr`` with ``values`` appended; a scalar becomes a tuple, a list stays a list.

    The caller checks :func:`is_editable_spec` first.
    """
    new_elements = [cst.Element(item_literal(v, quote)) for v in values]
    if _is_scalar_literal(expr):
        return cst.Tuple([cst.Element(expr), *new_elements])
    if isinstance(expr, cst.Tuple) and expr.lpar:
        elements, closing = _extend_bracketed(
            list(expr.elements), new_elements, expr.lpar[0].whitespace_after, expr.rpar[0].whitespace_before,
            single_comma_required=True,
        )
        return expr.with_changes(elements=elements, rpar=[expr.rpar[0].with_changes(whitespace_before=closing)])
    if isinstance(expr, cst.List):
        elements, closing = _extend_bracketed(
            list(expr.elements), new_elements, expr.lbracket.whitespace_after, expr.rbracket.whitespace_before,
        )
        return expr.with_changes(elements=elements, rbracket=expr.rbracket.with_changes(whitespace_before=closing))
    raise ValueError(f"not an editable donation spec: {type(expr).__name__}")


def _extend_bracketed(elements, new_elements, opening, closing, *, single_comma_required=False):
    """Append to a tuple's or list's elements; returns them and the new closing whitespace.

    A tuple or list keeps the whitespace before its closing bracket (and a
    comment after the last element) on the bracket, not on the element; it
    is moved onto the last element while appending so that the comment stays
    with the element it was written after.
    """
    if not elements or not isinstance(closing, cst.ParenthesizedWhitespace):
        out = append_items(elements, new_elements, opening=opening, single_comma_required=single_comma_required)
        if single_comma_required and len(out) == 1:
            out = [out[0].with_changes(comma=cst.Comma())]  # (2,): a lone element keeps its comma
        return out, closing
    last = elements[-1]
    has_trailing_comma = isinstance(last.comma, cst.Comma) and not (
        single_comma_required and len(elements) == 1 and not isinstance(opening, cst.ParenthesizedWhitespace)
    )
    comma = last.comma if isinstance(last.comma, cst.Comma) else cst.Comma()
    carried = [*elements[:-1], last.with_changes(comma=comma.with_changes(whitespace_after=closing))]
    out = append_items(carried, new_elements, opening=opening)
    new_closing = out[-1].comma.whitespace_after
    out[-1] = out[-1].with_changes(comma=cst.Comma() if has_trailing_comma else cst.MaybeSentinel.DEFAULT)
    return out, new_closing

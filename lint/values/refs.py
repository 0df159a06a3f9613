"""Reference keys: ``x``, ``self.state``, ``batch["x"]`` as comparable tuples.

Donated values are often attribute paths, so liveness is tracked per key,
the way pyright's binder does.  A key is a tuple of parts: a name, then
attribute names, then ``[<literal>]`` for constant subscripts.
"""

from __future__ import annotations

import unicodedata

import libcst as cst

RefKey = tuple[str, ...]
_CONSTANTS = frozenset({"None", "True", "False"})


def ident(name: str) -> str:
    """An identifier as Python sees it: NFKC-normalised (``ﬁeld`` is ``field``)."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


def ref_key(expr: cst.BaseExpression) -> RefKey | None:
    """The key of ``expr`` when it is a plain name/attribute/literal-subscript chain."""
    # Exact types: libcst's classes are ABCs, whose isinstance costs a Python
    # call, and nothing subclasses these concrete nodes.
    kind = type(expr)
    if kind is cst.Name:
        if expr.value in _CONSTANTS:
            return None  # None, True, False are values, not variables
        return (ident(expr.value),)
    if kind is cst.Attribute:
        base = ref_key(expr.value)
        return None if base is None else base + (ident(expr.attr.value),)
    if kind is cst.Subscript:
        part = literal_subscript(expr)
        if part is None:
            return None
        base = ref_key(expr.value)
        return None if base is None else base + (part,)
    return None


def literal_subscript(expr: cst.Subscript) -> str | None:
    """``'["x"]'`` for ``d["x"]`` and ``d['x']``, ``"[0]"`` for ``t[0]``; None otherwise."""
    if len(expr.slice) != 1:
        return None
    element = expr.slice[0].slice
    if not isinstance(element, cst.Index):
        return None
    return literal_part(element.value)


def literal_part(value: cst.BaseExpression) -> str | None:
    """The key part for a constant subscript or dict key, the same however it is
    spelled: ``d["x"]`` and ``d['x']`` are ``'["x"]'``, ``t[0x1]`` is ``"[1]"``."""
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        if isinstance(text, str) and '"' not in text and "\\" not in text and text.isprintable():
            return f'["{text}"]'
        return f"[{text!r}]"
    if isinstance(value, cst.Integer):
        return f"[{value.evaluated_value}]"
    return None


def overlaps(a: RefKey, b: RefKey) -> bool:
    """Whether reading one of the two keys can observe the other's value."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def kills(written: RefKey, key: RefKey) -> bool:
    """Whether assigning ``written`` rebinds ``key`` (itself or a prefix of it)."""
    return len(written) <= len(key) and key[: len(written)] == written


def render(key: RefKey) -> str:
    """``("self", "state")`` -> ``"self.state"``."""
    out = key[0]
    for part in key[1:]:
        out += part if part.startswith("[") else "." + part
    return out


def base_name(expr) -> str | None:
    """The name under attribute and subscript layers (``d`` of ``d["a"].b``), if any."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None

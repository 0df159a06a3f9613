"""Constant propagation for donation specs: ``(0, 1)``, ``DONATE``, ``() if x else (0,)``.

Real code often builds ``donate_argnums`` from variables and conditional
expressions.  We evaluate what is provably constant and say UNKNOWN
otherwise; nothing is guessed.
"""

from __future__ import annotations

import libcst as cst


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


def evaluate(expr: cst.BaseExpression, env: dict[str, cst.BaseExpression] | None = None, depth: int = 0):
    """The Python value of ``expr`` when it is a constant, else UNKNOWN.

    ``env`` maps names assigned exactly once to their value expressions.
    """
    if depth > 20:
        return UNKNOWN
    env = env or {}
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else UNKNOWN
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = evaluate(expr.expression, env, depth + 1)
        return -inner if isinstance(inner, int) else UNKNOWN
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        if expr.value in env:
            return evaluate(env[expr.value], env, depth + 1)
        return UNKNOWN
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        items = []
        for element in expr.elements:
            if isinstance(element, cst.StarredElement):
                inner = evaluate(element.value, env, depth + 1)
                if not isinstance(inner, (tuple, list)):
                    return UNKNOWN
                items.extend(inner)
                continue
            value = evaluate(element.value, env, depth + 1)
            if value is UNKNOWN:
                return UNKNOWN
            items.append(value)
        return list(items) if isinstance(expr, cst.List) else tuple(items)
    if isinstance(expr, cst.IfExp):
        a = evaluate(expr.body, env, depth + 1)
        b = evaluate(expr.orelse, env, depth + 1)
        return a if a is not UNKNOWN and a == b else UNKNOWN
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and not any(
        arg.keyword or arg.star for arg in expr.args
    ):
        args = [evaluate(arg.value, env, depth + 1) for arg in expr.args]
        if any(a is UNKNOWN for a in args):
            return UNKNOWN
        if expr.func.value == "range" and all(isinstance(a, int) for a in args) and 1 <= len(args) <= 3:
            return tuple(range(*args))
        if expr.func.value in ("tuple", "list") and len(args) == 1 and isinstance(args[0], (tuple, list)):
            return tuple(args[0]) if expr.func.value == "tuple" else list(args[0])
    return UNKNOWN


def as_int_tuple(value) -> tuple[int, ...] | None:
    """Normalise an argnums value (int or sequence of ints) or None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def as_str_tuple(value) -> tuple[str, ...] | None:
    """Normalise an argnames value (str or sequence of str) or None if not one."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None

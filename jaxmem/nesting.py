"""Reject code nested deeper than CPython allows before libcst sees it.

CPython's tokenizer refuses more than 200 nested brackets ("too many
nested parentheses"), but libcst's native parser recurses on them and
crashes the process (a segmentation fault, not an exception) at a few
thousand levels.  :func:`nesting_error` finds such files with a quick scan
and lets CPython's own parser give the verdict and the position.
"""

from __future__ import annotations

import ast
import re
import warnings

# CPython's limit is 200; anything above this gets CPython's exact verdict.
SUSPICIOUS_DEPTH = 150

_NOT_A_BRACKET = re.compile(r"[^()\[\]{}]+")


def max_bracket_depth(text: str) -> int:
    """The deepest bracket nesting in ``text``, counting brackets in strings and comments too.

    A quick over-approximation for code; closing brackets inside string
    literals can make it lower than the real depth (the large analysis
    stack is the protection left then).
    """
    depth = deepest = 0
    for bracket in _NOT_A_BRACKET.sub("", text):
        if bracket in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif depth:
            depth -= 1
    return deepest


def nesting_error(text: str) -> tuple[int, int, str] | None:
    """``(line, col, message)`` when ``text`` is nested too deeply for Python itself, else None."""
    if max_bracket_depth(text) <= SUSPICIOUS_DEPTH:
        return None
    return python_syntax_error(text)


def python_syntax_error(text: str) -> tuple[int, int, str] | None:
    """CPython's verdict on ``text``: ``(line, col, message)`` of its syntax error, else None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not ours to report
            compile(text, "<checked>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return (error.lineno or 1, max((error.offset or 1) - 1, 0),
                f"could not parse: {error.msg or 'invalid syntax'}; fix the syntax error")
    except (ValueError, MemoryError, RecursionError):
        return None  # not a syntax error CPython can place
    return None

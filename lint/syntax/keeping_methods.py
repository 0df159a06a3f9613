"""Methods that may keep an argument, read from text alone.

A file the pre-filter skips (or whose classes the relevance pass blanks) is never
parsed, but one of its classes may have a method that keeps what it is given
(``Tracker.track`` appending ``value`` to ``self.seen``), and a call elsewhere whose
result is used (``n = tracker.track(w)``) then leaves ``w`` held
(:mod:`jaxmem.lint.values.kept_if`).  :func:`maybe_keeping_methods` names, from the text,
every indented ``def`` whose body may keep an argument.  It over-approximates
:func:`jaxmem.lint.values.provenance.keeps_arguments`: a body is taken to keep one when
it returns a value named in its body (not an attribute, not only a call's result:
``return value``, ``return [x]``, not ``return len(self.seen)``), stores through an
attribute or a subscript (an assignment whose target holds ``.`` or ``[``), calls a
container's mutator
(``.append(``), declares ``global``/``nonlocal``, yields, or makes a lambda, a def or
a class.  Only a method named there can make such a reason hold, so taking too many
costs no more than a medium finding where a call's result is used.
"""

from __future__ import annotations

import re

# Methods that put their argument into the container they are called on (the flow's
# ``history.append(w)``, here and in lint.values.flow).
CONTAINER_METHODS = frozenset(
    {"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "put", "push", "__setitem__"}
)
_INDENTED_DEF = re.compile(r"^([ \t]+)(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_STRING = re.compile(r"""[rRbBuUfF]{0,2}('''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'[^'\n]*'|"[^"\n]*")""")
_COMMENT = re.compile(r"#[^\n]*")
_KEEPS = re.compile(r"\b(?:global|nonlocal|yield|lambda|def|class)\b|\.\s*(?:"
                    + "|".join(sorted(CONTAINER_METHODS)) + r")\s*\(")
_RETURN = re.compile(r"\breturn\b")
# A value in a returned expression: a name that is neither an attribute (``.seen``), nor
# called (``len(``), nor the object itself or a constant.
_RETURNED_NAME = re.compile(r"(?<![.\w])(?!(?:self|cls|None|True|False|and|or|not|if|else|in|is|for)\b)"
                            r"[^\W\d]\w*\b(?!\s*\()")
_ASSIGNMENT = re.compile(r"(?<![=!<>:])(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)")


def maybe_keeping_methods(text: str) -> frozenset[str]:
    """Names of the indented ``def``s of ``text`` (methods, nested functions) whose body
    may keep an argument after it returns (see the module's docstring)."""
    if "def" not in text:
        return frozenset()
    # strings (their line ends kept) and comments out first: what they hold is no code,
    # and a string's lines do not end a body
    code = _COMMENT.sub("", _STRING.sub(lambda found: '""' + "\n" * found.group(0).count("\n"), text))
    lines = code.split("\n")
    names: set[str] = set()
    number, counted = 0, 0  # the line number of ``counted`` (counted on from the last def: no quadratic path)
    for match in _INDENTED_DEF.finditer(code):
        number += code.count("\n", counted, match.start())
        counted = match.start()
        name = match.group(2)
        if name in names:
            continue
        indent = _width(match.group(1))
        end, depth = number + 1, _depth(lines[number])
        # the body ends at a line as indented as the def, outside brackets
        # (a long header's closing ``) -> int:`` is as indented)
        while end < len(lines) and (depth > 0 or not lines[end].strip() or _width(lines[end]) > indent):
            depth += _depth(lines[end])
            end += 1
        # the header too (a default may be a lambda), but not its own ``def``
        if _may_keep("\n".join([lines[number][match.end() - code.rfind("\n", 0, match.start()) - 1:],
                                 *lines[number + 1:end]])):
            names.add(name)
    return frozenset(names)


def _depth(line: str) -> int:
    return sum(map(line.count, "([{")) - sum(map(line.count, ")]}"))


def _width(line: str) -> int:
    expanded = line.expandtabs()
    return len(expanded) - len(expanded.lstrip())


def _may_keep(body: str) -> bool:
    if _KEEPS.search(body):
        return True
    if any(_RETURNED_NAME.search(value) for value in _returned(body)):
        return True
    return _stores_through_target(body)


def _returned(body: str):
    """The text of each ``return``'s value (over lines, while brackets are open)."""
    for found in _RETURN.finditer(body):
        depth = 0
        end = found.end()
        while end < len(body) and (depth > 0 or body[end] not in "\n;"):
            depth += (body[end] in "([{") - (body[end] in ")]}")
            end += 1
        yield body[found.end():end]


def _stores_through_target(body: str) -> bool:
    """Whether an assignment at bracket depth 0 has a target with ``.`` or ``[`` in it
    (``self.seen = value``, ``cache[key] = value``, ``self.total += value``); also when
    the brackets do not balance (nothing is known then)."""
    depth = 0
    start = 0  # where the current target's text starts
    index = 0
    while index < len(body):
        char = body[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return True
        elif char in "\n;" and depth == 0:
            start = index + 1
        elif depth == 0 and (found := _ASSIGNMENT.match(body, index)) is not None:
            if "." in body[start:index] or "[" in body[start:index]:
                return True
            index = start = found.end()  # ``a = b.c = x``: the next target starts here
            continue
        index += 1
    return False

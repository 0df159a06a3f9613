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
attribute or a subscript (an assignment, a loop's target or a ``with ... as`` target
that holds ``.`` or ``[``), calls a container's mutator
(``.append(``), declares ``global``/``nonlocal``, yields, makes a lambda, a def or
a class, raises a value (``raise ValueError(value)``: an ``except ... as error`` keeps
it), or calls what may keep its argument: a function by its bare name (not a builtin
that keeps nothing: ``register(value)``, whose body may be outside this text), a method
of the text that may through ``self`` or ``cls``, or a standard-library function that
keeps what it is given (``atexit.register``).  Only a method named there can make such a
reason hold, so taking too many costs no more than a medium finding where a call's
result is used.
"""

from __future__ import annotations

import re

# Methods that put their argument into the container they are called on (the flow's
# ``history.append(w)``, here and in lint.values.flow).
CONTAINER_METHODS = frozenset(
    {"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "put", "push", "__setitem__"}
)
_INDENTED_DEF = re.compile(r"^([ \t]+)(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_STRING = re.compile(r"""(?<!\w)[rRbBuUfF]{0,2}('''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'[^'\n]*'|"[^"\n]*")""")
_COMMENT = re.compile(r"#[^\n]*")
_KEEPS = re.compile(r"\b(?:global|nonlocal|yield|lambda|def|class)\b|\.\s*(?:"
                    + "|".join(sorted(CONTAINER_METHODS)) + r")\s*\(")
_RETURN = re.compile(r"\breturn\b")
# A value in a returned expression: a name that is neither an attribute (``.seen``), nor
# called (``len(``), nor the object itself or a constant.
_RETURNED_NAME = re.compile(r"(?<![.\w])(?!(?:self|cls|None|True|False|and|or|not|if|else|in|is|for)\b)"
                            r"[^\W\d]\w*\b(?!\s*\()")
# ``raise`` of anything but nothing, or an exception made by name from string literals
# only (strings are blanked to ``""`` first): ``raise``, ``raise ValueError("bad")`` keep
# nothing; ``raise errors.Bad("x")`` names a module, which the parser counts.
_RAISE = re.compile(r'\braise\b(?![ \t]*(?:[\n;]|$|\w+[ \t]*\([\s\d.,\-]*(?:""[\s\d.,\-]*)*\)[ \t]*(?:[\n;]|$)))')
# A call of a function by its bare name (``register(value)``), with an argument other
# than string literals and numbers (``ValueError("bad")`` keeps nothing).
_BY_NAME_CALL = re.compile(r'(?<![\w.])([^\W\d]\w*)[ \t]*\((?![\s\d.,\-]*(?:""[\s\d.,\-]*)*\))')
_SELF_CALL = re.compile(r"\b(?:self|cls)[ \t]*\.[ \t]*(\w+)[ \t]*\(")
_KEEPING_CALL = re.compile(r"\.[ \t]*(?:register|finalize|Thread|Timer|addaudithook)[ \t]*\(")
# Bare names a call by name may be spelled with that keep nothing: keywords before a
# bracket (``return (``), builtins that neither keep nor call what they are given.
_KEEPS_NOTHING_BY_NAME = frozenset({
    "if", "elif", "while", "return", "and", "or", "not", "in", "is", "for", "with", "assert", "del",
    "await", "else", "print", "len", "isinstance", "issubclass", "float", "int", "str", "repr", "format",
    "abs", "round", "range", "type", "id", "hash", "bool", "hasattr", "getattr", "callable", "super",
    "tuple", "list", "dict", "set", "frozenset",
})
_ASSIGNMENT = re.compile(r"(?<![=!<>:])(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)")
# A loop's or a comprehension's target (``for box.kept in [value]``), or ``with ... as
# box.kept``, that stores through an attribute or an item.
_LOOP_TARGET = re.compile(r"\bfor[ \t]+([^\n]*?)[ \t]+in\b")
_AS_STORE = re.compile(r"\bas[ \t]+[\w \t]*[.\[]")


_TOP_LEVEL_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)


def top_level_functions(text: str) -> frozenset[str]:
    """The names of the functions ``text`` defines at its top level."""
    return frozenset(_TOP_LEVEL_DEF.findall(text))


def maybe_keeping_methods(text: str, functions: frozenset[str] | None = None) -> frozenset[str]:
    """Names of the indented ``def``s of ``text`` (methods, nested functions) whose body
    may keep an argument after it returns (see the module's docstring).  ``functions``:
    the module's top-level functions (those of ``text`` when not given), any of which a
    body may hand on with its argument (``blackjax.mcmc(logdensity, w)``)."""
    if "def" not in text:
        return frozenset()
    if functions is None:
        functions = top_level_functions(text)
    # strings (their line ends kept) and comments out first: what they hold is no code,
    # and a string's lines do not end a body
    code = _COMMENT.sub("", _STRING.sub(lambda found: '""' + "\n" * found.group(0).count("\n"), text))
    lines = code.split("\n")
    names: set[str] = set()
    through_self: dict[str, set[str]] = {}  # a def's name -> the methods its bodies call through self
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
        body = "\n".join([lines[number][match.end() - code.rfind("\n", 0, match.start()) - 1:],
                          *lines[number + 1:end]])
        if _may_keep(body) or _hands_a_function(body, functions):
            names.add(name)
        else:
            through_self.setdefault(name, set()).update(_SELF_CALL.findall(body))
    # a method that calls one that may keep, through ``self``, may keep too
    changed = True
    while changed:
        changed = False
        for name, called in through_self.items():
            if name not in names and called & names:
                names.add(name)
                changed = True
    return frozenset(names)


# A call argument that is a bare name (``register`` in ``f(register, w)``, ``key=register``).
_BARE_ARGUMENT = re.compile(r"[(,=][ \t\n]*([^\W\d]\w*)[ \t\n]*(?=[,)])")


def _hands_a_function(body: str, functions: frozenset[str]) -> bool:
    """Whether ``body`` hands one of ``functions`` to a call as an argument."""
    return bool(functions) and any(found.group(1) in functions for found in _BARE_ARGUMENT.finditer(body))


def _depth(line: str) -> int:
    return sum(map(line.count, "([{")) - sum(map(line.count, ")]}"))


def _width(line: str) -> int:
    expanded = line.expandtabs()
    return len(expanded) - len(expanded.lstrip())


def _may_keep(body: str) -> bool:
    if _KEEPS.search(body) or _RAISE.search(body) or _KEEPING_CALL.search(body):
        return True
    if any(found.group(1) not in _KEEPS_NOTHING_BY_NAME for found in _BY_NAME_CALL.finditer(body)):
        return True
    if any(_RETURNED_NAME.search(value) for value in _returned(body)):
        return True
    if _AS_STORE.search(body) or any("." in target or "[" in target for target in _LOOP_TARGET.findall(body)):
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

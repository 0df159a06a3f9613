"""Which files, and which parts of a file, can matter to the analysis.

Cheap textual tests run before libcst parses anything: a file whose code
never mentions jit, pmap or donation, nor a name another file of the run
jits, is skipped; in a file that matters, top-level functions and classes
that mention none of the relevant names are blanked out (their lines kept
empty, so positions stay right) before parsing.  A function that an
analysed file calls across modules is kept too (the join reads its summary,
signature or returned function), and the file defining it is analysed.
Everything here over-approximates: the findings are those of a run without
the shortcuts (``JAXMEM_NO_SHORTCUTS=1``; ``benchmarks/accuracy.py`` checks).
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from dataclasses import dataclass

from jaxmem.lint.callables.project_names import is_project_module, private_names_of
from jaxmem.lint.syntax.keeping_methods import maybe_keeping_methods
from jaxmem.settings import Settings

# A file whose code (docstrings and comments aside) has none of these words
# cannot define or call anything jitted, unless it calls a name another file
# jits (see ``project_hints``).
_JIT_WORDS = re.compile(
    r"\b(jit|pmap|pjit|filter_jit|named_jit|variable_jit|donate_argnums|donate_argnames|jax_debug_nans)\b"
)
# A one-line string literal, its prefix (``f``, ``rb``; most have none) as the first group.
_ONE_LINE_LITERAL = r"""(?<![\w])([rRbBuUfF]{0,2})('[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*")"""
# Triple-quoted strings (prefix, text), one-line string literals (kept: a ``#`` in them starts
# no comment) and comments, found left to right.
_DOCSTRINGS_AND_COMMENTS = re.compile(
    r'(?<![\w])([rRbBuUfF]{0,2})("""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\')'
    r"|" + _ONE_LINE_LITERAL +
    r"|#[^\n]*")
# Top-level names only: a jitted local or method is called from the same
# function or class, which is one chunk anyway.
_DECORATED_DEF = re.compile(
    r"^@[^\n]*\n(?:@[^\n]*\n|[ \t)\]][^\n]*\n)*?(?:async[ \t]+)?def[ \t]+(\w+)",
    re.MULTILINE,
)
_JIT_TRANSFORM = re.compile(r"\b(?:jit|pmap|pjit|filter_jit|named_jit|variable_jit)\b")


def _jitted_defs(text: str, transform: re.Pattern = _JIT_TRANSFORM) -> list[str]:
    """Top-level functions with a jit word (a ``transform`` match) anywhere in
    their decorators (``@functools.partial(\\n    jax.jit, ...)`` spans lines)."""
    return [m.group(1) for m in _DECORATED_DEF.finditer(text) if transform.search(m.group(0))]


def _wrapper_words(settings: Settings) -> re.Pattern | None:
    """The configured wrappers' names as a pattern (``None`` when there are none)."""
    names = sorted({w.rsplit(".", 1)[-1] for w in settings.extra_wrappers} - {""})
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b") if names else None


def _wrapped_names(text: str, settings: Settings) -> set[str]:
    """Top-level names ``text`` (line ends normalised) binds through a configured wrapper."""
    words = _wrapper_words(settings)
    if words is None:
        return set()
    assigned = re.findall(r"^(\w+)[ \t]*(?::[^=\n]*)?=[^\n]*\b(?:" + words.pattern + ")", text, re.MULTILINE)
    return {n for n in _jitted_defs(text, words) + assigned if not n.startswith("__")}


_JITTED_ASSIGNMENT = re.compile(
    r"^(\w+)[ \t]*(?::[^=\n]*)?=[^\n]*\b(?:jit|pmap|pjit|filter_jit|named_jit)\b",
    re.MULTILINE,
)
# How a name jitted in another module can be reached: ``from m import a, b``
# then ``a(...)``, or ``m.a(...)``.  ``from m import a, b as c`` on one line (or continued with backslashes), or
# parenthesised over several lines; never into the next statement.
_FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(?:\(([^)]*)\)|((?:\\\n|[^\n])*))", re.MULTILINE
)
_COMMENT = re.compile(r"#[^\n]*")
_PRIVATE_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(_\w+)", re.MULTILINE)
_TOP_LEVEL_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
# What another file may read the facts of: a function (its summary, signature, returned
# function) or a class it constructs (whether it is clean, whether it derives from nnx).
_TOP_LEVEL_READABLE = re.compile(r"^(?:(?:async[ \t]+)?def|class)[ \t]+(\w+)", re.MULTILINE)
# Identifiers with a leading underscore ("private" by convention), anywhere in a text.
_PRIVATE_NAME = re.compile(r"\b_[^\W_]\w*|\b__[^\W_]\w*")
# ``getattr(obj, name)`` with a name that is not a string literal (literals are ``""`` by then).
_DYNAMIC_GETATTR = re.compile(r"\bgetattr\s*\([^,()]*,\s*(?![\s\"'])")
# A module's contents reached by name: ``getattr(steps, name)``, ``vars(steps)``, ``steps.__dict__``.
_MODULE_BY_NAME = re.compile(r"\b(?:getattr|vars)\s*\(\s*(?!self\b|cls\b)[A-Za-z_][\w.]*\s*[,)]|\w\.__dict__\b")
# One-line string literals, each with its prefix (``f"..."``, ``rb'...'``; none for most),
# found left to right: ``'a f' + step + 'b'`` is two literals, not ``f' + step + '``.
_ANY_STRING_LITERAL = re.compile(_ONE_LINE_LITERAL)
# An f-string's ``=`` that asks for the expression's text (``{step=}``): it reads ``step``.
_DEBUG_EQUALS = re.compile(r"(?<![=!<>:])=(?=[ \t]*[}!:])")
# Attribute names, after a dot: ``trainer.train_step``, ``self._step``.
_ATTRIBUTE_NAME = re.compile(r"\.[ \t]*([^\W\d]\w*)")
# An indented ``def`` (a method, or a nested def), and a method named through ``self``/``cls``.
_INDENTED_DEF = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_OWN_METHOD_USE = re.compile(r"\b(?:self|cls)[ \t]*\.[ \t]*(\w+)")
# The mark, in ``private_names``, of an attribute name every mention of which is a def or a
# ``self.``/``cls.`` use (no identifier has a ``!``).
OWN_METHOD = "!"
_IMPORTED_MODULE = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import|import[ \t]+([\w.]+))", re.MULTILINE)
# ``import a.b, c as d`` (at a line start, or after ``;`` or ``:``).
_IMPORT = re.compile(r"(?:^|[;:])[ \t]*import[ \t]+([\w., \t]+)", re.MULTILINE)
# Hints are names; a function another file may read is marked with this
# prefix (no identifier has a ``:``), so its definition is kept, not its callers.
_READ = "read:"


def _from_imports(text: str) -> list[tuple[str, list[str]]]:
    """``(module, words)`` of each ``from module import ...`` (the names and
    their aliases)."""
    return [(module, [w for w in _WORD.findall(_COMMENT.sub(" ", grouped or plain)) if w != "as"])
            for module, grouped, plain in _FROM_IMPORT.findall(text)]


def shortcuts_enabled() -> bool:
    """Whether the textual shortcuts run; ``JAXMEM_NO_SHORTCUTS=1`` turns them off.

    With them off every file is parsed and analysed whole: the accuracy
    benchmark compares both ways to prove the shortcuts exact.
    """
    return os.environ.get("JAXMEM_NO_SHORTCUTS", "") in ("", "0")


def _may_hold_jit_words(text: str) -> bool:
    """A substring test that every ``_JIT_WORDS`` match passes (each word contains
    ``jit``, ``pmap``, ``donate_arg`` or ``debug_nans``): C-fast, and it never changes a verdict."""
    return "jit" in text or "pmap" in text or "donate_arg" in text or "debug_nans" in text


def _lf(text: str) -> str:
    """``text`` with ``\r\n`` and lone ``\r`` line ends as ``\n`` (same lines,
    same columns), so the ``^``/``$`` and ``[^\n]`` patterns here see every line."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def code_without_docs(text: str) -> str:
    """``text`` without triple-quoted strings and comments (a textual approximation); of
    a triple-quoted f-string, what its braces hold stays (it is code)."""
    return _DOCSTRINGS_AND_COMMENTS.sub(_without_doc, text)


def _without_doc(match: re.Match) -> str:
    prefix, triple = match.group(1, 2)  # the one-line literal's groups come after
    if triple is None:
        text = match.group()
        return " " if text.startswith("#") else text
    fields = _fstring_fields(triple[3:-3]) if "f" in prefix.lower() else None
    return " " if fields is None else f" {fields} "


def reachable_hints(text: str, hints: frozenset[str], own_packages=()) -> set[str]:
    """The ``hints`` that matter to this file: those it can call (imported
    from, or reached as attributes of, the project's own modules; calls into
    libraries are never resolved) and those it defines at top level (a
    factory another file imports and jits), with the functions other files
    read among those names (marked)."""
    if not hints:
        return set()
    return _reachable(frozenset(_callable_names(_lf(text), own_packages)), hints)


def _reachable(callable_names: frozenset[str], hints: frozenset[str]) -> set[str]:
    read = _read_hints(hints)
    return set(hints.intersection(callable_names)) | {_READ + name for name in read.intersection(callable_names)}


def _callable_names(text: str, own_packages=()) -> set[str]:
    """Every name :func:`reachable_hints` can return for ``text`` (line ends
    normalised), whatever the hints: ``reachable_hints`` is their intersection."""
    found: set[str] = set(_TOP_LEVEL_READABLE.findall(text))
    for module, names in _from_imports(text):
        if is_project_module(module):
            found.update(names or _WORD.findall(text))  # ``from lib import *``: any name may be lib's
        elif is_project_module(module, own_packages):
            found.update(private_names_of(names))
    modules = [relative or plain for relative, plain in _IMPORTED_MODULE.findall(text)]
    if any(map(is_project_module, modules)):
        # called or not: ``fns = [lib.step]`` hands a jit on
        found.update(_ATTRIBUTE_NAME.findall(text))
    elif any(is_project_module(module, own_packages) for module in modules):
        found.update(private_names_of(_ATTRIBUTE_NAME.findall(text)))
    return found


def _reaches_by_name(text: str, own_packages=()) -> bool:
    """Whether ``text`` (line ends normalised) imports a project module and reaches some module's
    contents by name (``getattr(steps, name)``): any of its jits may be called there, so the
    file is analysed like one that mentions jit (its facts record the module as handed on)."""
    return bool(_MODULE_BY_NAME.search(text)) and (
        any(is_project_module(module, own_packages) for module, _ in _from_imports(text))
        or any(is_project_module(relative or plain, own_packages) for relative, plain in _IMPORTED_MODULE.findall(text)))


def _mentions_jit(text: str) -> bool:
    """Whether the code of ``text`` (line ends normalised; docstrings and
    comments aside) has a jit word."""
    return bool(_may_hold_jit_words(text) and _JIT_WORDS.search(text)
                and _JIT_WORDS.search(code_without_docs(text)))


def _mentions_wrapper(text: str, settings: Settings) -> bool:
    return any(wrapper.rsplit(".", 1)[-1] in text for wrapper in settings.extra_wrappers)


def might_involve_jit(text: str, settings: Settings, hints: frozenset[str] = frozenset()) -> bool:
    """Cheap textual pre-filter: can this file matter at all?

    It matters when its code mentions jit, pmap or donation, a configured
    wrapper, calls a name that another file of the run jits (``hints``), or
    defines a function or class whose facts another file reads.
    """
    if not shortcuts_enabled():
        return True
    text = _lf(text)
    if _mentions_jit(text) or _mentions_wrapper(text, settings) or _reaches_by_name(text, settings.own_packages):
        return True
    return bool(hints) and (not hints.isdisjoint(_callable_names(text, settings.own_packages))
                            or _defines_read(text, hints))


def project_hints(texts: dict[str, str], settings: Settings | None = None) -> frozenset[str]:
    """Names of what the files of a run jit (decorated defs, ``x = jax.jit(...)``).

    A file that never mentions jit still matters when it calls one of them,
    or defines a function a jit-using file imports (it may be a factory
    whose result is jitted), or one whose summary an analysed file may read
    (see :func:`hints_of`).  This is a textual over-approximation; the
    analysis proper decides.
    """
    own = settings.own_packages if settings is not None else ()
    return hints_of((summarize(text, own) for text in texts.values()), settings, texts.values())


def _jitted_names(text: str, own_packages=()) -> frozenset[str]:
    """What ``text`` (line ends normalised) adds to :func:`project_hints`."""
    names: set[str] = set()
    if _may_hold_jit_words(text) and _JIT_WORDS.search(text):
        names.update(_jitted_defs(text))
        names.update(_JITTED_ASSIGNMENT.findall(text))
        names.update(_project_imports(text, own_packages))
        names.update(_factory_defs(text))
    # Short names too: a file calling a jitted ``f`` must not be skipped.
    return frozenset(n for n in names if not n.startswith("__"))


_JIT_WORD = r"\b(?:jit|pmap|pjit|filter_jit|named_jit)\b"
# In a function's body: ``return jax.jit(step, ...)``, or a jit decorator (of a nested def it may return).
_MADE_JIT = re.compile(r"^[ \t]+(?:return[ \t]|@)[^\n]*" + _JIT_WORD, re.MULTILINE)
_NEXT_TOP_LEVEL = re.compile(r"^[^\s#]", re.MULTILINE)


def _factory_defs(text: str) -> set[str]:
    """Top-level functions that may return a jitted callable they make: every call of such a
    factory makes its one jit node again, so the files that call it matter (an over-approximation)."""
    found = set()
    for match in _TOP_LEVEL_DEF.finditer(text):
        end = _NEXT_TOP_LEVEL.search(text, match.end())
        body = text[match.end():end.start() if end else len(text)]
        if "return" in body and _MADE_JIT.search(body):
            found.add(match.group(1))
    return found


def _project_imports(text: str, own_packages=()) -> set[str]:
    """What a text that jits imports from the project: a factory whose result
    it jits (``step = make_step(...)``; ``jax.pmap(step, ...)``) lives there."""
    return {name for module, imported in _from_imports(text) if is_project_module(module, own_packages)
            for name in (imported if is_project_module(module) else private_names_of(imported))}


def _read_names(text: str) -> frozenset[str]:
    """Names of other modules' functions that ``text`` (line ends normalised)
    calls through its imports: the analysis of this file may read their
    summary, signature or returned function (it reads another file's
    function only where it is called).  ``from m import a as b`` then
    ``b(...)`` gives ``a``; ``import m`` or ``from p import m`` then
    ``m.a(...)`` or ``m.b.a(...)`` gives ``a``, and so does ``jax.jit(m.a)``.
    Libraries count too: the project may be one."""
    local: dict[str, str] = {}  # name bound by an import -> the name it imports
    for _, grouped, plain in _FROM_IMPORT.findall(text):
        for part in _COMMENT.sub(" ", grouped or plain).replace("\\\n", " ").split(","):
            words = part.split()
            if words:
                local[words[-1]] = words[0]
    for statement in _IMPORT.findall(text):
        for part in statement.split(","):
            words = part.split()
            if words:
                name = words[-1] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
                local[name] = name
    if not local:
        return frozenset()
    alternatives = "|".join(map(re.escape, sorted(local)))
    called = re.compile(r"\b(" + alternatives + r")((?:\s*\.\s*[^\W\d]\w*)*)\s*\(")
    # ``jax.jit(m.step)`` reads the signature and outputs of ``step`` without calling it
    jitted = re.compile(r"\b(?:jit|pmap|pjit|filter_jit|named_jit)\s*\(\s*(" + alternatives
                        + r")((?:\s*\.\s*[^\W\d]\w*)*)\s*[,)]")
    names: set[str] = set()
    for head, chain in called.findall(text) + jitted.findall(text):
        attributes = _WORD.findall(chain)
        names.add(attributes[-1] if attributes else local[head])
    return frozenset(names)


@dataclass(frozen=True)
class TextSummary:
    """What the pre-filter needs of one text whatever the other files of the
    run are, so it can be kept by content digest: whether its code mentions
    jit (or reaches a project module's contents by name), what it adds to the project's hints, the names it can call, and the
    other modules' functions whose facts its analysis may read."""

    mentions_jit: bool
    jitted: frozenset[str]
    callable: frozenset[str]
    reads: frozenset[str] = frozenset()
    private: frozenset[str] = frozenset()  # see private_names
    defines: frozenset[str] = frozenset()  # its top-level defs and classes (another file may read them)
    keeping: frozenset[str] = frozenset()  # its methods that may keep an argument (keeping_methods)


def summarize(text: str, own_packages=()) -> TextSummary:
    """The :class:`TextSummary` of ``text`` (``own_packages``: see ``Settings.own_packages``)."""
    text = _lf(text)
    return TextSummary(_mentions_jit(text) or _reaches_by_name(text, own_packages), _jitted_names(text, own_packages),
                       frozenset(_callable_names(text, own_packages)),
                       _read_names(text), private_names(text), frozenset(_TOP_LEVEL_READABLE.findall(text)),
                       maybe_keeping_methods(text))


def private_names(text: str) -> frozenset[str]:
    """Every identifier with a leading underscore that ``text`` mentions, in code,
    strings or comments (not dunders): when no other file names ``_helper``,
    every call of it is in the file that defines it.  And, as ``.name``, every
    attribute name it mentions (``trainer.train_step``): a jitted method or
    attribute no other file names is called only where jaxmem sees it."""
    names = {name for name in _PRIVATE_NAME.findall(text) if not name.endswith("__")}
    names.update("." + name for name in _ATTRIBUTE_NAME.findall(text))
    names.update(OWN_METHOD + "." + name for name in _own_methods(text))
    return frozenset(names)


def _own_methods(text: str) -> list[str]:
    """The names every mention of which in ``text`` (code, strings, comments) is an indented
    ``def`` of it or ``self.name`` / ``cls.name``: the file's own methods, called through
    their own object, which reach another file's method of that name only through a class
    that does not define it (lint.join.traced_scopes)."""
    # only a name used through self/cls can be a mark that matters (an unused method is not named)
    uses = Counter(_OWN_METHOD_USE.findall(text))
    if not uses:
        return []
    defs = Counter(name for name in _INDENTED_DEF.findall(text) if name in uses)
    if not defs:
        return []
    words = Counter(re.findall(r"\b(?:" + "|".join(map(re.escape, defs)) + r")\b", text))
    return [name for name, count in defs.items() if words[name] == count + uses[name]]


def name_mentions(text: str, names) -> tuple[tuple[str, int, int], ...]:
    """``(name, mentions, bindings)`` for each of ``names`` (``step``, or ``.step`` for an
    attribute): how often the code of ``text`` mentions it (docstrings, comments and one-line
    string literals aside; a plain name not after a dot; not where it is assigned, ``step = ...``,
    ``self.step = ...``, nor as a keyword, ``f(step=1)``), and how many of those mentions bind it
    (``def step``, ``step: T = ...``).  The other mentions are calls, or uses the analysis may
    not follow (``fns = [step]``, ``self.evaluate = self.step``)."""
    with_strings = code_without_docs(_lf(text))
    code = code_without_literals(with_strings)
    # ``getattr(self, name)``: any attribute, ``getattr(self, "step")``: that one
    dynamic = len(_DYNAMIC_GETATTR.findall(code))
    names = sorted(set(names))
    counted = _count_identifiers(code, {name.lstrip(".") for name in names})
    getattrs = Counter(_GETATTR_STRING.findall(with_strings)) if "getattr" in with_strings else Counter()
    out = []
    for name in names:
        word = name.lstrip(".")
        if _IDENTIFIER_RUN.fullmatch(word):
            plain, dotted, plain_binds, dotted_binds, defs = counted.get(word, (0, 0, 0, 0, 0))
            if name.startswith("."):
                out.append((name, dotted + dynamic + getattrs[word], dotted_binds))
            else:
                out.append((name, plain, plain_binds + defs))
            continue
        out.append(mentions_by_pattern(code, with_strings, name, dynamic))
    return tuple(out)


def code_without_literals(with_strings: str) -> str:
    """``with_strings`` (code without docstrings and comments) with each one-line string
    literal as ``""``, except what an f-string's braces hold: that is code.  A prefix is
    never a name (a jitted ``f`` is not mentioned by ``f"..."``), so it becomes ``0``,
    which also keeps the literal behind it from reading as a string argument
    (``getattr(x, rb"...")`` stays a computed name).  An f-string keeps its brace
    contents, the rest of it blanked, unless its fields are not plain (a backslash, a
    nested prefixed string, braces that do not balance): then all of it is kept (more
    mentions, never fewer)."""
    if "'" not in with_strings and '"' not in with_strings:
        return with_strings
    return _ANY_STRING_LITERAL.sub(_literal_code, with_strings)


def _literal_code(match: re.Match) -> str:
    prefix, literal = match.groups()
    if not prefix:
        return '""'
    if "f" not in prefix.lower():  # ``r"..."``, ``b"..."``: text only
        return "0" * len(prefix) + '""'
    quote, body = literal[0], literal[1:-1]
    fields = _fstring_fields(body)
    return "0" * len(prefix) + quote + (body if fields is None else fields) + quote


def _fstring_fields(body: str) -> str | None:
    """``body`` (an f-string's text between its quotes) with everything outside its
    replacement fields blanked (line ends kept), a string in a field as ``""``; None
    where a field holds a backslash or a prefixed string, or the braces do not balance."""
    out = []
    depth = 0
    i = 0
    while i < len(body):
        char = body[i]
        if depth == 0:
            if char in "{}" and body[i + 1:i + 2] == char:  # ``{{`` and ``}}``: literal braces
                out.append("  ")
                i += 2
                continue
            if char == "}":
                return None
            if char == "{":
                depth = 1
            out.append(char if char in "{\n" else " ")
        else:
            if char == "\\":
                return None
            if char in "'\"":  # a string in a field: text, unless it has a prefix (maybe an f-string)
                close = body.find(char, i + 1)
                if close == -1 or (out and (out[-1].isalnum() or out[-1] == "_")):
                    return None
                out.append('""')
                i = close + 1
                continue
            depth += char == "{"
            depth -= char == "}"
            out.append(char)
        i += 1
    return None if depth else _DEBUG_EQUALS.sub(" ", "".join(out))


def mentions_by_pattern(code: str, with_strings: str, name: str, dynamic: int) -> tuple[str, int, int]:
    """``(name, mentions, bindings)`` of one name by its own patterns, each a scan of
    ``code`` (the definition of what :func:`name_mentions` counts in one pass)."""
    word = re.escape(name.lstrip("."))
    before = r"\.\s*" if name.startswith(".") else r"(?<![.\w])"
    mentions = len(re.findall(before + word + r"\b(?![ \t]*=(?!=))", code))
    if name.startswith("."):
        mentions += dynamic + len(re.findall(r"\bgetattr\s*\([^,()]*,\s*[\"']" + word + r"[\"']", with_strings))
    bindings = len(re.findall(before + word + r"[ \t]*:[^=\n]*=(?!=)", code))
    if not name.startswith("."):
        bindings += len(re.findall(r"\bdef[ \t]+" + word + r"\b", code))
    return name, mentions, bindings


_IDENTIFIER_RUN = re.compile(r"\w+")
_GETATTR_STRING = re.compile(r"\bgetattr\s*\([^,()]*,\s*[\"'](\w+)[\"']")
_ASSIGNED_AFTER = re.compile(r"[ \t]*=(?!=)")
_ANNOTATED_BINDING_AFTER = re.compile(r"[ \t]*:[^=\n]*=(?!=)")


def _count_identifiers(code: str, words: set[str]) -> dict[str, list[int]]:
    r"""For each of ``words`` (identifiers) that ``code`` holds, in one pass over it:
    ``[plain, dotted, plain bindings, dotted bindings, defs]``, the counts that
    :func:`name_mentions`' patterns give with one ``re.findall`` each
    (``(?<![.\w])w\b`` and ``\.\s*w\b`` not before ``=``; each of those before
    ``: T =``; ``\bdef[ \t]+w\b``).  Each pattern matches a whole run of word
    characters, so the runs are what is counted (a binding match consumes up to
    its ``=``, so a run inside it is not counted again).  One scan per name made
    a file of many definitions quadratic."""
    counts: dict[str, list[int]] = {}
    binding_ends: dict[tuple[str, bool], int] = {}  # (word, dotted) -> where its last binding match ended
    if not words:
        return counts
    for run in _IDENTIFIER_RUN.finditer(code):
        word = run.group()
        if word not in words:
            continue
        start, end = run.span()
        row = counts.setdefault(word, [0, 0, 0, 0, 0])
        before = start - 1
        while before >= 0 and code[before].isspace():
            before -= 1
        assigned = _ASSIGNED_AFTER.match(code, end) is not None
        binding = _ANNOTATED_BINDING_AFTER.match(code, end)
        for dotted in ((False, True) if before >= 0 and code[before] == "." else (False,)):
            if not dotted and start and code[start - 1] == ".":
                continue
            row[1 if dotted else 0] += not assigned
            if binding is not None and start >= binding_ends.get((word, dotted), 0):
                row[3 if dotted else 2] += 1
                binding_ends[word, dotted] = binding.end()
        if not start or code[start - 1] != ".":
            gap = start - 1
            while gap >= 0 and code[gap] in " \t":
                gap -= 1
            if gap < start - 1 and gap >= 2 and code[gap - 2:gap + 1] == "def" and (
                    gap == 2 or not _is_word_char(code[gap - 3])):
                row[4] += 1
    return counts


def _is_word_char(char: str) -> bool:
    return _IDENTIFIER_RUN.match(char) is not None


def hints_of(summaries, settings: Settings | None = None, texts=None) -> frozenset[str]:
    """:func:`project_hints` of the texts with these summaries.

    Besides the jitted names, the functions that an analysed file (one that
    mentions jit or calls a jitted name) may read the summary, signature or
    factory result of, marked as read: their definitions are analysed too,
    so the findings are the same as when every file is analysed whole.
    With configured wrappers (``settings``), what the ``texts`` (in the order
    of ``summaries``) bind through a wrapper counts as jitted: summaries do
    not depend on the settings, so the texts that mention one are read again.
    """
    summaries = list(summaries)
    jitted = set().union(*(s.jitted for s in summaries))
    wrapping = [False] * len(summaries)
    if settings is not None and settings.extra_wrappers and texts is not None:
        for i, text in enumerate(map(_lf, texts)):
            if _mentions_wrapper(text, settings):
                wrapping[i] = True
                jitted |= _wrapped_names(text, settings) | _project_imports(text, settings.own_packages)
    analysed = [wraps or s.mentions_jit or not jitted.isdisjoint(s.callable) for s, wraps in zip(summaries, wrapping)]
    reads = frozenset().union(*(s.reads for s, on in zip(summaries, analysed) if on))
    # A file analysed because it defines a function another reads (summary_involves_jit) may read
    # other files' facts in turn: ``create()`` of factories.py makes ``model_lib.Model`` objects.
    while more := [i for i, s in enumerate(summaries) if not analysed[i] and _read_by_another(s, reads)]:
        for i in more:
            analysed[i] = True
        reads = reads.union(*(summaries[i].reads for i in more))
    return frozenset(jitted) | {_READ + name for name in reads}


@functools.lru_cache(maxsize=8)
def _read_hints(hints: frozenset[str]) -> frozenset[str]:
    """The names ``hints`` marks as read by another file (one run's hints: cached)."""
    return frozenset(h[len(_READ):] for h in hints if h.startswith(_READ))


def _defines_read(text: str, hints: frozenset[str]) -> bool:
    """Whether ``text`` (line ends normalised) defines at top level a function or class another file reads."""
    read = _read_hints(hints)
    return bool(read) and not read.isdisjoint(_TOP_LEVEL_READABLE.findall(text))


def summary_involves_jit(summary: TextSummary, text: str, settings: Settings, hints: frozenset[str]) -> bool:
    """:func:`might_involve_jit` of ``text``, whose summary is ``summary``."""
    if not shortcuts_enabled():
        return True
    if summary.mentions_jit or (settings.extra_wrappers and _mentions_wrapper(_lf(text), settings)):
        return True
    if not hints.isdisjoint(summary.callable):
        return True
    return _read_by_another(summary, _read_hints(hints))


def _read_by_another(summary: TextSummary, read: frozenset[str]) -> bool:
    """Whether the file of ``summary`` defines at top level a function or class another file
    reads (``read``) and can call one: it is analysed for that file's sake."""
    return not read.isdisjoint(summary.callable) and not read.isdisjoint(summary.defines)


def summary_reachable_hints(summary: TextSummary, hints: frozenset[str]) -> set[str]:
    """:func:`reachable_hints` of the text whose summary is ``summary`` (what of
    ``hints`` decides how it is analysed: part of its facts' cache key)."""
    return _reachable(summary.callable, hints)


# A top-level def or class starts a chunk (its decorators with it).
_CHUNK_START = re.compile(r"^(?:@|def[ \t]|async[ \t]+def[ \t]|class[ \t])")
_TOP_LEVEL_NAME = re.compile(
    r"^(?:async[ \t]+)?def[ \t]+(\w+)|^class[ \t]+(\w+)|^(\w+)[ \t]*(?::[^=\n]*)?=(?!=)", re.MULTILINE
)
_WORD = re.compile(r"[^\W\d]\w*")  # identifiers, non-ASCII ones too


def _chunks(lines: list[str]) -> list[tuple[int, int]]:
    """``(start, end)`` line ranges: a header, then one per top-level def/class
    with the module-level code that follows it.  A line inside a triple-quoted
    string (an odd number of them opened before it) never starts a chunk."""
    starts = [0]
    previous_decorator = False
    open_double = open_single = 0
    for number, line in enumerate(lines):
        in_string = open_double % 2 or open_single % 2
        if '"""' in line:
            open_double += line.count('"""')
        if "'''" in line:
            open_single += line.count("'''")
        if in_string or not line or line[0] in " \t#\n\r":
            continue
        is_start = bool(_CHUNK_START.match(line))
        if is_start and not previous_decorator and number:
            starts.append(number)
        if line.startswith("@"):
            previous_decorator = True  # until its def or class, even past a closing ")" line
        elif is_start:
            previous_decorator = False
    starts.append(len(lines))
    return [(a, b) for a, b in zip(starts, starts[1:]) if a < b]


@dataclass(frozen=True)
class Reduced:
    """A file's text split in what the analysis parses and what it skips.

    Both keep every line (skipped lines are empty), so positions agree.
    """

    kept: str
    blanked: str = ""
    blanked_words: frozenset[str] = frozenset()


def relevant_text(text: str, settings: Settings, hints: frozenset[str] = frozenset()) -> Reduced:
    """``text`` with the top-level defs and classes that cannot matter blanked
    out (``kept``), what was blanked (``blanked``) and its words.

    A chunk matters when its code mentions a jit word, a configured wrapper,
    a name jitted in this file or another (``hints``), or a name defined by
    another chunk that matters (factories, wrappers, helpers that call the
    jitted function), to a fixpoint.  A chunk that defines a function another
    file reads (``hints``, see :func:`hints_of`) is kept too, with what it
    uses, but its callers are not.
    """
    if not shortcuts_enabled():
        return Reduced(text)
    text = _lf(text)
    lines = text.splitlines(keepends=True)
    chunks = _chunks(lines)
    if len(chunks) <= 2:
        return Reduced(text)
    bodies = ["".join(lines[a:b]) for a, b in chunks]
    words = [set(_WORD.findall(code_without_docs(body))) for body in bodies]
    jit_words = {"jit", "pmap", "pjit", "filter_jit", "named_jit", "variable_jit", "donate_argnums", "donate_argnames"}
    jit_words |= {w.rsplit(".", 1)[-1] for w in settings.extra_wrappers}
    relevant = reachable_hints(text, hints, settings.own_packages) | set(_jitted_defs(text)) | set(_JITTED_ASSIGNMENT.findall(text))
    defined = [{n for groups in _TOP_LEVEL_NAME.findall(body) for n in groups if n} for body in bodies]
    definers: dict[str, list[int]] = {}
    for i, names in enumerate(defined):
        for name in names:
            definers.setdefault(name, []).append(i)
    keep = [False] * len(chunks)
    # Kept only for what other files read of the functions they define (and
    # for what those use): their callers need not be.
    read_only = [False] * len(chunks)
    read = _read_hints(hints)
    reading = [i for i, body in enumerate(bodies)
               if i and read and not read.isdisjoint(_TOP_LEVEL_READABLE.findall(body))]
    while reading:
        i = reading.pop()
        if not read_only[i]:
            read_only[i] = True
            reading.extend(j for name in words[i] & definers.keys() for j in definers[name])
    pending = [0]  # the header (imports, module code before the first def) always matters
    while True:
        while pending:
            i = pending.pop()
            if keep[i]:
                continue
            keep[i] = True
            # Both directions matter: callers of what a kept chunk defines
            # (they may call a jitted function), and what a kept chunk uses
            # (``jax.jit(train_step)`` needs ``train_step``'s signature and body).
            if i:
                relevant |= defined[i]
            pending.extend(j for name in words[i] & definers.keys() for j in definers[name] if not keep[j])
        pending = [i for i, chunk_words in enumerate(words) if not keep[i] and (
            not chunk_words.isdisjoint(jit_words) or not chunk_words.isdisjoint(relevant))]
        if not pending:
            break
    keep = [a or b for a, b in zip(keep, read_only)]
    if all(keep):
        return Reduced(text)
    kept_lines: list[str] = []
    blanked_lines: list[str] = []
    blanked_words: set[str] = set()
    for (a, b), kept, chunk_words in zip(chunks, keep, words):
        empty = ["\n"] * (b - a)
        kept_lines.extend(lines[a:b] if kept else empty)
        blanked_lines.extend(empty if kept else lines[a:b])
        if not kept:
            blanked_words |= chunk_words
    return Reduced("".join(kept_lines), "".join(blanked_lines), frozenset(blanked_words))


def context_selector(requested: dict[str, str], own_packages=()):
    """``wanted(path, text)``: whether another project file can change the
    advice for the ``requested`` files (path -> text).

    It can when it is a module they import from the project (definitions,
    factories and wrappers they use live there), when its code mentions a
    name they jit at module level (a call site, or the name passed around),
    or when it names a private method or function they define (a call jaxmem
    would otherwise take for the only ones: see ``FactExtractor.callers_of``).
    Anything else neither calls their jitted functions nor defines what they
    call, so a partial run (pre-commit's staged files) reads it, tests it
    with one regular expression, and analyses nothing of it.
    """
    from jaxmem.lint.join.facts import module_names_for

    names: set[str] = set()
    modules: set[str] = set()
    for text in map(_lf, requested.values()):
        names.update(_jitted_defs(text))
        names.update(_JITTED_ASSIGNMENT.findall(text))
        names.update(_PRIVATE_DEF.findall(text))  # see FactExtractor.callers_of
        for relative, plain in _IMPORTED_MODULE.findall(text):
            module = (relative or plain).lstrip(".")
            if module and is_project_module(relative or plain, own_packages):
                modules.add(module)
        for module, imported in _from_imports(text):
            if is_project_module(module, own_packages):
                modules.update(f"{module.lstrip('.')}.{name}".lstrip(".") for name in imported)
    names = {n for n in names if not n.startswith("__")}
    mention = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b") if names else None

    def wanted(path: str, text: str) -> bool:
        if modules.intersection(module_names_for(path)):
            return True
        return mention is not None and any(n in text for n in names) and mention.search(text) is not None

    return wanted

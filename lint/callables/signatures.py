"""Function signatures as plain data, and the mapping of call arguments to them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from jaxmem.lint.values.refs import ident

POSITIONAL_ONLY = "positional_only"
POSITIONAL = "positional"
KEYWORD_ONLY = "keyword_only"
VAR_POSITIONAL = "var_positional"
VAR_KEYWORD = "var_keyword"


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    has_default: bool = False


@dataclass(frozen=True)
class Signature:
    """A callable's parameters in declaration order."""

    params: tuple[Param, ...]

    @classmethod
    def of(cls, node: cst.FunctionDef | cst.Lambda) -> "Signature":
        """The signature of a ``def`` or ``lambda``."""
        p = node.params
        params: list[Param] = []
        params += [Param(ident(x.name.value), POSITIONAL_ONLY, x.default is not None) for x in p.posonly_params]
        params += [Param(ident(x.name.value), POSITIONAL, x.default is not None) for x in p.params]
        if isinstance(p.star_arg, cst.Param):
            params.append(Param(ident(p.star_arg.name.value), VAR_POSITIONAL))
        params += [Param(ident(x.name.value), KEYWORD_ONLY, x.default is not None) for x in p.kwonly_params]
        if p.star_kwarg is not None:
            params.append(Param(ident(p.star_kwarg.name.value), VAR_KEYWORD))
        return cls(tuple(params))

    @cached_property
    def positional(self) -> tuple[Param, ...]:
        """Parameters that can be passed by position, index = position (worked out once:
        a call of n arguments asks n times)."""
        return tuple(p for p in self.params if p.kind in (POSITIONAL_ONLY, POSITIONAL))

    @property
    def has_var_positional(self) -> bool:
        return any(p.kind == VAR_POSITIONAL for p in self.params)

    @property
    def has_var_keyword(self) -> bool:
        return any(p.kind == VAR_KEYWORD for p in self.params)

    def index_of(self, name: str) -> int | None:
        """Position of parameter ``name`` when it can be passed positionally."""
        for i, p in enumerate(self.positional):
            if p.name == name:
                return i
        return None

    def by_name(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name and p.kind not in (VAR_POSITIONAL, VAR_KEYWORD, POSITIONAL_ONLY):
                return p
        return None

    def name_at(self, index: int) -> str | None:
        positional = self.positional
        return positional[index].name if 0 <= index < len(positional) else None

    def drop_leading(self, count: int, keywords: frozenset[str] = frozenset()) -> "Signature":
        """The signature left after binding ``count`` positionals and ``keywords``
        (``functools.partial``, bound methods)."""
        out: list[Param] = []
        dropped = 0
        for p in self.params:
            if p.kind in (POSITIONAL_ONLY, POSITIONAL) and dropped < count:
                dropped += 1
                continue
            if p.name in keywords and p.kind in (POSITIONAL, KEYWORD_ONLY):
                # partial(f, x=1): x becomes keyword-only with a default.
                out.append(Param(p.name, KEYWORD_ONLY, True))
                continue
            out.append(p)
        # After a keyword-bound positional, later positionals become keyword-only.
        seen_kw = False
        fixed: list[Param] = []
        for p in out:
            if p.name in keywords:
                seen_kw = True
            elif seen_kw and p.kind == POSITIONAL:
                p = Param(p.name, KEYWORD_ONLY, p.has_default)
            fixed.append(p)
        return Signature(tuple(fixed))


@dataclass(frozen=True)
class ArgumentMap:
    """Which call argument went to which parameter.

    ``by_index`` maps positional parameter index -> argument number in the
    call's ``args``; ``by_name`` maps keyword-only or keyword-passed
    parameters -> argument number.  ``resolved`` is False when the call does
    not fit the signature, or uses ``*args``/``**kwargs`` and the caller did
    not say which positionals come before the first ``*args``: such a call is
    never guessed at.  ``open`` is True when ``*args``/``**kwargs`` may fill
    parameters the maps leave out (the ones they hold are exact: Python
    rejects a parameter given twice).
    """

    resolved: bool
    by_index: dict[int, int]
    by_name: dict[str, int]
    open: bool = False


def map_arguments(
    positional_count: int,
    keywords: tuple[str, ...],
    signature: Signature | None,
    shift: int = 0,
    has_star: bool = False,
    leading: int | None = None,
) -> ArgumentMap:
    """Map a call's arguments onto ``signature``.

    The call passes ``positional_count`` positional arguments, then the
    keyword arguments ``keywords`` (argument numbers continue after the
    positionals).  ``shift`` is the number of leading parameters bound
    before the call (1 for ``self`` when a method is called on an instance).
    With ``has_star`` (a ``*args`` or ``**kwargs`` argument), ``leading`` is
    how many of the positionals come before the first ``*args`` (all of them
    when there is none): only those have a known position.
    """
    if signature is None or (has_star and leading is None):
        return ArgumentMap(False, {}, {})
    positional = signature.positional
    by_index: dict[int, int] = {}
    by_name: dict[str, int] = {}
    placed = min(leading, positional_count) if has_star else positional_count
    for number in range(placed):
        position = shift + number
        if position >= len(positional):
            if signature.has_var_positional:
                continue
            return ArgumentMap(False, {}, {})
        by_index[position] = number
    for offset, name in enumerate(keywords):
        number = positional_count + offset
        index = signature.index_of(name)
        if index is not None and index >= shift and positional[index].kind != POSITIONAL_ONLY:
            if index in by_index:
                return ArgumentMap(False, {}, {})
            by_index[index] = number
            by_name[name] = number
        elif signature.by_name(name) is not None:
            by_name[name] = number
        elif not signature.has_var_keyword:
            return ArgumentMap(False, {}, {})
    return ArgumentMap(True, by_index, by_name, open=has_star)


def leading_positionals(call: cst.Call) -> int:
    """How many plain positional arguments ``call`` passes before its first ``*args``
    (all of them when there is none): those are the only ones whose position is known."""
    count = 0
    for arg in call.args:
        if arg.star == "*":
            break
        if arg.keyword is None and not arg.star:
            count += 1
    return count

"""A definition's donation spec: the donation keywords of a jit, normalised to the signature.

``donate_argnums``/``donate_argnames`` (and equinox's ``donate=`` mode) are
read as constants (:mod:`jaxmem.lint.callables.constants`), completed the way
JAX infers one from the other, and checked against the signature.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from jaxmem.lint.callables import constants
from jaxmem.lint.callables.jit_api import EQX_MODES, Transform
from jaxmem.lint.callables.signatures import Signature


@dataclass(frozen=True)
class DonationSpec:
    """A definition's declared donation, normalised to its signature.

    ``indices``/``names`` are the parameters donated when passed by position
    or by keyword; None means the spec is not a constant we can evaluate.
    ``argnums_given``/``argnames_given`` say which options the code spells
    out (giving both switches off JAX's inference from the signature).
    """

    indices: frozenset[int] | None = frozenset()
    names: frozenset[str] | None = frozenset()
    argnums: tuple[int, ...] | None = ()
    argnames: tuple[str, ...] | None = ()
    argnums_given: bool = False
    argnames_given: bool = False
    static_indices: frozenset[int] | None = frozenset()
    static_names: frozenset[str] | None = frozenset()
    mode: str | None = None
    unknown_reason: str | None = None

    @property
    def known(self) -> bool:
        return self.indices is not None and self.names is not None

    def donates_index(self, index: int) -> bool:
        return bool(self.indices) and index in self.indices

    def donates_name(self, name: str) -> bool:
        return bool(self.names) and name in self.names


def keyword_arg(call: cst.Call, name: str | None) -> cst.Arg | None:
    """The argument of ``call`` passed as keyword ``name``, if any."""
    if name is None:
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def read_spec(
    transform: Transform, options: cst.Call | None, signature: Signature | None, env
) -> tuple[DonationSpec, tuple[str, ...]]:
    """``options``' donation keywords normalised against ``signature`` (constants from ``env``),
    and the problems found (out-of-range index, a name that is no parameter, donated and static)."""
    problems: list[str] = []
    if options is not None and any(arg.star == "**" for arg in options.args):
        return DonationSpec(None, None, None, None, unknown_reason="options passed through **kwargs"), ()
    if transform.flags_kw is not None:
        return read_flags(transform, options, signature, env), ()

    def value_of(kw):
        arg = keyword_arg(options, kw) if options is not None else None
        if arg is None:
            return None, False
        return constants.evaluate(arg.value, env), True

    argnums_raw, argnums_given = value_of(transform.argnums_kw)
    argnames_raw, argnames_given = value_of(transform.argnames_kw)
    static_nums_raw, _ = value_of(transform.static_argnums_kw)
    static_names_raw, _ = value_of(transform.static_argnames_kw)
    mode_raw, mode_given = value_of(transform.mode_kw)

    argnums = () if not argnums_given else constants.as_int_tuple(argnums_raw)
    argnames = () if not argnames_given else constants.as_str_tuple(argnames_raw)
    static_nums = () if static_nums_raw is None else constants.as_int_tuple(static_nums_raw)
    static_names = () if static_names_raw is None else constants.as_str_tuple(static_names_raw)
    positional = signature.positional if signature is not None else None

    def normal(i: int) -> int:
        if i < 0 and positional is not None:
            return i + len(positional)
        return i

    if argnums is None or argnames is None:
        which = transform.argnums_kw if argnums is None else transform.argnames_kw
        return (
            DonationSpec(
                None, None, argnums, argnames, argnums_given, argnames_given,
                unknown_reason=f"`{which}` is not a constant",
            ),
            (),
        )
    static_indices = None if static_nums is None else frozenset(normal(i) for i in static_nums)
    static_names_set = None if static_names is None else frozenset(static_names)

    indices: set[int] = {normal(i) for i in argnums}
    names: set[str] = set(argnames)
    mode = None
    if transform.mode_kw is not None and mode_given:
        mode = mode_raw if isinstance(mode_raw, str) else None
        normalized = EQX_MODES.get(mode) if mode is not None else None
        if normalized is None:
            return DonationSpec(None, None, (), (), unknown_reason=f"`{transform.mode_kw}` is not a known constant"), ()
        if signature is not None and normalized != "none":
            skip = 1 if normalized == "all-except-first" else 0
            indices = set(range(skip, len(signature.positional)))
            names = {p.name for p in signature.params[skip:] if p.kind in ("positional", "keyword_only")}
        elif signature is None and normalized != "none":
            return DonationSpec(None, None, (), (), mode=mode, unknown_reason="signature unknown"), ()
    elif signature is not None and transform.donates_keywords:
        # JAX infers the other half from the signature unless both are given.
        if argnums_given and not argnames_given:
            names |= {n for i in indices if (n := signature.name_at(i)) is not None}
        elif argnames_given and not argnums_given:
            indices |= {i for n in names if (i := signature.index_of(n)) is not None}
    if not transform.donates_keywords:
        names = set()

    if signature is not None:
        for i in sorted(normal(i) for i in argnums):
            if (i >= len(signature.positional) or i < 0) and not signature.has_var_positional:
                problems.append(
                    f"`{transform.argnums_kw}` index {i} is out of range: "
                    f"the function takes {len(signature.positional)} positional parameter(s)"
                )
        for n in argnames:
            if signature.by_name(n) is None and not signature.has_var_keyword:
                problems.append(f"`{transform.argnames_kw}` names `{n}`, which is not a parameter")
    if static_indices:
        for i in sorted(indices & static_indices):
            problems.append(f"parameter {i} is both donated and static")
    if static_names_set:
        for n in sorted(names & static_names_set):
            problems.append(f"parameter `{n}` is both donated and static")
    spec = DonationSpec(
        frozenset(indices), frozenset(names), argnums, argnames, argnums_given, argnames_given,
        static_indices, static_names_set, mode,
    )
    return spec, tuple(problems)


def read_flags(transform: Transform, options: cst.Call | None, signature: Signature | None, env) -> DonationSpec:
    """haliax's ``donate_args``/``donate_kwargs`` (see ``HALIAX_NAMED_JIT``) as a spec: donated
    positions from the flags, donated keyword-passed names from the dict; unknown when a flag is
    not a constant bool (a nested pytree of flags, a function) or ``True`` meets an unseen signature."""
    given = {kw: keyword_arg(options, kw) if options is not None else None
             for kw in (transform.flags_kw, transform.flag_names_kw)}
    flags_arg, names_arg = given[transform.flags_kw], given[transform.flag_names_kw]
    indices: set[int] = set()
    if flags_arg is not None:
        flags = constants.evaluate(flags_arg.value, env)
        if flags is True:
            if signature is None or signature.has_var_positional:
                return DonationSpec(None, None, None, None,
                                    unknown_reason=f"`{transform.flags_kw}=True` with the signature unknown")
            flags = (True,) * len(signature.positional)
        if flags is None or flags is False:
            flags = ()
        if not isinstance(flags, (tuple, list)) or not all(isinstance(f, bool) for f in flags):
            return DonationSpec(None, None, None, None,
                                unknown_reason=f"`{transform.flags_kw}` is not a constant bool or tuple of bools")
        indices = {i for i, flag in enumerate(flags) if flag}
    names: set[str] = set()
    if names_arg is not None:
        entries = _constant_flag_dict(names_arg.value, env)
        if entries is None:
            return DonationSpec(None, None, None, None,
                                unknown_reason=f"`{transform.flag_names_kw}` is not a constant dict of bools")
        names = {name for name, flag in entries.items() if flag}
    return DonationSpec(frozenset(indices), frozenset(names), tuple(sorted(indices)), tuple(sorted(names)),
                        flags_arg is not None, names_arg is not None, frozenset(), frozenset())


def _constant_flag_dict(expr: cst.BaseExpression, env) -> dict[str, bool] | None:
    """``{"name": True, ...}`` (or None) as a dict; None when it is anything else."""
    if isinstance(expr, cst.Name) and expr.value == "None":
        return {}
    if not isinstance(expr, cst.Dict):
        return None
    entries = {}
    for element in expr.elements:
        if not isinstance(element, cst.DictElement):
            return None
        key, flag = constants.evaluate(element.key, env), constants.evaluate(element.value, env)
        if not isinstance(key, str) or not isinstance(flag, bool):
            return None
        entries[key] = flag
    return entries

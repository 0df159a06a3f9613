"""Decide what to write on one jitted definition to donate the given parameters.

Pure decisions over the analysis' plain data (``DonationSpec``, ``Transform``,
``Signature``); no libcst edits here.  Every refusal carries a reason a user
can act on.  The rules that keep a fix from changing what the program does:

* never add ``donate_argnames`` beside an existing ``donate_argnums`` or the
  reverse: giving both switches off JAX's inference from the signature, so
  arguments passed the other way would silently stop being donated;
* ``jax.pmap`` (and wrappers without ``donate_argnames``) donate by position only;
* equinox's ``filter_jit`` donates through ``donate="all"`` or
  ``"all-except-first"``, so the donated set must be exactly one of those;
* never donate a static argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxmem.findings import DonationFix
from jaxmem.lint.callables.definitions import DefinitionSite, DonationSpec
from jaxmem.lint.callables.signatures import KEYWORD_ONLY, POSITIONAL, POSITIONAL_ONLY, Signature

ARGNUMS = "argnums"
ARGNAMES = "argnames"
EQUINOX = "eqx.filter_jit"
_MODE_SKIP = {"all-except-first": 1, "all": 0}
EQX_MODE_PREFIX = {"all": "", "warn": "warn", "all-except-first": "", "warn-except-first": "warn"}


@dataclass(frozen=True)
class KeywordEdit:
    """Add ``values`` to the keyword ``keyword`` (creating it when absent),
    or, with ``replace``, set it to that string (equinox's mode)."""

    keyword: str
    values: tuple = ()
    replace: str | None = None


@dataclass
class SitePlan:
    """What to change on one definition, and what was refused there."""

    site: DefinitionSite
    edits: list[KeywordEdit] = field(default_factory=list)
    donated: list[DonationFix] = field(default_factory=list)
    refused: list[tuple[DonationFix, str]] = field(default_factory=list)

    @property
    def definition(self):
        return self.site.definition


def parameter_label(fix: DonationFix) -> str:
    """``state`` or ``#2`` when the parameter has no name."""
    return f"`{fix.name}`" if fix.name else f"#{fix.index}"


def plan_site(site: DefinitionSite, fixes: list[DonationFix], *, style: str) -> SitePlan:
    """The edits that make ``site`` donate every parameter in ``fixes``.

    ``style`` (``argnums``/``argnames``) is used only when the definition
    declares no donation yet.
    """
    plan = SitePlan(site)
    definition = site.definition
    spec = definition.spec
    if site.options is not None and any(arg.star == "**" for arg in site.options.args):
        return _refuse_all(
            plan, fixes, "its options are passed through `**kwargs`; add the donation where they are built"
        )
    if site.transform.mode_kw is not None or site.transform.flags_kw is not None:
        return _plan_mode(plan, fixes)
    if not spec.known:
        why = spec.unknown_reason or "its donation spec is not a constant"
        return _refuse_all(plan, fixes, f"{why}; add the donation by hand")

    signature = definition.signature
    wanted_nums: list[int] = []
    wanted_names: list[str] = []
    for fix in _unique(fixes):
        if _already_donated(spec, fix, site.transform.donates_keywords):
            continue
        problem = _static_overlap(spec, signature, fix) or _not_in_signature(signature, fix)
        if problem:
            plan.refused.append((fix, problem))
            continue
        keywords = _keywords_for(site, spec, signature, fix, style)
        if isinstance(keywords, str):
            plan.refused.append((fix, keywords))
            continue
        if ARGNUMS in keywords and fix.index not in wanted_nums:
            wanted_nums.append(fix.index)
        if ARGNAMES in keywords and fix.name not in wanted_names:
            wanted_names.append(fix.name)
        plan.donated.append(fix)
    if wanted_nums:
        plan.edits.append(KeywordEdit(site.transform.argnums_kw, tuple(sorted(wanted_nums))))
    if wanted_names:
        order = {p.name: i for i, p in enumerate(signature.params)} if signature else {}
        names = sorted(wanted_names, key=lambda n: order.get(n, len(order)))
        plan.edits.append(KeywordEdit(site.transform.argnames_kw, tuple(names)))
    return plan


def _unique(fixes: list[DonationFix]) -> list[DonationFix]:
    seen, out = set(), []
    for fix in fixes:
        key = (fix.index, fix.name)
        if key not in seen:
            seen.add(key)
            out.append(fix)
    return out


def _refuse_all(plan: SitePlan, fixes: list[DonationFix], reason: str) -> SitePlan:
    plan.refused.extend((fix, reason) for fix in _unique(fixes))
    return plan


def _already_donated(spec: DonationSpec, fix: DonationFix, donates_keywords: bool) -> bool:
    by_index = fix.index is not None and spec.donates_index(fix.index)
    by_name = fix.name is not None and spec.donates_name(fix.name)
    if spec.argnums_given and spec.argnames_given and donates_keywords:
        # No inference: positional and keyword passing are declared separately.
        return (fix.index is None or by_index) and (fix.name is None or by_name)
    return by_index or by_name


def _static_overlap(spec: DonationSpec, signature: Signature | None, fix: DonationFix) -> str | None:
    if spec.static_indices is None or spec.static_names is None:
        return "its static arguments are not constants, so the donation could overlap them; add it by hand"
    static_indices = set(spec.static_indices)
    static_names = set(spec.static_names)
    if signature is not None:
        static_indices |= {i for n in spec.static_names if (i := signature.index_of(n)) is not None}
        static_names |= {n for i in spec.static_indices if (n := signature.name_at(i)) is not None}
    if (fix.index is not None and fix.index in static_indices) or (fix.name is not None and fix.name in static_names):
        return f"parameter {parameter_label(fix)} is static; a static argument cannot be donated"
    return None


def _not_in_signature(signature: Signature | None, fix: DonationFix) -> str | None:
    if signature is None:
        return None
    if fix.index is not None and fix.index >= len(signature.positional) and not signature.has_var_positional:
        return (
            f"index {fix.index} is out of range for a function of {len(signature.positional)} "
            "positional parameter(s); the file changed since the analysis? run jaxmem-fix again"
        )
    if fix.index is not None and fix.name is not None and signature.name_at(fix.index) not in (None, fix.name):
        return (
            f"parameter {fix.index} is `{signature.name_at(fix.index)}`, not `{fix.name}`; "
            "the file changed since the analysis? run jaxmem-fix again"
        )
    return None


def _keyword_passable(signature: Signature | None, name: str | None) -> bool:
    if name is None or signature is None:
        return name is not None
    return any(p.name == name and p.kind in (POSITIONAL, KEYWORD_ONLY) for p in signature.params)


def _keywords_for(site: DefinitionSite, spec: DonationSpec, signature, fix: DonationFix, style: str):
    """Which keywords (``{ARGNUMS, ARGNAMES}``) to extend for ``fix``, or a refusal reason."""
    transform = site.transform
    name = transform.name
    has_argnames = transform.argnames_kw is not None and transform.donates_keywords
    can_nums = fix.index is not None and transform.argnums_kw is not None
    can_names = has_argnames and _keyword_passable(signature, fix.name)
    if not has_argnames:
        if can_nums:
            return {ARGNUMS}
        return f"`{name}` donates by position only and {parameter_label(fix)} has no position; add it by hand"
    if spec.argnums_given and spec.argnames_given:
        chosen = ({ARGNUMS} if can_nums else set()) | ({ARGNAMES} if can_names else set())
        return chosen or f"cannot express {parameter_label(fix)} in this spec; add it by hand"
    if spec.argnums_given:
        if can_nums:
            return {ARGNUMS}
        return (
            f"{parameter_label(fix)} is keyword-only, which needs `{transform.argnames_kw}`; adding it beside "
            f"`{transform.argnums_kw}` would switch off JAX's inference for the others; add both by hand"
        )
    if spec.argnames_given:
        if can_names:
            return {ARGNAMES}
        return (
            f"{parameter_label(fix)} is positional-only, which needs `{transform.argnums_kw}`; adding it beside "
            f"`{transform.argnames_kw}` would switch off JAX's inference for the others; add both by hand"
        )
    if style == ARGNAMES and can_names:
        return {ARGNAMES}
    if can_nums:
        return {ARGNUMS}
    if can_names:
        return {ARGNAMES}
    return f"cannot name or number parameter {parameter_label(fix)}; add it by hand"


# -- equinox ---------------------------------------------------------------

def _donatable_names(signature: Signature, skip: int) -> set[str]:
    return {p.name for p in signature.params[skip:] if p.kind in (POSITIONAL_ONLY, POSITIONAL, KEYWORD_ONLY)}


def _plan_mode(plan: SitePlan, fixes: list[DonationFix]) -> SitePlan:
    """``eqx.filter_jit(donate=...)``: only "all" or "all-except-first" can be written."""
    site = plan.site
    transform = site.transform
    if transform.name != EQUINOX:
        return _refuse_all(
            plan, fixes,
            f"`{transform.name}` takes `{transform.mode_kw or transform.flags_kw}=`, which jaxmem-fix does not "
            "write; add it by hand",
        )
    spec = site.definition.spec
    signature = site.definition.signature
    if signature is None:
        return _refuse_all(
            plan, fixes, "the wrapped function's signature is unknown, so `donate=` cannot be chosen safely"
        )
    if signature.has_var_positional or signature.has_var_keyword:
        return _refuse_all(
            plan, fixes,
            "equinox `donate=` would also donate `*args`/`**kwargs`, which the analysis did not prove dead",
        )
    if not spec.known:
        why = spec.unknown_reason or "its `donate=` is not a constant"
        return _refuse_all(plan, fixes, f"{why}; add the donation by hand")
    fixes = _unique(fixes)
    current = {n for i in spec.indices if (n := signature.name_at(i)) is not None} | set(spec.names)
    wanted = current | {f.name if f.name else signature.name_at(f.index) for f in fixes}
    if wanted == current:
        return plan
    chosen = {f.mode for f in fixes if f.mode in _MODE_SKIP}
    for mode, skip in (("all-except-first", 1), ("all", 0)):
        # The analysis names the mode it proved safe; without one, the donated set must be exactly the mode's.
        fits = mode in chosen if chosen else wanted == _donatable_names(signature, skip)
        if len(signature.params) > skip and fits and wanted <= _donatable_names(signature, skip):
            prefix = EQX_MODE_PREFIX.get(spec.mode or "", "")
            value = mode.replace("all", "warn", 1) if prefix == "warn" else mode
            plan.edits.append(KeywordEdit(transform.mode_kw, replace=value))
            plan.donated.extend(f for f in fixes if (f.name or signature.name_at(f.index)) not in current)
            return plan
    missing = sorted(_donatable_names(signature, 1) - wanted)
    return _refuse_all(
        plan, fixes,
        "equinox donates all arguments (`donate=\"all\"`) or all but the first (`\"all-except-first\"`); "
        f"donating only these would also donate {', '.join(f'`{n}`' for n in missing) or 'the first'}, "
        "which the analysis did not prove dead",
    )

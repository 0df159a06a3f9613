"""Apply donation fixes to one file's source: parse once, edit the definitions, done.

:func:`add_donations` is the whole edit layer: it finds each fix's jitted
definition by line, decides the edit (:mod:`jaxmem.codemod.planning`),
rewrites only those nodes (:mod:`jaxmem.codemod.rewrite`), adds at most one
import through libcst's ``AddImportsVisitor``, and then re-reads its own
output to prove that exactly the intended parameters are now donated and
nothing else changed.  Anything it cannot do safely is reported, never
guessed; a file that does not parse comes back untouched with an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import libcst as cst
from jaxmem.codemod import rewrite
from jaxmem.codemod.splice import CannotSplice, replace_in_tree, splice
from jaxmem.codemod.planning import ARGNAMES, ARGNUMS, EQUINOX, SitePlan, parameter_label, plan_site
from jaxmem.codemod.spelling import partial_spelling, preferred_quote
from jaxmem.findings import DonationFix
from jaxmem.lint.callables import constants
from jaxmem.lint.callables.definitions import DECORATOR, DefinitionSite, find_definitions, parse_definitions
from jaxmem.lint.syntax.positions import Positions

BOM = "\ufeff"
# The decorator factory ``@jax.jit(donate_argnums=...)`` exists since jax 0.8.1.
FACTORY_DECORATOR_MIN_JAX = (0, 8, 1)
STYLES = ("auto", ARGNUMS, ARGNAMES)


@dataclass(frozen=True)
class AppliedEdit:
    """One definition that now donates more parameters."""

    line: int
    function: str
    parameters: tuple[str, ...]
    spec: str

    def describe(self) -> str:
        """``12: train_step: donate `state` (donate_argnums=(0, 1))``."""
        return f"{self.line}: {self.function}: donate {', '.join(self.parameters)} ({self.spec})"


@dataclass(frozen=True)
class SkippedFix:
    """A proposed donation left alone, and why."""

    line: int
    function: str | None
    parameter: str | None
    reason: str

    def describe(self) -> str:
        """``12: train_step: not donating `state`: <reason>``."""
        who = f"{self.function}: " if self.function else ""
        what = f"not donating {self.parameter}: " if self.parameter else ""
        return f"{self.line}: {who}{what}{self.reason}"


@dataclass
class EditResult:
    """The edited source and what happened; ``source`` is the input on error."""

    source: str
    original: str
    edits: list[AppliedEdit] = field(default_factory=list)
    skipped: list[SkippedFix] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.source != self.original

    def lines(self, path: str = "<source>") -> list[str]:
        """One line per edit, per skipped fix, and for the error, prefixed by ``path``."""
        out = [f"{path}:{edit.describe()}" for edit in self.edits]
        out += [f"{path}:{skip.describe()}" for skip in self.skipped]
        if self.error:
            out.append(f"{path}: error: {self.error}")
        return out


def parse_version(version) -> tuple[int, ...] | None:
    """``"0.8.1"`` -> ``(0, 8, 1)``; tuples pass through; None stays None."""
    if version is None or isinstance(version, tuple):
        return version
    numbers = re.findall(r"\d+", str(version).split("+")[0])[:3]
    return tuple(int(n) for n in numbers) if numbers else None


def file_style(sites: Sequence[DefinitionSite]) -> str | None:
    """``argnums``/``argnames`` when the file's jit definitions mostly use one, else None."""
    nums = names = 0
    for site in sites:
        if site.transform.argnames_kw is None or not site.transform.donates_keywords:
            continue
        nums += site.definition.spec.argnums_given
        names += site.definition.spec.argnames_given
    if nums == names:
        return None
    return ARGNAMES if names > nums else ARGNUMS


def add_donations(
    source: str,
    fixes: Sequence[DonationFix],
    *,
    style: str = "auto",
    jax_version=None,
    extra_wrappers: Sequence[str] = (),
    project_style: str | Callable[[], str | None] | None = None,
) -> EditResult:
    """Make the definitions in ``source`` donate the parameters in ``fixes``.

    ``style`` is ``auto`` (follow the file, then ``project_style``, then
    ``argnums``), ``argnums`` or ``argnames``; ``project_style`` may be a
    function, called only when the file has no style of its own.  The style
    matters only for
    definitions without a donation yet.  ``jax_version`` is the oldest jax
    the project supports: from 0.8.1 a bare ``@jax.jit`` becomes
    ``@jax.jit(donate_argnums=...)``, before it ``@partial(jax.jit, ...)``.
    A leading BOM and the file's newlines are kept.
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    result = EditResult(source, source)
    if not fixes:
        return result
    bom = BOM if source.startswith(BOM) else ""
    text = source[len(bom):]
    try:
        module = cst.parse_module(text)
        positions = Positions(module)  # shared with the splicing below: one code generation
        sites = find_definitions(module, positions, extra_wrappers=tuple(extra_wrappers))
    except cst.ParserSyntaxError as error:
        result.error = f"cannot parse line {error.raw_line}: {error.message}; file left untouched"
        return result
    except RecursionError:
        result.error = "the file is too deeply nested to parse; file left untouched"
        return result

    if style == "auto":
        if callable(project_style):
            project_style = project_style()
        style = file_style(sites) or project_style or ARGNUMS
    editor = _FileEditor(module, sites, style, parse_version(jax_version), text)
    for line, line_fixes in _by_line(fixes).items():
        editor.apply_line(line, line_fixes)
    result.skipped = editor.skipped
    if not editor.replacements:
        return result

    keep_lines = {site.definition.line for site in sites}
    try:
        spliced = splice(module, positions, text, editor.nodes, editor.replacements, editor.imports, keep_lines)
        new_text, checked = spliced.text, spliced.checked
    except CannotSplice:
        new_text = checked = replace_in_tree(module, editor.replacements, editor.imports)
    # Keep plain data only: the old tree is freed before the output is parsed.
    definitions = [site.definition for site in sites]
    donated = {number: plan.donated for number, plan in editor.plans}
    edits = editor.edits
    del module, positions, sites, editor
    # The checked text holds every jitted definition of the file (a fraction
    # of it), so a fast check; when its context is too thin, check it all.
    problem = _check_output(checked, definitions, donated, extra_wrappers)
    if problem is not None and checked is not new_text:
        problem = _check_output(new_text, definitions, donated, extra_wrappers)
    if problem is not None:
        result.error = f"internal error: {problem}; file left untouched, please report this to the jaxmem developers"
        return result
    result.source = bom + new_text
    result.edits = edits
    return result


def _by_line(fixes: Sequence[DonationFix]) -> dict[int, list[DonationFix]]:
    grouped: dict[int, list[DonationFix]] = {}
    for fix in fixes:
        grouped.setdefault(fix.definition_line, []).append(fix)
    return dict(sorted(grouped.items()))


def _spec_node(site: DefinitionSite) -> cst.CSTNode:
    """The node an edit replaces: the bare decorator, else the call holding the options."""
    return site.jit_node if site.options is None else site.options


class _FileEditor:
    """Plans the edits of one file and collects the node replacements."""

    def __init__(self, module: cst.Module, sites: list[DefinitionSite], style: str, jax_version,
                 text: str | None = None) -> None:
        self.module = module
        self.text = text
        self.sites = sites
        self.style = style
        self.jax_version = jax_version
        self.replacements: dict[int, Callable[[cst.CSTNode], cst.CSTNode]] = {}
        self.nodes: dict[int, cst.CSTNode] = {}
        # Site numbers by line, and by edited node: looked up once per fix, not scanned.
        self._numbers_by_line: dict[int, list[int]] = {}
        self._numbers_by_node: dict[int, list[int]] = {}
        for number, site in enumerate(sites):
            self._numbers_by_line.setdefault(site.definition.line, []).append(number)
            self._numbers_by_node.setdefault(id(_spec_node(site)), []).append(number)
        self.imports: set[tuple[str, str | None]] = set()
        self.plans: list[tuple[int, SitePlan]] = []
        self.edits: list[AppliedEdit] = []
        self.skipped: list[SkippedFix] = []
        self._quote: str | None = None
        self._partial = None

    @property
    def quote(self) -> str:
        if self._quote is None:
            self._quote = preferred_quote(self.module, self.text)
        return self._quote

    def sites_at(self, line: int) -> list[tuple[int, DefinitionSite]]:
        """Sites defined on ``line``, one per edited node (a factory's sites share one)."""
        found: dict[int, tuple[int, DefinitionSite]] = {}
        for number in self._numbers_by_line.get(line, ()):
            found.setdefault(id(_spec_node(self.sites[number])), (number, self.sites[number]))
        return list(found.values())

    def skip(self, line: int, site: DefinitionSite | None, fixes: Sequence[DonationFix], reason: str) -> None:
        function = site.definition.function if site is not None else None
        for fix in fixes:
            self.skipped.append(SkippedFix(line, function, parameter_label(fix), reason))

    def apply_line(self, line: int, fixes: list[DonationFix]) -> None:
        """Plan and register the edit of the definition on ``line``."""
        candidates = self.sites_at(line)
        if not candidates:
            self.skip(line, None, fixes, "no jitted definition on this line (the file changed since the analysis?)")
            return
        if len(candidates) > 1:
            reason = f"{len(candidates)} jitted definitions share this line; add the donation by hand"
            self.skip(line, None, fixes, reason)
            return
        number, site = candidates[0]
        plan = plan_site(site, fixes, style=self.style)
        for fix, reason in plan.refused:
            self.skipped.append(SkippedFix(line, site.definition.function, parameter_label(fix), reason))
        if not plan.edits:
            return
        edit = self._rewriter(site, plan)
        if isinstance(edit, str):
            self.skip(line, site, plan.donated, edit)
            return
        node = _spec_node(site)
        self.replacements[id(node)] = edit
        self.nodes[id(node)] = node
        # A factory's one jit call defines every name bound from it.
        self.plans.extend((n, plan) for n in self._numbers_by_node[id(node)])
        self.edits.append(
            AppliedEdit(
                line,
                site.definition.function,
                tuple(parameter_label(f) for f in plan.donated),
                _describe(self.module, edit(node), plan),
            )
        )

    def _rewriter(self, site: DefinitionSite, plan: SitePlan):
        """A function from the (updated) spec node to its edited form, or a refusal reason."""
        quote = self.quote
        if site.definition.form != DECORATOR or site.options is not None:
            try:
                rewrite.check_editable(site.options, plan.edits, self.module)
            except rewrite.CannotEdit as error:
                return str(error)
            return lambda call: rewrite.with_donation(call, plan.edits, quote)
        if self._uses_factory(site):
            return lambda decorator: rewrite.decorator_as_factory(decorator, plan.edits, quote)
        if self._partial is None:
            self._partial = partial_spelling(self.module, self.text) or False
        if self._partial is False:
            return "the names `partial` and `functools` are both taken in this file; add the donation by hand"
        spelling = self._partial
        if spelling.import_needed:
            self.imports.add(spelling.import_needed)
        return lambda decorator: rewrite.decorator_as_partial(decorator, spelling.expression, plan.edits, quote)

    def _uses_factory(self, site: DefinitionSite) -> bool:
        if site.transform.name == EQUINOX:
            return True
        return (
            site.transform.name == "jax.jit"
            and self.jax_version is not None
            and self.jax_version >= FACTORY_DECORATOR_MIN_JAX
        )


def _one_line(module: cst.Module, node: cst.CSTNode) -> str:
    text = " ".join(module.code_for_node(node).split())
    return re.sub(r"([(\[]) | ([)\]])|,([)\]])", lambda m: m.group(1) or m.group(2) or m.group(3), text)


def _value_text(module: cst.Module, value: cst.BaseExpression) -> str:
    evaluated = constants.evaluate(value)
    return _one_line(module, value) if evaluated is constants.UNKNOWN else repr(evaluated)


def _describe(module: cst.Module, node: cst.CSTNode, plan: SitePlan) -> str:
    """The new spec as one line: ``donate_argnums=(0, 1)`` or the new decorator."""
    if isinstance(node, cst.Decorator):
        return "@" + _one_line(module, node.decorator)
    keywords = {edit.keyword for edit in plan.edits}
    parts = [
        f"{arg.keyword.value}={_value_text(module, arg.value)}"
        for arg in node.args
        if arg.keyword is not None and arg.keyword.value in keywords
    ]
    return ", ".join(parts)


def _check_output(new_text: str, old_definitions, donated, extra_wrappers) -> str | None:
    """Why the edited text is wrong, or None: it must parse, keep every other
    definition as it was, and donate exactly what was planned (``donated``:
    site number -> the fixes applied there)."""
    try:
        _, new_sites = parse_definitions(new_text, extra_wrappers=tuple(extra_wrappers))
    except cst.ParserSyntaxError as error:
        return f"the edited file does not parse ({error.message})"
    if len(new_sites) != len(old_definitions):
        return f"the edit changed the number of jitted definitions from {len(old_definitions)} to {len(new_sites)}"
    for number, (old, new) in enumerate(zip(old_definitions, (site.definition for site in new_sites))):
        before, after = old.spec, new.spec
        if number not in donated:
            if (before.indices, before.names) != (after.indices, after.names):
                return f"the definition on line {old.line} changed although it was not edited"
            continue
        if after.indices is None or after.names is None:
            return f"the spec on line {old.line} can no longer be evaluated"
        if not (before.indices or frozenset()) <= after.indices or not (before.names or frozenset()) <= after.names:
            return f"the definition on line {old.line} lost a donation"
        for fix in donated[number]:
            by_index = fix.index is not None and fix.index in after.indices
            by_name = fix.name is not None and fix.name in after.names
            if not (by_index or by_name):
                return f"the definition on line {old.line} does not donate {parameter_label(fix)}"
        if set(new.problems) - set(old.problems):
            return f"the edit made the spec on line {old.line} invalid: {new.problems[0]}"
    return None

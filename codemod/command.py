"""jaxmem-fix as a libcst codemod command, one file at a time::

    python -m libcst.tool codemod jaxmem.codemod.command.AddDonationsCommand src/

Each file is analysed with its project's other files as context (their
calls count, as in ``jaxmem-fix``; a module with no file on disk is
analysed alone) and its high-confidence JXM001
fixes (``--unsafe-fixes``: medium too) are applied by the same edit layer
as ``jaxmem-fix``.  What is left alone is reported through
``context.warn``; a file without a fix is skipped.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand

from jaxmem.codemod.edits import add_donations


class AddDonationsCommand(VisitorBasedCodemodCommand):
    """Add the buffer donations jaxmem's analysis proves safe (JXM001)."""

    DESCRIPTION: str = "Add missed buffer donations (jaxmem JXM001) to jitted definitions."

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """``--unsafe-fixes``, ``--style``, ``--jax-version``."""
        arg_parser.add_argument("--unsafe-fixes", action="store_true", default=False,
                                help="also apply medium-confidence fixes")
        arg_parser.add_argument("--style", choices=("auto", "argnums", "argnames"), default=None,
                                help="spec keyword for definitions without one (default: config, else auto)")
        arg_parser.add_argument("--jax-version", default=None,
                                help="oldest jax the project supports (default: config or pyproject)")

    def __init__(
        self,
        context: CodemodContext,
        unsafe_fixes: bool = False,
        style: str | None = None,
        jax_version: str | None = None,
    ) -> None:
        super().__init__(context)
        self.unsafe_fixes = unsafe_fixes
        self.style = style
        self.jax_version = jax_version

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """Analyse this file, apply its fixes, return the edited module."""
        from jaxmem.codemod.project import project_jax_lower_bound
        from jaxmem.config import load_config
        from jaxmem.findings import Confidence
        from jaxmem.noqa import is_suppressed, parse_noqa

        path = self.context.filename or "<module>"
        config = load_config([path] if os.path.exists(path) else [])
        settings = config.settings
        text = tree.code
        report = _analyse(text, path, settings)
        threshold = Confidence.MEDIUM if self.unsafe_fixes else Confidence.HIGH
        noqa = parse_noqa(text)
        fixes = []
        for finding in report.findings:
            if finding.code != "JXM001" or finding.fix is None or is_suppressed(finding, noqa):
                continue
            if finding.confidence.rank >= threshold.rank and settings.wants(finding.code):
                fixes.append(finding.fix)
        for refusal in report.refusals:
            self.warn(f"{refusal.line}: {refusal.function}: refused `{refusal.parameter}`: {refusal.reason}")
        if not fixes:
            raise SkipFile("no missed donation to add")
        result = add_donations(
            text, fixes,
            style=self.style or settings.donation_style,
            jax_version=self.jax_version or settings.jax_version or project_jax_lower_bound(config.root),
            extra_wrappers=settings.extra_wrappers,
        )
        for skipped in result.skipped:
            self.warn(skipped.describe())
        if result.error:
            raise ValueError(f"{path}: {result.error}")
        if not result.changed:
            raise SkipFile("every proposed donation was left alone")
        return cst.parse_module(result.source)


def _analyse(text: str, path: str, settings):
    """The report for ``text`` (the contents of ``path``), with the project's
    other files as context when ``path`` is a file on disk."""
    from jaxmem.lint import engine

    if not os.path.isfile(path):
        return engine.analyze_source(text, path, settings, partial_view=False)
    from jaxmem.api import check_paths
    from jaxmem.findings import Confidence

    every_confidence = dataclasses.replace(settings, min_confidence=Confidence.LOW)
    (report,) = check_paths(["-"], every_confidence, stdin_filename=path, stdin=io.BytesIO(text.encode("utf-8")))
    return report

"""The edits ``%jaxmem --diff``/``--fix`` make: to the session's cells and to the project files they call."""

from __future__ import annotations

import dataclasses

from jaxmem.findings import Confidence
from jaxmem.ipython_session import SESSION_PATH, SessionCheck, in_session_terms
from jaxmem.notebooks import NotebookError


def fixed_cells(check: SessionCheck, *, unsafe: bool = False, jax_version=None,
                confirmations: dict[str, str] | None = None) -> tuple[list, list]:
    """``(changes, skipped)``: ``(cell number, old source, new source)`` of each cell
    ``jaxmem-fix`` (``unsafe``: ``--unsafe-fixes``) would change, and the fixes it
    would leave alone.  ``confirmations`` (``%jaxmem confirm``'s outcomes) add the
    confirmed proposals at any confidence and take the refuted ones out.  Raises
    :class:`jaxmem.notebooks.NotebookError` when an edit would touch a magic line
    or span two cells."""
    from jaxmem.ipython_confirm import applies

    threshold = Confidence.MEDIUM if unsafe else Confidence.HIGH
    fixes = [f.fix for f in check.findings
             if f.path == SESSION_PATH and applies(f, check.notebook, confirmations or {}, threshold)]
    if not fixes:
        return [], []
    result = _add_donations(check.notebook.text, fixes, check.settings, jax_version)
    if result.error:
        raise NotebookError(result.error)
    check.notebook.updated(result.source)  # raises where the edit cannot be written back
    return check.notebook.cell_sources(result.source), list(result.skipped)


@dataclasses.dataclass(frozen=True)
class FileFix:
    """The edit ``jaxmem-fix`` would make to a project file the session calls."""

    path: str
    source: object  # jaxmem.codemod.textfile.SourceFile, as read
    after: str  # its text with the donations
    edits: int
    problem: str | None = None  # why it cannot be fixed from here


def fixed_files(check: SessionCheck, *, unsafe: bool = False, jax_version=None,
                confirmations: dict[str, str] | None = None) -> list[FileFix]:
    """The edits to the project files whose findings the session's calls give rise to
    (high confidence; ``unsafe``: medium too; ``confirmations`` as for :func:`fixed_cells`).
    A file changed since the check, or one the codemod cannot edit, comes with its ``problem``."""
    from jaxmem.codemod import textfile
    from jaxmem.ipython_confirm import applies
    from jaxmem.sources import digest

    threshold = Confidence.MEDIUM if unsafe else Confidence.HIGH
    by_file: dict[str, list] = {}
    for finding in check.findings:
        if finding.path != SESSION_PATH and applies(finding, check.notebook, confirmations or {}, threshold):
            by_file.setdefault(finding.path, []).append(finding.fix)
    settings, out = check.settings, []
    for path, fixes in sorted(by_file.items()):
        try:
            source = textfile.read(path, settings.max_file_size)
        except textfile.SourceError as error:
            out.append(FileFix(path, None, "", 0, str(error)))
            continue
        if digest(source.data) != check.digests.get(path):
            out.append(FileFix(path, source, source.text, 0, f"{path}: changed since the check; run %jaxmem again"))
            continue
        result = _add_donations(source.text, fixes, settings, jax_version)
        out.append(FileFix(path, source, result.source, len(result.edits), result.error and f"{path}: {result.error}"))
    return out


def _add_donations(text: str, fixes: list, settings, jax_version):
    """``jaxmem-fix``'s edit of ``text`` with the project's settings and the jax the fix is for."""
    from jaxmem.codemod.edits import add_donations

    return add_donations(text, fixes, style=settings.donation_style,
                         jax_version=jax_version or settings.jax_version or _installed_jax(),
                         extra_wrappers=settings.extra_wrappers)


def _installed_jax():
    """The installed jax's version (read from its metadata, not imported), or None."""
    from importlib import metadata

    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:
        return None


def skipped_line(notebook, skipped) -> str:
    """A fix ``jaxmem-fix`` leaves alone, named by cell."""
    cell, line = notebook.locate(skipped.line)
    return in_session_terms(f"{SESSION_PATH}:cell {cell}:{line}: " + skipped.describe().partition(": ")[2])

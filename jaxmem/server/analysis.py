"""What the language server asks of jaxmem, without any LSP: check a document, fix it.

:func:`analyse_document` runs ``jaxmem check FILE`` as if from the project
root, with the editor's unsaved text in place of the file's bytes (the
stdin path of :func:`jaxmem.api.check_paths`): the other files of the
project and the facts cache are the same, so are the findings and their
confidence.  :func:`fix_document` computes what ``jaxmem-fix`` would write
for some of those findings, with the options ``jaxmem-fix`` would use.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from jaxmem.findings import Confidence, Finding
from jaxmem.notebooks import is_notebook
from jaxmem.settings import Settings
from jaxmem.sources import read_source

FIXED_CODE = "JXM001"
# ``check_paths`` resolves the project from the current folder, which is the
# whole process's: one analysis at a time.
_CWD_LOCK = threading.Lock()
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


@dataclass(frozen=True)
class DocumentAnalysis:
    """The findings for one document's text, and what a fix needs to know.

    ``name`` is the document's path as ``jaxmem check`` run from ``root``
    reports it (relative to the root, when inside it); ``findings`` name
    files the same way.
    """

    path: Path
    name: str
    text: str
    root: Path
    settings: Settings
    findings: list[Finding] = field(default_factory=list)
    skipped: str | None = None  # why the document was not checked
    # The findings in other project files that the document's calls give rise to (a
    # jitted ``step`` defined in ``lib.py`` and called here), with those files' texts.
    called: list[Finding] = field(default_factory=list)
    called_texts: dict[str, str] = field(default_factory=dict)

    def absolute(self, relative: str) -> Path:
        """The absolute path of a file a finding names."""
        return self.root / relative


@dataclass(frozen=True)
class DocumentFix:
    """What ``jaxmem-fix`` would make of the document: ``after`` (equal to
    ``before`` when nothing changed), the edits it made and the fixes it refused."""

    before: str
    after: str
    edits: tuple = ()
    skipped: tuple = ()
    error: str | None = None
    cells: tuple = ()  # a notebook's: ``(cell number, old source, new source)`` of each changed code cell


def analyse_document(path: str | os.PathLike, text: str, *, use_cache: bool = True) -> DocumentAnalysis:
    """Check ``text`` as the contents of ``path`` within its whole project.

    Raises :class:`jaxmem.config.ConfigError` for a bad ``[tool.jaxmem]``.
    """
    from jaxmem.api import check_paths
    from jaxmem.config import load_config

    path = Path(path).absolute()
    path = path.parent.resolve() / path.name  # as the root is: a symlinked folder must not put it outside
    config = load_config([str(path)])
    root, has_project = config.root, _is_project(config.root)
    if not has_project:
        # No project to read calls from, and no folder of the user's to keep a cache in.
        root, use_cache = path.parent, False
    relative = os.path.relpath(path, root)
    name = str(path) if relative.startswith("..") else relative
    skipped = skip_reason(path, root, config.settings)
    if skipped is not None:
        return DocumentAnalysis(path, name, text, root, config.settings, skipped=skipped)
    with _CWD_LOCK, _working_directory(root):
        reports = check_paths(["-"], config.settings, use_cache=use_cache, stdin_filename=name,
                              stdin=io.BytesIO(encode_like_file(text)), callee_findings=has_project)
    findings = [finding for report in reports if report.path == name for finding in report.findings]
    called, texts = [], {}
    for report in reports:
        if report.path == name or not report.findings or is_notebook(report.path):
            continue
        source = read_source(str(root / report.path))  # as the analysis read it, to place the findings
        if source.text is not None:
            called.extend(report.findings)
            texts[report.path] = source.text
    return DocumentAnalysis(path, name, text, root, config.settings, findings, called=called, called_texts=texts)


def skip_reason(path: Path, root: Path, settings: Settings) -> str | None:
    """Why a document is not checked, or None.

    As ``jaxmem check --force-exclude`` and the folder walk leave files
    alone: excluded in ``[tool.jaxmem]``, or inside a folder jaxmem never
    walks into (a virtualenv, build output); nor is an installed package.
    """
    from jaxmem.discovery import ExcludeMatcher, is_skipped_dir

    matcher = ExcludeMatcher(settings.exclude, root)
    if matcher.matches(str(path)):
        return "excluded by `exclude` in [tool.jaxmem]"
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return "an installed package (site-packages)"
    folder = root
    for name in path.parent.relative_to(root).parts if path.is_relative_to(root) else ():
        folder = folder / name
        if matcher.matches_name(name):
            return f"inside {folder.relative_to(root)}/, excluded by `exclude` in [tool.jaxmem]"
        if is_skipped_dir(str(folder), name):
            return f"inside {folder.relative_to(root)}/, a folder jaxmem does not check"
    return None


def fixable(finding: Finding, unsafe: bool) -> bool:
    """Whether ``jaxmem-fix`` (``--unsafe-fixes`` when ``unsafe``) applies ``finding``."""
    threshold = Confidence.MEDIUM if unsafe else Confidence.HIGH
    return finding.code == FIXED_CODE and finding.fix is not None and finding.confidence.rank >= threshold.rank


def fix_document(analysis: DocumentAnalysis, findings: Iterable[Finding]) -> DocumentFix:
    """What ``jaxmem-fix`` does to the document with the fixes of ``findings``.

    A JXM001 is reported on the jitted definition it edits, so every fix
    of the document's findings edits the document's analysed text.
    """
    from jaxmem.codemod.edits import add_donations
    from jaxmem.codemod.project import donation_style_of, project_jax_lower_bound
    from jaxmem.deep import call_deep
    from jaxmem.notebooks import NotebookError, is_notebook, read_notebook

    fixes = [f.fix for f in findings if f.fix is not None and (f.definition_path or f.path) == analysis.name]
    notebook = read_notebook(analysis.name, analysis.text.encode("utf-8")) if is_notebook(analysis.name) else None
    code = notebook.text if notebook is not None else analysis.text  # a notebook's fixes count its joined cells
    settings = analysis.settings
    result = call_deep(
        add_donations, code, fixes, style=settings.donation_style,
        jax_version=settings.jax_version or project_jax_lower_bound(analysis.root),
        extra_wrappers=settings.extra_wrappers,
        # ``jaxmem-fix FILE`` counts the spec keywords of the files it was given.
        project_style=lambda: donation_style_of([code]),
    )
    if notebook is None:
        return DocumentFix(analysis.text, result.source, tuple(result.edits), tuple(result.skipped), result.error)
    try:
        after = notebook.updated(result.source).decode("utf-8")
    except NotebookError as error:  # an edit on a magic line, or across two cells
        return DocumentFix(analysis.text, analysis.text, (), tuple(result.skipped), str(error))
    return DocumentFix(analysis.text, after, tuple(result.edits), tuple(result.skipped), result.error,
                       tuple(notebook.cell_sources(result.source)))


def encode_like_file(text: str) -> bytes:
    """``text`` in the encoding its PEP 263 cookie declares (UTF-8 without one),
    so that jaxmem decodes it back to the same text."""
    for line in text.splitlines()[:2]:
        match = _CODING.match(line)
        if match:
            try:
                return text.encode(match.group(1))
            except (LookupError, UnicodeEncodeError):
                break  # jaxmem reports the cookie or the bytes as JXM900
    return text.encode("utf-8", "surrogatepass")


def _is_project(root: Path) -> bool:
    return (root / "pyproject.toml").is_file() or (root / ".git").exists()


@contextlib.contextmanager
def _working_directory(folder: Path):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)

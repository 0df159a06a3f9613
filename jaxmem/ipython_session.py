"""The cells an IPython session ran, checked as one notebook (``%jaxmem``'s analysis).

The session's input history is joined into a notebook that no import can
name (:data:`SESSION_PATH`) and checked as ``jaxmem check`` checks a file,
with the project around the working folder; findings name cells by
execution count (``In [3], line 5``).  Findings in project files that the
cells' calls give rise to come back too.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re

# The name the session's cells are analysed under: a notebook that no import can name.
SESSION_PATH = "<ipython-session>.ipynb"

_CELL_LINE = re.compile(re.escape(SESSION_PATH) + r":cell (\d+):(\d+)")
_CELL_MENTION = re.compile(r"\bcell (\d+), line (\d+)")


def session_sources(history_manager) -> list[str]:
    """The source of every cell the session ran: item ``i`` is ``In [i + 1]``.

    A cell whose IPython translation does not compile never ran: it counts as
    empty, so one typo does not hide the rest of the session."""
    raw, parsed = history_manager.input_hist_raw, history_manager.input_hist_parsed
    sources = []
    for number in range(1, len(raw)):
        try:
            compile(parsed[number] if number < len(parsed) else raw[number], f"In[{number}]", "exec")
        except (SyntaxError, ValueError):
            sources.append("")
            continue
        sources.append(raw[number])
    return sources


@dataclasses.dataclass(frozen=True)
class SessionCheck:
    """What ``%jaxmem`` found: the findings (cells as execution counts), the
    donations not proposed, and the notebook whose lines the fixes count."""

    findings: list
    refusals: list
    notebook: object
    settings: object
    superseded: int = 0  # findings left out: their definition was redefined by a later cell
    digests: dict = dataclasses.field(default_factory=dict)  # project file -> digest of the bytes analysed


def check_session(sources: list[str], settings=None, *, project: bool = True, use_cache: bool = True) -> SessionCheck:
    """Check ``sources`` (cell ``i`` is ``In [i + 1]``) as one notebook run top to bottom."""
    from jaxmem.api import check_paths
    from jaxmem.config import load_config
    from jaxmem.notebooks import cells_json, read_notebook

    if settings is None:
        settings = load_config(["."]).settings
    data = cells_json((source, True) for source in sources).encode("utf-8")
    reports = check_paths(["-"], settings, use_cache=use_cache, stdin_filename=SESSION_PATH,
                          stdin=io.BytesIO(data), whole_project=project, callee_findings=project)
    notebook = read_notebook(SESSION_PATH, data)
    findings = sorted((f for report in reports for f in report.findings), key=lambda f: f.sort_key)
    redefined = _redefined_after(notebook)
    current = [f for f in findings if not _superseded(f, redefined)]
    refusals = [r for report in reports for r in report.refusals]
    digests = {report.path: report.digest for report in reports if report.path != SESSION_PATH}
    return SessionCheck(current, refusals, notebook, settings, superseded=len(findings) - len(current),
                        digests=digests)


def _redefined_after(notebook) -> dict[str, int]:
    """For each name a cell binds at its top level, the last cell number that binds it."""
    last: dict[str, int] = {}
    for cell in notebook.cells:
        text = "".join(line if cell.magic.get(i) is None else cell.magic[i][1] for i, line in enumerate(cell.lines))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for statement in tree.body:
            for name in _bound_names(statement):
                last[name] = cell.number
    return last


def _bound_names(statement) -> list[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).partition(".")[0] for alias in statement.names]
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
    return [node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)]


def _superseded(finding, redefined: dict[str, int]) -> bool:
    """Whether ``finding`` is about a definition a later cell replaced: the
    session no longer runs it, so there is nothing left to fix there.  A
    finding at a call or a read (JXM101) is about what ran, and stays."""
    if finding.cell is None or finding.cell != finding.definition_cell or \
            finding.span.line != finding.definition_line:
        return False
    name = finding.function or ""
    return name.isidentifier() and redefined.get(name, 0) > finding.cell


def in_session_terms(text: str) -> str:
    """``text`` with the session notebook's cell references written as IPython names them (``In [3]``)."""
    text = _CELL_LINE.sub(lambda m: f"In [{m.group(1)}], line {m.group(2)}", text)
    return _CELL_MENTION.sub(lambda m: f"In [{m.group(1)}], line {m.group(2)}", text)


def finding_line(finding) -> str:
    """One finding as ``In [3], line 5:9: JXM001 message``; one in a project file the
    session calls as ``train.py:4:1: JXM001 message (called from In [5], line 2)``."""
    if finding.cell is not None:
        where = f"In [{finding.cell}], line {finding.span.line}:{finding.span.col + 1}"
    else:
        where = f"{finding.path}:{finding.span.line}:{finding.span.col + 1}"
    line = f"{where}: {finding.code} {in_session_terms(finding.message)}"
    if finding.path != SESSION_PATH:
        caller = next((e for e in finding.evidence if e.path == SESSION_PATH and e.cell is not None), None)
        if caller is not None:
            line += f" (called from In [{caller.cell}], line {caller.line})"
    return line


def finding_key(finding) -> tuple:
    """What stays the same for one finding while later cells run (its evidence may grow)."""
    return (finding.code, finding.path, finding.cell, finding.span.line, finding.span.col,
            finding.function, finding.parameter_index, finding.parameter_name)

"""What jaxmem tells its user, shared by every command: printable text, internal errors,
whether an output file can be written before any work is done, and the donations
the analysis considered and did not propose."""

from __future__ import annotations

import os
import sys
import traceback


def printable(text: str) -> str:
    """``text`` with the undecodable bytes of file names (lone surrogates) as U+FFFD."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace")


def unwritable_output(path: str) -> str | None:
    """Why a report cannot be written to ``path`` (a missing or read-only folder), else None."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"{path}: cannot write the report: folder {folder} does not exist; create it first"
    if os.path.isdir(path):
        return f"{path}: cannot write the report: it is a folder; name a file"
    if not os.access(folder, os.W_OK | os.X_OK) and not os.access(path, os.W_OK):
        return f"{path}: cannot write the report: folder {folder} is not writable"
    return None


def report_internal_error(program: str, error: BaseException) -> None:
    """Tell the user about a bug in jaxmem (the traceback with ``JAXMEM_DEBUG=1``)."""
    sys.stderr.write(f"{program}: error: internal error: {type(error).__name__}: {error}; please report "
                     "it to the jaxmem developers with the command that triggered it "
                     "(set JAXMEM_DEBUG=1 to see where)\n")
    if os.environ.get("JAXMEM_DEBUG"):
        traceback.print_exception(error)


def skipped_lines(refusals) -> list[str]:
    """One line per donation the analysis did not propose, with the reason
    (``jaxmem check --show-skipped``; ``--format json`` lists them under ``skipped``)."""
    lines = []
    for r in sorted(refusals, key=lambda r: (r.path, r.cell or 0, r.line, r.parameter)):
        what = "no parameter" if r.parameter == "*" else f"`{r.parameter}`"
        where = f"{r.path}:cell {r.cell}:{r.line}" if r.cell is not None else f"{r.path}:{r.line}"
        lines.append(printable(f"{where}: {r.function}: {what} not proposed: {r.reason}"))
    return lines


def skipped_summary(count: int) -> str:
    """The summary's note on what was not proposed ("" when nothing was)."""
    if not count:
        return ""
    return f"{count} parameter(s) not proposed; --show-skipped lists why"

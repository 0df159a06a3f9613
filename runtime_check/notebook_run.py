"""Run a notebook's code cells top to bottom, as ``jupyter execute`` would, for ``jaxmem confirm``.

``jaxmem confirm -- train.ipynb`` runs the notebook in an IPython shell in
this process (magics work as in Jupyter), in the notebook's folder, and
stops at the first cell that fails.  The static analysis names a
notebook's lines by the joined code of its cells (what ``jaxmem-fix``
edits); :meth:`NotebookRun.place_of` turns a cell's code name and line,
as the running code sees them, into that path and line, and
:meth:`NotebookRun.in_cells` writes the cells' code names in messages as
``train.ipynb:cell 3, line 2``.
"""

from __future__ import annotations

import os
import re
import sys

from jaxmem.notebooks import is_notebook, read_notebook


# A notebook with its outputs (images) may be far larger than the code analysed in it.
MAX_NOTEBOOK_BYTES = 256 * 1024 * 1024


def read_notebook_file(path: str):
    """The :class:`jaxmem.notebooks.Notebook` at ``path``; raises
    :class:`jaxmem.sources.UnreadableFile` or :class:`jaxmem.notebooks.NotebookError`."""
    from jaxmem.sources import read_regular_file

    return read_notebook(path, read_regular_file(path, MAX_NOTEBOOK_BYTES))


def name_cells(text: str, labels: dict[str, str]) -> str:
    """``text`` with each ``CODE_NAME:LINE`` written ``LABEL, line LINE``: ``labels`` maps the
    code names IPython gives cells (``<ipython-input-3-...>``, ipykernel's temporary files)
    to how the user names them (``In [3]``, ``train.ipynb:cell 4``)."""
    for code_name, label in labels.items():
        if code_name in text:
            text = re.sub(re.escape(code_name) + r":(\d+)", lambda m, label=label: f"{label}, line {m.group(1)}", text)
    return text


def cell_numbers(shell) -> dict[str, int]:
    """IPython's name of each cell's code -> its execution count (``shell.compile``'s record)."""
    return dict(getattr(shell.compile, "_filename_map", {}))


class CellFailed(Exception):
    """A cell raised; ``__cause__`` is its error (IPython has shown the traceback)."""


class NotebookRun:
    """One run of the notebook at ``path``."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.notebook = read_notebook_file(path)
        self.shell = None
        self.cell_of_count: dict[int, int] = {}  # execution count -> cell number
        self._joined: dict[tuple[int, int], int] = {}  # (cell number, line in cell) -> joined line
        for joined, (position, line) in enumerate(self.notebook.line_cells, start=1):
            self._joined[(self.notebook.cells[position].number, line + 1)] = joined

    def place_of(self, code_name: str, line: int) -> tuple[str, int]:
        """``(notebook path, joined line)`` of line ``line`` of a cell's code; other code as it is."""
        cell = self._cell_of(code_name)
        joined = self._joined.get((cell, line)) if cell is not None else None
        return (code_name, line) if joined is None else (self.path, joined)

    def _cell_of(self, code_name: str) -> int | None:
        if self.shell is None:
            return None
        return self.cell_of_count.get(cell_numbers(self.shell).get(code_name))

    def in_cells(self, text: str) -> str:
        """``text`` with each cell's code name and line written as ``train.ipynb:cell 3, line 2``."""
        if self.shell is None:
            return text
        name = os.path.relpath(self.path) if not os.path.relpath(self.path).startswith("..") else self.path
        return name_cells(text, {code_name: f"{name}:cell {self.cell_of_count[count]}"
                                 for code_name, count in cell_numbers(self.shell).items()
                                 if count in self.cell_of_count})

    def run(self) -> int:
        """Run every code cell in order; 0, or raise :class:`CellFailed` at the first failing cell."""
        try:
            from IPython.core.interactiveshell import InteractiveShell
        except ImportError:
            raise SystemExit(f"jaxmem: running {self.path} needs IPython (pip install ipython), as Jupyter does")
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        config.InteractiveShell.colors = "nocolor"
        self.shell = InteractiveShell.instance(config=config)
        folder = os.path.dirname(self.path)
        previous = os.getcwd()
        os.chdir(folder)  # a kernel starts in the notebook's folder, which imports see
        sys.path.insert(0, folder)
        try:
            for cell in self.notebook.cells:
                source = "".join(cell.lines)
                if not source.strip():
                    continue
                self.cell_of_count[self.shell.execution_count] = cell.number
                result = self.shell.run_cell(source, store_history=True)
                error = result.error_before_exec or result.error_in_exec
                if isinstance(error, SystemExit):
                    raise error
                if error is not None:
                    raise CellFailed(f"cell {cell.number} failed") from error
        finally:
            os.chdir(previous)
        return 0


def notebook_target(target: list[str]) -> str | None:
    """The notebook ``target`` runs (``train.ipynb``), or None for a script or module."""
    return target[0] if target and is_notebook(target[0]) else None

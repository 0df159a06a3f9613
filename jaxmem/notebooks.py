"""Jupyter notebooks (``.ipynb``) as Python source, and back.

The code cells are joined into one Python text, as ruff does; a line map
says which cell and line each line of it came from.  Cells are numbered
from 1 among *all* cells (markdown too), as ruff and VS Code count them.
IPython syntax is kept out of the analysis, one line for one line, so line
numbers stay:

* a line magic (``%time f(x)``), a shell escape (``!pip install jax``,
  ``files = !ls``) or a help request (``f?``, ``??f``) becomes a call
  ``__jaxmem_magic__(f, x)`` naming every identifier on the line: a magic may
  read any variable it names (``%time print(state)`` reads ``state``), so
  it counts as a read, never as nothing;
* a cell magic: ``%%time``, ``%%timeit``, ``%%capture``, ``%%prun`` and
  ``%%debug`` run their body as Python, so only their first line is
  replaced; any other (``%%bash``, ``%%writefile``) blanks the whole cell.

Writing back (:meth:`Notebook.updated`) puts the original magic lines back,
changes only the ``source`` of the cells whose code changed, and writes the
JSON in the notebook's own layout (indent, key order, escaping, final
newline, ``source`` as a list of lines or one string).  The standard
``json`` module does the reading and writing: ``nbformat``'s writer sorts
the keys and re-indents with one space, which rewrites every line of a
Colab notebook (two-space indent, unsorted keys).  A layout ``json`` cannot
reproduce byte for byte is refused rather than reformatted.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import keyword
import re
from dataclasses import dataclass

from jaxmem.findings import Span

NOTEBOOK_SUFFIX = ".ipynb"
MAGIC_CALL = "__jaxmem_magic__"
# Cell magics whose body is Python (ruff keeps the same ones).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_IMPORT_STARTS = ("import ", "from ")
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
# ``files = !ls``, ``out = %time f()``: targets, then ``=`` and a magic.
_MAGIC_ASSIGNMENT = re.compile(r"^(?P<targets>[^\W\d][\w.]*(?:\s*,\s*[^\W\d][\w.]*)*)\s*=\s*(?P<magic>[%!](?!=).*)$")


class NotebookError(Exception):
    """A notebook jaxmem cannot read or rewrite; ``line`` (1-based) is where in
    the file, ``cell`` which cell, when known.  The message is user-facing."""

    def __init__(self, message: str, line: int = 1, col: int = 0, cell: int | None = None):
        super().__init__(message)
        self.line, self.col, self.cell = line, col, cell


def is_notebook(path: str) -> bool:
    """Whether ``path`` names a Jupyter notebook (by its suffix)."""
    return str(path).lower().endswith(NOTEBOOK_SUFFIX)


@dataclass(frozen=True)
class CodeCell:
    """One code cell: its index in ``cells``, its 1-based number, its lines.

    ``lines`` keep their ``\\n`` (the last one may lack it: ``ends_with_newline``);
    ``magic`` holds the original text of each line replaced in the analysis.
    """

    index: int
    number: int
    lines: tuple[str, ...]
    ends_with_newline: bool
    source_is_list: bool
    magic: dict


@dataclass(frozen=True)
class Layout:
    """How the file's JSON is written: what ``json.dumps`` reproduces it with."""

    indent: int | None
    ensure_ascii: bool
    newline: str
    final_newline: bool
    separators: tuple[str, str] | None = None

    def dumps(self, document) -> str:
        text = json.dumps(document, indent=self.indent, ensure_ascii=self.ensure_ascii, separators=self.separators)
        if self.final_newline:
            text += "\n"
        return text.replace("\n", self.newline) if self.newline != "\n" else text


class Notebook:
    """A parsed notebook: ``text`` is the analysed Python, ``locate`` maps its lines back."""

    def __init__(self, path: str, data: bytes, document: dict, cells: list[CodeCell]):
        self.path = path
        self.data = data
        self.document = document
        self.cells = cells
        lines: list[str] = []
        self.line_cells: list[tuple[int, int]] = []  # analysed line - 1 -> (cell position, line in cell - 1)
        for position, cell in enumerate(cells):
            for number, line in enumerate(cell.lines):
                replaced = cell.magic.get(number)
                lines.append(line if replaced is None else replaced[1])
                self.line_cells.append((position, number))
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
        self.text = "".join(lines)

    def locate(self, line: int) -> tuple[int | None, int]:
        """``(cell number, line in the cell)`` of a 1-based line of :attr:`text`
        (``(None, line)`` past its end)."""
        if not 1 <= line <= len(self.line_cells):
            return None, line
        position, number = self.line_cells[line - 1]
        return self.cells[position].number, number + 1

    def cell_line(self, cell_number: int, line: int) -> str | None:
        """The original text of ``line`` (1-based) of cell ``cell_number``, magics included."""
        for cell in self.cells:
            if cell.number == cell_number and 1 <= line <= len(cell.lines):
                return cell.lines[line - 1].rstrip("\r\n")
        return None

    def updated(self, text: str) -> bytes:
        """The notebook's bytes with its code replaced by ``text`` (an edit of :attr:`text`).

        Raises :class:`NotebookError` when an edit touches a magic line,
        spans two cells, or the JSON layout cannot be kept.
        """
        if text == self.text:
            return self.data
        new_cells = self._split(text)
        document = json.loads(self.data.decode("utf-8-sig"))  # a fresh copy, in the file's key order
        changed = False
        for cell, lines in zip(self.cells, new_cells):
            if list(lines) == list(cell.lines):
                continue
            changed = True
            source = "".join(lines)  # a cell without a final newline still has none (``_split``)
            document["cells"][cell.index]["source"] = (
                source.splitlines(keepends=True) if cell.source_is_list else source)
        if not changed:
            return self.data
        return self._dump(document)

    def cell_sources(self, text: str) -> list[tuple[int, str, str]]:
        """``(cell number, old source, new source)`` of each cell ``text`` changes."""
        out = []
        for cell, lines in zip(self.cells, self._split(text)):
            if list(lines) != list(cell.lines):
                out.append((cell.number, "".join(cell.lines), "".join(lines)))
        return out

    def _split(self, text: str) -> list[list[str]]:
        """The lines of each code cell after the edit that made :attr:`text` into ``text``."""
        old = self.text.splitlines(keepends=True)
        new = text.splitlines(keepends=True)
        cells: list[list[str]] = [[] for _ in self.cells]

        def kept(i: int) -> str:
            position, number = self.line_cells[i]
            magic = self.cells[position].magic.get(number)
            if magic is None:
                return old[i]
            return magic[0] if magic[0].endswith("\n") else magic[0] + "\n"

        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for i in range(i1, i2):
                    cells[self.line_cells[i][0]].append(kept(i))
                continue
            touched = {self.line_cells[i][0] for i in range(i1, i2)}
            if any(self.cells[self.line_cells[i][0]].magic.get(self.line_cells[i][1]) for i in range(i1, i2)):
                raise NotebookError(self._where(i1) + "an edit would change a line holding IPython magic; "
                                    "left untouched", cell=self.cells[self.line_cells[i1][0]].number)
            if len(touched) > 1:
                raise NotebookError(self._where(i1) + "an edit would span two cells; left untouched")
            if touched:
                position = touched.pop()
            else:
                position = self._insertion_cell(i1, new[j1:j2])
            cells[position].extend(new[j1:j2])
        for position, cell in enumerate(self.cells):
            lines = cells[position]
            if lines and not cell.ends_with_newline and lines[-1].endswith("\n"):
                lines[-1] = lines[-1][:-1]
        return cells

    def _insertion_cell(self, before: int, inserted: list[str]) -> int:
        """The cell that gets lines inserted before analysed line ``before`` (0-based).

        Between two cells, new lines start the later cell, unless they are
        imports that extend the imports ending the earlier one.
        """
        if before == 0 or not self.line_cells:
            return 0
        if before >= len(self.line_cells):
            return self.line_cells[-1][0]
        previous, following = self.line_cells[before - 1][0], self.line_cells[before][0]
        if previous == following:
            return previous
        lines = self.text.splitlines()
        first = next((line.strip() for line in inserted if line.strip()), "")
        extends_imports = first.startswith(_IMPORT_STARTS) and lines[before - 1].startswith(_IMPORT_STARTS)
        return previous if extends_imports else following

    def _where(self, index: int) -> str:
        cell_number, line = self.locate(index + 1)
        return f"{self.path}:cell {cell_number}:{line}: "

    def _dump(self, document) -> bytes:
        original = self.data.decode("utf-8-sig")
        bom = self.data.startswith(b"\xef\xbb\xbf")
        layout = detect_layout(original, json.loads(original))
        if layout is None:
            raise NotebookError(
                f"{self.path}: its JSON layout is not one json.dumps writes (indent, spacing or escapes), "
                "so the fix cannot be written without reformatting the whole file; left untouched. "
                "Save it once from Jupyter (or `jupyter nbconvert --to notebook --inplace`) and run again"
            )
        return (b"\xef\xbb\xbf" if bom else b"") + layout.dumps(document).encode("utf-8")


def detect_layout(text: str, document) -> Layout | None:
    """The :class:`Layout` that writes ``document`` exactly as ``text``, or None."""
    newline = "\r\n" if "\r\n" in text else "\n"
    final = text.endswith(newline)
    second = text.split(newline, 2)[1] if text.count(newline) >= 1 else ""
    width = len(second) - len(second.lstrip(" "))
    indents = [width] if width else []
    indents += [i for i in (1, 2, 4) if i not in indents] + [None]
    for indent in indents:
        for separators in ((None, (",", ":")) if indent is None else (None,)):
            for ensure_ascii in (False, True):
                layout = Layout(indent, ensure_ascii, newline, final, separators)
                if layout.dumps(document) == text:
                    return layout
    return None


def read_notebook(path: str, data: bytes) -> Notebook:
    """Parse a notebook's bytes; raises :class:`NotebookError` naming what is wrong."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookError(f"notebook is not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start}); "
                            "notebooks are UTF-8 JSON, save it again from Jupyter") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"notebook is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno}); "
                            "open it in Jupyter to repair it", error.lineno, error.colno - 1) from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        version = document.get("nbformat") if isinstance(document, dict) else None
        hint = (f"nbformat {version} notebooks are not read; convert it with "
                "`jupyter nbconvert --to notebook --nbformat 4`" if isinstance(version, int) and version < 4
                else "a notebook is a JSON object with a \"cells\" list")
        raise NotebookError(f"not a Jupyter notebook (nbformat 4): no \"cells\" list; {hint}")
    if not _is_python(document):
        return Notebook(path, data, document, [])
    cells = []
    for index, cell in enumerate(document["cells"]):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {index + 1} is not a JSON object; open the notebook in Jupyter to repair it",
                                cell=index + 1)
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            joined, is_list = "".join(source), True
        elif isinstance(source, str):
            joined, is_list = source, False
        else:
            raise NotebookError(f"cell {index + 1}: \"source\" must be a string or a list of strings",
                                cell=index + 1)
        lines = tuple(joined.splitlines(keepends=True))
        cells.append(CodeCell(index, index + 1, lines, joined.endswith("\n"), is_list, magic_lines(lines)))
    return Notebook(path, data, document, cells)


def from_cells(path: str, sources: list[str]) -> Notebook:
    """A :class:`Notebook` of code cells given as text (an editor's notebook
    document, whose cells arrive one by one): cell ``i`` of ``sources`` is cell
    number ``i + 1``; :meth:`Notebook.cell_sources` then gives the new text of
    each cell an edit of :attr:`Notebook.text` changes."""
    return read_notebook(path, cells_json((source, True) for source in sources).encode("utf-8"))


def cells_json(cells) -> str:
    """The JSON of a notebook of ``(source, is code)`` cells (markdown when not code),
    as jaxmem reads a notebook whose cells arrive as separate texts."""
    return json.dumps({"cells": [{"cell_type": "code" if code else "markdown", "source": source}
                                 for source, code in cells], "nbformat": 4})


def _is_python(document: dict) -> bool:
    """Whether the notebook's kernel runs Python (a notebook that does not say is taken as Python)."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for key in ("language_info", "kernelspec"):
        info = metadata.get(key)
        if isinstance(info, dict):
            name = info.get("name" if key == "language_info" else "language")
            if isinstance(name, str) and name:
                return name.lower() == "python"
    return True


def magic_lines(lines) -> dict[int, tuple[str, str]]:
    """The lines of one cell that are IPython syntax: ``index -> (original, placeholder)``."""
    replaced: dict[int, tuple[str, str]] = {}
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(maxsplit=1)[0] if lines[first].strip() != "%%" else ""
        replaced[first] = (lines[first], _placeholder(lines[first]))
        if name not in PYTHON_CELL_MAGICS:
            for i in range(first + 1, len(lines)):
                replaced[i] = (lines[i], _ending(lines[i]))
            return replaced
        start = first + 1
    else:
        start = 0
    scanner = _LineState()
    continued_magic = False
    for i in range(start, len(lines)):
        line = lines[i]
        if continued_magic or (scanner.at_statement_start() and _is_magic(line)):
            replaced[i] = (line, _placeholder(line))
            continued_magic = line.rstrip("\r\n").endswith("\\")
            continue
        scanner.feed(line)
    return replaced


def _is_magic(line: str) -> bool:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return False
    if stripped[0] in "%!" and not stripped.startswith("!="):
        return True
    if stripped[0] == "?" or (stripped.endswith("?") and "#" not in stripped):
        return True
    return _MAGIC_ASSIGNMENT.match(stripped) is not None


def _placeholder(line: str) -> str:
    """One line of Python standing in for a magic line: a call reading every name on it."""
    indent = line[: len(line) - len(line.lstrip())]
    stripped = line.strip()
    targets = ""
    assignment = _MAGIC_ASSIGNMENT.match(stripped)
    if assignment is not None:
        targets = assignment.group("targets") + " = "
        stripped = assignment.group("magic")
    names = dict.fromkeys(n for n in _IDENTIFIER.findall(stripped)
                          if n.isidentifier() and not keyword.iskeyword(n) and n != MAGIC_CALL)
    return f"{indent}{targets}{MAGIC_CALL}({', '.join(names)})" + _ending(line)


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


class _LineState:
    """Whether the next line starts a statement: not inside brackets, a
    triple-quoted string or a backslash continuation (a ``%`` there is modulo)."""

    def __init__(self):
        self.depth = 0
        self.quote: str | None = None  # the open triple quote
        self.continued = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        text = line.rstrip("\r\n")
        i, n = 0, len(text)
        comment = False
        while i < n:
            if self.quote is not None:
                end = text.find(self.quote, i)
                if end == -1:
                    i = n
                    break
                i, self.quote = end + 3, None
                continue
            char = text[i]
            if char == "#":
                comment = True
                break
            if char in "\"'":
                if text.startswith(char * 3, i):
                    self.quote = char * 3
                    i += 3
                    continue
                i += 1
                while i < n and text[i] != char:
                    i += 2 if text[i] == "\\" else 1
            elif char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            i += 1
        self.continued = self.quote is None and not comment and text.endswith("\\")


def in_cells(finding, notebooks: dict):
    """``finding`` (a :class:`jaxmem.findings.Finding` on joined code) with its lines
    counted in cells, for every notebook among ``notebooks`` (path -> :class:`Notebook`)
    it points into.  ``finding.fix`` keeps the joined line that ``jaxmem-fix`` edits."""
    changes = {}
    notebook = notebooks.get(finding.path)
    if notebook is not None and finding.cell is None:
        cell, line = notebook.locate(finding.span.line)
        end_cell, end_line = notebook.locate(finding.span.end_line)
        if end_cell != cell:  # a range ending in another cell ends with its first line
            end_line, end_col = line, finding.span.col
        else:
            end_col = finding.span.end_col
        changes.update(cell=cell, span=Span(line, finding.span.col, end_line, end_col),
                       message=message_in_cells(finding.message, notebook))
    definition = notebooks.get(finding.definition_path or finding.path)
    if definition is not None and finding.definition_line is not None:
        changes["definition_cell"], changes["definition_line"] = definition.locate(finding.definition_line)
    if any(e.path in notebooks and e.cell is None for e in finding.evidence):
        changes["evidence"] = tuple(_evidence_in_cells(e, notebooks) for e in finding.evidence)
    return dataclasses.replace(finding, **changes) if changes else finding


def _evidence_in_cells(evidence, notebooks: dict):
    notebook = notebooks.get(evidence.path)
    if notebook is None or evidence.cell is not None:
        return evidence
    cell, line = notebook.locate(evidence.line)
    return dataclasses.replace(evidence, cell=cell, line=line,
                               message=message_in_cells(evidence.message, notebook))


def refusal_in_cells(refusal, notebooks: dict):
    """A :class:`jaxmem.findings.Refusal` with its line counted in its notebook cell."""
    notebook = notebooks.get(refusal.path)
    if notebook is None or refusal.cell is not None:
        return refusal
    cell, line = notebook.locate(refusal.line)
    return dataclasses.replace(refusal, cell=cell, line=line, reason=message_in_cells(refusal.reason, notebook))


# ``(line 12)``, ``at line 12``, ``read again at line 12``: lines of the joined code.
_LINE_MENTION = re.compile(r"\bline (\d+)\b")


def message_in_cells(message: str, notebook: Notebook) -> str:
    """``message`` (about ``notebook``) with its ``path:LINE`` and ``line LINE``
    mentions of joined code counted in cells."""
    if notebook.path in message:
        def at(match):
            cell, line = notebook.locate(int(match.group(1)))
            return f"{notebook.path}:cell {cell}:{line}" if cell is not None else match.group(0)

        message = re.sub(re.escape(notebook.path) + r":(\d+)", at, message)

    def mention(match):
        cell, line = notebook.locate(int(match.group(1)))
        return f"cell {cell}, line {line}" if cell is not None else match.group(0)

    return _LINE_MENTION.sub(mention, message)

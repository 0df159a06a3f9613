"""``jaxmem server``: the Language Server Protocol over stdio, with pygls.

Diagnostics: a document is checked when it is opened or saved, and after
a short pause in typing (its unsaved text replaces the file, see
:func:`jaxmem.server.analysis.analyse_document`); a save checks the other
open documents of its project again, since a call in one file decides the
advice in another, and a project file that is not open shows what the open
documents' calls find in it (``step`` of ``lib.py``, "called from train.py,
line 8").  Code actions: each JXM001 that ``jaxmem-fix`` would apply is a
quick fix with the edit ``jaxmem-fix`` would make, and ``source.fixAll.jaxmem``
applies them all.  The initialization option ``unsafeFixes: true`` offers
the medium-confidence ones too (``jaxmem-fix --unsafe-fixes``), titled as
unsafe.  A notebook synced as a notebook document is checked as one
``.ipynb`` (its cells joined, see :mod:`jaxmem.notebooks`); its diagnostics
and edits land on the cells.  Errors go to the client's log
(``window/logMessage``); the server keeps running.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

import jaxmem
from jaxmem.findings import Confidence, Finding, Severity
from jaxmem.notebooks import cells_json
from jaxmem.server.analysis import DocumentAnalysis, DocumentFix, analyse_document, fix_document, fixable
from jaxmem.server.text import UTF16, LineIndex, text_edits

SOURCE = "jaxmem"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.jaxmem"
# Typing pauses shorter than this do not start an analysis.
CHANGE_DELAY_S = 0.4
# How long a code action request waits for the check of the current text.
ACTION_WAIT_S = 10.0
SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
OPTIONS = {"unsafeFixes": "unsafe_fixes", "checkOnChange": "check_on_change"}
# Notebooks (VS Code's Jupyter, any notebook type) with their Python cells.
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        cells=[types.NotebookCellLanguage(language="python")], notebook="*")],
    save=True)


@dataclass(frozen=True)
class _Current:
    """What a check of an open document reads: its text and version; a notebook's
    text is its cells as notebook JSON, ``cells`` their (uri, version, is code) in order."""

    text: str
    version: int | None
    cells: tuple = ()
    notebook: bool = False


@dataclass(frozen=True)
class Published:
    """The analysis behind a document's diagnostics, for its code actions."""

    analysis: DocumentAnalysis
    version: int | None
    diagnostics: tuple  # (finding, diagnostic) pairs
    cells: tuple = ()  # a notebook's cells, as (uri, version, is code) in order: finding.cell counts them

    def uri_of(self, finding: Finding, uri: str) -> str:
        """The document ``finding`` is shown in: its cell's, in a notebook, else ``uri``."""
        return _shown_in(self.cells, finding, uri)


def _shown_in(cells: tuple, located, uri: str) -> str:
    """The cell uri a finding or evidence (``located.cell``) is shown in, else ``uri``."""
    return cells[located.cell - 1][0] if cells and located.cell else uri


class JaxmemServer(LanguageServer):
    """The server's state: options, the last analysis of each document, pending checks."""

    def __init__(self):
        super().__init__(SOURCE, jaxmem.__version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.unsafe_fixes = False
        self.check_on_change = True
        self.published: dict[str, Published] = {}
        # Diagnostics of project files that are not open, from the checks of the open
        # documents that call them: file uri -> {open document uri -> diagnostics}.
        self.called: dict[str, dict[str, list[types.Diagnostic]]] = {}
        self.pending: dict[str, asyncio.Task] = {}
        # One analysis at a time: each one changes the working directory.
        self.analyser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxmem-analysis")
        self.shut_down = False

    @property
    def encoding(self) -> str:
        """The position encoding agreed with the client (UTF-16 unless it offered another)."""
        encoding = self.workspace.position_encoding or UTF16
        return getattr(encoding, "value", encoding)

    def log(self, kind: types.MessageType, message: str) -> None:
        """Say ``message`` in the client's log."""
        self.window_log_message(types.LogMessageParams(type=kind, message=f"jaxmem: {message}"))

    def internal_error(self, doing: str, error: BaseException) -> None:
        """Log a bug in jaxmem with its traceback; the server keeps serving."""
        trace = "".join(traceback.format_exception(error)).strip()
        self.log(types.MessageType.Error,
                 f"internal error {doing}, please report it to the jaxmem developers:\n{trace}")

    # -- diagnostics ---------------------------------------------------------

    def document_key(self, uri: str) -> str:
        """The uri analyses are kept under: a cell's notebook, else ``uri`` itself."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        return notebook.uri if notebook is not None else uri

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        """Check ``uri`` (a cell: its notebook) after ``delay`` seconds, replacing a check already waiting."""
        uri = self.document_key(uri)
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._check(uri, delay))

    async def _check(self, uri: str, delay: float) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
            await self._check_now(uri)
        except Exception as error:  # a bug in jaxmem: say so, keep serving
            self.internal_error(f"while checking {uri}", error)
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                del self.pending[uri]

    def text_document(self, uri: str):
        """The open text document ``uri`` (a cell's too), or None; the workspace keys them unquoted."""
        return self.workspace.text_documents.get(unquote(uri))

    def _current(self, uri: str) -> _Current | None:
        """The text to check for the open document or notebook ``uri``; None once closed."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            document = self.text_document(uri)
            return None if document is None else _Current(document.source, document.version)
        cells, sources = [], []
        for cell in notebook.cells:
            document = self.text_document(cell.document)
            code = cell.kind == types.NotebookCellKind.Code
            cells.append((cell.document, document.version if document else None, code))
            sources.append((document.source if document else "", code))
        return _Current(cells_json(sources), notebook.version, tuple(cells), notebook=True)

    async def _check_now(self, uri: str) -> None:
        from jaxmem.config import ConfigError

        current = self._current(uri)
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if current is None or path is None:
            return  # closed meanwhile, or not a file (an untitled buffer)
        text, version, cells = current.text, current.version, current.cells
        loop = asyncio.get_running_loop()
        try:
            analysis = await loop.run_in_executor(self.analyser, analyse_document, path, text)
        except ConfigError as error:
            self.log(types.MessageType.Error, f"{path}: not checked: {error}")
            return
        except Exception as error:  # a bug in jaxmem: say so, keep serving
            self.internal_error(f"while checking {path}", error)
            return
        if self._current(uri) != current:
            return  # the text changed meanwhile: its own check is on its way
        if analysis.skipped and uri not in self.published:
            self.log(types.MessageType.Info, f"{path}: not checked: {analysis.skipped}")
        self._publish_called(uri, analysis, cells)
        if not current.notebook:
            index = LineIndex(text, self.encoding)
            pairs = tuple((finding, self.diagnostic(finding, index, analysis)) for finding in analysis.findings)
            self.published[uri] = Published(analysis, version, pairs)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=version, diagnostics=[diagnostic for _, diagnostic in pairs]))
            return
        published = self._publish_cells(uri, analysis, version, cells)
        before = self.published.get(uri)
        self.published[uri] = published
        for gone in {c[0] for c in (before.cells if before else ()) if c[2]} - {c[0] for c in cells if c[2]}:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=gone, diagnostics=[]))

    def _publish_cells(self, uri: str, analysis: DocumentAnalysis, version: int | None, cells: tuple) -> Published:
        """Publish a notebook's diagnostics on its code cells (every cell: none clears old ones)."""
        code_cells = [(u, version) for u, version, code in cells if code]
        texts = {u: self.text_document(u).source for u, _ in code_cells}
        pairs, per_cell = [], {u: [] for u, _ in code_cells}
        for finding in analysis.findings:
            cell_uri = _shown_in(cells, finding, uri)
            if cell_uri not in per_cell:  # a JXM900 on the whole notebook: shown on its first cell
                if not code_cells:
                    continue
                cell_uri = code_cells[0][0]
            diagnostic = self.diagnostic(finding, LineIndex(texts[cell_uri], self.encoding), analysis, cells)
            pairs.append((finding, diagnostic))
            per_cell[cell_uri].append(diagnostic)
        for cell_uri, cell_version in code_cells:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=cell_uri, version=cell_version, diagnostics=per_cell[cell_uri]))
        return Published(analysis, version, tuple(pairs), cells)

    def _publish_called(self, uri: str, analysis: DocumentAnalysis, cells: tuple) -> None:
        """Show the findings ``uri``'s calls give rise to in project files that are not open
        (``step`` of ``lib.py`` called from here): on those files, each naming the call."""
        by_file: dict[str, list[types.Diagnostic]] = {}
        for finding in analysis.called:
            index = LineIndex(analysis.called_texts[finding.path], self.encoding)
            diagnostic = self.diagnostic(finding, index, analysis, cells)
            caller = next((e for e in finding.evidence if e.path == analysis.name and e.line), None)
            if caller is not None:
                where = f"cell {caller.cell}, line {caller.line}" if caller.cell else f"line {caller.line}"
                diagnostic.message += f" (called from {analysis.name}, {where})"
            by_file.setdefault(from_fs_path(str(analysis.absolute(finding.path))), []).append(diagnostic)
        for target in {t for t, sources in self.called.items() if uri in sources} | set(by_file):
            sources = self.called.setdefault(target, {})
            if target in by_file:
                sources[uri] = by_file[target]
            else:
                sources.pop(uri, None)
            self._show_called(target)

    def _show_called(self, target: str) -> None:
        """Publish what the open documents' checks found in ``target``, unless it is open:
        then its own check shows it."""
        if self._current(target) is not None:
            return
        seen, diagnostics = set(), []
        for found in self.called.get(target, {}).values():
            for diagnostic in found:
                key = (diagnostic.code, diagnostic.range.start.line, diagnostic.range.start.character,
                       diagnostic.message)
                if key not in seen:
                    seen.add(key)
                    diagnostics.append(diagnostic)
        if not self.called.get(target):
            self.called.pop(target, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=target, diagnostics=diagnostics))

    def diagnostic(self, finding: Finding, index: LineIndex, analysis: DocumentAnalysis,
                   cells: tuple = ()) -> types.Diagnostic:
        """``finding`` as an LSP diagnostic on the analysed text (a notebook's ``cells``: on its cell)."""
        span = finding.span

        def where(evidence) -> str:
            if cells and evidence.cell is not None and evidence.path == analysis.name:
                return _shown_in(cells, evidence, "")
            return from_fs_path(str(analysis.absolute(evidence.path)))

        related = [
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=where(evidence), range=_line_range(evidence.line)),
                message=evidence.message)
            for evidence in finding.evidence
            if evidence.path and evidence.line
        ]
        return types.Diagnostic(
            range=_range(index.position(span.line, span.col), index.position(span.end_line, span.end_col)),
            message=finding.message,
            severity=SEVERITIES.get(finding.severity, types.DiagnosticSeverity.Warning),
            code=finding.code,
            source=SOURCE,
            related_information=related or None,
            data={"confidence": finding.confidence.value, "fixable": fixable(finding, self.unsafe_fixes)},
        )

    def forget(self, uri: str, cell_uris: tuple = ()) -> None:
        """Stop checking a closed document (or notebook, with ``cell_uris``) and clear its diagnostics."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.published.pop(uri, None)
        for cleared in cell_uris or (uri,):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cleared, diagnostics=[]))
        for target in [t for t, sources in self.called.items() if uri in sources]:
            del self.called[target][uri]  # what its calls gave rise to elsewhere goes with it
            self._show_called(target)
        if self.called.get(uri):
            self._show_called(uri)  # closed: what the open documents' calls find in it is shown again

    # -- code actions --------------------------------------------------------

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        """Quick fixes for the fixable JXM001 findings in ``params.range``, and the fix-all action."""
        uri = params.text_document.uri
        key = self.document_key(uri)  # a cell's actions come from its notebook's analysis
        waiting = self.pending.get(key)
        if waiting is not None:  # e.g. fix-all on save, right after typing
            await asyncio.wait({waiting}, timeout=ACTION_WAIT_S)
        published = self.published.get(key)
        current = self._current(key)
        if published is None or current is None or (current.version, current.cells) != (published.version,
                                                                                         published.cells):
            return None  # no analysis of this text yet: the fixes would name other lines
        wanted = params.context.only
        fixes = [(f, d) for f, d in published.diagnostics if fixable(f, self.unsafe_fixes)]
        quick = [(f, d) for f, d in fixes if published.uri_of(f, key) == uri and _overlaps(d.range, params.range)] \
            if _asks(wanted, "quickfix") else []
        fix_all = fixes if _asks(wanted, FIX_ALL) and (len(fixes) > 1 or wanted) else []
        actions = []
        for finding, diagnostic in quick:
            fix = await self._fix(published.analysis, [finding])
            if fix.after != fix.before:
                made = "; ".join(f"donate {', '.join(e.parameters)} in `{e.function}`" for e in fix.edits)
                title = f"jaxmem: {made or 'add the donation'}"
                if finding.confidence is not Confidence.HIGH:
                    title += f" (unsafe: {finding.confidence.value} confidence)"
                actions.append(types.CodeAction(
                    title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                    edit=self._workspace_edit(key, published, fix),
                    is_preferred=finding.confidence is Confidence.HIGH))
        if fix_all:
            fix = await self._fix(published.analysis, [f for f, _ in fix_all])
            if fix.after != fix.before:
                title = "jaxmem: add all donations" + (" (including unsafe ones)" if self.unsafe_fixes else "")
                actions.append(types.CodeAction(
                    title=title, kind=FIX_ALL, diagnostics=[d for _, d in fix_all],
                    edit=self._workspace_edit(key, published, fix)))
        return actions or None

    async def _fix(self, analysis: DocumentAnalysis, findings: list[Finding]) -> DocumentFix:
        """:func:`fix_document` off the event loop; the log says why a fix was left out."""
        fix = await asyncio.get_running_loop().run_in_executor(None, fix_document, analysis, findings)
        for line in [*(s.describe() for s in fix.skipped), *([fix.error] if fix.error else [])]:
            self.log(types.MessageType.Info, f"{analysis.name}:{line}")
        return fix

    def _workspace_edit(self, uri: str, published: Published, fix: DocumentFix) -> types.WorkspaceEdit:
        """The edit turning the document's analysed text into the fixed text (a notebook's: each changed cell)."""
        if published.cells:
            changed = [(*published.cells[number - 1][:2], before, after) for number, before, after in fix.cells]
        else:
            changed = [(uri, published.version, fix.before, fix.after)]
        per_document = [(document, version, [types.TextEdit(range=_range(e.start, e.end), new_text=e.new_text)
                                             for e in text_edits(before, after, self.encoding)])
                        for document, version, before, after in changed]
        capabilities = self.client_capabilities.workspace
        if capabilities and capabilities.workspace_edit and capabilities.workspace_edit.document_changes:
            # The client applies it only to the text it was computed on.
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document, version=version),
                edits=edits) for document, version, edits in per_document])
        return types.WorkspaceEdit(changes={document: edits for document, _, edits in per_document})


def _range(start, end) -> types.Range:
    return types.Range(start=types.Position(line=start.line, character=start.character),
                       end=types.Position(line=end.line, character=end.character))


def _line_range(line: int) -> types.Range:
    position = types.Position(line=max(line - 1, 0), character=0)
    return types.Range(start=position, end=position)


def _overlaps(a: types.Range, b: types.Range) -> bool:
    """Whether ranges ``a`` and ``b`` share a position (touching counts, as for a cursor)."""
    def key(position):
        return position.line, position.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _asks(only, kind: str) -> bool:
    """Whether a request limited to the kinds ``only`` (None: any) wants actions of ``kind``."""
    return not only or any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


def _preload() -> None:
    import jaxmem.codemod.edits  # noqa: F401
    import jaxmem.lint.engine  # noqa: F401


def build_server() -> JaxmemServer:
    """The server with its handlers registered."""
    server = JaxmemServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: JaxmemServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if options is None:
            return
        if not isinstance(options, dict):
            ls.log(types.MessageType.Warning, "initializationOptions must be an object; ignored")
            return
        for key, value in options.items():
            if key not in OPTIONS:
                ls.log(types.MessageType.Warning,
                       f"unknown initialization option {key!r} ignored; known: {', '.join(OPTIONS)}")
            elif not isinstance(value, bool):
                ls.log(types.MessageType.Warning, f"initialization option {key!r} must be true or false; ignored")
            else:
                setattr(ls, OPTIONS[key], value)

    @server.feature(types.INITIALIZED)
    def initialized(ls: JaxmemServer, params: types.InitializedParams) -> None:
        # The analysis and the codemod import in about a second: do it before the first file.
        ls.analyser.submit(_preload)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: JaxmemServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: JaxmemServer, params: types.DidChangeTextDocumentParams) -> None:
        if ls.check_on_change:
            ls.schedule(params.text_document.uri, CHANGE_DELAY_S)

    def saved_file(ls: JaxmemServer, saved: str) -> None:
        ls.schedule(saved)
        root = ls.published[saved].analysis.root if saved in ls.published else None
        open_documents = {ls.document_key(uri) for uri in ls.workspace.text_documents}
        for uri in open_documents:
            other = ls.published.get(uri)
            # A saved file changes the advice only within its own project.
            if uri != saved and (root is None or other is None or other.analysis.root == root):
                ls.schedule(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: JaxmemServer, params: types.DidSaveTextDocumentParams) -> None:
        saved_file(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: JaxmemServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: JaxmemServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: JaxmemServer, params: types.DidChangeNotebookDocumentParams) -> None:
        if ls.check_on_change:
            ls.schedule(params.notebook_document.uri, CHANGE_DELAY_S)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: JaxmemServer, params: types.DidSaveNotebookDocumentParams) -> None:
        saved_file(ls, params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: JaxmemServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.forget(params.notebook_document.uri, tuple(cell.uri for cell in params.cell_text_documents))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
    async def code_action(ls: JaxmemServer, params: types.CodeActionParams):
        try:
            return await ls.code_actions(params)
        except Exception as error:  # a bug in jaxmem: no actions, a message, keep serving
            ls.internal_error("while computing code actions", error)
            return None

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: JaxmemServer, *args) -> None:
        ls.shut_down = True
        for waiting in ls.pending.values():
            waiting.cancel()
        ls.analyser.shutdown(wait=False, cancel_futures=True)

    return server


def serve() -> int:
    """Serve on stdin/stdout until the client says ``exit``; 0 after a ``shutdown``, else 1."""
    # The protocol owns stdout: anything else printed (by jaxmem, a library,
    # a child process) goes to stderr, which editors show as the server's log.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="jaxmem server: %(message)s")
    server = build_server()
    server.start_io(sys.stdin.buffer, protocol_out)
    return 0 if server.shut_down else 1

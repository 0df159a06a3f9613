"""A minimal LSP client for the tests: JSON-RPC with Content-Length framing over
the real ``jaxmem server`` process's stdin/stdout, every wait bounded."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TIMEOUT_S = 60  # per wait; the process is killed at the end in any case


class ServerDied(AssertionError):
    pass


class LspClient:
    """Starts ``jaxmem server`` in ``cwd`` and talks to it."""

    def __init__(self, cwd: Path):
        env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}
        self.process = subprocess.Popen(
            [str(BIN / "jaxmem"), "server"], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.inbox: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []
        self.stderr: list[bytes] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()

    # -- framing ---------------------------------------------------------------

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.inbox.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.inbox.put(json.loads(stream.read(length).decode("utf-8")))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _next(self, deadline: float) -> dict:
        try:
            message = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise AssertionError(f"no message from jaxmem server in {TIMEOUT_S} s; its stderr:\n"
                                 + b"".join(self.stderr).decode("utf-8", "replace")) from None
        return self._take(message)

    def _take(self, message: dict | None) -> dict:
        if message is None:
            raise ServerDied("jaxmem server closed its output; its stderr:\n"
                             + b"".join(self.stderr).decode("utf-8", "replace"))
        if "method" in message and "id" in message:  # a request from the server: accept it
            self.send({"id": message["id"], "result": None})
        elif "method" in message:
            self.notifications.append(message)
        return message

    # -- protocol --------------------------------------------------------------

    def request(self, method: str, params) -> dict:
        """Send a request; return its response (``result`` or ``error``)."""
        self.next_id += 1
        request_id = self.next_id
        self.send({"id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            message = self._next(deadline)
            if message.get("id") == request_id and "method" not in message:
                return message

    def notify(self, method: str, params) -> None:
        self.send({"method": method, "params": params})

    def wait_for(self, method: str, predicate=lambda params: True) -> dict:
        """The params of the first notification ``method`` (already received or next) passing ``predicate``."""
        deadline = time.monotonic() + TIMEOUT_S
        seen = 0
        while True:
            for message in self.notifications[seen:]:
                if message["method"] == method and predicate(message["params"]):
                    self.notifications.remove(message)
                    return message["params"]
            seen = len(self.notifications)
            self._next(deadline)

    def listen(self, seconds: float) -> None:
        """Take in what the server sends during ``seconds``."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                return
            self._take(message)

    def diagnostics(self, uri: str, version: int | None = None) -> list[dict]:
        """The next diagnostics published for ``uri`` (for ``version`` when given)."""
        params = self.wait_for("textDocument/publishDiagnostics",
                               lambda p: p["uri"] == uri and (version is None or p.get("version") == version))
        return params["diagnostics"]

    def initialize(self, root: Path, options=None, capabilities=None) -> dict:
        response = self.request("initialize", {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": capabilities if capabilities is not None else {
                "workspace": {"workspaceEdit": {"documentChanges": True}},
                "textDocument": {"publishDiagnostics": {"versionSupport": True}},
            },
            "initializationOptions": options,
        })
        self.notify("initialized", {})
        return response

    def open(self, path: Path, version: int = 1, text: str | None = None) -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": version,
            "text": path.read_text(encoding="utf-8") if text is None else text,
        }})
        return uri

    def open_notebook(self, path: Path, cells: list[tuple[str, str]], version: int = 1) -> list[str]:
        """Open ``path`` as an editor's notebook of ``(kind, source)`` cells (``"code"`` or
        ``"markdown"``), each its own text document, as VS Code sends them; the cells' uris."""
        uris = [f"vscode-notebook-cell:{path.as_posix()}#W{i}sZmlsZQ%3D%3D" for i in range(len(cells))]
        self.notify("notebookDocument/didOpen", {
            "notebookDocument": {"uri": path.as_uri(), "notebookType": "jupyter-notebook", "version": version,
                                 "cells": [{"kind": 2 if kind == "code" else 1, "document": uri}
                                           for uri, (kind, _) in zip(uris, cells)]},
            "cellTextDocuments": [{"uri": uri, "languageId": "python" if kind == "code" else "markdown",
                                   "version": 1, "text": text} for uri, (kind, text) in zip(uris, cells)],
        })
        return uris

    def close(self) -> int:
        """``shutdown`` then ``exit``; the server's exit status."""
        response = self.request("shutdown", None)
        assert "error" not in response, response
        self.notify("exit", None)
        return self.process.wait(timeout=TIMEOUT_S)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TIMEOUT_S)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass


def apply_edits(text: str, edits: list[dict]) -> str:
    """``text`` with LSP ``TextEdit``s applied (UTF-16 columns), as an editor applies them."""
    lines = text.splitlines(keepends=True) if "\x0c" not in text else None
    assert lines is not None, "keep form feeds out of these tests: splitlines() breaks on them"

    def offset(position: dict) -> int:
        line, character = position["line"], position["character"]
        if line >= len(lines):
            return len(text)
        units = lines[line].encode("utf-16-le")[: 2 * character]
        return sum(len(l) for l in lines[:line]) + len(units.decode("utf-16-le"))

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits),
                   reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


def utf16_column(line: str, characters: int) -> int:
    """The UTF-16 column of the character column ``characters`` of ``line``."""
    return len(line[:characters].encode("utf-16-le")) // 2

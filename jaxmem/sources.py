"""Read a source file's bytes into text the way Python itself would.

A Jupyter notebook (``.ipynb``) is read as the Python of its code cells
(:mod:`jaxmem.notebooks`); a notebook that is not valid JSON is a JXM900.

Only regular files are read, up to ``max-file-size`` bytes.  The encoding comes from the BOM or the PEP 263 cookie
(``tokenize.detect_encoding``); line endings are kept as they are (libcst
round-trips CRLF).  Nothing here raises for a bad file: an unreadable,
undecodable or binary file becomes a JXM900 finding naming the problem.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import sys
import tokenize
from dataclasses import dataclass

from jaxmem.findings import Confidence, Finding, Severity, Span
from jaxmem.notebooks import NotebookError, is_notebook, read_notebook
from jaxmem.settings import DEFAULT_MAX_FILE_SIZE

PARSE_ERROR_CODE = "JXM900"
STDIN = "-"
STDIN_DISPLAY_NAME = "<stdin>"


@dataclass(frozen=True)
class Source:
    """One file's text, or the reason there is none.

    ``digest`` is the sha256 of the raw bytes (the cache key); ``problem``
    is a JXM900 finding when the file could not be turned into text, and
    then ``text`` is ``None``.
    """

    path: str
    text: str | None
    digest: str
    problem: Finding | None = None
    data: bytes | None = None  # the bytes not yet decoded (``read_raw``)
    notebook: object = None  # a :class:`jaxmem.notebooks.Notebook`: ``text`` is its joined code


class UnreadableFile(Exception):
    """A file jaxmem will not or cannot read; the message says why and what to do."""


def read_regular_file(path: str, max_bytes: int = DEFAULT_MAX_FILE_SIZE) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``max_bytes``.

    A FIFO would block forever and a device (``/dev/zero``) never ends, so
    the file is opened without blocking and checked on the open descriptor
    (no race with a swap in between).  Raises :class:`UnreadableFile`.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise UnreadableFile(f"cannot read file: {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(
                f"not a regular file ({_kind(info.st_mode)}); jaxmem reads only regular files"
            )
        if info.st_size > max_bytes:
            raise UnreadableFile(_too_big(info.st_size, max_bytes))
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, max(max_bytes + 1 - total, 1))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # it grew while being read
                raise UnreadableFile(_too_big(total, max_bytes))
        return b"".join(chunks)
    except OSError as error:
        raise UnreadableFile(f"cannot read file: {error.strerror or error}") from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def _too_big(size: int, max_bytes: int) -> str:
    return (f"file is larger than max-file-size ({size:,} > {max_bytes:,} bytes) and was not read; "
            "raise max-file-size in [tool.jaxmem] to check it")


def read_source(path: str, *, stdin_filename: str | None = None, stdin=None,
                max_bytes: int = DEFAULT_MAX_FILE_SIZE) -> Source:
    """Read ``path`` (``-`` reads stdin, reported as ``stdin_filename``)."""
    return decode_raw(read_raw(path, stdin_filename=stdin_filename, stdin=stdin, max_bytes=max_bytes))


def read_raw(path: str, *, stdin_filename: str | None = None, stdin=None,
             max_bytes: int = DEFAULT_MAX_FILE_SIZE) -> Source:
    """:func:`read_source` without the decoding: ``data`` holds the bytes
    (``text`` is ``None``), or ``problem`` says why they could not be read."""
    if path == STDIN:
        stream = stdin if stdin is not None else sys.stdin.buffer
        data = stream.read()
        return Source(stdin_filename or STDIN_DISPLAY_NAME, None, digest(data), data=data)
    try:
        data = read_regular_file(path, max_bytes)
    except UnreadableFile as error:
        return _problem(path, b"", str(error), 1, 0)
    return Source(path, None, digest(data), data=data)


def decode_raw(raw: Source) -> Source:
    """The decoded :class:`Source` of what :func:`read_raw` read."""
    if raw.problem is not None:
        return raw
    return decode_source(raw.path, raw.data, raw.digest)


def decode_source(path: str, data: bytes, data_digest: str | None = None) -> Source:
    """Decode ``data`` (the contents of ``path``, whose digest is
    ``data_digest`` when known) into a :class:`Source`.  A notebook
    (``.ipynb``) becomes the Python of its code cells."""
    if is_notebook(path):
        return _notebook_source(path, data, data_digest or digest(data))
    if b"\0" in data:
        line, col = _position(data, data.index(b"\0"))
        return _problem(
            path, data,
            "file contains a NUL byte (binary or corrupt?); jaxmem only reads Python source",
            line, col,
        )
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "invalid or missing encoding declaration" in str(error.msg):
            # No cookie and the first lines are not UTF-8: say which byte.
            encoding = "utf-8"
        else:
            # An unknown codec in the cookie, or a BOM that contradicts it.
            return _problem(
                path, data, f"bad encoding declaration: {error.msg}", error.lineno or 1, 0
            )
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line, col = _position(data, error.start)
        return _problem(
            path, data,
            f"cannot decode byte 0x{data[error.start]:02x} as {encoding}; "
            "save the file as UTF-8 or declare its encoding (PEP 263, "
            "'# -*- coding: latin-1 -*-')",
            line, col,
        )
    except LookupError as error:
        return _problem(path, data, f"bad encoding declaration: {error}", 1, 0)
    return Source(path, text, data_digest or digest(data))


def _notebook_source(path: str, data: bytes, data_digest: str) -> Source:
    try:
        notebook = read_notebook(path, data)
    except NotebookError as error:
        finding = parse_error_finding(path, str(error), error.line, error.col, cell=error.cell)
        return Source(path, None, data_digest, finding)
    return Source(path, notebook.text, data_digest, notebook=notebook)


def digest(data: bytes) -> str:
    """The sha256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def parse_error_finding(path: str, message: str, line: int = 1, col: int = 0,
                        cell: int | None = None) -> Finding:
    """A JXM900 finding at ``line``/``col`` (1-based line, 0-based column; in ``cell`` of a notebook)."""
    return Finding(
        code=PARSE_ERROR_CODE,
        path=path,
        span=Span(line, col, line, col),
        message=message,
        severity=Severity.ERROR,
        confidence=Confidence.HIGH,
        cell=cell,
    )


def _problem(path: str, data: bytes, message: str, line: int, col: int) -> Source:
    return Source(path, None, digest(data), parse_error_finding(path, message, line, col))


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and 0-based byte column of ``offset`` in ``data``."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start


class SourceLines:
    """The source line of a finding, for ``--show-source``: ``lines(finding)``.

    Each file is read once; a notebook's line is the cell's own text
    (magics included).  None when the file cannot be read again (stdin).
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_FILE_SIZE):
        self.max_bytes = max_bytes
        self.sources: dict[str, Source | None] = {}

    def __call__(self, finding: Finding) -> str | None:
        if finding.path not in self.sources:
            raw = read_raw(finding.path, max_bytes=self.max_bytes) if os.path.isfile(finding.path) else None
            self.sources[finding.path] = decode_raw(raw) if raw is not None else None
        source = self.sources[finding.path]
        if source is None or source.text is None:
            return None
        if source.notebook is not None:
            return source.notebook.cell_line(finding.cell, finding.span.line) if finding.cell else None
        lines = source.text.splitlines()
        return lines[finding.span.line - 1] if 1 <= finding.span.line <= len(lines) else None

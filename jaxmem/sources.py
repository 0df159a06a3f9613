"""Read a source file's bytes into text the way Python itself would.

The encoding comes from the BOM or the PEP 263 cookie
(``tokenize.detect_encoding``); line endings are kept as they are (libcst
round-trips CRLF).  Nothing here raises for a bad file: an unreadable,
undecodable or binary file becomes a JXM900 finding naming the problem.
"""

from __future__ import annotations

import hashlib
import io
import sys
import tokenize
from dataclasses import dataclass

from jaxmem.findings import Confidence, Finding, Severity, Span

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


def read_source(path: str, *, stdin_filename: str | None = None, stdin=None) -> Source:
    """Read ``path`` (``-`` reads stdin, reported as ``stdin_filename``)."""
    if path == STDIN:
        stream = stdin if stdin is not None else sys.stdin.buffer
        return decode_source(stdin_filename or STDIN_DISPLAY_NAME, stream.read())
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        reason = error.strerror or str(error)
        return _problem(path, b"", f"cannot read file: {reason}", 1, 0)
    return decode_source(path, data)


def decode_source(path: str, data: bytes) -> Source:
    """Decode ``data`` (the contents of ``path``) into a :class:`Source`."""
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
    return Source(path, text, digest(data))


def digest(data: bytes) -> str:
    """The sha256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def parse_error_finding(path: str, message: str, line: int = 1, col: int = 0) -> Finding:
    """A JXM900 finding at ``line``/``col`` (1-based line, 0-based column)."""
    return Finding(
        code=PARSE_ERROR_CODE,
        path=path,
        span=Span(line, col, line, col),
        message=message,
        severity=Severity.ERROR,
        confidence=Confidence.HIGH,
    )


def _problem(path: str, data: bytes, message: str, line: int, col: int) -> Source:
    return Source(path, None, digest(data), parse_error_finding(path, message, line, col))


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and 0-based byte column of ``offset`` in ``data``."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start

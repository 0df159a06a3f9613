"""Read a source file into text and write it back exactly as it was encoded.

Bytes are decoded with the encoding Python itself would use (BOM or PEP 263
cookie) and without newline translation, so CRLF stays CRLF.  A write goes
to a temporary file in the same folder that then replaces the original
(``os.replace`` is atomic on one file system), with the original's
permission bits: an interrupted run never leaves half a file behind.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass


class SourceError(Exception):
    """The file cannot be read or decoded; the message names it and says why."""


@dataclass(frozen=True)
class SourceFile:
    """A file's text and how to turn text back into its bytes.

    ``text`` has no BOM; ``encoding`` is Python's codec name for the file
    (``utf-8-sig`` when it starts with a BOM, which encoding adds back).
    """

    path: str
    text: str
    encoding: str
    data: bytes

    def encode(self, text: str) -> bytes:
        """``text`` in the file's encoding (with its BOM when it had one)."""
        return text.encode(self.encoding)


def decode(path: str, data: bytes) -> SourceFile:
    """Decode ``data`` read from ``path``; raises :class:`SourceError`."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError) as error:
        raise SourceError(f"{path}: bad encoding declaration ({error}); fix the coding cookie") from None
    except UnicodeDecodeError as error:
        raise SourceError(
            f"{path}: cannot decode byte 0x{data[error.start]:02x} at offset {error.start} as {encoding}; "
            "save the file as UTF-8 or declare its encoding (PEP 263)"
        ) from None
    return SourceFile(path, text, encoding, data)


def read(path: str) -> SourceFile:
    """Read and decode ``path``; raises :class:`SourceError`."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise SourceError(f"{path}: cannot read file: {error.strerror or error}") from None
    return decode(path, data)


def write_atomic(path: str, data: bytes) -> None:
    """Replace the file at ``path`` (through symlinks) with ``data``, keeping its mode."""
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = None
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".jaxmem-fix", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise

"""Read a source file into text and write it back exactly as it was encoded.

Bytes are decoded with the encoding Python itself would use (BOM or PEP 263
cookie) and without newline translation, so CRLF stays CRLF.  A write goes
to a temporary file in the same folder that then replaces the original
(``os.replace`` is atomic on one file system), with the original's
owner, group and permission bits: an interrupted run never leaves half a
file behind.  A hard-linked file, or one whose owner a non-root user cannot
give a new file, is rewritten in place instead, so links and ownership stay.
A notebook is read as the code of its cells and written back into them.
"""

from __future__ import annotations

import fcntl
import io
import os
import stat
import tempfile
import tokenize
from contextlib import contextmanager
from dataclasses import dataclass

from jaxmem.notebooks import Notebook, NotebookError, is_notebook, read_notebook
from jaxmem.settings import DEFAULT_MAX_FILE_SIZE
from jaxmem.sources import UnreadableFile, read_regular_file


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


    def where(self, line: int) -> str:
        """``path:line``: how messages name a line of :attr:`text`."""
        return f"{self.path}:{line}"


@dataclass(frozen=True)
class NotebookFile:
    """A notebook as :class:`SourceFile` offers it: ``text`` is the Python of its
    code cells (:mod:`jaxmem.notebooks`), and :meth:`encode` writes edited code
    back into the cells it came from, in the notebook's own JSON layout."""

    path: str
    text: str
    data: bytes
    notebook: Notebook

    def encode(self, text: str) -> bytes:
        """The notebook's bytes with its code replaced by ``text``; raises :class:`SourceError`
        when that cannot be done without touching a magic or reformatting the file."""
        try:
            return self.notebook.updated(text)
        except NotebookError as error:
            raise SourceError(str(error)) from None

    def where(self, line: int) -> str:
        """``path:cell N:line`` for a line of :attr:`text`."""
        cell, in_cell = self.notebook.locate(line)
        return f"{self.path}:cell {cell}:{in_cell}" if cell is not None else f"{self.path}:{line}"


def decode(path: str, data: bytes) -> SourceFile | NotebookFile:
    """Decode ``data`` read from ``path``; raises :class:`SourceError`."""
    if is_notebook(path):
        try:
            notebook = read_notebook(path, data)
        except NotebookError as error:
            raise SourceError(f"{path}: {error}") from None
        return NotebookFile(path, notebook.text, data, notebook)
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


def read(path: str, max_bytes: int = DEFAULT_MAX_FILE_SIZE) -> SourceFile | NotebookFile:
    """Read and decode the regular file ``path``; raises :class:`SourceError`."""
    try:
        data = read_regular_file(path, max_bytes)
    except UnreadableFile as error:
        raise SourceError(f"{path}: {error}") from None
    return decode(path, data)


class StaleFile(SourceError):
    """The file is no longer what was analysed; the message says what to do."""


class NotWritable(SourceError):
    """The file may not be rewritten (read-only, owner not kept); the message says why."""


def refuse_unwritable(path: str) -> None:
    """Raise :class:`NotWritable` when ``path`` is read-only.

    Root can write anything, so the mode bits decide: a file no one may
    write (``chmod 444``) was made read-only on purpose.
    """
    info = os.stat(path)
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o222 == 0 or not os.access(path, os.W_OK):
        raise NotWritable(
            f"{path}: read-only (mode {mode:04o}); left untouched, make it writable "
            "(chmod u+w) if jaxmem-fix should edit it"
        )


def replace_if_unchanged(path: str, expected: bytes, data: bytes) -> None:
    """Write ``data`` to ``path`` if it still holds exactly ``expected``.

    The check and the write happen under a lock on the file's folder, so
    two ``jaxmem-fix`` runs cannot interleave; an editor that saves in
    between makes the check fail (:class:`StaleFile`) and nothing is
    written.  The file keeps its owner, group, mode and hard links: a new
    file replaces it atomically (``os.replace``, never half written) when
    it has one link and its owner can be kept, else it is rewritten in
    place.
    """
    target = os.path.realpath(path)
    with _folder_lock(os.path.dirname(target) or "."):
        try:
            current = read_regular_file(target, max(len(expected), len(data)) + 1)
        except UnreadableFile as error:
            raise SourceError(f"{path}: {error}") from None
        if current != expected:
            raise StaleFile(
                f"{path}: changed since it was analysed (an editor or another jaxmem-fix run?); "
                "left untouched, run jaxmem-fix again"
            )
        refuse_unwritable(target)
        info = os.stat(target)
        if info.st_nlink > 1 or not _replace_keeping_owner(target, data, info):
            _rewrite_in_place(target, data)


def _replace_keeping_owner(target: str, data: bytes, info: os.stat_result | None) -> bool:
    """Write ``data`` to a new file that replaces ``target``; False (nothing done) when
    the new file cannot get ``target``'s owner and group."""
    folder = os.path.dirname(target) or "."
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".jaxmem-fix", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            if info is not None:
                try:
                    os.fchown(out.fileno(), info.st_uid, info.st_gid)
                except PermissionError:  # not root: only the file itself keeps its owner
                    os.unlink(temporary)
                    return False
                os.fchmod(out.fileno(), stat.S_IMODE(info.st_mode))
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return True


def _rewrite_in_place(target: str, data: bytes) -> None:
    """Overwrite ``target``'s contents, keeping the file itself (owner, links, mode)."""
    fd = os.open(target, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _folder_lock(folder: str):
    """An exclusive advisory lock on ``folder``, held by one jaxmem-fix at a time."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock

"""Per-file cache of the engine's facts, under ``.jaxmem_cache/`` at the project root.

An entry is keyed by the file's path and content (sha256), the jaxmem
version, a stamp of the analysis code itself (so an editable install never
serves facts computed by older code) and ``Settings.fingerprint()``.
Entries are JSON written atomically (:mod:`jaxmem.factcodec`: reading one
back can build only jaxmem's own plain data, never run code); an entry that
is unreadable, not a regular file, not JSON, of another format or key, or
not a file's facts is a miss.  A cache folder that cannot be written
silently disables caching.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import jaxmem
from jaxmem.factcodec import DecodeError, decode, encode
from jaxmem.settings import Settings
from jaxmem.sources import UnreadableFile, read_regular_file

CACHE_DIR_NAME = ".jaxmem_cache"
ENTRY_FORMAT = "jaxmem-facts-1"
SKIPPED_FORMAT = "jaxmem-skipped-1"
MAX_ENTRY_BYTES = 256 * 1024 * 1024
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by jaxmem.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


class FactsCache:
    """Facts of files already analysed with the same code and settings."""

    def __init__(self, root: str | os.PathLike, settings: Settings):
        self.folder = Path(root) / CACHE_DIR_NAME / "facts"
        self.namespace = "\0".join(
            (jaxmem.__version__, analysis_code_stamp(), settings.fingerprint())
        )
        self.writable = True

    def key(self, path: str, content_digest: str) -> str:
        """The entry name for ``path`` with contents hashing to ``content_digest``."""
        material = "\0".join((self.namespace, os.path.abspath(path), content_digest))
        return hashlib.sha256(material.encode("utf-8", "surrogateescape")).hexdigest()

    def get(self, path: str, content_digest: str):
        """The cached facts, or ``None`` when there is no usable entry."""
        key = self.key(path, content_digest)
        try:
            data = read_regular_file(str(self.folder / key), MAX_ENTRY_BYTES)
            entry = json.loads(data)
            if not (isinstance(entry, dict) and entry.get("format") == ENTRY_FORMAT
                    and entry.get("key") == key):
                return None
            facts = decode(entry.get("facts"))
        except (UnreadableFile, ValueError, DecodeError, RecursionError):
            return None  # missing, special, truncated, foreign or crafted: a miss
        return facts if _is_facts_of(facts, path) else None

    def put(self, path: str, content_digest: str, facts) -> None:
        """Store ``facts``; failures (read-only disk, facts that are not plain data) are ignored."""
        if not self.writable:
            return
        key = self.key(path, content_digest)
        try:
            data = json.dumps({"format": ENTRY_FORMAT, "key": key, "facts": encode(facts)},
                              separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError, RecursionError):
            return  # not plain data: this file is simply not cached
        self._write(self.folder / key, data)

    def skipped_index(self) -> dict:
        """``content digest -> syntax error or None`` for the files the pre-filter
        skipped in earlier runs: one small file read once, instead of parsing
        every skipped file again (anything unexpected in it is an empty index)."""
        try:
            data = json.loads(read_regular_file(str(self._skipped_path()), MAX_ENTRY_BYTES))
        except (UnreadableFile, ValueError, RecursionError):
            return {}
        if not (isinstance(data, dict) and data.get("format") == SKIPPED_FORMAT
                and isinstance(data.get("verdicts"), dict)):
            return {}
        verdicts = {}
        for digest, error in data["verdicts"].items():
            if error is None:
                verdicts[digest] = None
            elif (isinstance(error, list) and len(error) == 3 and all(type(v) is int for v in error[:2])
                  and isinstance(error[2], str)):
                verdicts[digest] = tuple(error)
            else:
                return {}
        return verdicts

    def save_skipped_index(self, verdicts: dict) -> None:
        """Write the skipped files' verdicts (best effort, atomic)."""
        if not self.writable:
            return
        data = json.dumps({"format": SKIPPED_FORMAT, "verdicts": {
            digest: (list(error) if error is not None else None) for digest, error in verdicts.items()
        }}, separators=(",", ":")).encode("utf-8")
        self._write(self._skipped_path(), data)

    def _write(self, path: Path, data: bytes) -> None:
        """Write ``data`` to ``path`` atomically; a failure (read-only or full disk)
        turns caching off for the run, since caching is best effort."""
        try:
            self._prepare()
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(data)
                os.replace(temporary, path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            self.writable = False

    def _skipped_path(self) -> Path:
        digest = hashlib.sha256(self.namespace.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return self.folder / f"skipped-{digest}.json"

    def _prepare(self) -> None:
        top = self.folder.parent
        if self.folder.is_dir() and not self.folder.is_symlink():
            return
        if top.is_symlink() or self.folder.is_symlink():
            # A repository could point the cache anywhere: write nothing there.
            raise OSError(f"{self.folder} is a symbolic link")
        self.folder.mkdir(parents=True, exist_ok=True)
        _create_once(top / "CACHEDIR.TAG", CACHEDIR_TAG)
        _create_once(top / ".gitignore", "# Created by jaxmem automatically.\n*\n")


def _create_once(path: Path, text: str) -> None:
    """Write ``text`` to a new file at ``path``; never follow a link or touch an existing file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as out:
        out.write(text)


def _is_facts_of(facts, path: str) -> bool:
    """Whether ``facts`` is what the engine computes for ``path``."""
    from jaxmem.lint.facts import FileFacts

    return isinstance(facts, FileFacts) and facts.path == path


@lru_cache(maxsize=1)
def analysis_code_stamp() -> str:
    """A digest of the analysis modules' names, sizes and modification times."""
    import jaxmem.lint

    stamp = hashlib.sha256()
    for folder in sorted({os.path.dirname(__file__), *jaxmem.lint.__path__}):
        for current, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    info = os.stat(os.path.join(current, name))
                    stamp.update(f"{current}/{name}:{info.st_size}:{info.st_mtime_ns};".encode())
    return stamp.hexdigest()

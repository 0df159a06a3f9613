"""The cache under ``.jaxmem_cache/`` at the project root.

Four kinds of file, all JSON written atomically, all specific to the jaxmem
version, a stamp of the analysis code itself (so an editable install never
serves results of older code) and ``Settings.fingerprint()``:

* one entry per file's facts, keyed by its path, content (sha256), the
  names of other files it may call and whether its folder is a package;
  it also holds a digest of the facts themselves (:func:`facts_digest`),
  so that a run can tell an edit that changed no facts from one that did,
  and keeps the calls' arguments on a line of their own, decoded only for
  the calls the join reads (:mod:`jaxmem.factentry`);
* ``skipped-*.json``: the syntax verdicts of files the pre-filter skips, and
  ``summaries-*.json``: what the pre-filter needs of each text
  (:mod:`jaxmem.summaries`), both by content digest; each run adds what it
  saw, and the entries seen longest ago go first beyond a size limit;
* ``run-*.json``: a whole run's reports (:mod:`jaxmem.runcache`), one per
  run shape, reused while no file the run read has changed.

Reading back can build only jaxmem's own plain data, never run code
(:mod:`jaxmem.factcodec`); a file that is unreadable, not a regular file,
not JSON, of another format or key, or not what it should hold is a miss.
A cache folder that cannot be written silently disables caching.

The folder is capped (``cache-max-size``, 256 MiB by default): a file's
modification time is its last use (a hit touches it), and a run that wrote
anything removes the files used longest ago until the folder is back under
nine tenths of the cap.  Removal is safe beside concurrent runs: entries
are replaced atomically, so a reader sees a whole file or a miss.
:func:`clear` removes a project's cache (``jaxmem clean``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from functools import lru_cache
from pathlib import Path

import jaxmem
from jaxmem.factcodec import DecodeError
from jaxmem.settings import Settings
from jaxmem.sources import UnreadableFile, read_regular_file

CACHE_DIR_NAME = ".jaxmem_cache"
ENTRY_FORMAT = "jaxmem-facts-8"
SKIPPED_FORMAT = "jaxmem-skipped-2"
SUMMARIES_FORMAT = "jaxmem-summaries-4"
MAX_ENTRY_BYTES = 256 * 1024 * 1024
# A temporary file older than this was left by a run that died while writing.
_STALE_TEMPORARY_SECONDS = 3600
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by jaxmem.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


class StaleEntry(Exception):
    """The arguments of a cached file's calls could not be read back: analyse ``path`` again."""

    def __init__(self, path: str):
        super().__init__(f"unusable facts cache entry for {path}")
        self.path = path


class FactsCache:
    """Facts of files already analysed with the same code and settings."""

    def __init__(self, root: str | os.PathLike, settings: Settings):
        self.folder = Path(root) / CACHE_DIR_NAME / "facts"
        self.namespace = "\0".join(
            (jaxmem.__version__, analysis_code_stamp(), settings.fingerprint())
        )
        self.writable = True
        self.max_size = settings.cache_max_size
        self.wrote = False  # this run added or replaced a file: time to check the cap

    def key(self, path: str, content_digest: str) -> str:
        """The entry name for ``path`` with contents hashing to ``content_digest``."""
        material = "\0".join((self.namespace, os.path.abspath(path), content_digest))
        return hashlib.sha256(material.encode("utf-8", "surrogateescape")).hexdigest()

    def get(self, path: str, content_digest: str):
        """The cached facts, every part decoded, or ``None`` when there is no usable entry."""
        from jaxmem.factentry import materialized

        loaded = self.load(path, content_digest)
        try:
            return None if loaded is None else materialized(loaded[0])
        except StaleEntry:
            return None

    def load(self, path: str, content_digest: str):
        """``(facts, facts digest)`` from the cache, or ``None`` when there is no usable
        entry.  The calls' arguments are decoded when first read
        (:mod:`jaxmem.factentry`), which raises ``StaleEntry`` if they are unusable."""
        from jaxmem.factentry import decoded

        key = self.key(path, content_digest)
        try:
            data = read_regular_file(str(self.folder / key), MAX_ENTRY_BYTES)
            head, newline, arguments = data.partition(b"\n")
            entry = json.loads(head)
            if not (newline and isinstance(entry, dict) and entry.get("format") == ENTRY_FORMAT
                    and entry.get("key") == key and type(entry.get("digest")) is str):
                return None
            facts = decoded(path, entry.get("facts"), entry.get("calls"), arguments)
        except (UnreadableFile, ValueError, DecodeError, RecursionError):
            return None  # missing, special, truncated, foreign or crafted: a miss
        self._touch(self.folder / key)
        return facts, entry["digest"]

    def put(self, path: str, content_digest: str, facts) -> str | None:
        """Store ``facts``; returns their :func:`facts_digest` (``None`` when they
        are not plain data).  Failures to write (read-only disk) are ignored."""
        from jaxmem.factentry import digest_of, encoded

        try:
            light, stubs, arguments = parts = encoded(facts)
        except (TypeError, ValueError, RecursionError):
            return None  # not plain data: this file is simply not cached
        digest = digest_of(parts)
        if self.writable:
            key = self.key(path, content_digest)
            # The parts are spliced in as they are: they were encoded once, for the digest.
            head = json.dumps({"format": ENTRY_FORMAT, "key": key, "digest": digest}, separators=(",", ":"))
            self._write(self.folder / key, b"".join((
                head[:-1].encode("utf-8"), b',"facts":', light, b',"calls":', stubs, b"}\n", arguments)))
        return digest

    def touch_entry(self, key: str) -> None:
        """Mark the entry ``key`` (see :meth:`key`) used now without reading it."""
        self._touch(self.folder / key)

    def skipped_index(self) -> dict:
        """``content digest -> syntax error or None`` for the files the pre-filter
        skipped in earlier runs: one small file read once, instead of parsing
        every skipped file again (anything unexpected in it is an empty index)."""
        verdicts = self.load_index(self._skipped_name(), SKIPPED_FORMAT, _is_verdict)
        return {digest: None if error is None else tuple(error) for digest, error in verdicts.items()}

    def save_skipped_index(self, old: dict, seen: dict, limit: int) -> None:
        """Add the verdicts ``seen`` in this run to the ``old`` index (best effort, atomic)."""
        self.save_index(self._skipped_name(), SKIPPED_FORMAT, old, {
            digest: (list(error) if error is not None else None) for digest, error in seen.items()
        }, limit)

    def load_index(self, name: str, format_name: str, is_entry) -> dict:
        """The ``digest -> entry`` index in the file ``name``; ``{}`` when it is
        missing, not JSON, of another format, or any entry fails ``is_entry``."""
        data = self.read_json(name)
        if not (isinstance(data, dict) and data.get("format") == format_name
                and isinstance(data.get("entries"), dict)):
            return {}
        entries = data["entries"]
        return entries if all(is_entry(entry) for entry in entries.values()) else {}

    def save_index(self, name: str, format_name: str, old: dict, seen: dict, limit: int) -> None:
        """Write ``old`` updated with ``seen`` when ``seen`` adds a digest.

        The entries seen last go last, and beyond ``limit`` entries the
        first ones (seen longest ago) are dropped: edits do not pile up.
        """
        if all(digest in old for digest in seen):
            return
        entries = {digest: entry for digest, entry in old.items() if digest not in seen}
        entries.update(seen)
        if len(entries) > limit:
            entries = dict(list(entries.items())[len(entries) - limit:])
        self.write_json(name, {"format": format_name, "entries": entries})

    def read_json(self, name: str):
        """The JSON value in the cache file ``name``, or ``None`` if there is no usable one."""
        try:
            value = json.loads(read_regular_file(str(self.folder / name), MAX_ENTRY_BYTES))
        except (UnreadableFile, ValueError, RecursionError):
            return None
        self._touch(self.folder / name)
        return value

    def write_json(self, name: str, value) -> None:
        """Write ``value`` as JSON to the cache file ``name`` (best effort, atomic)."""
        if self.writable:
            self._write(self.folder / name, json.dumps(value, separators=(",", ":")).encode("utf-8"))

    def file_name(self, kind: str, *parts: str) -> str:
        """A cache file name for ``kind`` that is specific to this cache's code
        and settings, and to ``parts``."""
        material = "\0".join((self.namespace, *parts))
        return f"{kind}-{hashlib.sha256(material.encode('utf-8', 'surrogateescape')).hexdigest()[:32]}.json"

    def prune(self) -> int:
        """Remove the files used longest ago while the folder is over the cap,
        down to nine tenths of it; returns the bytes freed (best effort)."""
        files, total = [], 0
        try:
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_file(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            files.append((info.st_mtime, entry.name, info.st_size))
                            total += info.st_size
                    except OSError:
                        continue  # removed meanwhile by another run
        except OSError:
            return 0
        if total <= self.max_size:
            return 0
        freed, now = 0, time.time()
        for mtime, name, size in sorted(files):
            if total - freed <= self.max_size * 0.9:
                break
            if name.startswith(".tmp-") and now - mtime < _STALE_TEMPORARY_SECONDS:
                continue  # another run is writing it
            try:
                os.unlink(self.folder / name)
            except OSError:
                continue  # already gone (another run pruned it) or not ours to remove
            freed += size
        return freed

    def _touch(self, path: Path) -> None:
        """Mark ``path`` used now, for the cap's least-recently-used order."""
        if self.writable:
            try:
                os.utime(path)
            except OSError:
                pass

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
            return
        self.wrote = True

    def _skipped_name(self) -> str:
        digest = hashlib.sha256(self.namespace.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return f"skipped-{digest}.json"

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


def clear(root: str | os.PathLike) -> int | None:
    """Remove the cache folder of the project at ``root``; the bytes it held,
    or ``None`` when there was none.  A symbolic link is removed, not followed."""
    top = Path(root) / CACHE_DIR_NAME
    if top.is_symlink():
        top.unlink()
        return 0
    if not top.is_dir():
        return None
    size = 0
    for current, _, names in os.walk(top):
        for name in names:
            try:
                size += os.lstat(os.path.join(current, name)).st_size
            except OSError:
                pass
    shutil.rmtree(top, ignore_errors=True)
    return size


def _create_once(path: Path, text: str) -> None:
    """Write ``text`` to a new file at ``path``; never follow a link or touch an existing file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as out:
        out.write(text)


def facts_digest(facts) -> str | None:
    """A digest of ``facts`` (of their encoding, :mod:`jaxmem.factentry`): equal
    digests, equal facts.  ``None`` when ``facts`` are not plain data."""
    from jaxmem.factentry import digest_of, encoded

    try:
        return digest_of(encoded(facts))
    except (TypeError, ValueError, RecursionError):
        return None


def _is_verdict(error) -> bool:
    """Whether ``error`` is a stored syntax verdict: null or ``[line, col, message]``."""
    return error is None or (isinstance(error, list) and len(error) == 3 and type(error[0]) is int
                             and type(error[1]) is int and isinstance(error[2], str))


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

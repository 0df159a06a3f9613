"""Per-file cache of the engine's facts, under ``.jaxmem_cache/`` at the project root.

An entry is keyed by the file's path and content (sha256), the jaxmem
version, a stamp of the analysis code itself (so an editable install never
serves facts computed by older code) and ``Settings.fingerprint()``.
Entries are pickles written atomically; an unreadable or corrupt entry is a
miss, and a cache folder that cannot be written silently disables caching.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from functools import lru_cache
from pathlib import Path

import jaxmem
from jaxmem.settings import Settings

CACHE_DIR_NAME = ".jaxmem_cache"
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
        entry = self.folder / self.key(path, content_digest)
        try:
            with open(entry, "rb") as handle:
                return pickle.load(handle)
        except FileNotFoundError:
            return None
        except Exception:  # a truncated or foreign pickle is simply a miss
            return None

    def put(self, path: str, content_digest: str, facts) -> None:
        """Store ``facts``; failures (read-only disk, unpicklable facts) are ignored."""
        if not self.writable:
            return
        try:
            self._prepare()
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            try:
                with os.fdopen(handle, "wb") as out:
                    pickle.dump(facts, out, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, self.folder / self.key(path, content_digest))
            except BaseException:
                os.unlink(temporary)
                raise
        except Exception:  # noqa: BLE001 - caching is best effort
            self.writable = False

    def _prepare(self) -> None:
        top = self.folder.parent
        if self.folder.is_dir():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        tag = top / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(CACHEDIR_TAG)
        ignore = top / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by jaxmem automatically.\n*\n")


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

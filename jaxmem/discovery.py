"""Expand command-line paths into the Python files (and notebooks) to check.

A folder yields the files whose names match an ``include`` glob (by
default ``*.py``, ``*.pyi`` and ``*.ipynb``, as ruff does).

Directories recurse in sorted order, skipping version-control folders,
virtualenvs (any folder holding ``pyvenv.cfg``), build and cache folders,
the ``exclude`` patterns, and, inside a git work tree, what git ignores.

Files named explicitly are always checked, whatever their extension and
even when an ``exclude`` pattern matches them, unless ``force_exclude`` is
set (as ruff does; pre-commit passes file names explicitly, so hooks
should pass ``--force-exclude``).

Exclude patterns are ``fnmatch`` globs.  A pattern without ``/`` matches
any file or folder of that name (``"*_pb2.py"``, ``"third_party"``); a
pattern with ``/`` matches the path relative to the project root
(``"tests/fixtures/*"``).  A folder that matches is skipped whole.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

from jaxmem.settings import DEFAULT_INCLUDE

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "build", "dist", ".tox", ".nox",
    "node_modules", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".jaxmem_cache", ".venv", "venv",
})
SKIPPED_DIR_GLOBS = ("*.egg-info",)
# A repository's own config can name commands git runs (core.fsmonitor runs
# on every index read); a checked repository must never run code through us.
SAFE_GIT = ("git", "-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null")
STDIN = "-"


class DiscoveryError(Exception):
    """A path on the command line does not exist; the message names it."""


def discover(
    paths,
    *,
    root: str | os.PathLike | None = None,
    exclude=(),
    force_exclude: bool = False,
    respect_gitignore: bool = True,
    realpath=None,
    include=DEFAULT_INCLUDE,
) -> list[str]:
    """The files to check for ``paths``, in order, without duplicates.

    Paths keep the spelling the user gave (``src/a.py`` stays relative);
    ``-`` (stdin) is passed through.  ``realpath`` (a :class:`RealPaths`)
    lets the caller reuse what was resolved.  Raises :class:`DiscoveryError`
    for a path that does not exist.
    """
    matcher = ExcludeMatcher(exclude, Path(root) if root is not None else Path.cwd())
    files: list[str] = []
    for raw in paths:
        raw = str(raw)
        if raw == STDIN:
            files.append(raw)
        elif os.path.isdir(raw):
            if force_exclude and matcher.matches(raw):
                continue
            found = list(_walk(raw, matcher, tuple(include)))
            if respect_gitignore:
                found = _drop_git_ignored(raw, found)
            files.extend(found)
        elif os.path.exists(raw):
            if not (force_exclude and matcher.matches(raw)):
                files.append(os.path.normpath(raw))
        else:
            raise DiscoveryError(f"{raw}: no such file or directory")
    return _unique_files(files, realpath or RealPaths())


def _unique_files(files: list[str], realpath) -> list[str]:
    """``files`` without a second spelling of the same file (``a.py`` and ``/abs/a.py``)."""
    seen: set[str] = set()
    unique = []
    for path in files:
        key = path if path == STDIN else realpath(path)
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


class RealPaths:
    """``os.path.realpath`` for many files of few folders: each folder is
    resolved once, and a file only needs one ``lstat`` to rule out a link."""

    def __init__(self):
        self.folders: dict[str, str] = {}
        self.files: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        real = self.files.get(path)
        if real is None:
            real = self.files[path] = self._resolve(path)
        return real

    def _resolve(self, path: str) -> str:
        folder, name = os.path.split(path)
        if name in ("", ".", "..") or os.path.islink(path):
            return os.path.realpath(path)
        real = self.folders.get(folder)
        if real is None:
            real = self.folders[folder] = os.path.realpath(folder or os.curdir)
        return os.path.join(real, name)


def missing_paths(paths) -> list[str]:
    """The command-line ``paths`` that do not exist (``-`` always does)."""
    return [str(p) for p in paths if str(p) != STDIN and not os.path.exists(str(p))]


class ExcludeMatcher:
    """Decides whether a path matches one of the ``exclude`` globs."""

    def __init__(self, patterns, root: Path):
        self.name_patterns = tuple(p.rstrip("/") for p in patterns if "/" not in p.rstrip("/"))
        self.path_patterns = tuple(p.strip("/") for p in patterns if "/" in p.rstrip("/"))
        self.root = root.absolute()

    def matches(self, path: str) -> bool:
        """Whether ``path`` (a file or folder) or one of its folders is excluded."""
        absolute = Path(os.path.abspath(path))
        try:
            parts = absolute.relative_to(self.root).as_posix().split("/")
        except ValueError:  # outside the project: its own name only
            parts = None
        names = parts if parts is not None else [absolute.name]
        if any(fnmatch.fnmatch(name, p) for name in names for p in self.name_patterns):
            return True
        if not self.path_patterns or parts is None:
            return False
        prefixes = ("/".join(parts[: i + 1]) for i in range(len(parts)))
        return any(fnmatch.fnmatch(prefix, p) for prefix in prefixes for p in self.path_patterns)

    def matches_name(self, name: str) -> bool:
        """Whether a bare file or folder name matches a pattern without ``/``."""
        return any(fnmatch.fnmatch(name, p) for p in self.name_patterns)


class PerFileIgnores:
    """``per-file-ignores``: which code prefixes are ignored in a file.

    Globs follow the ``exclude`` rules (without ``/``: a file or folder
    name; with ``/``: the path relative to the project root).
    """

    def __init__(self, table, root):
        self.rules = [(ExcludeMatcher([glob], Path(root)), codes) for glob, codes in table]
        self.known: dict[str, tuple[str, ...]] = {}

    def codes(self, path: str) -> tuple[str, ...]:
        """The code prefixes ignored in ``path``."""
        if path not in self.known:
            self.known[path] = tuple(code for matcher, codes in self.rules
                                     if _matches_file(matcher, path) for code in codes)
        return self.known[path]


def _matches_file(matcher: ExcludeMatcher, path: str) -> bool:
    """Whether ``path`` or one of its folders inside the project root matches."""
    if matcher.matches(path):
        return True
    try:
        folders = Path(os.path.abspath(path)).relative_to(matcher.root).parts[:-1]
    except ValueError:
        return False
    return any(matcher.matches_name(part) for part in folders)


def is_skipped_dir(path: str, name: str) -> bool:
    """Folders never worth descending into: VCS, virtualenvs, build output, caches."""
    return (
        name in SKIPPED_DIRS
        or any(fnmatch.fnmatch(name, g) for g in SKIPPED_DIR_GLOBS)
        or os.path.isfile(os.path.join(path, "pyvenv.cfg"))
    )


def _included(include):
    """A test of a file name against the ``include`` globs; ``*.py``-like globs
    become one ``str.endswith`` (a folder walk tests every file name)."""
    simple = [glob for glob in include if glob.startswith("*") and not any(c in glob[1:] for c in "*?[")]
    suffixes = tuple(glob[1:] for glob in simple)
    others = tuple(glob for glob in include if glob not in simple)
    if not others:
        return lambda name: name.endswith(suffixes)
    return lambda name: name.endswith(suffixes) or any(fnmatch.fnmatch(name, glob) for glob in others)


def _walk(top: str, matcher: ExcludeMatcher, include=DEFAULT_INCLUDE):
    included = _included(include)
    for folder, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(
            d for d in dirnames
            if not is_skipped_dir(os.path.join(folder, d), d)
            and not matcher.matches_name(d)
            and not (matcher.path_patterns and matcher.matches(os.path.join(folder, d)))
        )
        for name in sorted(filenames):
            if not included(name) or matcher.matches_name(name):
                continue
            path = os.path.normpath(os.path.join(folder, name))
            if matcher.path_patterns and matcher.matches(path):
                continue
            yield path


def _drop_git_ignored(top: str, files: list[str]) -> list[str]:
    """``files`` minus those git ignores; unchanged outside a work tree or without git."""
    if not files or shutil.which("git") is None:
        return files
    try:
        toplevel = subprocess.run(
            [*SAFE_GIT, "-C", top, "rev-parse", "--show-toplevel"],
            capture_output=True, check=False, env=_git_environment(), stdin=subprocess.DEVNULL,
        )
        if toplevel.returncode != 0:
            return files
        absolute = [os.path.abspath(f) for f in files]
        named = os.path.abspath(top)
        result = subprocess.run(
            [*SAFE_GIT, "check-ignore", "--stdin", "-z"],
            cwd=os.fsdecode(toplevel.stdout.strip()),
            input=b"\0".join(os.fsencode(a) for a in [named, *absolute]) + b"\0",
            capture_output=True, check=False, env=_git_environment(),
        )
    except OSError:
        return files
    # 0: some paths ignored, 1: none ignored, anything else: git could not tell.
    if result.returncode != 0:
        return files
    ignored = {os.fsdecode(p) for p in result.stdout.split(b"\0") if p}
    if named in ignored:
        return files  # a folder named on the command line is checked even if git ignores it (as ruff does)
    return [f for f, a in zip(files, absolute) if a not in ignored]


def _git_environment() -> dict:
    """The environment for git: no pager, no prompt, no optional index writes."""
    return dict(os.environ, GIT_PAGER="cat", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")

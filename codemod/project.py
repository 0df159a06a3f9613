"""What the project around the fixed files says: its oldest jax, its donation style.

The oldest jax a project supports is the lower bound of its ``jax``
requirement, read from ``pyproject.toml`` (``[project]`` dependencies and
extras, Poetry dependencies) and ``requirements*.txt`` at the project root.
When several places name jax, the lowest bound wins: a fix must work with
every jax the project accepts.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

from jaxmem.sources import UnreadableFile, read_regular_file

Version = tuple[int, ...]
MAX_REQUIREMENTS_BYTES = 1024 * 1024

_REQUIREMENT = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(?P<spec>[^;#]*)")
_LOWER_BOUND = re.compile(r"(>=|==|~=|>|\^|===)\s*v?(?P<version>\d+(?:\.\d+)*)")
_BARE_VERSION = re.compile(r"^\s*v?(?P<version>\d+(?:\.\d+)*)\s*$")


def _as_version(text: str) -> Version:
    return tuple(int(part) for part in text.split(".")[:3])


def requirement_lower_bound(requirement: str, package: str = "jax") -> Version | None:
    """The lower bound ``requirement`` puts on ``package`` (``"jax>=0.4.30"`` -> (0, 4, 30))."""
    match = _REQUIREMENT.match(requirement)
    if match is None or _normal(match.group("name")) != package:
        return None
    return spec_lower_bound(match.group("spec"))


def spec_lower_bound(spec: str) -> Version | None:
    """The highest lower bound in a version specifier (``">=0.4,<0.6"`` -> (0, 4))."""
    bare = _BARE_VERSION.match(spec)
    if bare is not None:  # Poetry: jax = "0.4.30" means ==0.4.30
        return _as_version(bare.group("version"))
    bounds = [_as_version(m.group("version")) for m in _LOWER_BOUND.finditer(spec)]
    return max(bounds) if bounds else None


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lowest(bounds: Iterable[Version | None]) -> Version | None:
    found = [b for b in bounds if b is not None]
    return min(found) if found else None


def _pyproject_requirements(path: Path) -> list[str]:
    text = _read_text(path)
    try:
        document = tomllib.loads(text) if text is not None else {}
    except tomllib.TOMLDecodeError:
        return []
    # Any shape is possible in a file we do not own: take only what has the expected one.
    project = _table(document.get("project"))
    requirements = _list(project.get("dependencies"))
    for extra in _table(project.get("optional-dependencies")).values():
        requirements += _list(extra)
    poetry = _table(_table(document.get("tool")).get("poetry"))
    groups = [_table(_table(g).get("dependencies")) for g in _table(poetry.get("group")).values()]
    for table in (_table(poetry.get("dependencies")), *groups):
        for name, spec in table.items():
            if isinstance(spec, dict):
                spec = spec.get("version", "")
            if isinstance(spec, str):
                requirements.append(f"{name} {spec}")
    return [r for r in requirements if isinstance(r, str)]


def _table(value) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value) -> list:
    return list(value) if isinstance(value, list) else []


def _requirements_files(root: Path) -> list[str]:
    lines: list[str] = []
    for path in sorted(root.glob("requirements*.txt")):
        lines += (_read_text(path) or "").splitlines()
    return lines


def _read_text(path: Path) -> str | None:
    """A small regular file's text (undecodable bytes replaced); None when absent or unreadable."""
    try:
        return read_regular_file(str(path), MAX_REQUIREMENTS_BYTES).decode("utf-8", errors="replace")
    except UnreadableFile:
        return None


def project_jax_lower_bound(root: str | Path) -> Version | None:
    """The oldest jax the project at ``root`` accepts, or None when it does not say."""
    root = Path(root)
    requirements = _pyproject_requirements(root / "pyproject.toml") + _requirements_files(root)
    return _lowest(requirement_lower_bound(r) for r in requirements)


_SPEC_KEYWORD = re.compile(r"\bdonate_arg(nums|names)\s*=")


def donation_style_of(texts: Iterable[str]) -> str | None:
    """``argnums``/``argnames``: which keyword the given sources use more, or None."""
    counts: Counter = Counter()
    for text in texts:
        counts.update("arg" + m.group(1) for m in _SPEC_KEYWORD.finditer(text))
    if counts["argnums"] == counts["argnames"]:
        return None
    return "argnames" if counts["argnames"] > counts["argnums"] else "argnums"

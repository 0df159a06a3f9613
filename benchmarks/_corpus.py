"""Real JAX code for the benchmarks: pinned wheels from PyPI, unpacked locally.

``corpus()`` downloads each pinned wheel once with ``pip download --no-deps
--only-binary=:all:`` into ``benchmarks/.cache/wheels/`` and unpacks its
``.py`` files into ``benchmarks/.cache/src/NAME-VERSION/`` (git-ignored;
third-party code is never committed).  Later calls reuse what is there.

    from _corpus import corpus          # from a script in benchmarks/
    files = corpus()                    # list[Path] of .py files, sorted
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

# flax 0.12.8 is the newest flax on PyPI when these were pinned (0.12.12 does not exist).
DEFAULT_PACKAGES = [("flax", "0.12.8"), ("optax", "0.2.8"), ("equinox", "0.13.8"), ("jax", "0.10.2")]

# Real JAX projects for the project-scale speed benchmark (2,869 files,
# 992k lines together): libraries and training frameworks whose code jits.
# jax itself is left out: its internals implement jit rather than use it.
PROJECT_PACKAGES = [
    ("flax", "0.12.8"), ("optax", "0.2.8"), ("equinox", "0.13.8"), ("brax", "0.14.2"),
    ("dm-haiku", "0.0.17"), ("levanter", "1.1"), ("haliax", "1.3"), ("easydel", "0.3.0"),
    ("trax", "1.4.1"), ("paxml", "1.4.0"), ("praxis", "1.4.0"), ("penzai", "0.2.5"),
    ("numpyro", "0.22.0"), ("blackjax", "1.7.1"), ("jumanji", "1.1.2"), ("chex", "0.1.92"),
    ("diffrax", "0.7.2"), ("orbax-checkpoint", "0.12.8"),
]

CACHE = Path(__file__).resolve().parent / ".cache"
WHEELS = CACHE / "wheels"
SOURCES = CACHE / "src"
_UNPACKED_MARKER = ".unpacked"


class CorpusError(RuntimeError):
    """A pinned wheel could not be downloaded or unpacked."""


def corpus(packages=DEFAULT_PACKAGES) -> list[Path]:
    """The ``.py`` files of the pinned ``(name, version)`` wheels, sorted, downloading them if needed."""
    files: list[Path] = []
    for name, version in packages:
        files.extend(sorted(source_dir(name, version).rglob("*.py")))
    return files


def source_dir(name: str, version: str) -> Path:
    """The folder holding the unpacked ``.py`` files of ``name==version``."""
    target = SOURCES / f"{name}-{version}"
    if not (target / _UNPACKED_MARKER).exists():
        _unpack(_wheel(name, version), target)
    return target


def _wheel(name: str, version: str) -> Path:
    found = _find_wheel(name, version)
    if found is None:
        WHEELS.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--quiet", f"{name}=={version}", "-d", str(WHEELS)]
        result = subprocess.run(command, capture_output=True, text=True)
        found = _find_wheel(name, version)
        if result.returncode != 0 or found is None:
            raise CorpusError(
                f"could not download the wheel {name}=={version} into {WHEELS}: "
                f"{result.stderr.strip()[-500:]}; check network access to PyPI or the pinned version"
            )
    return found


def _find_wheel(name: str, version: str) -> Path | None:
    # Wheel file names normalise '-' in the project name to '_'.
    matches = sorted(WHEELS.glob(f"{name.replace('-', '_')}-{version}-*.whl")) if WHEELS.exists() else []
    return matches[0] if matches else None


def _unpack(wheel: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.endswith(".py") and ".dist-info/" not in member and ".." not in Path(member).parts:
                archive.extract(member, target)
    (target / _UNPACKED_MARKER).write_text(wheel.name + "\n")


if __name__ == "__main__":
    paths = corpus()
    print(f"{len(paths)} files under {SOURCES}")

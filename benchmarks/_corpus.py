"""Real JAX code for the benchmarks: pinned wheels and sdists from PyPI, unpacked locally.

``corpus()`` downloads each pinned wheel once with ``pip download --no-deps
--only-binary=:all:`` into ``benchmarks/.cache/wheels/`` and unpacks its
``.py`` files into ``benchmarks/.cache/src/NAME-VERSION/`` (git-ignored;
third-party code is never committed).  Later calls reuse what is there.
``project_dir()`` does the same for a source distribution (which carries
tests and examples), unpacked whole into ``benchmarks/.cache/sdist/``.

    from _corpus import corpus          # from a script in benchmarks/
    files = corpus()                    # list[Path] of .py files, sorted
    root = project_dir("brax", "0.14.2", "sdist")
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
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
SDISTS = CACHE / "sdists"
SDIST_SOURCES = CACHE / "sdist"
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


def project_dir(name: str, version: str, kind: str) -> Path:
    """The unpacked project ``name==version``: the whole sdist (``kind="sdist"``) or a wheel's ``.py`` files."""
    if kind == "wheel":
        return source_dir(name, version)
    # older sdists keep the project's own spelling (dm-acme-0.4.0.tar.gz)
    archive = _download(name, version, SDISTS, "--no-binary=:all:", f"{_dist_name(name)}-{version}.tar.gz",
                        f"{name}-{version}.tar.gz")
    target = SDIST_SOURCES / f"{name}-{version}"
    if not (target / _UNPACKED_MARKER).exists():
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
        (target / _UNPACKED_MARKER).write_text(archive.name + "\n")
    # an sdist holds one top folder, NAME-VERSION/
    folders = [p for p in target.iterdir() if p.is_dir()]
    return folders[0] if len(folders) == 1 else target


def _dist_name(name: str) -> str:
    # Archive names normalise '-' (and '.') in the project name to '_'.
    return name.replace("-", "_").replace(".", "_")


def _wheel(name: str, version: str) -> Path:
    return _download(name, version, WHEELS, "--only-binary=:all:", f"{_dist_name(name)}-{version}-*.whl")


def _download(name: str, version: str, folder: Path, kind_option: str, *patterns: str) -> Path:
    found = _find(folder, *patterns)
    if found is None:
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", kind_option,
                   "--quiet", f"{name}=={version}", "-d", str(folder)]
        result = subprocess.run(command, capture_output=True, text=True)
        found = _find(folder, *patterns)
        if result.returncode != 0 or found is None:
            raise CorpusError(
                f"could not download {name}=={version} ({kind_option}) into {folder}: "
                f"{result.stderr.strip()[-500:]}; check network access to PyPI or the pinned version"
            )
    return found


def _find(folder: Path, *patterns: str) -> Path | None:
    for pattern in patterns:
        matches = sorted(folder.glob(pattern)) if folder.exists() else []
        if matches:
            return matches[0]
    return None


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

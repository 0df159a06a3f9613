"""``[tool.jaxmem]`` configuration: find it, read it, validate it.

The configuration lives in the nearest ``pyproject.toml`` that has a
``[tool.jaxmem]`` table, searched upward from the first path on the command
line (or the current directory); ``--config FILE`` names it explicitly.
Every problem is a :class:`ConfigError` whose message names the file, the
key and what is allowed, so the CLI can print it and exit 2.
"""

from __future__ import annotations

import os
import re
import sys
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from jaxmem.findings import Confidence
from jaxmem.lint.callables.project_names import LIBRARY_ROOTS
from jaxmem.settings import Settings
from jaxmem.sources import UnreadableFile, read_regular_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

TABLE = "tool.jaxmem"
MAX_CONFIG_BYTES = 1024 * 1024

CODE_PREFIX = re.compile(r"^JXM[0-9]{0,3}$")
DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
VERSION = re.compile(r"^[0-9]+(\.[0-9]+){0,2}$")
DONATION_STYLES = ("auto", "argnums", "argnames")
CONFIDENCES = tuple(c.value for c in Confidence)


class ConfigError(Exception):
    """An unreadable or invalid configuration; the message is user-facing."""


@dataclass(frozen=True)
class Config:
    """Settings plus where they came from.

    ``path`` is the file the settings were read from (``None`` for the
    defaults); ``root`` is the project root: the folder of that file, else
    the nearest folder above the start that holds a ``pyproject.toml`` or
    ``.git``, else the current folder.  Relative ``exclude`` patterns and the
    cache are anchored there.
    """

    settings: Settings
    path: Path | None
    root: Path


def load_config(paths=(), config_file: str | os.PathLike | None = None) -> Config:
    """Find and read the configuration for a run over ``paths``.

    ``config_file`` overrides the search.  Raises :class:`ConfigError`.
    """
    start = search_start(paths)
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found; check the --config argument")
        table = _read_table(path, explicit=True)
        return _config(settings_from_table(table, path), path, path.resolve().parent)
    path = find_config(start)
    if path is None:
        return _config(Settings(), None, project_root(start))
    table = _read_table(path, explicit=False)
    return _config(settings_from_table(table, path), path, path.resolve().parent)


def _config(settings: Settings, path: Path | None, root: Path) -> Config:
    return Config(dataclasses.replace(settings, own_packages=own_packages(root)), path, root)


def own_packages(root: Path) -> tuple[str, ...]:
    """The project's top-level packages (folders with ``__init__.py`` at ``root`` or
    ``root/src``) whose names jaxmem otherwise takes for libraries: checking optax
    itself, ``from optax._src import utils`` is the project's own code."""
    found = set()
    for folder in (root, root / "src"):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        found.update(entry.name for entry in entries if entry.name in LIBRARY_ROOTS
                     and entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")))
    return tuple(sorted(found))


def load_settings(paths=(), config_file: str | os.PathLike | None = None) -> Settings:
    """The :class:`Settings` for a run over ``paths`` (see :func:`load_config`)."""
    return load_config(paths, config_file).settings


def search_start(paths=()) -> Path:
    """The folder the upward search starts from: the first path's, or cwd."""
    for raw in paths:
        if str(raw) == "-":
            continue
        candidate = Path(raw).absolute()
        if candidate.is_dir():
            return candidate
        return candidate.parent
    return Path.cwd()


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` with ``[tool.jaxmem]``."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _has_table(_read_toml(candidate), candidate):
            return candidate
    return None


def project_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` holding ``pyproject.toml`` or ``.git``
    (the current folder when there is none)."""
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return Path.cwd()


def settings_from_table(table: dict, path: Path) -> Settings:
    """Validate a ``[tool.jaxmem]`` table and build :class:`Settings` from it."""
    readers = {
        "select": ("select", _codes),
        "ignore": ("ignore", _codes),
        "exclude": ("exclude", _strings),
        "min-confidence": ("min_confidence", _confidence),
        "extra-wrappers": ("extra_wrappers", _dotted_names),
        "donation-style": ("donation_style", _donation_style),
        "jax-version": ("jax_version", _jax_version),
        "max-file-size": ("max_file_size", _byte_count),
        "target-version": ("target_version", _python_version),
        "include": ("include", _strings),
        "per-file-ignores": ("per_file_ignores", _per_file_ignores),
        "cache-max-size": ("cache_max_size", _size),
    }
    # ruff's extend-* keys: added to the key's value (or to its default).
    extending = {"extend-select": "select", "extend-ignore": "ignore",
                 "extend-exclude": "exclude", "extend-include": "include"}
    values, extensions = {}, {}
    for key, value in table.items():
        if key in extending:
            extensions[extending[key]] = readers[extending[key]][1](value, path, key)
            continue
        if key not in readers:
            allowed = ", ".join([*readers, *extending])
            raise ConfigError(
                f"{path}: unknown key {key!r} in [{TABLE}]; allowed keys: {allowed}"
            )
        field_name, read = readers[key]
        values[field_name] = read(value, path, key)
    defaults = Settings()
    for field_name, extra in extensions.items():
        values[field_name] = values.get(field_name, getattr(defaults, field_name)) + extra
    return Settings(**values)


def parse_codes(values, source: str, key: str) -> tuple[str, ...]:
    """Validate rule codes or prefixes (``JXM``, ``JXM1``, ``JXM101``)."""
    codes = tuple(v.strip().upper() for v in values if v.strip())
    for code in codes:
        if not CODE_PREFIX.match(code):
            raise ConfigError(
                f"{source}: {key}: {code!r} is not a jaxmem rule code; "
                "use a code such as JXM001 or a prefix such as JXM1 or JXM"
            )
    return codes


def parse_confidence(value, source: str, key: str) -> Confidence:
    """Validate a confidence name (``low``, ``medium``, ``high``)."""
    if not isinstance(value, str) or value.lower() not in CONFIDENCES:
        raise ConfigError(
            f"{source}: {key}: {value!r} is not a confidence; use one of {', '.join(CONFIDENCES)}"
        )
    return Confidence(value.lower())


def _read_toml(path: Path) -> dict:
    try:
        data = read_regular_file(str(path), MAX_CONFIG_BYTES)
    except UnreadableFile as error:
        raise ConfigError(f"{path}: {error}") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start}); "
            "TOML files must be UTF-8, save it as UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _has_table(document: dict, path: Path) -> bool:
    """Whether ``document`` has a ``[tool.jaxmem]`` table; a ``tool`` that is not a table is an error."""
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table ([tool.jaxmem], [tool.other], ...), "
                          f"not {type(tool).__name__} {tool!r}")
    return "jaxmem" in tool


def _read_table(path: Path, explicit: bool) -> dict:
    """The ``[tool.jaxmem]`` table of ``path``.

    A file named explicitly that is not a ``pyproject.toml`` may hold the
    keys at its top level (a dedicated ``jaxmem.toml``).
    """
    document = _read_toml(path)
    if _has_table(document, path):
        table = document["tool"]["jaxmem"]
    elif explicit and path.name != "pyproject.toml":
        table = document
    else:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{TABLE}] must be a table of settings")
    return table


def _strings(value, path: Path, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{path}: [{TABLE}] {key} must be a list of strings, e.g. {key} = [\"...\"]; "
            f"got {value!r}"
        )
    return tuple(value)


def _codes(value, path: Path, key: str) -> tuple[str, ...]:
    return parse_codes(_strings(value, path, key), f"{path}: [{TABLE}]", key)


def _per_file_ignores(value, path: Path, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{"tests/*" = ["JXM001"], "__init__.py" = ["JXM1"]}``: glob -> code prefixes."""
    if not isinstance(value, dict):
        raise ConfigError(
            f"{path}: [{TABLE}] {key} must be a table of glob = [codes], "
            f"e.g. {key} = {{ \"tests/*\" = [\"JXM001\"] }}; got {value!r}"
        )
    return tuple((glob, _codes(codes, path, f"{key}.{glob!r}")) for glob, codes in value.items())


def _confidence(value, path: Path, key: str) -> Confidence:
    return parse_confidence(value, f"{path}: [{TABLE}]", key)


def _dotted_names(value, path: Path, key: str) -> tuple[str, ...]:
    names = _strings(value, path, key)
    for name in names:
        if not DOTTED_NAME.match(name):
            raise ConfigError(
                f"{path}: [{TABLE}] {key}: {name!r} is not a dotted name; "
                "use the wrapper's import path, e.g. \"mylib.utils.jit_with_donation\""
            )
    return names


def _donation_style(value, path: Path, key: str) -> str:
    if value not in DONATION_STYLES:
        raise ConfigError(
            f"{path}: [{TABLE}] {key}: {value!r} is not allowed; "
            f"use one of {', '.join(DONATION_STYLES)}"
        )
    return value


def _jax_version(value, path: Path, key: str) -> str:
    if not isinstance(value, str) or not VERSION.match(value):
        raise ConfigError(
            f"{path}: [{TABLE}] {key}: {value!r} is not a version; "
            "use a string such as \"0.4.30\""
        )
    return value


def _python_version(value, path: Path, key: str) -> str:
    from libcst._parser.types.config import KNOWN_PYTHON_VERSION_STRINGS

    known = [v for v in KNOWN_PYTHON_VERSION_STRINGS if v >= "3.8" or len(v) > 3]
    if not isinstance(value, str) or value not in KNOWN_PYTHON_VERSION_STRINGS:
        raise ConfigError(
            f"{path}: [{TABLE}] {key}: {value!r} is not a Python version libcst parses; "
            f"use one of {', '.join(known)} (a string, e.g. \"3.12\")"
        )
    return value


def _byte_count(value, path: Path, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(
            f"{path}: [{TABLE}] {key}: {value!r} is not a size; use a positive number of bytes, "
            "e.g. 20_000_000"
        )
    return value


_SIZE = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
               "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}


def _size(value, path: Path, key: str) -> int:
    """A positive size: a number of bytes or a string such as ``"256MiB"`` or ``"1GB"``."""
    match = _SIZE.match(value) if isinstance(value, str) else None
    if match is not None:
        value = int(float(match.group(1).replace("_", "")) * _SIZE_UNITS[(match.group(2) or "B").lower()])
    elif isinstance(value, str):
        raise ConfigError(
            f"{path}: [{TABLE}] {key}: {value!r} is not a size; use a number of bytes or a string "
            "such as \"256MiB\" or \"1GB\""
        )
    return _byte_count(value, path, key)

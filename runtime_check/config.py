"""``jaxmem.yaml``: which functions ``jaxmem verify`` compiles, with which inputs.

::

    verify:
      - function: mypkg.train:train_step        # module:qualname
        example_args: mypkg.train:example_args  # returns a tuple of args, or {"args": [...], "kwargs": {...}}
        donate_argnums: [0, 1]                  # optional when the function is already jitted
      - function: mypkg.ops:update
        args: ["f32[1024,1024]", {"m": "bf16[1024]"}, 3]   # shapes, pytrees of shapes, static values
        kwargs: {scale: "f32[]"}
        static_argnums: [2]

Parsing is pure (pyyaml only); every error names the file and the entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

DTYPE_ALIASES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "c64": "complex64", "c128": "complex128", "bool": "bool", "pred": "bool",
    "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
}
_SHAPE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*\[\s*([0-9,\s]*)\]\s*$")
_ENTRY_KEYS = {"function", "example_args", "args", "kwargs", "donate_argnums", "donate_argnames",
               "static_argnums", "static_argnames", "backend"}


class ConfigError(ValueError):
    """A ``jaxmem.yaml`` problem; the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class ShapeSpec:
    """A parsed ``f32[1024,1024]``."""

    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class VerifyEntry:
    """One function to verify."""

    function: str
    example_args: str | None = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    donate_argnums: tuple[int, ...] | None = None
    donate_argnames: tuple[str, ...] | None = None
    static_argnums: tuple[int, ...] | None = None
    static_argnames: tuple[str, ...] | None = None
    backend: str | None = None


def parse_shape(text: str) -> ShapeSpec:
    """``"bf16[8,128]"`` -> ``ShapeSpec("bfloat16", (8, 128))``; ``ValueError`` when malformed."""
    match = _SHAPE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a shape; write dtype[dims], e.g. 'f32[1024,1024]' or 'i32[]'")
    dtype = DTYPE_ALIASES.get(match.group(1).lower(), match.group(1).lower())
    if dtype not in DTYPE_ALIASES.values():
        known = ", ".join(sorted(DTYPE_ALIASES))
        raise ValueError(f"{text!r}: unknown dtype {match.group(1)!r} (known: {known})")
    dims = tuple(int(part) for part in match.group(2).replace(" ", "").split(",") if part)
    return ShapeSpec(dtype, dims)


def _shapes(value: Any, where: str) -> Any:
    """Replace every shape string in a YAML value with a :class:`ShapeSpec`."""
    if isinstance(value, str):
        try:
            return parse_shape(value)
        except ValueError as error:
            raise ConfigError(f"{where}: {error}") from None
    if isinstance(value, list):
        return [_shapes(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: _shapes(item, f"{where}.{key}") for key, item in value.items()}
    return value


def _int_tuple(value, where: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, int) else value
    if not isinstance(items, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise ConfigError(f"{where}: expected an integer or a list of integers, got {value!r}")
    return tuple(items)


def _str_tuple(value, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ConfigError(f"{where}: expected a name or a list of names, got {value!r}")
    return tuple(items)


def _reference(value, where: str) -> str:
    if not isinstance(value, str) or value.count(":") != 1 or not all(value.split(":")):
        raise ConfigError(f"{where}: expected 'module:name' (e.g. 'mypkg.train:train_step'), got {value!r}")
    return value


def parse_entry(raw: Any, where: str) -> VerifyEntry:
    """Validate one ``verify:`` list item."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with 'function:' and 'example_args:' or 'args:'")
    unknown = sorted(set(raw) - _ENTRY_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_ENTRY_KEYS))})")
    if "function" not in raw:
        raise ConfigError(f"{where}: missing 'function: module:name'")
    function = _reference(raw["function"], f"{where}.function")
    where = f"{where} ({function})"
    has_factory, has_args = "example_args" in raw, "args" in raw or "kwargs" in raw
    if has_factory == has_args:
        raise ConfigError(f"{where}: give exactly one of 'example_args: module:factory' "
                          "or 'args:' (a list of shapes like 'f32[1024,1024]')")
    args = raw.get("args", [])
    if not isinstance(args, list):
        raise ConfigError(f"{where}.args: expected a list, one item per positional argument")
    kwargs = raw.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ConfigError(f"{where}.kwargs: expected a mapping of parameter name to shape")
    backend = raw.get("backend")
    if backend is not None and not isinstance(backend, str):
        raise ConfigError(f"{where}.backend: expected a backend name such as 'cpu' or 'gpu'")
    static_argnums = _int_tuple(raw.get("static_argnums"), f"{where}.static_argnums")
    static_argnames = _str_tuple(raw.get("static_argnames"), f"{where}.static_argnames")
    static_positions = {i % len(args) for i in static_argnums or ()} if args else set()
    # Static arguments are values, not shapes: a string there ('relu') stays a string.
    parsed_args = tuple(item if i in static_positions else _shapes(item, f"{where}.args[{i}]")
                        for i, item in enumerate(args))
    parsed_kwargs = {key: item if key in (static_argnames or ()) else _shapes(item, f"{where}.kwargs.{key}")
                     for key, item in kwargs.items()}
    return VerifyEntry(
        function=function,
        example_args=_reference(raw["example_args"], f"{where}.example_args") if has_factory else None,
        args=parsed_args, kwargs=parsed_kwargs,
        donate_argnums=_int_tuple(raw.get("donate_argnums"), f"{where}.donate_argnums"),
        donate_argnames=_str_tuple(raw.get("donate_argnames"), f"{where}.donate_argnames"),
        static_argnums=static_argnums, static_argnames=static_argnames,
        backend=backend,
    )


def parse_config(text: str, path: str) -> list[VerifyEntry]:
    """Parse the text of ``jaxmem.yaml`` (``path`` is only used in messages)."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: invalid YAML{line}: {getattr(error, 'problem', error)}") from None
    if not isinstance(data, dict) or "verify" not in data:
        raise ConfigError(f"{path}: expected a top-level 'verify:' list of functions to verify")
    entries = data["verify"]
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: 'verify:' must be a non-empty list")
    return [parse_entry(raw, f"{path}: verify[{index}]") for index, raw in enumerate(entries)]


def load_config(path: str) -> list[VerifyEntry]:
    """Read and parse ``path``."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config ({error.strerror})") from None
    return parse_config(text, path)


def to_abstract(value: Any) -> Any:
    """Turn :class:`ShapeSpec` leaves into ``jax.ShapeDtypeStruct`` (lists stay lists)."""
    import jax

    if isinstance(value, ShapeSpec):
        return jax.ShapeDtypeStruct(value.shape, value.dtype)
    if isinstance(value, list):
        return [to_abstract(item) for item in value]
    if isinstance(value, dict):
        return {key: to_abstract(item) for key, item in value.items()}
    return value

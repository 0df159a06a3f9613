"""Plain data <-> JSON, for the facts cache: nothing read back can run code.

The engine's facts are frozen dataclasses, enums, tuples, lists, sets,
frozensets and dicts over strings, numbers, booleans and ``None``.  Each is
written as JSON: a tuple (by far the most common container) as a JSON
array, everything else as a one-key tagged object (a dataclass as its class
name then its field values in declaration order).  Reading back builds only
classes that are dataclasses or enums defined in a ``jaxmem`` module that
is already imported, with exactly as many values as they have fields;
anything else raises :class:`DecodeError`, which the cache treats as a miss.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from functools import lru_cache

LIST, SET, FROZENSET, DICT, CLASS, ENUM = "l", "{", "f{", "d", "c", "e"
_SCALARS = (str, int, float, bool, type(None))


class DecodeError(Exception):
    """The data is not an encoding of jaxmem's plain data."""


def encode(value):
    """``value`` as JSON-ready data; raises ``TypeError`` for anything that is not plain data."""
    if isinstance(value, _SCALARS) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return [encode(item) for item in value]
    if isinstance(value, list):
        return {LIST: [encode(item) for item in value]}
    if isinstance(value, frozenset):
        return {FROZENSET: [encode(item) for item in _stable(value)]}
    if isinstance(value, set):
        return {SET: [encode(item) for item in _stable(value)]}
    if isinstance(value, dict):
        return {DICT: [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, enum.Enum):
        return {ENUM: [_class_name(type(value)), encode(value.value)]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {CLASS: [_class_name(type(value)), *(encode(getattr(value, name)) for name in _field_names(type(value)))]}
    raise TypeError(f"cannot cache a {type(value).__name__}")


_SCALAR_TYPES = frozenset(_SCALARS)


def decode(data):
    """The value :func:`encode` turned into ``data``; raises :class:`DecodeError`."""
    kind = type(data)
    if kind is list:
        return tuple([item if type(item) in _SCALAR_TYPES else decode(item) for item in data])
    if kind in _SCALAR_TYPES:
        return data
    if kind is not dict or len(data) != 1:
        raise DecodeError("expected a one-key tagged object")
    (tag, body), = data.items()
    if type(body) is not list:
        raise DecodeError("expected a list")
    try:
        if tag == CLASS:
            if not body:
                raise DecodeError("expected a class name")
            return _build(_allowed_class(body[0], None), body)
        if tag == LIST:
            return [item if type(item) in _SCALAR_TYPES else decode(item) for item in body]
        if tag == FROZENSET:
            return frozenset([decode(item) for item in body])
        if tag == SET:
            return {decode(item) for item in body}
        if tag == DICT:
            return {decode(k): decode(v) for k, v in (_pair(item) for item in body)}
        if tag == ENUM:
            name, value = _pair(body)
            return _allowed_class(name, enum.Enum)(decode(value))
    except (TypeError, ValueError) as error:  # unhashable set member, bad enum value, ...
        raise DecodeError(str(error)) from None
    raise DecodeError(f"unknown tag {tag!r}")


def _build(cls: type, body: list) -> object:
    """An instance of ``cls`` from ``[name, value, ...]``, one value per field."""
    names = _field_names(cls)
    if len(body) != len(names) + 1:
        raise DecodeError(f"{cls.__name__}: expected values for {', '.join(names)}")
    values = [item if type(item) in _SCALAR_TYPES else decode(item) for item in body[1:]]
    if _positional(cls):
        return cls(*values)
    init = _init_names(cls)
    instance = cls(**{name: value for name, value in zip(names, values) if name in init})
    for name, value in zip(names, values):
        if name not in init:
            object.__setattr__(instance, name, value)
    return instance


_ALLOWED: dict[tuple, type] = {}


def _allowed_class(name, base: type | None) -> type:
    """The class called ``name`` (``module:Qualname``), if it is jaxmem's own plain data."""
    found = _ALLOWED.get((name, base)) if isinstance(name, str) else None
    if found is not None:
        return found
    found = _checked_class(name, base)
    _ALLOWED[(name, base)] = found  # only classes that passed every check
    return found


def _checked_class(name, base: type | None) -> type:
    if not isinstance(name, str) or ":" not in name:
        raise DecodeError("a class name must be 'module:Name'")
    module_name, _, qualname = name.partition(":")
    module = sys.modules.get(module_name)  # never import: the name comes from a file
    if module is None or not (module_name == "jaxmem" or module_name.startswith("jaxmem.")):
        raise DecodeError(f"{module_name!r} is not a loaded jaxmem module")
    cls = module.__dict__.get(qualname)
    if not isinstance(cls, type) or cls.__module__ != module_name:
        raise DecodeError(f"{name} is not a class of {module_name}")
    plain = issubclass(cls, enum.Enum) if base is enum.Enum else (
        dataclasses.is_dataclass(cls) and not issubclass(cls, enum.Enum))
    if not plain:
        raise DecodeError(f"{name} is not a jaxmem dataclass or enum")
    return cls


def _class_name(cls: type) -> str:
    if not cls.__module__.startswith("jaxmem") or "." in cls.__qualname__:
        raise TypeError(f"cannot cache a {cls.__qualname__} from {cls.__module__}")
    return f"{cls.__module__}:{cls.__qualname__}"


@lru_cache(maxsize=None)
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@lru_cache(maxsize=None)
def _init_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init)


@lru_cache(maxsize=None)
def _positional(cls: type) -> bool:
    """Whether ``cls(*values)`` takes every field in declaration order."""
    return all(f.init and not f.kw_only for f in dataclasses.fields(cls))


def _pair(body) -> tuple:
    if not isinstance(body, list) or len(body) != 2:
        raise DecodeError("expected a pair")
    return body[0], body[1]


def _stable(items) -> list:
    """Set members in a stable order, so equal facts write equal bytes."""
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)

"""Abstract call signatures as JSON: encode real arguments, decode to ShapeDtypeStructs.

A record file must be readable by people and by ``jaxmem verify`` in another
process, and loading it must not run code: nothing is pickled.  Standard
containers (dict, list, tuple, None, namedtuples) and JSON-able static
values are written so they can be rebuilt; other pytree nodes (a flax
``TrainState``, equinox and nnx modules) are written as their tree
structure's text and their leaves' avals, and static values that are not
plain data as their ``repr``: those cannot be rebuilt, which is why
``jaxmem record`` also verifies each signature while the program runs.
Shardings are written as text.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

_JSON_SCALARS = (bool, int, float, str, type(None))
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def encode_array(leaf) -> dict:
    """``{"array": {...}}`` for anything jax can take as a dynamic argument."""
    import jax

    aval = jax.typeof(leaf)
    spec = {"shape": list(aval.shape), "dtype": str(aval.dtype)}
    if getattr(aval, "weak_type", False):
        spec["weak_type"] = True
    sharding = getattr(leaf, "sharding", None)
    if sharding is not None and not isinstance(leaf, jax.ShapeDtypeStruct):
        spec["sharding"] = str(sharding)
    return {"array": spec}


def encode_value(value) -> Any:
    """Encode a dynamic argument pytree."""
    import jax

    if value is None:
        return None
    if isinstance(value, dict) and type(value) is dict:
        # jax flattens dicts in sorted key order, so {'w', 'b'} and {'b', 'w'} are one signature.
        items = sorted(value.items(), key=lambda pair: repr(pair[0]))
        return {"dict": [[key, encode_value(item)] for key, item in items]}
    if type(value) is list:
        return {"list": [encode_value(item) for item in value]}
    if type(value) is tuple:
        return {"tuple": [encode_value(item) for item in value]}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        cls = type(value)
        return {"namedtuple": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {name: encode_value(getattr(value, name)) for name in value._fields}}
    leaves, treedef = jax.tree_util.tree_flatten(value)
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            return {"object": f"{type(value).__module__}.{type(value).__qualname__}", "repr": _short_repr(value)}
        return encode_array(value)
    return {"pytree": _short_repr(treedef), "type": f"{type(value).__module__}.{type(value).__qualname__}",
            "leaves": [_encode_leaf(leaf) for leaf in leaves]}


def _encode_leaf(leaf) -> dict:
    try:
        return encode_array(leaf)
    except TypeError:  # not an array-like leaf (an opaque object inside a custom node)
        return {"object": f"{type(leaf).__module__}.{type(leaf).__qualname__}"}


def _short_repr(value, limit: int = 300) -> str:
    text = _ADDRESS.sub("", repr(value))  # object addresses would make equal signatures differ
    return text if len(text) <= limit else text[:limit] + "..."


def encode_static(value) -> dict:
    """Encode a static argument: its value when it is plain data, else only its ``repr``."""
    if _is_plain(value):
        return {"static": value, "repr": repr(value)}
    return {"static_unavailable": True, "repr": _short_repr(value)}


def _is_plain(value) -> bool:
    if isinstance(value, _JSON_SCALARS):
        return True
    if type(value) in (list, tuple):
        return all(_is_plain(item) for item in value)
    return False


class UnrestorableArgument(ValueError):
    """A recorded argument that cannot be rebuilt (e.g. an unpicklable static value)."""


def _import_attribute(reference: str):
    module_name, _, qualname = reference.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def decode_value(data) -> Any:
    """Rebuild a pytree of ``jax.ShapeDtypeStruct`` (or static values) from JSON."""
    import jax

    if data is None:
        return None
    if "array" in data:
        spec = data["array"]
        if spec["dtype"].startswith("key<"):
            raise UnrestorableArgument(f"a typed PRNG key ({spec['dtype']}) cannot be rebuilt from the record")
        return jax.ShapeDtypeStruct(tuple(spec["shape"]), spec["dtype"], weak_type=spec.get("weak_type", False))
    if "dict" in data:
        return {key: decode_value(item) for key, item in data["dict"]}
    if "list" in data:
        return [decode_value(item) for item in data["list"]]
    if "tuple" in data:
        return tuple(decode_value(item) for item in data["tuple"])
    if "namedtuple" in data:
        cls = _import_attribute(data["namedtuple"])
        return cls(**{name: decode_value(item) for name, item in data["fields"].items()})
    if "pytree" in data:
        raise UnrestorableArgument(f"a {data.get('type', 'custom pytree')} argument cannot be rebuilt from "
                                   "the record (only its structure and avals are written)")
    if "object" in data:
        raise UnrestorableArgument(f"a {data['object']} argument cannot be rebuilt from the record")
    if "static" in data:
        value = data["static"]
        return tuple(value) if isinstance(value, list) else value
    if data.get("static_unavailable"):
        raise UnrestorableArgument(f"static argument {data['repr']} is not plain data, so the record holds "
                                   "only its repr")
    raise UnrestorableArgument(f"unknown argument encoding: {json.dumps(data)[:200]}")


def describe(data) -> str:
    """A short human form of an encoded argument: ``{'w': f32[4,4]}``."""
    if data is None:
        return "None"
    if "array" in data:
        spec = data["array"]
        return f"{spec['dtype']}[{','.join(map(str, spec['shape']))}]"
    if "dict" in data:
        return "{" + ", ".join(f"{key!r}: {describe(item)}" for key, item in data["dict"]) + "}"
    if "list" in data:
        return "[" + ", ".join(describe(item) for item in data["list"]) + "]"
    if "tuple" in data:
        return "(" + ", ".join(describe(item) for item in data["tuple"]) + ")"
    if "namedtuple" in data:
        name = data["namedtuple"].rpartition(":")[2]
        return f"{name}(" + ", ".join(f"{key}={describe(item)}" for key, item in data["fields"].items()) + ")"
    if "pytree" in data:
        name = data.get("type", "pytree").rpartition(".")[2]
        leaves = data["leaves"]
        shown = ", ".join(describe(leaf) for leaf in leaves[:6])
        return f"{name}(" + shown + (f", ... {len(leaves)} leaves" if len(leaves) > 6 else "") + ")"
    if "object" in data:
        return data["object"].rpartition(".")[2]
    return data.get("repr", "?")

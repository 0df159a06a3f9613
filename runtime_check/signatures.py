"""Abstract call signatures as JSON: encode real arguments, decode to ShapeDtypeStructs.

A record file must be readable by people and by ``jaxmem verify`` in another
process.  Standard containers (dict, list, tuple, None, namedtuples) are
written as JSON; other registered pytree nodes (flax/equinox dataclasses)
fall back to a pickled tree structure, so a record file is as trusted as the
code it was recorded from.  Shardings are written as text for the report
and not restored: verification uses the default device placement.
"""

from __future__ import annotations

import base64
import importlib
import json
import pickle
from typing import Any

_JSON_SCALARS = (bool, int, float, str, type(None))


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
        return encode_array(value)
    return {"pytree": base64.b64encode(pickle.dumps(treedef)).decode("ascii"),
            "leaves": [encode_array(leaf) for leaf in leaves]}


def encode_static(value) -> dict:
    """Encode a static argument: JSON when it is plain data, else pickled."""
    if _is_plain(value):
        return {"static": value, "repr": repr(value)}
    try:
        return {"static_pickle": base64.b64encode(pickle.dumps(value)).decode("ascii"), "repr": repr(value)}
    except Exception:  # noqa: BLE001 - any unpicklable value is reported, not fatal
        return {"static_unavailable": True, "repr": repr(value)}


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
        treedef = pickle.loads(base64.b64decode(data["pytree"]))
        return jax.tree_util.tree_unflatten(treedef, [decode_value(leaf) for leaf in data["leaves"]])
    if "static" in data:
        value = data["static"]
        return tuple(value) if isinstance(value, list) else value
    if "static_pickle" in data:
        return pickle.loads(base64.b64decode(data["static_pickle"]))
    if data.get("static_unavailable"):
        raise UnrestorableArgument(f"static argument {data['repr']} could not be recorded (not picklable)")
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
        return "pytree(" + ", ".join(describe(leaf) for leaf in data["leaves"]) + ")"
    return data.get("repr", "?")

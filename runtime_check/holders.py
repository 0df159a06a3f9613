"""Who else holds a donated argument's arrays, on the live objects of one call.

Used by ``jaxmem confirm`` before a call donates: a donation is unsafe when
a donated leaf is also reachable from something other than the argument's
own pytree, because that holder sees a deleted array afterwards.  Two checks:

* :func:`repeated_leaves` (cheap, every call): the same array twice among
  the donated leaves, or also passed in a parameter that is not donated
  (``TrainState(params=params, ema_params=params)``: XLA refuses to donate
  one buffer twice, the run fails).
* :func:`outside_holders` (one heap scan with ``gc.get_referrers``): a leaf
  or an inner node of the argument referenced by a list, a dict, a
  generator's frame, a closure cell, a default argument value or an
  attribute of another object.  The argument's root object is expected to
  be held by the caller's variable, so for it only containers, generators,
  cells and defaults count.  Variables of running functions and module
  globals are not refutations (the run's read-after check sees whether they
  are read again); they come back as notes.
"""

from __future__ import annotations

import gc
import os
import sys
import types
from dataclasses import dataclass


@dataclass(frozen=True)
class Holder:
    """Something outside the donated argument that references one of its objects."""

    held: str  # the donated value, as the user would write it: state.params['Dense_0']['kernel']
    holder: str  # who holds it, in words
    refutes: bool  # False: a variable of a running function or a module global (a note)
    expected: bool = False  # the object an nnx State was split from (a note, with its own words)


def repeated_leaves(donated: list[tuple[str, list, list]], others: list[tuple[str, list, list]]) -> list[Holder]:
    """Arrays appearing twice among the donated leaves or also in a non-donated argument.

    Each entry is ``(parameter, leaves, names)``; names are computed lazily by
    the caller only when a repeat is found (``names`` may be a callable).
    """
    seen: dict[int, tuple[str, int]] = {}
    repeats = []
    for label, leaves, _ in donated:
        for index, leaf in enumerate(leaves):
            key = id(leaf)
            if key in seen:
                repeats.append(((label, index), seen[key]))
            else:
                seen[key] = (label, index)
    if not repeats and not others:
        return []
    found = []
    names = {label: names for label, _, names in [*donated, *others]}
    name_of = lambda label, index: _resolve(names[label])[index]
    for (label, index), (first_label, first_index) in repeats:
        # Both sides: donating either one alone passes the array undonated beside it, which jax
        # rejects as well ("donate a buffer which is also used by the same call").
        found.append(Holder(name_of(first_label, first_index),
                            f"`{name_of(label, index)}` (the same array, donated twice)", True))
        found.append(Holder(name_of(label, index),
                            f"`{name_of(first_label, first_index)}` (the same array, donated twice)", True))
    for label, leaves, _ in others:
        for index, leaf in enumerate(leaves):
            first = seen.get(id(leaf))
            if first is not None:
                found.append(Holder(name_of(*first),
                                    f"`{name_of(label, index)}` (the same array, passed undonated in the same call)",
                                    True))
    return found


def _resolve(names):
    return names() if callable(names) else names


def own_nodes(value, is_leaf) -> tuple[list[tuple[object, str]], set[int]]:
    """``([(node, key path)], ids)``: the pytree nodes of ``value`` and the containers inside them.

    A node's ``__dict__`` and the plain containers among its attributes
    belong to it (a ``Variable``'s value dict, a dataclass's fields).
    """
    import jax

    nodes, ids, visited = [], set(), set()
    stack = [(value, "")] + _graph_nodes(value)
    while stack:
        node, path = stack.pop()
        if id(node) in visited or is_leaf(node) or _shared_atom(node):
            continue
        visited.add(id(node))
        children = jax.tree_util.tree_flatten_with_path(node, is_leaf=lambda x, n=node: x is not n)[0]
        if len(children) == 1 and children[0][1] is node:
            continue  # an opaque leaf (not an array)
        ids.add(id(node))
        nodes.append((node, path))
        attributes = getattr(node, "__dict__", None)
        if attributes is not None:
            ids.add(id(attributes))
            for attribute in attributes.values():
                if type(attribute) in (dict, list, tuple) and not any(map(is_leaf, _items(attribute))):
                    ids.add(id(attribute))
        stack.extend((child, path + jax.tree_util.keystr(key)) for key, child in children)
    return nodes, ids


def refers_to_itself(value) -> bool:
    """Whether an nnx object in ``value`` reaches itself through its attributes (``m.ref = m``, which
    nnx's graph transforms allow).  jax's pytree flattening recurses without end on such a value,
    and a RecursionError raised inside it leaves the interpreter unable to recover, so jaxmem
    must not flatten it at all.  Plain pytrees are not walked (they cannot be cyclic and flatten)."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None:
        return False
    is_node = nnx.graph.is_graph_node
    tops = [value] if is_node(value) else [v for v in _items(value) if is_node(v)] \
        if type(value) in (dict, list, tuple) else []
    on_path, done = set(), set()
    for top in tops:
        stack = [(top, iter(_attributes(top)))]
        on_path.add(id(top))
        while stack:
            node, children = stack[-1]
            child = next(children, stack)  # the stack itself marks the end
            if child is stack:
                on_path.discard(id(node))
                done.add(id(node))
                stack.pop()
                continue
            if id(child) in on_path:
                return True
            if id(child) in done or not (is_node(child) or type(child) in (dict, list, tuple)):
                continue
            on_path.add(id(child))
            stack.append((child, iter(_attributes(child))))
    return False


def _attributes(node):
    """What an nnx node or a plain container refers to (its attribute values, its items)."""
    if type(node) in (dict, list, tuple):
        return list(_items(node))
    return list(getattr(node, "__dict__", {}).values())


def _shared_atom(value) -> bool:
    """None, ``()`` and plain scalars are shared by the whole program: never a donated node."""
    return value is None or type(value) in (bool, int, float, complex, str, bytes) or (
        type(value) is tuple and not value)


def _graph_nodes(value) -> list[tuple[object, str]]:
    """Every node and Variable of an nnx graph (jax's flattening of nnx objects skips some)."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None or not nnx.graph.is_graph_node(value):
        return []
    return [(node, "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path))
            for path, node in nnx.graph.iter_graph(value)
            if path and (nnx.graph.is_graph_node(node) or isinstance(node, nnx.Variable))]


def _items(container):
    return container.values() if isinstance(container, dict) else container


def outside_holders(roots: list[tuple[object, str]], leaves: list[tuple[object, str]], own: set[int],
                    ignore: set[int], expected: dict[int, frozenset[int]] | None = None,
                    also_expected=None) -> list[Holder]:
    """Holders of the donated ``roots``/inner nodes/``leaves`` outside ``own`` (one heap scan).

    ``roots`` and ``leaves`` pair each object with its user-facing name
    (inner nodes go with the leaves: every holder of theirs counts).
    ``ignore`` holds ids of jaxmem's own containers (the call's argument tuple).
    ``expected`` maps an object's id to the ids of holders that are notes, not
    refutations (the Module an nnx State was split from: ``nnx_splits``);
    ``also_expected(obj, referrer)``, when given, says the same of other holders
    (an nnx object sharing that Module's Variables: ``nnx_splits.shares_variables``).
    """
    expected = expected or {}
    targets = {id(obj): (obj, name, is_root) for obj, name, is_root in
               [*((o, n, True) for o, n in roots), *((o, n, False) for o, n in leaves)]}
    frame = sys._getframe()
    skip = own | ignore | _jaxmem_temporaries(frame)  # before the scan: its result must not hide holders
    gc.collect()  # unreachable cycles not yet collected still hold references: they are not holders
    referrers = gc.get_referrers(*[entry[0] for entry in targets.values()])
    skip |= {id(referrers), id(frame)}
    found: list[Holder] = []
    try:
        for referrer in referrers:
            if id(referrer) in skip or isinstance(referrer, types.FrameType):
                continue
            for key, (obj, name, is_root) in targets.items():
                if not _references(referrer, obj):
                    continue
                if isinstance(referrer, tuple) and not _visibly_held(referrer, skip):
                    continue  # a call's argument tuple on the C stack, or a running function's local
                holder = describe_holder(referrer, obj)
                if holder is None:
                    continue
                text, kind = holder
                if id(referrer) in expected.get(key, ()) or (also_expected is not None
                                                             and also_expected(obj, referrer)):
                    found.append(Holder(name, text, False, expected=True))
                elif kind == "variable":
                    found.append(Holder(name, text, False))
                elif not is_root or kind in ("container", "generator", "cell", "default"):
                    found.append(Holder(name, text, True))
    finally:
        del referrers, frame
    return found


_JAXMEM_DIR = os.path.dirname(os.path.abspath(__file__))
# jaxmem's own folders (installed or a checkout): its frames are never the user's code
_JAXMEM_PACKAGES = tuple(os.path.join(os.path.dirname(_JAXMEM_DIR), name).replace("\\", "/") + "/"
                         for name in ("runtime_check", "jaxmem", "lint", "codemod"))


def _jaxmem_temporaries(frame) -> set[int]:
    """Ids of what jaxmem's own frames hold (pairs, lists, lambdas' defaults): not holders."""
    ids: set[int] = set()

    def add(value, depth):
        ids.add(id(value))
        if isinstance(value, types.FunctionType):
            for part in (value.__defaults__, value.__closure__):
                if part is not None:
                    add(part, depth)
        elif depth < 3 and isinstance(value, (list, tuple, dict)) and len(value) < 100_000:
            for item in (value.values() if isinstance(value, dict) else value):
                if isinstance(item, (list, tuple, dict, types.FunctionType, types.CellType)):
                    add(item, depth + 1)

    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(_JAXMEM_DIR):
            for value in frame.f_locals.values():
                add(value, 0)
        # A running function's variables, once read through f_locals, sit in a dict the frame
        # keeps: that dict is the variables themselves (frame_variables names them), not a holder.
        ids.add(id(frame.f_locals))
        frame = frame.f_back
    return ids


def _visibly_held(obj, skip: set[int]) -> bool:
    scan = gc.get_referrers(obj)
    try:
        return any(id(r) not in skip and not isinstance(r, types.FrameType) for r in scan)
    finally:
        del scan


def _references(referrer, obj) -> bool:
    if isinstance(referrer, dict):
        return any(value is obj for value in referrer.values())
    if isinstance(referrer, (list, tuple, set, frozenset)):
        return any(item is obj for item in referrer)
    if isinstance(referrer, types.CellType):
        try:
            return referrer.cell_contents is obj
        except ValueError:
            return False
    return any(item is obj for item in gc.get_referents(referrer))  # a generator, an object's inline attributes


def describe_holder(referrer, obj) -> tuple[str, str] | None:
    """``(words, kind)`` naming ``referrer`` as the user would; None to leave it out.

    kind is ``variable`` (a module global), ``container``, ``generator``,
    ``cell``, ``default`` or ``attribute``.
    """
    if isinstance(referrer, types.GeneratorType):
        code = referrer.gi_code
        return (f"the generator {code.co_name}() at {code.co_filename}:{code.co_firstlineno} "
                f"(suspended at line {referrer.gi_frame.f_lineno if referrer.gi_frame else '?'})", "generator")
    if isinstance(referrer, types.CellType):
        function = _owner(referrer, lambda f: referrer in (getattr(f, "__closure__", None) or ()))
        if function is not None:
            name = function.__code__.co_freevars[function.__closure__.index(referrer)]
            return f"the closure variable `{name}` of {_function_text(function)}", "cell"
        return None  # a running function's own cell variable, no closure alive: a local variable
    if isinstance(referrer, dict):
        module = _module_of_globals(referrer)
        key = next((k for k, v in referrer.items() if v is obj), "?")
        if module is not None:
            return f"the global `{key}` of module {module}", "variable"
        owner = _owner(referrer, lambda o: getattr(o, "__dict__", None) is referrer)
        if owner is not None and not isinstance(owner, types.ModuleType):
            return f"the attribute `{key}` of {_object_text(owner)}", "attribute"
        if owner is None and _is_kwdefaults(referrer):
            return f"a keyword default value ({key!r})", "default"
        return f"the key {key!r} of {_named(referrer, 'a dict')}", "container"
    if isinstance(referrer, tuple):
        function = _owner(referrer, lambda f: getattr(f, "__defaults__", None) is referrer)
        if function is not None:
            return f"a default argument value of {_function_text(function)}", "default"
        return _named(referrer, "a tuple"), "container"
    if isinstance(referrer, (list, set, frozenset)):
        return _named(referrer, f"a {type(referrer).__name__}"), "container"
    if isinstance(referrer, (types.FunctionType, types.ModuleType, type)):
        return None
    attribute = next((k for k, v in getattr(referrer, "__dict__", {}).items() if v is obj), None)
    if attribute is not None:
        return f"the attribute `{attribute}` of {_object_text(referrer)}", "attribute"
    return f"{_object_text(referrer)}", "attribute"


def _owner(contained, test):
    for candidate in gc.get_referrers(contained):
        if test(candidate):
            return candidate
        if isinstance(candidate, tuple):  # a cell sits in the function's __closure__ tuple
            for outer in gc.get_referrers(candidate):
                if test(outer):
                    return outer
    return None


def _is_kwdefaults(mapping) -> bool:
    return any(getattr(f, "__kwdefaults__", None) is mapping for f in gc.get_referrers(mapping))


def _module_of_globals(mapping) -> str | None:
    name = mapping.get("__name__") if "__builtins__" in mapping else None
    return name if isinstance(name, str) else None


def _function_text(function) -> str:
    code = function.__code__
    return f"{function.__qualname__}() ({code.co_filename}:{code.co_firstlineno})"


def _object_text(obj) -> str:
    return f"a {type(obj).__qualname__} object"


def _named(container, fallback: str) -> str:
    """``a list (`history`, a global of module __main__)`` when a variable holds the container."""
    for candidate in gc.get_referrers(container):
        if isinstance(candidate, dict):
            module = _module_of_globals(candidate)
            key = next((k for k, v in candidate.items() if v is container), None)
            if key is not None and module is not None:
                return f"{fallback} (the global `{key}` of module {module})"
            owner = _owner(candidate, lambda o: getattr(o, "__dict__", None) is candidate)
            if key is not None and owner is not None:
                return f"{fallback} (the attribute `{key}` of {_object_text(owner)})"
        if isinstance(candidate, types.GeneratorType):
            return f"{fallback} held by the generator {candidate.gi_code.co_name}()"
    for frame_info in _user_frames():
        for key, value in frame_info.f_locals.items():
            if value is container:
                return (f"{fallback} (the variable `{key}` of {frame_info.f_code.co_name}() at "
                        f"{frame_info.f_code.co_filename}:{frame_info.f_lineno})")
    return fallback


def _user_frames():
    frame = sys._getframe(1)
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            yield frame
        frame = frame.f_back


_NOT_USER_CODE = ("/jax/", "/jaxlib/", "/runpy.py", "/importlib/", "/site-packages/", "/dist-packages/",
                  "/_pytest/", "/pluggy/")


def _is_user_file(path: str) -> bool:
    path = path.replace("\\", "/")
    if path.startswith("<ipython-input-"):  # a cell of a terminal IPython session
        return True
    return (not path.startswith("<") and not path.startswith(_JAXMEM_PACKAGES)
            and not any(part in path for part in _NOT_USER_CODE))


def frame_variables(objects: list[tuple[object, str]], skip_frames: int = 1) -> list[Holder]:
    """Variables of running user functions bound to ``objects`` (notes, not refutations)."""
    wanted = {id(obj): name for obj, name in objects}
    found = []
    frame = sys._getframe(skip_frames)
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            for key, value in frame.f_locals.items():
                name = wanted.get(id(value))
                if name is not None:
                    found.append(Holder(name, f"the variable `{key}` of {frame.f_code.co_name}() "
                                              f"({frame.f_code.co_filename}:{frame.f_lineno})", False))
        frame = frame.f_back
    return found


def first_user_site(frame) -> tuple[str, int, str] | None:
    """``(file, line, function)`` of the innermost frame of user code from ``frame`` outwards."""
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None

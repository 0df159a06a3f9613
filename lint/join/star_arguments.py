"""What a ``*args``/``**kwargs`` argument passes, when a local literal built it.

Kernel tests build a call's arguments once and spread them::

    args = (q, k, v, kv_cache)
    kwargs = {"sliding_window": window}
    out, kv_cache = ragged_paged_attention(*args, **kwargs)

Left as they are, such a call may fill any parameter, so no parameter of the
callee can be judged at all.  The call is read as if it passed the literal's
elements in place of the star argument (``ragged_paged_attention(q, k, v,
kv_cache, sliding_window=window)``) only when that is exactly what it passes
and nothing else still reaches those values through the literal:

* the star argument is a local name (not a parameter, global or closure
  variable) that its scope binds once, by a plain assignment of a tuple
  literal (``*``) or of a dict with string keys (``**``: a display, or
  ``dict(a=x)`` where nothing in the file binds ``dict``), with no starred
  element;
* each element is a name, or an expression that passes no value as-is
  (``jnp.copy(x)``, a literal); no name it reads is rebound between the
  literal and the call (the literal holds the values of that moment);
* the literal's name is not read after the call (the next iteration's
  ``f(*args)`` reads it again), does not outlive the scope at module level,
  and is not captured by a closure.  The literal is an alias of each named
  element, so a call it was passed to before (``reference(*args)``) or a
  container that stores it is that element's doubt, as for any alias; an
  element with no name (``jnp.copy(x)``) is spread only when nothing at all
  holds or reads the literal besides the call;
* a ``**`` literal's keys are identifiers that the call does not also pass
  by keyword.

Otherwise the argument stays unknown (the call is "open"), as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst

from jaxmem.lint.syntax.walk import bound_names, descendants, descendants_of_type
from jaxmem.lint.values.flow import Flow, Point, direct_refs, view_operands
from jaxmem.lint.values.refs import RefKey, ident, ref_key


@dataclass(frozen=True)
class Passed:
    """One argument as a call passes it: by position (``keyword`` None) or by keyword,
    or (``star``: ``*``/``**``) a star argument that could not be spread."""

    keyword: str | None
    value: cst.BaseExpression
    star: str = ""


def passed_arguments(
    call: cst.Call,
    flow: Flow,
    after_call: Point,
    *,
    is_local: Callable[[RefKey], bool],
    outlives_scope: bool,
    held_elsewhere: Callable[[RefKey], tuple[list, list]],
    builtin: Callable[[str], bool],
    imported: frozenset[str] = frozenset(),
) -> tuple[list[Passed], bool]:
    """``call``'s arguments in order, each star argument that can be spread (see the
    module's docstring) replaced by its literal's elements; and whether one was.
    ``after_call``: the point just after the call's CALL event; ``is_local``: whether a
    key names a local of the call's scope; ``outlives_scope``: the scope is a module,
    whose names live on after its last statement; ``held_elsewhere``: a key's escapes
    and the reads of its aliases after the call (``Use`` lists: containers, calls that
    keep it, names bound to it or to what it holds); ``builtin``: whether a name is
    Python's own there (no statement of the file binds it)."""
    if not any(arg.star for arg in call.args):
        return [Passed(_keyword(arg), arg.value) for arg in call.args], False
    explicit = {ident(arg.keyword.value) for arg in call.args if arg.keyword is not None}
    out: list[Passed] = []
    spread_any = False
    for arg in call.args:
        if not arg.star:
            out.append(Passed(_keyword(arg), arg.value))
            continue
        spread = _spread(arg, call, flow, after_call, is_local, outlives_scope, held_elsewhere, builtin, imported)
        if spread is not None and arg.star == "**":
            keys = [passed.keyword for passed in spread]
            if len(set(keys)) != len(keys) or explicit & set(keys):
                spread = None  # Python raises on a keyword given twice
            else:
                explicit |= set(keys)
        if spread is None:
            out.append(Passed(None, arg.value, arg.star))
        else:
            out.extend(spread)
            spread_any = True
    return out, spread_any


def _keyword(arg: cst.Arg) -> str | None:
    return ident(arg.keyword.value) if arg.keyword is not None else None


def _spread(arg: cst.Arg, call: cst.Call, flow: Flow, after_call: Point, is_local, outlives_scope: bool,
            held_elsewhere, builtin, imported: frozenset[str]) -> list[Passed] | None:
    if type(arg.value) is not cst.Name:
        return None
    key = (arg.value.value,)
    if not is_local(key) or key[0] in flow.captured or key[0] in flow.globals:
        return None
    writes = [(point, event) for point, event in flow.writes_under(key[0])
              if event.key == key and event.detail != "del"]
    if len(writes) != 1:
        return None
    (made, event), = writes
    literal = event.origin
    if event.origin_kind != "value" or type(event.node) is not cst.Name or flow.writes_from(literal) != 1:
        return None  # not ``args = (...)`` alone: ``a = args = (...)``, ``args, b = (...), c``
    elements = _elements(literal, arg.star, builtin)
    if elements is None:
        return None
    after_literal = Point(made.node, made.index + 1)
    for element in elements:
        if not _passes_value_made_at_literal(element.value, call, flow, after_literal, imported):
            return None
    later = flow.search(after_call, key)
    if later.reads or (outlives_scope and later.reached_exit):
        return None
    if all(type(element.value) in _SELF_CHECKED for element in elements):
        return elements
    # A temporary (``jnp.copy(x)``) has no name whose aliases and escapes the analysis
    # follows: the literal's own must be none.  A named element's are its own question
    # (the literal is an alias of it, followed with its escapes and later reads).
    escapes, alias_reads = held_elsewhere(key)
    own = {element.value.value for element in elements if type(element.value) is cst.Name}
    if escapes or any(use.text not in own for use in alias_reads):
        return None
    return elements


# Elements whose aliases the analysis follows itself (names), or that hold no array (constants).
_SELF_CHECKED = (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)


def _elements(literal, star: str, builtin: Callable[[str], bool]) -> list[Passed] | None:
    """The tuple's (``*``) or the string-keyed dict's (``**``, a display or a call of the
    builtin ``dict`` with keywords only) elements, if it is one."""
    if star == "**" and type(literal) is cst.Call and type(literal.func) is cst.Name \
            and literal.func.value == "dict" and builtin("dict"):
        if any(arg.star or arg.keyword is None for arg in literal.args):
            return None
        return [Passed(ident(arg.keyword.value), arg.value) for arg in literal.args]
    if star == "*" and type(literal) is cst.Tuple:
        if any(type(e) is not cst.Element for e in literal.elements):
            return None
        return [Passed(None, e.value) for e in literal.elements]
    if star == "**" and type(literal) is cst.Dict:
        out = []
        for element in literal.elements:
            if type(element) is not cst.DictElement or type(element.key) is not cst.SimpleString:
                return None
            name = element.key.evaluated_value
            if not isinstance(name, str) or not name.isidentifier() or ident(name) != name:
                return None  # a key is not NFKC-normalised as a written keyword is: ``ﬁeld`` is not ``field``
            out.append(Passed(name, element.value))
        return out
    return None


def _passes_value_made_at_literal(value: cst.BaseExpression, call: cst.Call, flow: Flow, after_literal: Point,
                                  imported: frozenset[str]) -> bool:
    """Whether ``value``, read where the literal is built, is what the call receives:
    a name, or an expression that hands on no value as-is, none of whose names is
    rebound on a path from the literal to the call."""
    key = ref_key(value)
    if key is not None:
        if len(key) != 1:
            return False
        names: Sequence[str] = key
    elif direct_refs(value, imported):
        return False
    else:
        names = {n.value for n in descendants_of_type(value, cst.Name)}
    for name in names:
        if flow.search(after_literal, (name,), until_call=call).kills:
            return False  # rebound on some path from the literal (to the call, or not: kept simple)
        for _, event in flow.writes_under(name):
            # ``q += 1`` rebinds an array name without killing it for liveness
            if event.origin_kind == "aug" and flow.search(after_literal, (name,), until_event=event).reached:
                return False
    return True


def literal_elements(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The elements of a pytree written out in a call (``(params, opt_state)``,
    ``[w, b]``, ``{"w": w}``), or None for anything else (also a display with a
    starred element or a ``**`` spread, whose elements are not written out)."""
    if isinstance(value, (cst.Tuple, cst.List)) and all(isinstance(e, cst.Element) for e in value.elements):
        return [element.value for element in value.elements]
    if isinstance(value, cst.Dict) and all(isinstance(e, cst.DictElement) for e in value.elements):
        return [element.value for element in value.elements]
    return None


def passed_leaves(value: cst.BaseExpression, imported: frozenset[str]) -> list[cst.BaseExpression]:
    """What ``value`` passes as it is, down to what is neither a display nor a call that
    may return its operands (``(w, jnp.asarray(s))``: ``w`` and ``s``)."""
    elements = literal_elements(value)
    if elements is None and isinstance(value, cst.Call):
        elements = view_operands(value, imported) or None
    if elements is None:
        return [value]
    return [leaf for element in elements for leaf in passed_leaves(element, imported)]


def binds_anywhere(module: cst.Module, name: str) -> bool:
    """Whether some statement of ``module`` binds ``name`` (a def, class, parameter,
    assignment, loop target, import...), or a ``from m import *`` may."""
    for node in descendants(module):
        if type(node) is cst.ImportFrom and type(node.names) is cst.ImportStar:
            return True
        if name in bound_names(node):
            return True
    return False

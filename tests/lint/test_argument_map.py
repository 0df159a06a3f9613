"""The argument map of a call that passes ``*args``/``**kwargs`` holds only what
Python itself binds, whatever those hold: checked against ``inspect``'s binding
of the same call for several contents of the starred values."""

import inspect

import libcst as cst
import pytest

from jaxmem.lint.callables.signatures import Signature, leading_positionals, map_arguments

SOURCE = "def f(a, b, c=0, *rest, k=1, **kw): pass"
MARKED = ["X", "Y", "Z"]  # the call's own plain arguments, in order


def f(a, b, c=0, *rest, k=1, **kw):
    return None


CALLS = [
    "f(X, *s)",
    "f(X, Y, *s, k=Z)",
    "f(*s)",
    "f(X, *s, Y)",
    "f(X, Y, **d)",
    "f(k=X, *s)",
    "f(X, *s, **d)",
]
STARS = [(), ("s1",), ("s1", "s2"), ("s1", "s2", "s3", "s4")]
DOUBLES = [{}, {"c": "d1"}, {"k": "d2"}, {"extra": "d3"}]


def _mapped(call_text: str) -> dict[str, str]:
    """Parameter -> the plain argument (``X``, ``Y``, ``Z``) jaxmem's map binds to it."""
    call = cst.parse_expression(call_text)
    signature = Signature.of(cst.parse_module(SOURCE).body[0])
    plain = [a for a in call.args if not a.star]
    positional = [a for a in plain if a.keyword is None]
    keywords = tuple(a.keyword.value for a in plain if a.keyword is not None)
    mapping = map_arguments(len(positional), keywords, signature, 0, any(a.star for a in call.args),
                            leading_positionals(call))
    assert mapping.resolved and mapping.open
    numbered = positional + [a for a in plain if a.keyword is not None]
    out = {signature.name_at(index): numbered[number].value.value for index, number in mapping.by_index.items()}
    out.update({name: numbered[number].value.value for name, number in mapping.by_name.items()})
    return out


@pytest.mark.parametrize("call_text", CALLS)
def test_what_the_map_binds_python_binds_too(call_text):
    mapped = _mapped(call_text)
    bound_somewhere = False
    for s in STARS:
        for d in DOUBLES:
            namespace = {"X": "X", "Y": "Y", "Z": "Z", "s": s, "d": d}
            args, kwargs = eval(call_text.replace("f(", "(lambda *a, **k: (a, k))("), namespace)
            try:
                bound = inspect.signature(f).bind(*args, **kwargs)
            except TypeError:
                continue  # Python rejects the call: nothing is bound
            bound_somewhere = True
            for param, value in mapped.items():
                assert bound.arguments[param] == value, (call_text, s, d, param)
    assert bound_somewhere


@pytest.mark.parametrize("call_text, expected", [
    ("f(X, *s)", {"a": "X"}),
    ("f(X, Y, *s, k=Z)", {"a": "X", "b": "Y", "k": "Z"}),
    ("f(*s)", {}),
    ("f(X, *s, Y)", {"a": "X"}),
    ("f(X, Y, **d)", {"a": "X", "b": "Y"}),
])
def test_the_leading_positionals_and_the_named_keywords_are_mapped(call_text, expected):
    assert _mapped(call_text) == expected


def test_a_call_without_stars_is_closed():
    signature = Signature.of(cst.parse_module(SOURCE).body[0])
    mapping = map_arguments(2, ("k",), signature)
    assert mapping.resolved and not mapping.open and mapping.by_index == {0: 0, 1: 1}

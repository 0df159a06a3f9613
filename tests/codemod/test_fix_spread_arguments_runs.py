"""A call that spreads a local literal, ``attend(*args, **kwargs)`` with
``args = (q, cache)`` (tpu-inference's kernel tests), passes the literal's
elements: its parameters are judged as if it passed them itself.  Only a
literal bound once, whose elements are not rebound before the call, and which
nothing reads or holds after it, is read this way; otherwise the call may fill
any parameter and none is proposed.  Each claim runs on jax here."""

import sys
import warnings

import pytest
from fix_runs import crashes_when_forced, fix_and_rerun, load, report_of, run

from jaxmem.findings import Confidence

jax = pytest.importorskip("jax")

PROGRAM = """
import functools

import jax
import jax.numpy as jnp


@jax.jit
def attend(q, cache, scale):
    return q * scale, cache.at[0].set(q[0])


def main(rounds):
    q = jnp.ones(4)
    cache = jnp.zeros(4)
    for _ in range(rounds):
BODY
    return float(out.sum()), float(cache.sum())


if __name__ == "__main__":
    print(main(3))
"""

SPREAD = """\
        args = (q, cache)
        kwargs = {"scale": 2.0}
        out, cache = attend(*args, **kwargs)"""

# each of these passes (or keeps) the value the donation would delete
READ_AFTER = """\
        args = (q, cache)
        out, cache = attend(*args, 2.0)
        out = out + args[1]"""
REBOUND_BETWEEN = """\
        keep = cache
        args = (q, cache)
        cache = jnp.zeros(4)
        out, cache = attend(*args, 2.0)
        out = out + keep"""
STORED_TEMPORARY = """\
        args = (q, cache * 1.0)
        seen = [args]
        out, cache = attend(*args, 2.0)
        out = out + seen[0][1]"""
AUGMENTED = REBOUND_BETWEEN.replace("cache = jnp.zeros(4)", "cache += 1.0")
STORED = """\
        args = (q, cache)
        seen = [args]
        out, cache = attend(*args, 2.0)
        out = out + seen[0][1]"""

# the kernel tests' habit: the literal goes to a reference first (an alias of each element,
# so what the reference does with it is each element's question)
CHECKED = """\
        args = (q, cache)
        kwargs = {"scale": 2.0}
        expected, _ = REFERENCE(*args, **kwargs)
        out, cache = attend(*args, **kwargs)
        out = out + expected[0]"""
REFERENCES = """


def reference(q, cache, scale):
    return q * scale, cache.at[0].set(q[0])


def keep(q, cache, scale):
    return q, cache
"""

UNDONATED = "@jax.jit\ndef attend"
DONATED = "@functools.partial(jax.jit, donate_argnums=1)\ndef attend"


def _findings(program: str, code: str = "JXM001"):
    return [f for f in report_of(program).findings if f.code == code]


def test_a_spread_literal_passes_its_elements(tmp_path):
    program = PROGRAM.replace("BODY", SPREAD)
    (finding,) = _findings(program)
    assert "`cache`" in finding.message and finding.confidence is Confidence.HIGH, finding.message
    fixed = load(fix_and_rerun(tmp_path, program))
    cache = jax.numpy.zeros(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Some donated buffers were not usable" would fail here
        fixed["attend"](jax.numpy.ones(4), cache, 2.0)
    assert cache.is_deleted()


def _checked(reference: str) -> str:
    return PROGRAM.replace("BODY", CHECKED.replace("REFERENCE", reference)).replace(
        "\n\n\ndef main", REFERENCES + "\n\ndef main")


def test_a_literal_handed_to_a_reference_that_returns_new_arrays_is_spread(tmp_path):
    (finding,) = _findings(_checked("reference"))
    assert "`cache`" in finding.message and finding.confidence is Confidence.HIGH, finding.message
    fix_and_rerun(tmp_path, _checked("reference"))


def test_a_literal_handed_to_a_function_that_keeps_it_is_medium(tmp_path):
    program = _checked("keep")
    (finding,) = _findings(program)
    assert finding.confidence is Confidence.MEDIUM and "keep(*args, **kwargs)" in finding.message, finding.message
    # what ``keep`` returned holds the round's cache, which the donation deletes
    program = program.replace("expected, _ = keep", "expected = keep").replace("expected[0]", "expected[1]")
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED)


@pytest.mark.parametrize("body", [READ_AFTER, REBOUND_BETWEEN, AUGMENTED, STORED, STORED_TEMPORARY],
                         ids=["read after", "rebound", "augmented", "stored", "stored temporary"])
def test_a_literal_still_holding_the_value_is_not_spread(tmp_path, body):
    program = PROGRAM.replace("BODY", body)
    assert not [f for f in _findings(program) if f.confidence is Confidence.HIGH]
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED)


@pytest.mark.parametrize("literal", [
    "args = [q, cache]",  # a list may change before the call
    "args = (q, *[cache])",
    "args = (q, cache)\n        args += ()",
    "args = other = (q, cache)",
], ids=["list", "starred", "augmented", "two names"])
def test_other_literals_leave_the_call_open(literal):
    body = f"        {literal}\n        out, cache = attend(*args, 2.0)"
    program = PROGRAM.replace("BODY", body)
    assert not _findings(program)


def test_a_dict_call_with_keywords_is_spread_unless_dict_is_rebound(tmp_path):
    body = SPREAD.replace('kwargs = {"scale": 2.0}', "kwargs = dict(scale=2.0)")
    program = PROGRAM.replace("BODY", body)
    (finding,) = _findings(program)
    assert "`cache`" in finding.message and finding.confidence is Confidence.HIGH, finding.message
    fix_and_rerun(tmp_path, program)
    by_keyword = PROGRAM.replace("BODY", "        kwargs = dict(cache=cache, scale=2.0)\n"
                                         "        out, cache = attend(q, **kwargs)")
    assert [f.fix.name for f in _findings(by_keyword)] == ["cache"]
    shadowed = by_keyword.replace("\n\ndef main", "\n\ndef dict(**kwargs):\n    return kwargs\n\n\ndef main")
    assert not _findings(shadowed)


def test_a_keyword_given_twice_leaves_the_call_open():
    # Python raises on ``scale`` given twice: what ``cache`` receives is not decided statically
    body = '        kwargs = {"scale": 2.0, "cache": cache}\n        out, cache = attend(q, scale=1.0, **kwargs)'
    assert not _findings(PROGRAM.replace("BODY", body))
    assert _findings(PROGRAM.replace("BODY", body.replace("scale=1.0, ", "")))


def test_a_written_donation_through_a_spread_literal_is_a_use_after_donation(tmp_path):
    body = "        args = (q, cache)\n        out, new = attend(*args, 2.0)\n        cache = cache + new"
    program = PROGRAM.replace("BODY", body).replace(UNDONATED, DONATED)
    (finding,) = _findings(program, "JXM101")
    assert "`cache`" in finding.message, finding.message
    crashed = run(sys.executable, "-c", program, cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr, crashed.stderr


def test_a_key_nfkc_would_change_is_not_a_keyword():
    # Python normalises a written keyword (``ｃache=`` is ``cache=``) but not a dict's key
    display = '        kwargs = {"ｃache": cache}\n        out, cache = attend(q, scale=2.0, **kwargs)'
    assert not _findings(PROGRAM.replace("BODY", display))
    written = "        kwargs = dict(ｃache=cache)\n        out, cache = attend(q, scale=2.0, **kwargs)"
    assert [f.fix.name for f in _findings(PROGRAM.replace("BODY", written))] == ["cache"]

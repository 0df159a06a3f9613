"""A call that passes ``*batch`` or ``**kwargs`` after its leading positionals
(``state = step(state, *batch)``, levanter's trainer) still binds those leading
arguments exactly: Python places them first and rejects a parameter given
twice.  So the state is donated, and the fixed program runs with its old arrays
deleted (jax 0.10.2).  What the ``*``/``**`` arguments may fill stays unknown:
a parameter they may bind is never proposed, and a donated argument that the
same call also passes through ``*rest`` is read by the call itself: left alone,
and the forced donation really fails."""

import sys

import pytest
from fix_runs import crashes_when_forced, fix, fix_and_rerun, load, run, tool

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")

ALL = Settings(min_confidence=Confidence.LOW)

STAR = """
import jax
import jax.numpy as jnp


@jax.jit
def train_step(state, *batch, **options):
    scale = options.get("scale", 1.0)
    return jax.tree.map(lambda v: v - 0.1 * scale * sum(b.mean() for b in batch), state)


def main():
    state = {"w": jnp.ones((4, 4)), "b": jnp.zeros(4)}
    batches = [(jnp.ones(4), jnp.ones(2))] * 3
    extra = {"scale": 2.0}
    for batch in batches:
        state = train_step(state, *batch, **extra)
    print(float(state["w"].sum()))


if __name__ == "__main__":
    main()
"""


def _proposals(source: str) -> dict[str, str]:
    """``parameter name -> confidence`` of the JXM001 findings on ``source``."""
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    return {f.parameter_name: f.confidence.value for f in result.findings if f.code == "JXM001"}


def test_the_leading_argument_of_a_star_call_is_donated_and_the_program_runs(tmp_path):
    assert _proposals(STAR) == {"state": "high"}
    path = fix_and_rerun(tmp_path, STAR)
    assert "donate_argnums=0" in path.read_text()

    state = {"w": jax.numpy.ones((2, 2))}
    load(path)["train_step"](state, jax.numpy.ones(2))
    assert state["w"].is_deleted()


def test_a_parameter_the_star_argument_may_fill_is_not_proposed(tmp_path):
    # ``*pair`` fills both parameters: nothing is known of either.
    source = STAR.replace("def train_step(state, *batch, **options)", "def train_step(state, batch, **options)") \
        .replace("sum(b.mean() for b in batch)", "batch.mean()") \
        .replace("state = train_step(state, *batch, **extra)", "pair = (state, batch[0])\n"
                 "        state = train_step(*pair, **extra)")
    assert run(sys.executable, "-c", source, cwd=tmp_path).returncode == 0
    assert _proposals(source) == {}
    path = tmp_path / "train.py"
    path.write_text(source)
    shown = run(tool("jaxmem"), "check", "--show-skipped", "train.py", cwd=tmp_path)
    assert "passes *args/**kwargs, which may fill `state`" in shown.stdout, shown.stdout + shown.stderr


def test_a_keyword_the_double_star_argument_may_fill_is_not_proposed():
    source = STAR.replace("def train_step(state, *batch, **options)", "def train_step(state, *batch, scale=1.0)") \
        .replace('scale = options.get("scale", 1.0)\n', "") \
        .replace('extra = {"scale": 2.0}', 'extra = {"scale": jnp.ones(())}')
    found = _proposals(source)
    assert found == {"state": "high"} and "scale" not in found


def test_a_donated_argument_also_passed_through_star_rest_is_left_alone_and_fails_when_forced(tmp_path):
    source = STAR.replace("state = train_step(state, *batch, **extra)",
                          "rest = (state[\"w\"].sum() * 0 + batch[0], state[\"w\"])\n"
                          "        state = train_step(state, *rest)")
    assert run(sys.executable, "-c", source, cwd=tmp_path).returncode == 0
    assert _proposals(source) == {"state": "medium"}
    path, result = fix(tmp_path, source)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == source
    crashes_when_forced(tmp_path, "import functools\n" + source, "@jax.jit\ndef train_step",
                        "@functools.partial(jax.jit, donate_argnums=0)\ndef train_step",
                        error="previously donated in the same call")


READ_AFTER = """
import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, donate_argnums=0)
def train_step(state, *batch):
    return state - 0.1 * sum(b.mean() for b in batch)


def main():
    state = jnp.ones((4, 4))
    batch = (jnp.ones(4),)
    new = train_step(state, *batch)
    print(float(state.sum()), float(new.sum()))


main()
"""


def test_a_donated_leading_argument_read_after_a_star_call_is_jxm101_and_really_deleted(tmp_path):
    facts = facts_for_file("m.py", READ_AFTER, ALL, project_hints({"m.py": READ_AFTER}))
    (result,) = report([facts], ALL)
    assert [f.span.line for f in result.findings if f.code == "JXM101"] == [17]
    crashed = run(sys.executable, "-c", READ_AFTER, cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr, crashed.stderr

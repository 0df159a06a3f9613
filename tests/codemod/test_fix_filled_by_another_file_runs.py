"""A config that holds no array when made, filled with one by a function of
another project file whose result is the state (``state = make_state(config)``,
the function doing ``cfg.w = jnp.ones(4)`` and returning it in the state).

Reading ``config.w`` after the training reads an array of the state: donating
the state deletes it.  The function's file summary says which parameters it
stores into (``FunctionSummary.stores``), so the proposal stays at medium, the
default fix leaves the step alone, and the donation it would have written
really crashes.  A function that only reads its config keeps the proposal
high, and the fixed program runs with the old state deleted."""

import sys
from pathlib import Path

import pytest

from fix_runs import findings_of, left_alone_then_crashes, run, tool

pytest.importorskip("ml_collections")

STATES = """\
import jax.numpy as jnp


def make_state(cfg):
    cfg.w = jnp.ones(4)
    return {"w": cfg.w, "b": jnp.zeros(4)}


def make_plain(cfg):
    return {"w": jnp.ones(4) * cfg.scale, "b": jnp.zeros(4)}
"""

TRAIN = """\
import jax
import ml_collections

from states import {maker}


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x + 1, state)


config = ml_collections.ConfigDict({{"scale": 2.0}})
state = {maker}(config)
for _ in range(3):
    state = step(state)
print(float(state["w"].sum()), {read})
"""

# Outside the project (the analysis never sees it): records the leaves of the first state
# the maker returns, runs the training by importing it, and says whether they are deleted.
RUNNER = """\
import sys

import jax

sys.path.insert(0, {project!r})
import states  # noqa: E402

made = []
original = states.{maker}


def recorded(cfg):
    state = original(cfg)
    made.extend(jax.tree.leaves(state))
    return state


states.{maker} = recorded
import train  # noqa: E402,F401  (runs the training)

print("deleted", all(leaf.is_deleted() for leaf in made))
"""


def _project(folder: Path, maker: str, read: str) -> Path:
    folder.mkdir()
    (folder.parent / "runner.py").write_text(RUNNER.format(project=str(folder), maker=maker))
    (folder / "pyproject.toml").write_text("")
    (folder / "states.py").write_text(STATES)
    path = folder / "train.py"
    path.write_text(TRAIN.format(maker=maker, read=read))
    return path


def test_a_state_made_by_a_function_that_fills_the_config_is_left_alone(tmp_path):
    project = tmp_path / "project"
    path = _project(project, "make_state", "float(config.w.sum())")
    found = findings_of(project, "step")
    assert found["state"][0] == "medium" and "may store an array into its `cfg`" in found["state"][1], found
    assert run(sys.executable, "train.py", cwd=project).returncode == 0
    left_alone_then_crashes(project, "train.py", path, "@jax.jit\ndef step",
                            "@jax.jit(donate_argnums=0)\ndef step")


def test_a_state_made_by_a_function_that_reads_the_config_is_donated(tmp_path):
    project = tmp_path / "project"
    _project(project, "make_plain", "config.scale")
    found = findings_of(project, "step")
    assert found["state"][0] == "high", found
    before = run(sys.executable, "runner.py", cwd=tmp_path)
    assert before.returncode == 0 and before.stdout.endswith("deleted False\n"), before.stderr
    fixed = run(tool("jaxmem-fix"), ".", cwd=project)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # changed
    after = run(sys.executable, "runner.py", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout.replace("deleted False", "deleted True"), after.stdout

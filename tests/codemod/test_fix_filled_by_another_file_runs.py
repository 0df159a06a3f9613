"""A config that holds no array when made, filled with one by a function of
another project file whose result is the state (``state = make_state(config)``,
the function doing ``cfg.w = jnp.ones(4)`` and returning it in the state), or
by the ``__init__`` of another file's class (a state, an nnx Module).

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
import jax
import jax.numpy as jnp


def make_state(cfg):
    cfg.w = jnp.ones(4)
    return {"w": cfg.w, "b": jnp.zeros(4)}


def make_plain(cfg):
    return {"w": jnp.ones(4) * cfg.scale, "b": jnp.zeros(4)}


class FilledState(dict):
    def __init__(self, cfg):
        cfg.w = jnp.ones(4)
        super().__init__(w=cfg.w, b=jnp.zeros(4))


def _unflatten(keys, values):
    state = dict.__new__(FilledState)
    dict.update(state, zip(keys, values))
    return state


jax.tree_util.register_pytree_node(FilledState, lambda s: (tuple(s.values()), tuple(s.keys())), _unflatten)
"""

# an nnx Module of another file whose __init__ fills the config and keeps its array
MODELS = """\
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, cfg, rngs):
        cfg.w = jnp.ones(4)
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.w = nnx.Param(cfg.w)

    def __call__(self, x):
        return self.lin(x) + self.w[...]
"""

NNX_TRAIN = """\
import jax.numpy as jnp
import ml_collections
import optax
from flax import nnx

from models import Model


@nnx.jit
def train_step(model, optimizer, batch):
    loss, grads = nnx.value_and_grad(lambda m: (m(batch) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss


config = ml_collections.ConfigDict()
model = Model(config, nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
for _ in range(3):
    train_step(model, optimizer, jnp.ones((2, 4)))
print(float(config.w.sum()))
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
# ``modules``: where the maker is bound (its file, and the package re-exporting it).
RUNNER = """\
import importlib
import sys

import jax

sys.path.insert(0, {project!r})
modules = [importlib.import_module(name) for name in {modules!r}]

made = []
original = getattr(modules[0], {maker!r})


def recorded(cfg):
    state = original(cfg)
    made.extend(jax.tree.leaves(state))
    return state


for module in modules:
    setattr(module, {maker!r}, recorded)
import train  # noqa: E402,F401  (runs the training)

print("deleted", all(leaf.is_deleted() for leaf in made))
"""


def _project(folder: Path, maker: str, read: str, package: bool = False) -> Path:
    """The training project: ``states.py`` beside ``train.py``, or (``package``) in a package
    ``pkg`` whose ``__init__.py`` re-exports its makers, imported by ``from pkg import ...``."""
    folder.mkdir()
    modules = ["pkg.states", "pkg"] if package else ["states"]
    (folder.parent / "runner.py").write_text(RUNNER.format(project=str(folder), maker=maker, modules=modules))
    (folder / "pyproject.toml").write_text("")
    if package:
        (folder / "pkg").mkdir()
        (folder / "pkg" / "__init__.py").write_text("from .states import FilledState, make_plain, make_state\n")
    (folder / ("pkg/states.py" if package else "states.py")).write_text(STATES)
    path = folder / "train.py"
    train = TRAIN.format(maker=maker, read=read)
    path.write_text(train.replace("from states import", "from pkg import") if package else train)
    return path


@pytest.mark.parametrize("package", [False, True], ids=["beside", "re-exported"])
@pytest.mark.parametrize("maker", ["make_state", "FilledState"])
def test_a_state_made_by_a_function_or_class_that_fills_the_config_is_left_alone(tmp_path, maker, package):
    project = tmp_path / "project"
    path = _project(project, maker, "float(config.w.sum())", package)
    found = findings_of(project, "step")
    assert found["state"][0] == "medium" and f"`{maker}` may store an array into its `cfg`" in found["state"][1], found
    assert run(sys.executable, "train.py", cwd=project).returncode == 0
    left_alone_then_crashes(project, "train.py", path, "@jax.jit\ndef step",
                            "@jax.jit(donate_argnums=0)\ndef step")


@pytest.mark.parametrize("package", [False, True], ids=["beside", "re-exported"])
def test_a_state_made_by_a_function_that_reads_the_config_is_donated(tmp_path, package):
    project = tmp_path / "project"
    _project(project, "make_plain", "config.scale", package)
    found = findings_of(project, "step")
    assert found["state"][0] == "high", found
    before = run(sys.executable, "runner.py", cwd=tmp_path)
    assert before.returncode == 0 and before.stdout.endswith("deleted False\n"), before.stderr
    fixed = run(tool("jaxmem-fix"), ".", cwd=project)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # changed
    after = run(sys.executable, "runner.py", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout.replace("deleted False", "deleted True"), after.stdout


@pytest.mark.parametrize("package", [False, True], ids=["beside", "re-exported"])
def test_an_nnx_module_of_another_file_that_fills_the_config_is_left_alone(tmp_path, package):
    (tmp_path / "pyproject.toml").write_text("")
    if package:
        (tmp_path / "pkg").mkdir()
        (tmp_path / "pkg" / "__init__.py").write_text("from .models import Model\n")
    (tmp_path / ("pkg/models.py" if package else "models.py")).write_text(MODELS)
    path = tmp_path / "train.py"
    train = NNX_TRAIN.replace("from models import", "from pkg import") if package else NNX_TRAIN
    path.write_text(train)
    found = findings_of(tmp_path, "train_step")
    assert found["model"][0] == "medium" and "whose `__init__` may store an array into its `cfg`" in found["model"][1]
    assert run(sys.executable, "train.py", cwd=tmp_path).returncode == 0
    run(tool("jaxmem-fix"), ".", cwd=tmp_path)
    assert "donate_argnums=(0" not in path.read_text()
    path.write_text(train.replace("@nnx.jit\n", "@nnx.jit(donate_argnums=(0, 1))\n"))
    crashed = run(sys.executable, "train.py", cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr, crashed.stderr

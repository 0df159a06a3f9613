"""nnx objects made by a function of the same file and handed out by its
``return`` (flax 0.12.8, optax 0.2.8).

Training scripts build the model and its optimizer in a helper::

    def create(seed, lr=1e-2):
        model = Model(nnx.Rngs(seed))
        optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
        return model, optimizer

    model, optimizer = create(0)

or returns the object its call makes (``return nnx.Sequential(nnx.Linear(...,
kernel_init=init), nnx.relu)``, defaults an initializer and a dtype), or the
caller makes a flax container of layers made in the same call.

When the helper makes each returned object with new arrays, takes no array
out of it and hands it out only by its final ``return``, and the call passes
values that hold no arrays, the objects are what the same constructors would
make in the caller: the default ``jaxmem-fix`` donates them, and the fixed
program trains the same with the arrays each object was made with deleted
(recorded by a runner the analysis never sees).

Each helper below lets a value read after the training hold one of the
model's arrays: the proposal stays at medium, the default fix leaves the
model alone, and the donation it would have written really crashes.
"""

from pathlib import Path

import pytest

from fix_runs import findings_of, rerun_recorded_after_fix, run, run_strict, tool

pytest.importorskip("flax")
pytest.importorskip("optax")

HEAD = """\
import jax
import jax.numpy as jnp
import optax
from flax import nnx

KEPT = []


class Model(nnx.Module):
    def __init__(self, rngs, w=None):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.w = nnx.Param(jnp.zeros((4,)) if w is None else w)

    def __call__(self, x):
        return self.lin(x) + self.w[...]


@nnx.jit
def train_step(model, optimizer, batch):
    loss, grads = nnx.value_and_grad(lambda m: (m(batch) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss

"""

LOOP = """
    for step in range(3):
        loss = train_step(model, optimizer, jnp.arange(8.0).reshape(2, 4) * step)
        print("loss", round(float(loss), 4))
"""

# name -> the helpers and main()'s lines before the loop, and what main() reads after it
OWNED = {
    "pair": ("""
def create(seed, lr=1e-2):
    model = Model(nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
    return model, optimizer


def main():
    model, optimizer = create(0)""", ""),
    "one-each": ("""
def create_model(seed: int):
    model = Model(rngs=nnx.Rngs(seed))
    y = model(jnp.ones((1, 4)))
    print(y.shape)
    return model


def main():
    model = create_model(0)
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)""", ""),
    # the helper returns the object its call makes; its defaults are an initializer and a dtype
    "returns-the-object": ("""
INIT = nnx.initializers.lecun_normal()


def create_model(seed, init=INIT, dtype=jnp.float32):
    return nnx.Sequential(nnx.Linear(4, 4, kernel_init=init, param_dtype=dtype, rngs=nnx.Rngs(seed)), nnx.relu)


def main():
    model = create_model(0)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""", ""),
    # no helper: flax's container made from layers made in the same call
    "layers-made-in-the-call": ("""
def main():
    model = nnx.Sequential(Model(nnx.Rngs(0)), nnx.Linear(4, 4, rngs=nnx.Rngs(1)), jax.nn.gelu)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""", ""),
    # flax's nnx_toy_examples/04_data_parallel_with_jit.py: the state of both placed on a mesh
    # and written back before the training, and copied to the host and back after it
    "placed-and-written-back": ("""
def main():
    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    sharding = jax.NamedSharding(jax.make_mesh((1,), ("data",)), jax.P())
    state = nnx.state((model, optimizer))
    state = jax.device_put(state, sharding)
    nnx.update((model, optimizer), state)
    jax.debug.visualize_array_sharding(model.lin.kernel[...])""", """\
    state = nnx.state((model, optimizer))
    state = jax.device_get(state)
    nnx.update((model, optimizer), state)
    print("w", round(float(model.w[...].sum()), 4))
"""),
    # flax's optimization cookbook: labels for optax.partition from the paths of an nnx.state,
    # a State of the model's very Variables (flax 0.12.8), read again after the training
    "labels-from-a-state": ("""
def main():
    model = Model(nnx.Rngs(0))
    state = nnx.state(model, nnx.Param)
    rates = {"kernel": optax.adam(1e-2), "bias": optax.adam(1e-3), "w": optax.sgd(0.1)}
    labels = nnx.map_state(lambda path, v: list(path)[-1], state)
    optimizer = nnx.Optimizer(model, tx=optax.partition(rates, labels), wrt=nnx.Param)""",
        '    print("w", round(float(state["w"][...].sum()), 4))\n'),
}

HELD = {
    # the helper keeps one of the model's arrays in a module-level list
    "kept-by-the-helper": ("""
def create(seed):
    model = Model(nnx.Rngs(seed))
    KEPT.append(model.lin.kernel[...])
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    return model, optimizer


def main():
    model, optimizer = create(0)""", '    print("kept", round(float(KEPT[0].sum()), 4))\n'),
    # the model is made from an array the caller reads after the training
    "made-from-an-array": ("""
def create(w):
    model = Model(nnx.Rngs(0), w)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    return model, optimizer


def main():
    w = jnp.ones((4,)) * 2
    model, optimizer = create(w)""", '    print("w", round(float(w.sum()), 4))\n'),
    # a default argument that is an array: each call makes a model from the same one
    "array-default": ("""
TABLE = jnp.ones((4,)) * 3


def create(seed, w=TABLE):
    model = Model(nnx.Rngs(seed), w)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    return model, optimizer


def main():
    model, optimizer = create(0)""", '    print("table", round(float(TABLE.sum()), 4))\n'),
    # an options dict, empty when made, given an array the model is then made from
    "options-given-an-array-later": ("""
def main():
    options = {}
    options["w"] = jnp.ones((4,)) * 2
    model = Model(nnx.Rngs(0), options["w"])
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""",
        '    print("w", round(float(options["w"].sum()), 4))\n'),
    # flax's container holds a layer made from an array the caller reads after the training
    "container-of-a-layer-made-from-an-array": ("""
def main():
    w = jnp.ones((4,)) * 2
    model = nnx.Sequential(Model(nnx.Rngs(0), w), nnx.relu)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""", '    print("w", round(float(w.sum()), 4))\n'),
    # an options dict, empty when made, filled with an array by a helper (two calls down)
    "options-filled-by-a-helper": ("""
def add_weight(options, scale):
    options["w"] = jnp.ones((4,)) * scale


def fill(options):
    add_weight(options, 2)


def main():
    options = {}
    fill(options)
    model = Model(nnx.Rngs(0), options["w"])
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""",
        '    print("w", round(float(options["w"].sum()), 4))\n'),
    # the leaves of an nnx.state are the model's raw arrays, read after the training
    "leaves-of-a-state": ("""
def main():
    model = Model(nnx.Rngs(0))
    state = nnx.state(model, nnx.Param)
    kept = jax.tree.leaves(state)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""",
        '    print("kept", round(float(kept[0].sum()), 4))\n'),
    # the same of a view not bound to a name (high, and crashed, before)
    "leaves-of-an-unnamed-view": ("""
def main():
    model = Model(nnx.Rngs(0))
    kept = jax.tree.leaves(nnx.view(model))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""",
        '    print("kept", round(float(kept[0].sum()), 4))\n'),
    # the same, the placed state read after the training: it holds the arrays the step donated
    "placed-state-read-after": ("""
def main():
    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    state = nnx.state((model, optimizer))
    state = jax.device_put(state, jax.NamedSharding(jax.make_mesh((1,), ("data",)), jax.P()))
    nnx.update((model, optimizer), state)""", '    print("kept", round(float(jax.tree.leaves(state)[0].sum()), 4))\n'),
    # a name bound to a state of the model, then to its raw arrays (high, and crashed, before)
    "state-bound-again": ("""
def main():
    model = Model(nnx.Rngs(0))
    state = nnx.state(model, nnx.Param)
    state = jax.tree.map(lambda x: x, state)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""",
        '    print("w", round(float(state["w"][...].sum()), 4))\n'),
    # a map_state whose function returns the Variable's value: the result holds the arrays
    "values-mapped-from-a-state": ("""
def main():
    model = Model(nnx.Rngs(0))
    state = nnx.state(model, nnx.Param)
    values = nnx.map_state(lambda path, v: v[...], state)
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)""",
        '    print("w", round(float(values["w"].sum()), 4))\n'),
}

def _program(helpers: str, after: str) -> str:
    return HEAD + helpers + LOOP + after + "\n\nmain()\n"


def _write(folder: Path, program: str) -> Path:
    (folder / "pyproject.toml").write_text("")
    path = folder / "train.py"
    path.write_text(program)
    return path


@pytest.mark.parametrize("form", sorted(OWNED))
def test_objects_a_helper_makes_and_returns_are_donated_and_it_trains_the_same(tmp_path, form):
    _write(tmp_path, _program(*OWNED[form]))
    found = findings_of(tmp_path, "train_step")
    assert {name: confidence for name, (confidence, _) in found.items()} == \
        {"model": "high", "optimizer": "high"}, found
    rerun_recorded_after_fix(tmp_path, {"model": "Linear", "optimizer": "Optimizer"}, "train.py",
                             tmp_path / "train.py", "@partial(nnx.jit, donate_argnums=(0, 1))\ndef train_step")


@pytest.mark.parametrize("form", sorted(HELD))
def test_a_helper_whose_model_shares_an_array_is_left_alone(tmp_path, form):
    path = _write(tmp_path, _program(*HELD[form]))
    found = findings_of(tmp_path, "train_step")
    assert found["model"][0] == "medium", found
    original = run_strict(tmp_path, "train.py")
    assert original.returncode == 0, original.stderr

    run(tool("jaxmem-fix"), "--no-cache", "train.py", cwd=tmp_path)
    fixed_source = path.read_text()
    assert "donate_argnums=(0" not in fixed_source and "donate_argnums=0" not in fixed_source, fixed_source
    fixed = run_strict(tmp_path, "train.py")
    assert fixed.returncode == 0 and fixed.stdout == original.stdout, fixed.stderr

    # what a high proposal for the model would have written really crashes
    path.write_text(_program(*HELD[form]).replace("@nnx.jit\ndef train_step",
                                                  "@nnx.jit(donate_argnums=(0,))\ndef train_step"))
    crashed = run_strict(tmp_path, "train.py")
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr, crashed.stderr

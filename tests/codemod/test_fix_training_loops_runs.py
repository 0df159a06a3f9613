"""Training loops as real code writes them, proved at high confidence and fixed
by the default ``jaxmem-fix`` (issue 14); each fixed program runs with the same
result and its old state deleted.

* brax's SAC loop (``brax/training/agents/sac/train.py``): the state made by a
  helper from a PRNG key (``network.init(key)``) and annotated ints, rebuilt by
  ``.replace`` on itself, carried through ``jax.lax.scan(..., length=n)`` in an
  epoch function rebound to its own ``jax.jit``, called through a timing helper;
* flax's nnx benchmarks (``benchmarks/nnx_mlpmixer_training.py``): the state of
  ``nnx.split((model, optimizer, rngs))`` with a standard optax transform, merged,
  updated and split again inside the jitted step, written back by ``nnx.update``;
* flax's ``examples/wmt``: the parameters passed to an evaluation helper that
  fills its own list and maps a lambda over a local (it keeps nothing);
* flax's ``examples/lm1b``: the state saved after every step by flax's
  synchronous ``checkpoints.save_checkpoint_multiprocess`` (it keeps nothing);
* tpu-inference's runner: the update called in a private method whose only
  call, through ``self`` in its class, passes a value dead after it;
* a training script's private helper (``_train_epoch``) around the jitted step,
  called only by its own file's ``train()`` with the state it rebinds;
* flax's ``nnx_toy_examples/01_functional_api.py``: the states of
  ``nnx.split(MLP(...), nnx.Param, Count)``, which hold no filter.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flax")
pytest.importorskip("optax")

BRAX_SAC_LIKE = """\
import time
from typing import Optional

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class TrainingState:
    params: dict
    target_params: dict
    steps: jax.Array


class Network:
    def init(self, key):
        return {"w": jax.random.normal(key, (8, 8)), "b": jnp.zeros((8,))}


def _init_training_state(key, network: Network, obs_size: int) -> TrainingState:
    key_policy, key_q = jax.random.split(key)
    params = network.init(key_policy)
    target = network.init(key_q)
    return TrainingState(params=params, target_params=target, steps=jnp.zeros((), jnp.int32))


def train(num_epochs: int, checkpoint: Optional[str] = None):
    obs_size = min(8, jax.local_device_count() * 8)
    network = Network()
    training_state = _init_training_state(jax.random.PRNGKey(0), network, obs_size)
    training_state = training_state.replace(steps=training_state.steps + 1)

    def sgd_step(carry, unused):
        state, key = carry
        key, sub = jax.random.split(key)
        noise = jax.random.normal(sub, (8,))
        params = jax.tree.map(lambda p: p * 0.9 + noise.mean(), state.params)
        return (state.replace(params=params, steps=state.steps + 1), key), ()

    def training_epoch(training_state, key):
        (training_state, key), _ = jax.lax.scan(sgd_step, (training_state, key), (), length=4)
        return training_state

    training_epoch = jax.jit(training_epoch)  # the step

    def training_epoch_with_timing(training_state, key):
        start = time.time()
        training_state = training_epoch(training_state, key)
        jax.block_until_ready(training_state)
        print("epoch took", time.time() - start >= 0)
        return training_state

    first = training_state
    key = jax.random.PRNGKey(1)
    for _ in range(num_epochs):
        key, epoch_key = jax.random.split(key)
        training_state = training_epoch_with_timing(training_state, epoch_key)
    print("first state deleted:", first.params["w"].is_deleted())
    return training_state


if __name__ == "__main__":
    state = train(3)
    print(round(float(state.params["w"].sum()), 4), int(state.steps))
"""

NNX_SPLIT_LOOP = """\
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))


def main():
    rngs = nnx.Rngs(0)
    model = MLP(rngs=rngs)
    optimizer = nnx.Optimizer(model, optax.sgd(1e-2), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer, rngs))

    @jax.jit  # the step
    def train_step(state, batch):
        model, optimizer, rngs = nnx.merge(graphdef, state)

        def loss_fn(model):
            return jnp.mean((model(batch) - 1.0) ** 2)

        grads = nnx.grad(loss_fn)(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer, rngs))

    first = state
    for _ in range(3):
        state = train_step(state, jnp.ones((8, 4)))
    print("first state deleted:", first[0]["linear"]["kernel"].is_deleted())
    nnx.update((model, optimizer, rngs), state)
    print(round(float(state[0]["linear"]["kernel"][...].sum()), 4))


if __name__ == "__main__":
    main()
"""

# flax's examples/wmt: the state's parameters go to an evaluation helper that
# collects metrics in its own list and scales them with a lambda over a local.
EVALUATE_HELPER = """\
import jax
import jax.numpy as jnp


def evaluate(*, eval_step, params, batches):
    eval_metrics = []
    for batch in batches:
        metrics = eval_step(params, batch)
        eval_metrics.append(metrics)
    sums = jax.tree_util.tree_map(lambda *xs: sum(xs), *eval_metrics)
    denominator = sums.pop("count")
    return jax.tree_util.tree_map(lambda x: x / denominator, sums)


@jax.jit  # the step
def train_step(params, batch):
    return jax.tree_util.tree_map(lambda p: p - 0.01 * batch.mean(), params)


@jax.jit
def eval_step(params, batch):
    return {"loss": jnp.sum(params["w"] * batch.mean()), "count": jnp.ones(())}


def main():
    params = {"w": jnp.ones((8, 8))}
    first = params
    batches = [jnp.full((2, 8), float(i)) for i in range(3)]
    for batch in batches:
        params = train_step(params, batch)
        summary = evaluate(eval_step=eval_step, params=params, batches=batches)
    print("first state deleted:", first["w"].is_deleted())
    print(round(float(summary["loss"]), 4))


if __name__ == "__main__":
    main()
"""

# flax's examples/lm1b: the state is saved with flax's synchronous checkpoint
# saver after the step; the saved checkpoint restores the values it had.
CHECKPOINT_LOOP = """\
import sys
import tempfile

import jax
import jax.numpy as jnp
import optax
from flax.training import checkpoints, train_state


@jax.jit  # the step
def train_step(state, batch):
    grads = jax.tree_util.tree_map(lambda p: jnp.full_like(p, batch.mean()), state.params)
    return state.apply_gradients(grads=grads)


def main(workdir):
    params = {"w": jnp.ones((8, 8))}
    state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.sgd(0.1))
    first = state
    for step in range(3):
        batch = jnp.full((2, 8), float(step + 1))
        state = train_step(state, batch)
        checkpoints.save_checkpoint_multiprocess(workdir, state, step, keep=3)
    print("first state deleted:", first.params["w"].is_deleted())
    restored = checkpoints.restore_checkpoint(workdir, target=None, step=1)
    print(round(float(restored["params"]["w"].sum()), 4), round(float(state.params["w"].sum()), 4))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as workdir:
        main(workdir)
"""

# tpu-inference's runner: the jitted update is called inside a private method,
# whose only call (through ``self``, in its own class) passes a value dead after it.
PRIVATE_METHOD = """\
import jax
import jax.numpy as jnp


@jax.jit  # the step
def _advance(seq_lens, delta):
    return seq_lens - delta


class Runner:
    def __init__(self, n):
        self.n = n

    def _subtract(self, seq_lens, delta):
        seq_lens = _advance(seq_lens, delta)
        return seq_lens

    def prepare(self, step):
        seq_lens = jnp.full((self.n,), step + 10.0)
        first = seq_lens
        seq_lens = self._subtract(seq_lens, 1.0)
        print("first state deleted:", first.is_deleted())
        return float(seq_lens.sum())


if __name__ == "__main__":
    print(Runner(4).prepare(1))
"""

# A private module-level helper around the step: its only call, in ``train()``,
# passes the state it rebinds from the helper's result.
PRIVATE_FUNCTION = """\
import jax
import jax.numpy as jnp
import optax


@jax.jit  # the step
def _step(state, batch):
    params, opt_state = state
    grads = jax.grad(lambda p: jnp.sum((batch @ p["w"]) ** 2))(params)
    updates, opt_state = optax.sgd(0.01, momentum=0.9).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def _train_epoch(state, batches):
    for batch in batches:
        state = _step(state, batch)
    return state


def train(epochs):
    params = {"w": jnp.ones((4, 2))}
    first = params["w"]
    state = (params, optax.sgd(0.01, momentum=0.9).init(params))
    batches = [jnp.full((3, 4), i / 10) for i in range(3)]
    for _ in range(epochs):
        state = _train_epoch(state, batches)
    print("first state deleted:", first.is_deleted())
    return float(state[0]["w"].sum())


if __name__ == "__main__":
    print(round(train(2), 4))
"""

NNX_SPLIT_FILTERS = """\
import jax
import jax.numpy as jnp
from flax import nnx


class Count(nnx.Variable):
    pass


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.count = Count(jnp.array(0))
        self.lin = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x):
        return self.lin(x)


# flax's examples/nnx_toy_examples/01_functional_api.py: the filters are not held
graphdef, params, counts = nnx.split(MLP(nnx.Rngs(0)), nnx.Param, Count)
first = params


@jax.jit  # the step
def train_step(params, counts, x):
    def loss_fn(params):
        model = nnx.merge(graphdef, params, counts)
        return (model(x) ** 2).mean(), nnx.state(model, Count)

    grad, counts = jax.grad(loss_fn, has_aux=True)(params)
    params = jax.tree.map(lambda w, g: w - 0.1 * g, params, grad)
    return params, counts


for _ in range(3):
    params, counts = train_step(params, counts, jnp.ones((4, 2)))
print("first state deleted:", first["lin"]["kernel"].value.is_deleted())
model = nnx.merge(graphdef, params, counts)
print(round(float(model(jnp.ones((1, 2))).sum()), 4))
"""

PROGRAMS = {"brax-sac-like": BRAX_SAC_LIKE, "nnx-split-loop": NNX_SPLIT_LOOP, "evaluate-helper": EVALUATE_HELPER,
            "checkpoint-loop": CHECKPOINT_LOOP, "private-method": PRIVATE_METHOD, "private-function": PRIVATE_FUNCTION,
            "nnx-split-filters": NNX_SPLIT_FILTERS}
# the donation the fix writes, when it is not the first parameter alone
DONATED = {"nnx-split-filters": "donate_argnums=(0, 1))  # the step"}


def _run(folder: Path, *command) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_default_fix_donates_the_state_and_the_program_runs(name, tmp_path):
    program = tmp_path / "train.py"
    program.write_text(PROGRAMS[name])
    (tmp_path / "pyproject.toml").write_text("")
    original = _run(tmp_path, sys.executable, "train.py")
    assert original.returncode == 0, original.stderr
    assert "first state deleted: False" in original.stdout

    check = _run(tmp_path, str(Path(sys.executable).parent / "jaxmem"), "check", "--no-cache", "train.py")
    assert "(high confidence)" in check.stdout, check.stdout
    fix = _run(tmp_path, str(Path(sys.executable).parent / "jaxmem-fix"), "--no-cache", "train.py")
    assert fix.returncode == 1, fix.stdout + fix.stderr  # changed
    assert DONATED.get(name, "donate_argnums=0)  # the step") in program.read_text()

    fixed = _run(tmp_path, sys.executable, "train.py")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == original.stdout.replace("first state deleted: False", "first state deleted: True")




# brax's positional pipeline test: ``jax.jit(pipeline.step)`` of another module's
# function, whose body (in pipeline.py) returns the state updated.
PIPELINE = """\
import jax.numpy as jnp


def init(n):
    return {"x": jnp.zeros((n,)), "v": jnp.ones((n,))}


def step(sys, state, act):
    return {"x": state["x"] + sys["dt"] * act, "v": state["v"] * 0.99}
"""

PIPELINE_TEST = """\
import jax
import jax.numpy as jnp

import pipeline


def main():
    sys = {"dt": 0.01}
    state = pipeline.init(4)
    first = state
    j_step = jax.jit(pipeline.step)
    for _ in range(3):
        state = j_step(sys, state, jnp.ones((4,)))
    print("first state deleted:", first["x"].is_deleted())
    print(round(float(state["x"].sum()), 4))


if __name__ == "__main__":
    main()
"""


def test_jit_of_another_modules_function_uses_its_body_and_the_fix_runs(tmp_path):
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    program = tmp_path / "pipeline_test.py"
    program.write_text(PIPELINE_TEST)
    original = _run(tmp_path, sys.executable, "pipeline_test.py")
    assert original.returncode == 0 and "first state deleted: False" in original.stdout, original.stderr
    check = _run(tmp_path, str(Path(sys.executable).parent / "jaxmem"), "check", "--no-cache", ".")
    assert "does not donate `state`" in check.stdout and "(high confidence)" in check.stdout, check.stdout
    fix = _run(tmp_path, str(Path(sys.executable).parent / "jaxmem-fix"), "--no-cache", ".")
    assert "jax.jit(pipeline.step, donate_argnums=1)" in program.read_text(), fix.stdout + fix.stderr
    fixed = _run(tmp_path, sys.executable, "pipeline_test.py")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == original.stdout.replace("first state deleted: False", "first state deleted: True")

"""`jaxmem record` + `jaxmem verify --record` on a training script using flax, optax and equinox."""

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("flax.nnx")
pytest.importorskip("optax")
pytest.importorskip("equinox")

STACKS = """
    import functools

    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn
    from flax import nnx
    from flax.training import train_state


    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(4)(x)


    @functools.partial(jax.jit, donate_argnums=0)
    def linen_step(state, batch):
        grads = jax.grad(lambda p: (state.apply_fn(p, batch) ** 2).mean())(state.params)
        return state.apply_gradients(grads=grads)


    @nnx.jit(donate_argnums=(0, 1))
    def nnx_step(model, optimizer, batch):
        loss, grads = nnx.value_and_grad(lambda m: (m(batch) ** 2).mean())(model)
        optimizer.update(model, grads)
        return loss


    @eqx.filter_jit(donate="all-except-first")
    def eqx_step(model, opt_state):
        return opt_state * 0.9 + model(jnp.ones(4)).sum()


    class Trainer:
        def __init__(self):
            self._step = jax.jit(self._impl, donate_argnums=0)

        def _impl(self, state):
            return state * 2


    @functools.partial(jax.jit, static_argnums=0, donate_argnums=1)
    def activate(kind, x):
        return jax.nn.relu(x) if kind == "relu" else x


    @functools.partial(jax.jit, donate_argnums=0)
    def pair_step(pair):
        return jax.tree.map(lambda a: a + 1, pair)


    def main():
        module = MLP()
        state = train_state.TrainState.create(
            apply_fn=module.apply, params=module.init(jax.random.PRNGKey(0), jnp.ones((1, 4))),
            tx=optax.adamw(1e-3))
        for _ in range(2):
            state = linen_step(state, jnp.ones((2, 4)))
        model = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        for _ in range(2):
            nnx_step(model, optimizer, jnp.ones((2, 4)))
        linear = eqx.nn.Linear(4, 4, key=jax.random.PRNGKey(0))
        opt_state = jnp.zeros(())
        for _ in range(2):
            opt_state = eqx_step(linear, opt_state)
        trainer = Trainer()
        value = trainer._step(jnp.ones(3))
        activate("relu", jnp.ones(3))
        shared = jnp.ones(3)
        try:
            pair_step({"a": shared, "b": shared})
        except Exception as error:  # the real call fails: the same buffer donated twice
            print("pair_step failed:", type(error).__name__)


    if __name__ == "__main__":
        main()
"""


def _run(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "jaxmem.runtime_check.commands", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("stacks")
    (tmp_path / "stacks.py").write_text(textwrap.dedent(STACKS))
    recorded = _run(tmp_path, "record", "--out", "rec.json", "--", "python", "stacks.py")
    assert recorded.returncode == 0, recorded.stderr
    assert "pair_step failed" in recorded.stdout
    done = _run(tmp_path, "verify", "--record", "rec.json", "--format", "json")
    record_text = (tmp_path / "rec.json").read_text()
    return done, json.loads(done.stdout), record_text


def _report(data, name):
    return next(report for report in data["reports"] if report["function"].endswith(name))


def test_record_holds_no_pickled_values(verified):
    _, _, record_text = verified
    assert "pickle" not in record_text
    record = json.loads(record_text)
    assert record["version"] == 2
    assert {entry["transform"] for entry in record["functions"]} >= {"jit", "nnx.jit", "eqx.filter_jit"}


def test_linen_train_state_step_is_verified(verified):
    _, data, _ = verified
    report = _report(data, "linen_step")
    assert report["ok"] and len(report["leaves"]) == 8  # step, 2 params, Adam's count and 2 + 2 moments
    assert "TrainState(" in report["signature"]


def test_nnx_step_is_verified_with_module_paths(verified):
    _, data, _ = verified
    report = _report(data, "nnx_step")
    assert report["ok"]
    assert {"model.kernel", "optimizer.opt_state[0].mu.kernel"} <= {leaf["path"] for leaf in report["leaves"]}


def test_eqx_step_is_verified(verified):
    _, data, _ = verified
    report = _report(data, "eqx_step")
    assert report["ok"] and [leaf["path"] for leaf in report["leaves"]] == ["opt_state"]
    assert report["donation_label"].startswith("eqx.filter_jit(donate='all-except-first')")


def test_method_jitted_in_init_is_verified(verified):
    _, data, _ = verified
    assert _report(data, "Trainer._impl")["ok"]


def test_static_argument_at_position_zero_is_recorded_as_a_value(verified):
    _, data, record_text = verified
    entry = next(e for e in json.loads(record_text)["functions"] if e["qualname"] == "activate")
    assert entry["signatures"][0]["args"][0] == {"static": "relu", "repr": "'relu'"}
    report = _report(data, "activate")
    assert report["ok"] and [leaf["path"] for leaf in report["leaves"]] == ["x"]


def test_same_buffer_twice_fails_verification(verified):
    done, data, _ = verified
    report = _report(data, "pair_step")
    assert not report["ok"]
    assert {leaf["reason_code"] for leaf in report["leaves"]} == {"donated-twice"}
    assert done.returncode == 1


def test_empty_record_is_an_error(write_file, run_commands):
    write_file("nothing.py", "print('no jit here')\n")
    assert run_commands("record", "--out", "rec.json", "--", "python", "nothing.py").returncode == 0
    done = run_commands("verify", "--record", "rec.json")
    assert done.returncode == 2
    assert "the record holds no jitted calls" in done.stderr


def test_function_with_nothing_to_verify_does_not_pass(write_file, run_commands):
    write_file("plain.py", """
        import jax
        import jax.numpy as jnp

        def predict(x):
            return x.sum()

        predict_fn = jax.jit(predict)
        if __name__ == "__main__":
            predict_fn(jnp.ones(3))
    """)
    assert run_commands("record", "--out", "rec.json", "--", "python", "plain.py").returncode == 0
    done = run_commands("verify", "--record", "rec.json")
    assert done.returncode == 1
    assert "skipped: donates nothing" in done.stdout and "nothing was verified" in done.stdout


EQUINOX_STEPS = """
    import equinox as eqx
    import jax
    import jax.numpy as jnp


    @eqx.filter_jit
    def step(model, opt_state):
        return jax.tree.map(lambda p: p * 0.9, model), jax.tree.map(lambda s: s + 1, opt_state)


    @eqx.filter_jit
    def partial_step(model, opt_state, x):
        return jax.tree.map(lambda p: p * 0.9, model), jax.tree.map(lambda s: s + x.sum(), opt_state)


    model = eqx.nn.Linear(4, 4, key=jax.random.PRNGKey(0))
    opt_state = {"m": jnp.zeros((4, 4))}
    for _ in range(2):
        model, opt_state = step(model, opt_state)
        model, opt_state = partial_step(model, opt_state, jnp.ones(3))
"""


def test_record_verifies_equinox_steps_in_the_mode_the_proposal_makes(write_file, run_commands, tmp_path):
    """eqx.filter_jit without donate: the proposal is verified as donate='all' when that mode is exactly it."""
    (tmp_path / "pyproject.toml").write_text("")
    write_file("train.py", EQUINOX_STEPS)
    assert run_commands("record", "--out", "rec.json", "--", "python", "train.py").returncode == 0
    result = run_commands("verify", "--record", "rec.json", "--format", "json")
    document = json.loads(result.stdout)
    (report,) = document["reports"]
    assert report["function"] == "step" and report["donation_label"].startswith("eqx.filter_jit(donate='all')")
    assert report["ok"] and report["predicted_saving_bytes"] > 0
    (skipped,) = document["problems"]
    assert not skipped["failed"] and "no mode donates exactly" in skipped["message"]

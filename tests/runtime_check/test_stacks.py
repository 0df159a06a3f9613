"""verify() and assert_donated on the stacks JAX users train with: nnx, equinox, linen TrainState, optax."""

import functools

import jax
import jax.numpy as jnp
import pytest

from jaxmem.runtime_check import DonationNotUsableError, assert_donated, verify
from jaxmem.runtime_check.report import DONATED_TWICE, NOT_DONATED, PRUNED_UNUSED

nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")
eqx = pytest.importorskip("equinox")


def paths(report):
    return [leaf.path for leaf in report.leaves]


def nnx_model_and_optimizer():
    model = nnx.Linear(4, 3, rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)


def nnx_train_step(model, optimizer, x):
    def loss(m):
        return (m(x) ** 2).mean()

    value, grads = nnx.value_and_grad(loss)(model)
    optimizer.update(model, grads)
    return value


@pytest.mark.parametrize("donation", [{"donate_argnums": (0, 1)}, {"donate_argnames": ("model", "optimizer")}])
def test_nnx_jit_module_and_optimizer_are_verified_leaf_by_leaf(donation):
    model, optimizer = nnx_model_and_optimizer()
    step = nnx.jit(nnx_train_step, **donation)
    report = verify(step, model, optimizer, jnp.ones((2, 4)))
    assert report.ok
    assert "model.kernel" in paths(report) and "optimizer.opt_state[0].mu.kernel" in paths(report)
    kernel = next(leaf for leaf in report.leaves if leaf.path == "model.kernel")
    assert kernel.output == "model.kernel (its new value)"
    # params, Adam's mu and nu, its count, the optimizer's step
    assert report.predicted_saving == report.donated_bytes == (4 * 3 * 4 + 3 * 4) * 3 + 4 + 4
    # the check compiles only: the model is untouched and the step still runs
    assert float(step(model, optimizer, jnp.ones((2, 4)))) > 0


def test_nnx_jit_in_tree_mode():
    model, optimizer = nnx_model_and_optimizer()
    report = verify(nnx.jit(nnx_train_step, donate_argnums=(0, 1), graph=False), model, optimizer, jnp.ones((2, 4)))
    assert report.ok and "optimizer.opt_state[0].nu.bias" in paths(report)


def test_nnx_jit_through_the_wrapper_argument():
    model, optimizer = nnx_model_and_optimizer()
    report = verify(nnx_train_step, model, optimizer, jnp.ones((2, 4)), wrapper=nnx.jit,
                    donate_argnames=("model", "optimizer"))
    assert report.ok and len(report.leaves) == 8


def test_nnx_jit_unusable_donation_beside_a_module():
    model = nnx.Linear(4, 3, rngs=nnx.Rngs(0))

    @nnx.jit(donate_argnums=(0, 1))
    def predict(model, x):
        return model(x).sum()

    report = verify(predict, model, jnp.ones((2, 4)))
    # nnx.jit returns a module's state as outputs, so the module itself is always reused
    assert [leaf.path for leaf in report.unusable] == ["x"]
    assert {"model.kernel", "model.bias"} <= set(paths(report)) - {"x"}


@pytest.mark.parametrize("mode, donated", [("all", ["params.weight", "params.bias", "batch"]),
                                           ("all-except-first", ["batch"])])
def test_eqx_filter_jit_modes(mode, donated):
    linear = eqx.nn.Linear(4, 3, key=jax.random.PRNGKey(0))

    @eqx.filter_jit(donate=mode)
    def step(params, batch, scale):
        return jax.tree.map(lambda p: p * scale, params), batch * 2

    report = verify(step, linear, jnp.ones(4), 3.0)
    assert paths(report) == donated and report.ok
    assert f"donate='{mode}'" in report.render_text()


def test_eqx_filter_jit_unused_donated_argument_is_pruned():
    linear = eqx.nn.Linear(4, 3, key=jax.random.PRNGKey(0))
    step = eqx.filter_jit(lambda params, batch: jax.tree.map(lambda p: p * 2, params), donate="all")
    report = verify(step, linear, jnp.ones(4))
    assert [(leaf.path, leaf.reason_code) for leaf in report.unusable] == [("batch", PRUNED_UNUSED)]


def test_eqx_filter_jit_without_donation_and_wrapper_route_fail_with_the_reason():
    linear = eqx.nn.Linear(4, 3, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="donates no argument"):
        verify(eqx.filter_jit(lambda p: p, donate="none"), linear)
    with pytest.raises(TypeError, match=r"eqx.filter_jit\(fn, donate=...\) object itself"):
        verify(lambda p: p, linear, donate_argnums=0, wrapper=eqx.filter_jit)


def test_linen_train_state_with_optax_adamw():
    from flax import linen as nn
    from flax.training import train_state

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(3)(nn.relu(nn.Dense(8)(x)))

    module = MLP()
    state = train_state.TrainState.create(apply_fn=module.apply, params=module.init(jax.random.PRNGKey(0),
                                          jnp.ones((1, 4))), tx=optax.adamw(1e-3))

    @functools.partial(jax.jit, donate_argnums=0)
    def train_step(state, batch):
        grads = jax.grad(lambda p: (state.apply_fn(p, batch) ** 2).mean())(state.params)
        return state.apply_gradients(grads=grads)

    report = verify(train_step, state, jnp.ones((2, 4)))
    assert report.ok and len(report.leaves) == 14
    assert "state.opt_state[0].mu['params']['Dense_0']['kernel']" in paths(report)


class Trainer:
    def __init__(self):
        self._step = jax.jit(self._impl, donate_argnums=0)

    def _impl(self, state):
        return state * 2

    @functools.partial(jax.jit, static_argnums=0, donate_argnums=1)
    def step(self, state):
        return state + 1


def test_bound_methods_and_methods_jitted_in_init():
    trainer = Trainer()
    assert verify(trainer.step, jnp.ones(3)).ok
    assert verify(trainer._step, jnp.ones(3)).ok
    assert_donated(trainer.step, jnp.ones(3))


def test_same_array_passed_twice_is_a_finding():
    x = jnp.ones(3)
    report = verify(lambda a, b: (a + 1, b + 1), x, x, donate_argnums=0)
    assert [leaf.reason_code for leaf in report.unusable] == [DONATED_TWICE]
    tree = verify(lambda t: jax.tree.map(lambda a: a + 1, t), {"a": x, "b": x}, donate_argnums=0)
    assert {leaf.path for leaf in tree.unusable} == {"t['a']", "t['b']"}
    with pytest.raises(DonationNotUsableError, match="same array is passed as `t\\['a'\\]`, `t\\['b'\\]`"):
        assert_donated(lambda t: jax.tree.map(lambda a: a + 1, t), {"a": x, "b": x}, donate_argnums=0)
    with pytest.raises(Exception, match="donate the same buffer twice"):  # what the real call does
        jax.jit(lambda t: jax.tree.map(lambda a: a + 1, t), donate_argnums=0)({"a": x, "b": x})


def test_static_argnums_zero_is_static():
    step = jax.jit(lambda n, x: x * n, static_argnums=0, donate_argnums=1)
    report = verify(step, 3, jnp.ones(3))
    assert report.ok and paths(report) == ["x"]


def test_pmap_donates_every_leaf_of_a_pytree_argument():
    pmapped = jax.pmap(lambda t, y: (jax.tree.map(lambda a: a * 2, t), y), axis_name="i", donate_argnums=0)
    tree = {"w": jnp.ones((1, 4)), "b": jnp.ones((1, 3))}
    report = verify(pmapped, tree, jnp.ones((1, 3)))
    assert report.ok and paths(report) == ["t['b']", "t['w']"]
    assert report.per_device_of == 1 and "per device" in report.render_text()
    keyword = verify(pmapped, t=tree, y=jnp.ones((1, 3)))
    assert {leaf.reason_code for leaf in keyword.leaves} == {NOT_DONATED}
    assert "passed by keyword" in keyword.leaves[0].reason

"""Typed PRNG key leaves (``key<fry>``, from ``jax.random.key`` or ``nnx.Rngs``) in the runtime checks."""

import jax
import jax.numpy as jnp
import pytest

from jaxmem.runtime_check import assert_donated, verify
from jaxmem.runtime_check.signatures import UnrestorableArgument, decode_value, encode_value


def test_a_donated_key_leaf_is_sized_and_reused():
    def step(key, x):
        key, sub = jax.random.split(key)
        return key, x + jax.random.normal(sub, x.shape)

    report = verify(step, jax.random.key(0), jnp.ones(3), donate_argnums=(0, 1))
    key_leaf = next(leaf for leaf in report.leaves if leaf.parameter == "key")
    assert key_leaf.dtype == "key<fry>" and key_leaf.nbytes == 8 and key_leaf.aliased


def test_a_recorded_key_is_written_but_not_rebuilt():
    encoded = encode_value({"rng": jax.random.key(1)})
    with pytest.raises(UnrestorableArgument, match="typed PRNG key"):
        decode_value(encoded)


def test_nnx_model_with_dropout_only_the_optimizer_donated(donation_guard):
    nnx = pytest.importorskip("flax.nnx")
    optax = pytest.importorskip("optax")

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.dropout(self.linear(x))

    @nnx.jit(donate_argnums=1)
    def train_step(model, optimizer, batch):
        grads = nnx.grad(lambda m: (m(batch) ** 2).mean())(model)
        optimizer.update(model, grads)

    model = Model(nnx.Rngs(0, dropout=1))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    report = verify(train_step, model, optimizer, jnp.ones((2, 4)))
    assert report.leaves and all(leaf.parameter == "optimizer" for leaf in report.leaves)
    assert report.predicted_saving > 0
    donation_guard(train_step, model, optimizer, jnp.ones((2, 4)), allow_unused=[
        leaf.path for leaf in report.unusable])
    assert_donated(train_step, model, optimizer, jnp.ones((2, 4)), allow_unused=[
        leaf.path for leaf in report.unusable])

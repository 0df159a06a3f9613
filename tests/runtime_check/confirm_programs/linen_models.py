import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4)(nn.relu(nn.Dense(8)(x)))


class EMAState(train_state.TrainState):
    ema_params: dict


def create_state(rng, ema=False):
    module = MLP()
    params = module.init(rng, jnp.ones((1, 4)))
    if ema:
        return EMAState.create(apply_fn=module.apply, params=params, ema_params=params, tx=optax.adam(1e-3))
    return train_state.TrainState.create(apply_fn=module.apply, params=params, tx=optax.adam(1e-3))

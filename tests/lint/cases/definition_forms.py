# checks: JXM101, JXM102, JXM105
"""Definition forms real training code uses (eval file: marked lines must be reported)."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
from somewhere import make_step  # not visible: no signature


def get_train_step(model, lr):
    def train_step(state, batch):
        return state - lr * batch
    return train_step


def pmap_of_an_unknown_function(model, batches):
    p_step = jax.pmap(make_step(model), axis_name="batch", donate_argnums=(0, 1))
    state = jnp.ones(3)
    opt = jnp.ones(3)
    for batch in batches:
        new_state, new_opt = p_step(state, opt, batch)  # JXM105
    print(state)  # JXM101


def factory_returning_a_nested_def(model):
    train_step = get_train_step(model, 0.1)
    p_train_step = jax.pmap(train_step, axis_name="batch", donate_argnums=(0,))
    state = jnp.ones(3)
    out = p_train_step(state, state)  # JXM102
    return out


def jitted_and_called_at_once():
    params = jnp.ones(3)
    out = jax.jit(lambda p: p * 2, donate_argnums=0)(params)
    return params + out  # JXM101


def partial_with_keywords(model, config):
    def step(state, batch, model, config):
        return state + batch
    jit_step = jax.jit(functools.partial(step, model=model, config=config), donate_argnums=(0,))
    state = jnp.ones(3)
    new = jit_step(state, jnp.ones(3))
    return new, state  # JXM101


def stored_in_a_dict():
    fns = {"train": jax.jit(lambda s, b: s + b, donate_argnums=0)}
    state = jnp.ones(3)
    out = fns["train"](state, jnp.ones(3))
    return out, state  # JXM101


def host_batches_stay_readable(data):
    step = jax.jit(lambda b: b * 2, donate_argnums=0)
    batch = np.stack(data)
    out = step(batch)
    return out, batch.reshape(-1), batch.keys  # host NumPy: jit copied it, nothing deleted


def keys_of_a_donated_dict_survive():
    step = jax.jit(lambda d: {"x": d["x"] * 2}, donate_argnums=0)
    state = {"x": jnp.ones(3)}
    new = step(state)
    return new, list(state.keys()), len(state)


def one_name_bound_on_two_branches(multi):
    if multi:
        step = jax.pmap(lambda s: s + 1, donate_argnums=(0,))
    else:
        step = jax.jit(lambda s: s + 1)
    state = jnp.ones(3)
    new = step(state)
    return new, state  # JXM101


def nothing_is_donated_under_disable_jit():
    step = jax.jit(lambda s: s + 1, donate_argnums=0)
    state = jnp.ones(3)
    with jax.disable_jit():
        out = step(state)
    return out, state

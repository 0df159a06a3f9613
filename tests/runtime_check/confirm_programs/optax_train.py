import jax
import jax.numpy as jnp
import optax


def loss_fn(params, batch):
    return ((batch @ params["w"] + params["b"]) ** 2).mean()


@jax.jit
def train_step(params, opt_state, batch):
    grads = jax.grad(loss_fn)(params, batch)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


@jax.jit
def evaluate(params, batch):
    return loss_fn(params, batch)


def batches(n):
    for i in range(n):
        yield jnp.full((8, 4), float(i))


tx = optax.adam(1e-3)


def main():
    params = {"w": jnp.ones((4, 4)), "b": jnp.zeros((4,))}
    opt_state = tx.init(params)
    for batch in batches(5):
        params, opt_state = train_step(params, opt_state, batch)
    print("loss", float(evaluate(params, jnp.ones((8, 4)))))


if __name__ == "__main__":
    main()

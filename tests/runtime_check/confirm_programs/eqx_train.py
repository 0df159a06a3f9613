import equinox as eqx
import jax
import jax.numpy as jnp
import optax

tx = optax.sgd(1e-2)


@eqx.filter_jit
def train_step(model, opt_state, x):
    loss, grads = eqx.filter_value_and_grad(lambda m: ((jax.vmap(m)(x) - 1.0) ** 2).mean())(model)
    updates, opt_state = tx.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


def main():
    model = eqx.nn.MLP(4, 4, 8, 2, key=jax.random.PRNGKey(0))
    opt_state = tx.init(eqx.filter(model, eqx.is_array))
    for i in range(4):
        model, opt_state, loss = train_step(model, opt_state, jnp.full((8, 4), 0.1 * i))
    print("loss", float(loss))


if __name__ == "__main__":
    main()

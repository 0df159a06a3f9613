import equinox as eqx
import jax
import jax.numpy as jnp


@eqx.filter_jit
def step(model, opt_state):
    return jax.tree.map(lambda p: p * 0.9, model), jax.tree.map(lambda s: s + 1, opt_state)


def main():
    model = eqx.nn.Linear(4, 4, key=jax.random.PRNGKey(0))
    opt_state = {"m": jnp.zeros((4, 4))}
    for _ in range(3):
        model, opt_state = step(model, opt_state)
    print("steps", float(opt_state["m"][0, 0]))


if __name__ == "__main__":
    main()

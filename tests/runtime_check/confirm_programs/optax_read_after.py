import jax
import jax.numpy as jnp


@jax.jit
def step(params, batch):
    return jax.tree.map(lambda p: p - 0.1 * batch.mean(), params)


class Logger:
    def watch(self, params):
        self.params = params

    def report(self):
        return float(self.params["w"].sum())


def main():
    logger = Logger()
    params = {"w": jnp.ones((4,)), "b": jnp.zeros((4,))}
    logger.watch(params)
    for i in range(3):
        params = step(params, jnp.ones((2,)))
    print("first params", logger.report())


main()

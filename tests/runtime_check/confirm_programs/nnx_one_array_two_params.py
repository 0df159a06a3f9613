"""Two Params built from one array: nnx.jit passes that array twice, so it cannot be donated."""
import jax.numpy as jnp
from flax import nnx


class Twice(nnx.Module):
    def __init__(self, x):
        self.a = nnx.Param(x)
        self.b = nnx.Param(x)


@nnx.jit
def f(m):
    m.a[...] = m.a[...] + 1
    m.b[...] = m.b[...] * 2


def main(x):
    m = Twice(x)
    for _ in range(3):
        f(m)
    print("twice", float(m.a[...].sum()), float(m.b[...].sum()))


if __name__ == "__main__":
    main(jnp.ones(3))

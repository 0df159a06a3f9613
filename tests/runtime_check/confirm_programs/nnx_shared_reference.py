"""flax's pytree guide: a Module whose `right` is its `left`; nnx.jit passes the shared part once."""
import jax.numpy as jnp
from flax import nnx


class Shared(nnx.Pytree):
    def __init__(self):
        self.x = jnp.array(1.0)


class Parent(nnx.Pytree):
    def __init__(self):
        self.left = Shared()
        self.right = self.left  # reference sharing


@nnx.jit
def f(m):
    m.left.x = m.left.x + 1
    return m


def main():
    m = Parent()
    for _ in range(3):
        m = f(m)
    print("shared", m.left is m.right, float(m.right.x))


if __name__ == "__main__":
    main()

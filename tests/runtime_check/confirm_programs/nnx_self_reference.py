"""flax's own test (tests/nnx/transforms_test.py, test_graph_updates_add_self_reference), as a
program: the jitted call makes the Module refer to itself, after which it no longer flattens as a
pytree (jax.tree_util recurses without end). Confirm must not make the program fail."""

import typing as tp

from flax import nnx


class Foo(nnx.Module):
    def __init__(self):
        self.ref: tp.Optional["Foo"] = nnx.data(None)


calls = 0


@nnx.jit(graph=True, graph_updates=True)
def f(m: Foo):
    global calls
    calls += 1
    m.ref = m


m = Foo()
for _ in range(3):
    f(m)
assert m.ref is m
print("calls", calls)

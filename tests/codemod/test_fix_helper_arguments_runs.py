"""A state made by a file's own helper that maps new arrays over its argument
(``tree_map(lambda x: jnp.zeros(x.shape, x.dtype), nest)``, the form of brax's
``running_statistics.init_state``) holds none of the argument's arrays: the
argument may be read after the loop, and the default ``jaxmem-fix`` donates the
state; the fixed program prints the same and the old state is deleted.  A helper
that hands its argument back, or a name that may not be the helper, keeps the
doubt, and the donation, when forced, really crashes."""

import pytest
from fix_runs import crashes_when_forced, fix, fix_and_rerun, load

jax = pytest.importorskip("jax")

STATS = """
import jax
import jax.numpy as jnp


def _zeros_like(nest):
    return jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype), nest)


def _ones_like(nest):
    return jax.tree_util.tree_map(lambda x: jnp.ones(x.shape, x.dtype), nest)


def init_state(nest, std_eps=0.0):
    return {"count": jnp.zeros(()), "mean": _zeros_like(nest), "std": _ones_like(nest), "eps": std_eps}


@jax.jit
def update(stats, batch):
    count = stats["count"] + 1.0
    mean = jax.tree.map(lambda m, b: m + (b - m) / count, stats["mean"], batch)
    return {"count": count, "mean": mean, "std": stats["std"], "eps": stats["eps"]}


def main():
    sample = {"obs": jnp.ones((256, 8))}
    stats = init_state(sample)
    for step in range(3):
        stats = update(stats, jax.tree.map(lambda x: x * step, sample))
    print(float(stats["mean"]["obs"].sum()), float(sample["obs"].sum()))


if __name__ == "__main__":
    main()
"""

# The helper hands its argument back: the state holds ``sample``'s arrays.
HANDS_BACK = STATS.replace("def _ones_like(nest):\n    return jax.tree_util.tree_map(lambda x: jnp.ones(x.shape, x.dtype), nest)",
                           "def _ones_like(nest):\n    return nest")

# ``_ones_like`` is rebound at module level: the call may not reach the def.
REBOUND = STATS.replace("\n\ndef init_state", "\n\n_ones_like = lambda nest: nest\n\n\ndef init_state")

UNDONATED = "@jax.jit\ndef update"
DONATED = "@functools.partial(jax.jit, donate_argnums=0)\ndef update"


def test_a_state_a_helper_maps_new_arrays_into_is_donated_and_the_program_runs(tmp_path):
    path = fix_and_rerun(tmp_path, STATS)
    assert "donate_argnums=0" in path.read_text()

    namespace = load(path)
    sample = {"obs": jax.numpy.ones((4, 2))}
    stats = namespace["init_state"](sample)
    namespace["update"](stats, sample)
    assert stats["mean"]["obs"].is_deleted() and stats["std"]["obs"].is_deleted()
    assert not sample["obs"].is_deleted()


@pytest.mark.parametrize("program", [HANDS_BACK, REBOUND], ids=["hands-back", "rebound-name"])
def test_a_helper_that_may_hand_its_argument_back_keeps_the_doubt_and_crashes_when_forced(tmp_path, program):
    assert program != STATS
    path, result = fix(tmp_path, program)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == program
    crashes_when_forced(tmp_path, "import functools\n" + program, UNDONATED, DONATED)

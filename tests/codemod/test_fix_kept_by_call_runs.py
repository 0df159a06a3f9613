"""A value made from an argument by a call jaxmem cannot see may keep that
argument's arrays: ``nbrs = neighbor_fn.allocate(positions)`` (a jax-md
neighbor list keeps its positions), ``snapshot = keeper.remember(params)``.
When the donated state holds ``params`` as it is and such a value is read
after the donating call (directly, by a method that rebinds it, or through a
closure that may run later), donating deletes arrays it still reads: the
proposal stays below high, and the forced donation really fails (jax 0.10.2).
When nothing reads it after the call, it still stays below high when the call is a
function of a module jaxmem is not given, which may keep the arrays anywhere
(lint.values.kept_if); this program then runs with the donation forced."""

import sys

import pytest
from fix_runs import crashes_when_forced, run

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")

ALL = Settings(min_confidence=Confidence.LOW)

# A module the analysed file imports but jaxmem is not given: its calls are unknown.
KEEPER = """
class Snapshot:
    def __init__(self, tree):
        self.tree = tree

    def refresh(self, tree):
        return Snapshot(dict(self.tree, **tree))

    def total(self):
        return float(sum(v.sum() for v in self.tree.values()))


def remember(params):
    return Snapshot({"params": params})
"""

PROGRAM = """
import jax
import jax.numpy as jnp
import keeper


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.9, state)


def train(steps):
    params = jnp.ones((4, 4))
    snapshot = keeper.remember(params)
    state = {"params": params, "count": jnp.zeros(())}
    for _ in range(steps):
        state = step(state)
    return snapshot.total()


if __name__ == "__main__":
    print(train(3))
"""


def _proposals(source: str) -> dict[str, str]:
    """``parameter -> confidence`` of the JXM001 findings on ``source``."""
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    return {f.parameter_name: f.confidence.value for f in result.findings if f.code == "JXM001"}


@pytest.mark.parametrize("variant", [
    PROGRAM,
    # a method that rebinds it reads it first
    PROGRAM.replace("        state = step(state)\n",
                    "        state = step(state)\n        snapshot = snapshot.refresh({'count': state['count']})\n"),
    # a closure that captures it may run after the call
    PROGRAM.replace("    return snapshot.total()", "    return report()")
    .replace("    snapshot = keeper.remember(params)\n",
             "    snapshot = keeper.remember(params)\n\n    def report():\n        return snapshot.total()\n\n"),
], ids=["read", "method", "closure"])
def test_a_value_a_call_made_from_the_state_s_arrays_keeps_it_below_high(tmp_path, variant):
    (tmp_path / "keeper.py").write_text(KEEPER)
    assert _proposals(variant) == {"state": "medium"}
    crashes_when_forced(tmp_path, variant, "@jax.jit\n", "@jax.jit(donate_argnums=0)\n")


def test_a_value_an_unseen_function_made_from_it_keeps_it_below_high_though_nothing_reads_it(tmp_path):
    (tmp_path / "keeper.py").write_text(KEEPER)
    source = PROGRAM.replace("    return snapshot.total()", "    return float(state['params'].sum())") \
        .replace("    state = {", "    print(snapshot.total())\n    state = {")
    # ``keeper.remember`` is a function of a module jaxmem is not given: besides what it
    # returns, it may keep ``params`` anywhere (a module-level cache), so the state is
    # medium (lint.values.kept_if), though this program runs with the donation forced
    assert _proposals(source) == {"state": "medium"}
    forced = source.replace("@jax.jit\n", "@jax.jit(donate_argnums=0)\n")
    (tmp_path / "train.py").write_text(forced)
    assert run(sys.executable, "train.py", cwd=tmp_path).returncode == 0

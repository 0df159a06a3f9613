"""jax-md's ``init_fn, apply_fn = simulate.nve(energy_fn, shift, dt)`` then
``apply_fn = jax.jit(apply_fn)`` (or ``step_fn = jit(step_fn)``): the jitted
``apply_fn`` returns a state shaped like the one it is given, so a state it
rebinds is donated at high confidence, and the fixed program runs with the old
state deleted (jax-md 0.2.29, jax 0.10.2).  Where the state as made cannot be
donated, the proposal stays below high and the forced donation really fails:
``npt_nose_hoover``'s init holds one array twice; brownian's holds the
positions a later line reads; fire_descent's holds the positions a neighbor
list made from them also keeps (jaxmem does not follow that list, so an init
given a named value is never high)."""

import pytest
from fix_runs import crashes_when_forced, fix_and_rerun, load

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")
pytest.importorskip("jax_md")

ALL = Settings(min_confidence=Confidence.LOW)

NVE = """
import jax
from jax import jit, random
from jax_md import energy, simulate, space


def simulate_nve(steps):
    key = random.PRNGKey(0)
    displacement, shift = space.periodic(5.0)
    init_fn, step_fn = simulate.nve(energy.soft_sphere_pair(displacement), shift, 1e-3)
    step_fn = jit(step_fn)
    state = init_fn(key, random.uniform(key, (32, 2)) * 5.0, kT=0.1)
    for _ in range(steps):
        state = step_fn(state)
    return state


if __name__ == "__main__":
    print(simulate_nve(5).position.shape)
"""

NPT = """
import jax
import jax.numpy as jnp
from jax import random
from jax_md import energy, simulate, space


def simulate_npt(steps):
    key = random.PRNGKey(0)
    displacement, shift = space.periodic_general(5.0, fractional_coordinates=True)
    energy_fn = energy.soft_sphere_pair(displacement)
    init_fn, apply_fn = simulate.npt_nose_hoover(energy_fn, shift, 1e-3, pressure=0.05, kT=0.1)
    apply_fn = jax.jit(apply_fn)
    state = init_fn(key, random.uniform(key, (32, 2)), 5.0 * jnp.eye(2))
    for _ in range(steps):
        state = apply_fn(state, pressure=0.05)
    return state


if __name__ == "__main__":
    print(simulate_npt(3).position.shape)
"""

BROWNIAN = """
import jax
from jax import random
from jax_md import energy, simulate, space


def simulate_brownian(steps):
    key = random.PRNGKey(0)
    displacement, shift = space.free()
    init_fn, apply_fn = simulate.brownian(energy.soft_sphere_pair(displacement), shift, 1e-3, kT=0.1)
    apply_fn = jax.jit(apply_fn)
    positions = random.uniform(key, (32, 2))
    state = init_fn(key, positions)
    for _ in range(steps):
        state = apply_fn(state)
    return float((state.position - positions).sum())


if __name__ == "__main__":
    print(simulate_brownian(3) != 0.0)
"""


RELAX = """
import jax
import jax.numpy as jnp
from jax import jit, random
from jax_md import energy, minimize, partition, space


def relax(steps):
    key = random.PRNGKey(0)
    displacement, shift = space.periodic(5.0)
    neighbor_fn = partition.neighbor_list(displacement, 5.0, 1.0)
    positions = random.uniform(key, (32, 2)) * 5.0
    nbrs = neighbor_fn.allocate(positions)
    fire_init, fire_apply = minimize.fire_descent(energy.soft_sphere_pair(displacement), shift)
    fire_apply = jit(fire_apply)
    state = fire_init(positions)
    for _ in range(steps):
        state = fire_apply(state)
    return float(nbrs.reference_position.sum())


if __name__ == "__main__":
    print(relax(3) != 0.0)
"""


def _proposals(source: str) -> dict[str, str]:
    """``function:parameter -> confidence`` of the JXM001 findings on ``source``."""
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    return {f"{f.function}:{f.parameter_name}": f.confidence.value for f in result.findings if f.code == "JXM001"}


def test_a_jitted_apply_fn_donates_the_state_it_rebinds_and_the_program_runs(tmp_path):
    assert _proposals(NVE) == {"step_fn:state": "high"}
    path = fix_and_rerun(tmp_path, NVE)
    assert "step_fn = jit(step_fn, donate_argnums=0)" in path.read_text()

    # the fixed module's step deletes the state it is given
    module = load(path)
    state = module["simulate_nve"](1)
    displacement, shift = module["space"].periodic(5.0)
    _, step_fn = module["simulate"].nve(module["energy"].soft_sphere_pair(displacement), shift, 1e-3)
    jax.jit(step_fn, donate_argnums=0)(state)
    assert all(leaf.is_deleted() for leaf in jax.tree.leaves(state))


def test_an_npt_state_as_made_holds_one_array_twice_and_is_not_high(tmp_path):
    assert _proposals(NPT) == {"apply_fn:state": "medium"}
    crashes_when_forced(tmp_path, NPT, "jax.jit(apply_fn)", "jax.jit(apply_fn, donate_argnums=0)",
                        error="donate the same buffer twice")


def test_a_state_holding_positions_read_later_is_not_high(tmp_path):
    assert _proposals(BROWNIAN) == {"apply_fn:state": "medium"}
    crashes_when_forced(tmp_path, BROWNIAN, "jax.jit(apply_fn)", "jax.jit(apply_fn, donate_argnums=0)")


def test_a_state_sharing_positions_with_a_neighbor_list_is_not_high(tmp_path):
    assert _proposals(RELAX) == {"fire_apply:state": "medium"}
    crashes_when_forced(tmp_path, RELAX, "jit(fire_apply)", "jit(fire_apply, donate_argnums=0)")

"""A flashbax replay-buffer loop is fixed by the default ``jaxmem-fix``: a
buffer made by a flashbax factory has a known contract (``init`` makes new
arrays, ``add`` returns the state's structure, ``sample``/``can_sample`` and a
``Vault``'s ``write`` keep nothing), so the state is donated both to
``jax.jit(buffer.add)`` and to a jitted step that calls ``buffer.add``; the
fixed program prints the same and its old states are deleted.  A buffer name
that may be bound to another object is left alone: forced, it crashes."""

import sys

import pytest
from fix_runs import fix, last_line, load, run

jax = pytest.importorskip("jax")
pytest.importorskip("flashbax")

PROGRAM = """
import tempfile

import flashbax as fbx
import jax
import jax.numpy as jnp
from flashbax.vault import Vault

buffer = fbx.make_flat_buffer(max_length=32, min_length=2, sample_batch_size=4)
add = jax.jit(buffer.add)
sample = jax.jit(buffer.sample)


@jax.jit
def collect(buffer_state, key):
    transition = {"obs": jax.random.normal(key, (3,)), "reward": jnp.float32(1.0)}
    return buffer.add(buffer_state, transition)


def main(folder):
    transition = {"obs": jnp.zeros(3), "reward": jnp.float32(0.0)}
    buffer_state = buffer.init(transition)
    vault = Vault(vault_name="demo", experience_structure=buffer_state.experience, rel_dir=folder)
    key = jax.random.key(0)
    total = 0.0
    for i in range(6):
        key, collect_key, sample_key = jax.random.split(key, 3)
        buffer_state = collect(buffer_state, collect_key)
        buffer_state = add(buffer_state, jax.tree.map(lambda x: x + i, transition))
        vault.write(buffer_state)
        if buffer.can_sample(buffer_state):
            total += float(sample(buffer_state, sample_key).experience.first["obs"].sum())
    print("index", int(buffer_state.current_index), "total", round(total, 3), "vault", vault.vault_index)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        main(folder)
"""

# ``buffer`` is a flashbax buffer or, on another path, one whose ``init`` keeps the
# experience it is given: the state then holds ``transition``'s arrays, and donating
# it beside ``transition`` is rejected by jax.
MAYBE_ANOTHER_BUFFER = """
import os

import flashbax as fbx
import jax
import jax.numpy as jnp


class KeepingBuffer:
    def init(self, experience):
        return {"experience": experience, "index": jnp.zeros((), jnp.int32)}

    def add(self, state, batch):
        experience = jax.tree.map(lambda e, b: e * 0.5 + b, state["experience"], batch)
        return {"experience": experience, "index": state["index"] + 1}


buffer = fbx.make_flat_buffer(max_length=32, min_length=2, sample_batch_size=4)
if os.environ.get("KEEPING_BUFFER", "1") == "1":
    buffer = KeepingBuffer()
add = jax.jit(buffer.add)


def main():
    transition = {"obs": jnp.ones(3), "reward": jnp.float32(1.0)}
    buffer_state = buffer.init(transition)
    for _ in range(3):
        buffer_state = add(buffer_state, transition)
    print("done", float(jax.tree.leaves(buffer_state)[0].sum()))


if __name__ == "__main__":
    main()
"""


def test_default_fix_donates_the_buffer_state_and_the_program_runs(tmp_path):
    expected = last_line(run(sys.executable, "-c", PROGRAM, cwd=tmp_path))
    assert expected.startswith("index 12 ")
    path, result = fix(tmp_path, PROGRAM)
    assert result.returncode == 1, result.stdout + result.stderr  # changed
    fixed = path.read_text()
    assert "jax.jit(buffer.add, donate_argnums=0)" in fixed
    assert "donate_argnums=0)\ndef collect" in fixed
    assert "jax.jit(buffer.sample)" in fixed  # the state is read again after sampling
    assert last_line(run(sys.executable, "train.py", cwd=tmp_path)) == expected

    namespace = load(path)
    jnp = jax.numpy
    transition = {"obs": jnp.zeros(3), "reward": jnp.float32(0.0)}
    first = namespace["buffer"].init(transition)
    second = namespace["add"](first, transition)
    namespace["collect"](second, jax.random.key(1))
    for state in (first, second):
        assert all(leaf.is_deleted() for leaf in jax.tree.leaves(state))
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves(transition))


def test_a_buffer_name_bound_to_another_object_is_left_alone_and_crashes_when_forced(tmp_path):
    assert last_line(run(sys.executable, "-c", MAYBE_ANOTHER_BUFFER, cwd=tmp_path)).startswith("done")
    path, result = fix(tmp_path, MAYBE_ANOTHER_BUFFER)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == MAYBE_ANOTHER_BUFFER

    forced = MAYBE_ANOTHER_BUFFER.replace("jax.jit(buffer.add)", "jax.jit(buffer.add, donate_argnums=0)")
    crash = run(sys.executable, "-c", forced, cwd=tmp_path)
    assert crash.returncode != 0 and "previously donated" in crash.stderr, crash.stderr

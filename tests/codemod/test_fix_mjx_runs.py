"""An MJX simulation loop, as mujoco's MJX tutorial writes it, is fixed by the
default ``jaxmem-fix``: ``mjx.put_model``/``mjx.put_data`` make new device
buffers, every ``jax.jit(mjx.step)``-like function returns a ``Data`` of its
input's structure, and ``mjx.get_data`` keeps nothing, so the device data is
donated to ``jax.jit(mjx.step)`` and to a jitted step that calls mjx; the
fixed program prints the same and the old data's buffers are deleted.  Data
read after a step, or made with another implementation, is left alone."""

import sys

import pytest
from fix_runs import fix, last_line, load, run, tool

jax = pytest.importorskip("jax")
pytest.importorskip("mujoco.mjx")

PROGRAM = """
import jax
import jax.numpy as jnp
import mujoco
from mujoco import mjx

XML = '''
<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 .5"><freejoint/><geom size=".1"/></body>
    <body pos="1 0 1"><joint name="hinge" type="hinge" axis="0 1 0"/><geom type="capsule" size=".05 .3"/></body>
  </worldbody>
  <actuator><motor joint="hinge"/></actuator>
</mujoco>
'''

jit_step = jax.jit(mjx.step)
batch_step = jax.jit(jax.vmap(mjx.step, in_axes=(None, 0)))


@jax.jit
def controlled_step(m, d, ctrl):
    d = d.replace(ctrl=ctrl)
    return mjx.forward(m, mjx.step(m, d))


def main():
    mj_model = mujoco.MjModel.from_xml_string(XML)
    mj_data = mujoco.MjData(mj_model)
    mjx_model = mjx.put_model(mj_model)
    mjx_data = mjx.put_data(mj_model, mj_data)
    heights = []
    for i in range(20):
        mjx_data = jit_step(mjx_model, mjx_data)
        mjx_data = controlled_step(mjx_model, mjx_data, jnp.full((1,), 0.1 * i))
        heights.append(float(mjx.get_data(mj_model, mjx_data).qpos[2]))
    time = float(mjx_data.time)
    batch = jax.vmap(lambda q: mjx_data.replace(qpos=q))(jnp.tile(mjx_data.qpos, (4, 1)))
    for _ in range(5):
        batch = batch_step(mjx_model, batch)
    print("time", round(time, 4), "height", round(heights[-1], 5), "mj", mj_data.qpos[2],
          "batch", round(float(batch.qpos[:, 2].sum()), 5))


if __name__ == "__main__":
    main()
"""

# The old data is read after the step: donating it crashes.
READ_AFTER = PROGRAM.replace(
    "        mjx_data = jit_step(mjx_model, mjx_data)\n",
    "        previous = mjx_data\n        mjx_data = jit_step(mjx_model, mjx_data)\n"
    "        heights.append(float(previous.qpos[2]))\n",
)


def test_default_fix_donates_the_device_data_and_the_program_runs(tmp_path):
    expected = last_line(run(sys.executable, "-c", PROGRAM, cwd=tmp_path))
    assert expected.startswith("time ")
    path, result = fix(tmp_path, PROGRAM, name="sim.py")
    assert result.returncode == 1, result.stdout + result.stderr  # changed
    fixed = path.read_text()
    assert "jax.jit(mjx.step, donate_argnums=1)" in fixed
    assert "@partial(jax.jit, donate_argnums=1)\ndef controlled_step" in fixed
    assert "jax.jit(jax.vmap(mjx.step, in_axes=(None, 0)), donate_argnums=1)" in fixed
    assert last_line(run(sys.executable, "sim.py", cwd=tmp_path)) == expected

    namespace = load(path)
    mujoco, mjx = namespace["mujoco"], namespace["mjx"]
    mj_model = mujoco.MjModel.from_xml_string(namespace["XML"])
    mjx_model = mjx.put_model(mj_model)
    first = mjx.put_data(mj_model, mujoco.MjData(mj_model))
    second = namespace["jit_step"](mjx_model, first)
    namespace["controlled_step"](mjx_model, second, jax.numpy.ones(1))
    fresh = mjx.put_data(mj_model, mujoco.MjData(mj_model))
    batch = jax.tree.map(lambda leaf: jax.numpy.stack([leaf, leaf]), fresh)
    namespace["batch_step"](mjx_model, batch)
    for old in (first, second, batch):
        assert any(leaf.is_deleted() for leaf in jax.tree.leaves(old))
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves(mjx_model))


def test_data_read_after_the_step_is_left_alone_and_crashes_when_forced(tmp_path):
    assert last_line(run(sys.executable, "-c", READ_AFTER, cwd=tmp_path)).startswith("time ")
    path, result = fix(tmp_path, READ_AFTER, name="sim.py")
    assert "jax.jit(mjx.step)\n" in path.read_text()  # the read-after step is not donated

    forced = READ_AFTER.replace("jax.jit(mjx.step)", "jax.jit(mjx.step, donate_argnums=1)")
    crash = run(sys.executable, "-c", forced, cwd=tmp_path)
    assert crash.returncode != 0 and "deleted" in crash.stderr, crash.stderr


def test_data_made_with_another_implementation_is_not_fixed(tmp_path):
    other = PROGRAM.replace("mjx.put_data(mj_model, mj_data)", "mjx.put_data(mj_model, mj_data, impl=IMPL)")
    other = other.replace("jit_step = jax.jit(mjx.step)", "IMPL = 'jax'\njit_step = jax.jit(mjx.step)")
    path, result = fix(tmp_path, other, name="sim.py")
    assert "jax.jit(mjx.step)\n" in path.read_text()
    checked = run(tool("jaxmem"), "check", "sim.py", cwd=tmp_path)
    assert "JXM001 `jit_step` does not donate `d`" in checked.stdout
    assert "medium confidence" in checked.stdout.split("jit_step` does not donate `d`")[1].splitlines()[0]

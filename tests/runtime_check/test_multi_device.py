"""Shardings and jax.pmap on 4 forced CPU devices (each case runs in a fresh process)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

FOUR_DEVICES = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}

PROGRAM = """
    import functools

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()).reshape(4), ("x",))
    SHARDED, REPLICATED = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())


    @functools.partial(jax.jit, donate_argnums=0, out_shardings=REPLICATED)
    def gather_step(w):
        return w * 2


    @functools.partial(jax.jit, donate_argnums=0, in_shardings=SHARDED, out_shardings=SHARDED)
    def sharded_step(w):
        return w * 2


    @functools.partial(jax.pmap, axis_name="i", donate_argnums=0)
    def pmap_step(params, batch):
        return jax.tree.map(lambda p: p - jax.lax.pmean(batch.mean(), "i"), params)


    def main():
        w = jax.device_put(jnp.ones((8, 4)), SHARDED)
        gather_step(w)
        w = sharded_step(jax.device_put(jnp.ones((8, 4)), SHARDED))
        params = jax.pmap(lambda p: p)({"w": jnp.ones((4, 3, 3)), "b": jnp.ones((4, 3))})  # spread over devices
        params = pmap_step(params, jnp.ones((4, 2)))
        return params


    if __name__ == "__main__":
        main()
"""


def _python(code: str, cwd) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=FOUR_DEVICES,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("devices")
    (directory / "program.py").write_text(textwrap.dedent(PROGRAM))
    return directory


def test_verify_reads_shardings_and_pmap_pytrees_on_four_devices(program_dir):
    result = _python("""
        import json, sys
        import jax, jax.numpy as jnp
        sys.path.insert(0, ".")
        import program
        from jaxmem.runtime_check import verify

        w = jax.device_put(jnp.ones((8, 4)), program.SHARDED)
        gather = verify(program.gather_step, w)
        sharded = verify(program.sharded_step, jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=program.SHARDED))
        params = {"w": jnp.ones((4, 3, 3)), "b": jnp.ones((4, 3))}
        pmapped = verify(program.pmap_step, jax.pmap(lambda p: p)(params), jnp.ones((4, 2)))
        unplaced = verify(program.pmap_step, params, jnp.ones((4, 2)))
        copied = verify(program.sharded_step, jnp.ones((8, 4)))  # made on one device, moved by in_shardings
        print(json.dumps({
            "gather": [leaf.reason_code for leaf in gather.leaves], "gather_size": gather.leaves[0].nbytes,
            "gather_per_device_of": gather.per_device_of, "sharded_ok": sharded.ok,
            "pmap": {leaf.path: [leaf.aliased, leaf.nbytes] for leaf in pmapped.leaves},
            "pmap_per_device_of": pmapped.per_device_of,
            "pmap_saving": pmapped.predicted_saving,
            "unplaced": sorted({leaf.reason_code for leaf in unplaced.leaves}),
            "copied": [leaf.reason_code for leaf in copied.leaves],
        }))
    """, program_dir)
    assert result["gather"] == ["sharding-mismatch"]
    assert result["gather_size"] == 8 * 4 * 4 // 4 and result["gather_per_device_of"] == 4
    assert result["sharded_ok"] is True
    assert result["pmap"] == {"params['b']": [True, 3 * 4], "params['w']": [True, 9 * 4]}
    assert result["pmap_per_device_of"] == 4 and result["pmap_saving"] == 12 * 4
    # arrays made on one device are copied onto the devices first: the donation frees the copy only
    assert result["unplaced"] == ["input-resharded"] and result["copied"] == ["input-resharded"]


def test_record_keeps_shardings_and_pmap_pytrees(program_dir):
    recorded = subprocess.run([sys.executable, "-m", "jaxmem.runtime_check.commands", "record", "--out", "rec.json",
                               "--", "python", "program.py"], cwd=program_dir, env=FOUR_DEVICES,
                              capture_output=True, text=True, timeout=300)
    assert recorded.returncode == 0, recorded.stderr
    done = subprocess.run([sys.executable, "-m", "jaxmem.runtime_check.commands", "verify", "--record", "rec.json",
                           "--format", "json"], cwd=program_dir, env=FOUR_DEVICES,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # gather_step's donation is not usable
    reports = {report["function"]: report for report in json.loads(done.stdout)["reports"]}
    assert [leaf["reason_code"] for leaf in reports["gather_step"]["leaves"]] == ["sharding-mismatch"]
    assert reports["sharded_step"]["ok"]
    assert reports["pmap_step"]["ok"] and len(reports["pmap_step"]["leaves"]) == 2


def test_donating_an_array_placed_elsewhere_does_not_delete_it(program_dir):
    # What input-resharded stands for, on the real program: the caller's array survives the call.
    result = _python("""
        import json, sys
        import jax, jax.numpy as jnp
        sys.path.insert(0, ".")
        import program

        unplaced = {"w": jnp.ones((4, 3, 3)), "b": jnp.ones((4, 3))}
        program.pmap_step(unplaced, jnp.ones((4, 2)))
        placed = jax.pmap(lambda p: p)({"w": jnp.ones((4, 3, 3)), "b": jnp.ones((4, 3))})
        program.pmap_step(placed, jnp.ones((4, 2)))
        print(json.dumps({"unplaced": unplaced["w"].is_deleted(), "placed": placed["w"].is_deleted()}))
    """, program_dir)
    assert result == {"unplaced": False, "placed": True}


def test_jaxmem_run_names_a_pmap_donation(tmp_path):
    (tmp_path / "crash.py").write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        step = jax.pmap(lambda params: jax.tree.map(lambda p: p * 2, params), donate_argnums=0)
        params = jax.pmap(lambda p: p)({"w": jnp.ones((4, 3))})  # already spread over the devices
        new_params = step(params)
        print(params["w"].sum())
    """))
    done = subprocess.run([sys.executable, "-m", "jaxmem.runtime_check.commands", "run", "--", "python", "crash.py"],
                          cwd=tmp_path, env=FOUR_DEVICES, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "crash.py:7 in a call to <lambda>(...)" in done.stderr and "`params` (read at" in done.stderr
    assert "parameter `params['w']` (float32[4,3])" in done.stderr

"""measure=True: unavailable on CPU, and the per-variant worker processes really run."""

import subprocess
import sys

import jax.numpy as jnp

from jaxmem.runtime_check import verify
from jaxmem.runtime_check.measure import measure_target
from jaxmem.runtime_check.targets import resolve_target
from jaxmem.runtime_check.verifier import verify_target


def step(params, batch):
    return {"w": params["w"] - batch.mean()}


def test_cpu_says_measurement_is_unavailable_and_keeps_the_compiled_figures():
    report = verify(step, {"w": jnp.ones((32, 32))}, jnp.ones(4), donate_argnums=0, measure=True)
    assert report.measurement is not None and not report.measurement.available
    assert "memory_stats() is None" in report.measurement.note
    assert report.predicted_saving == 32 * 32 * 4
    assert "measurement: unavailable" in report.render_text()


def test_worker_processes_run_both_variants_and_see_donated_inputs_deleted():
    target = resolve_target(step, donate_argnums=0)
    args = ({"w": jnp.ones((32, 32))}, jnp.ones(4))
    report = verify_target(target, args, {})
    measured = measure_target(target, args, {}, report, require_memory_stats=False)
    assert measured.donated_inputs_deleted is True
    assert measured.peak_with_donation is None and "no memory statistics" in measured.note


def test_local_functions_cannot_be_measured_and_say_why():
    def local(x):
        return x + 1

    target = resolve_target(local, donate_argnums=0)
    report = verify_target(target, (jnp.ones(3),), {})
    measured = measure_target(target, (jnp.ones(3),), {}, report, require_memory_stats=False)
    assert not measured.available and "move it to module level" in measured.note


def test_importing_the_commands_does_not_import_jax(tmp_path):
    code = ("import sys, argparse, jaxmem.runtime_check.commands as c, jaxmem.runtime_check.pytest_plugin;"
            "p = argparse.ArgumentParser(); c.register(p.add_subparsers());"
            "print('jax' in sys.modules)")
    # cwd outside the checkout: "-c" puts the working directory first on sys.path.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.stdout.strip() == "False", done.stderr


def test_workers_create_inputs_where_a_pmap_takes_them(tmp_path):
    # Inputs made on one device would be copied onto the devices and only the copies donated.
    (tmp_path / "steps.py").write_text(
        "import jax\n"
        "def update(tree, batch):\n"
        "    return jax.tree.map(lambda p: p - batch.mean(), tree)\n"
        "pmapped = jax.pmap(update, donate_argnums=0)\n")
    code = (
        "import sys, jax, jax.numpy as jnp; sys.path.insert(0, '.'); import steps\n"
        "from jaxmem.runtime_check.measure import measure_target\n"
        "from jaxmem.runtime_check.targets import resolve_target\n"
        "from jaxmem.runtime_check.verifier import verify_target\n"
        "target = resolve_target(steps.pmapped)\n"
        "args = ({'w': jax.ShapeDtypeStruct((2, 3), jnp.float32), 'b': jax.ShapeDtypeStruct((2,), jnp.float32)},"
        " jax.ShapeDtypeStruct((2, 4), jnp.float32))\n"
        "report = verify_target(target, args, {})\n"
        "print(measure_target(target, args, {}, report, require_memory_stats=False).donated_inputs_deleted)\n")
    env = {**__import__("os").environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "True"

"""A call that passes ``jnp.asarray(x)`` where ``x`` holds host NumPy data only
(``rng.normal(size=n).astype(np.float32)``, tpu-inference's kernel tests) passes
a device copy nothing else holds: donating it deletes no array the program
reads again, and the NumPy array keeps its values.  When ``x`` may be a device
array, ``jnp.asarray(x)`` is ``x`` itself and nothing is proposed.  Each claim
runs on jax here."""

import sys
import warnings

import numpy as np
import pytest
from fix_runs import crashes_when_forced, fix_and_rerun, load, report_of, run

from jaxmem.findings import Confidence

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

PROGRAM = """
import functools

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def rotate(x, scale):
    return x * scale


def main(n):
    rng = np.random.default_rng(0)
BODY
    return float(np.asarray(out).sum()), float(x.sum())


if __name__ == "__main__":
    print(main(4096))
"""

HOST = """\
    x = rng.normal(size=(n,)).astype(np.float32)
    out = rotate(jnp.asarray(x), 2.0)"""
HOST_COPIED = HOST.replace("jnp.asarray(x)", "jnp.array(x)")
HOST_PUT = HOST.replace("jnp.asarray(x)", "jax.device_put(x)")
# a write that reads the name it rebinds keeps host data host
HOST_REBOUND = HOST.replace(".astype(np.float32)\n", "\n    x = x.astype(np.float32)\n")
# jnp.asarray of a device array is that array: donating it deletes ``x``, read below
DEVICE = """\
    x = jnp.ones((n,), jnp.float32)
    out = rotate(jnp.asarray(x), 2.0)"""
SOMETIMES_DEVICE = """\
    x = rng.normal(size=(n,)).astype(np.float32)
    if n > 1:
        x = jnp.ones((n,), jnp.float32)
    out = rotate(jnp.asarray(x), 2.0)"""
PARAMETER = "    x = rng.normal(size=(n,)).astype(np.float32)\n    out, x = twice(x)"
TWICE = '''

def twice(x):
    return rotate(jnp.asarray(x), 2.0), x
'''

UNDONATED = "@jax.jit\ndef rotate"
DONATED = "@functools.partial(jax.jit, donate_argnums=0)\ndef rotate"


def _about_x(findings):
    return [f for f in findings if "`x`" in f.message]


def _findings(program: str):
    return report_of(program)


@pytest.mark.parametrize("body", [HOST, HOST_COPIED, HOST_PUT, HOST_REBOUND],
                         ids=["asarray", "array", "device_put", "rebound"])
def test_a_device_copy_of_host_data_is_proposed_and_runs_donated(tmp_path, body):
    program = PROGRAM.replace("BODY", body)
    (finding,) = _about_x(_findings(program).findings)
    assert finding.code == "JXM002", finding.message  # not rebound: reused only by a matching output
    donated = program.replace(UNDONATED, DONATED)
    assert not [f for f in _findings(donated).findings if f.code.startswith("JXM1")]  # ``x`` is read, not deleted
    expected = run(sys.executable, "-c", program, cwd=tmp_path)
    forced = run(sys.executable, "-W", "error", "-c", donated, cwd=tmp_path)  # a donation XLA could not use fails
    assert expected.returncode == 0 and forced.returncode == 0, forced.stderr
    assert forced.stdout == expected.stdout


@pytest.mark.parametrize("body", [DEVICE, SOMETIMES_DEVICE], ids=["device", "sometimes device"])
def test_a_device_array_passed_through_asarray_is_not_proposed(tmp_path, body):
    program = PROGRAM.replace("BODY", body)
    assert not _about_x(_findings(program).findings)  # read later at its only call: nothing to say
    crashes_when_forced(tmp_path, program, UNDONATED, DONATED)


def test_a_parameter_passed_through_asarray_is_not_proposed(tmp_path):
    # ``twice``'s caller may hand it a device array: jaxmem does not follow the call
    program = PROGRAM.replace("BODY", PARAMETER).replace("\n\ndef main", TWICE + "\n\ndef main")
    assert not _about_x(_findings(program).findings)
    device = program.replace("rng.normal(size=(n,)).astype(np.float32)\n    out, x = twice(x)",
                             "jnp.ones((n,), jnp.float32)\n    out, x = twice(x)")
    crashes_when_forced(tmp_path, device, UNDONATED, DONATED)


def test_a_numpy_batch_made_by_a_generator_method_is_not_worth_donating():
    # jit copies host data in: donating ``x`` itself frees nothing
    program = PROGRAM.replace("BODY", HOST.replace("jnp.asarray(x)", "x")).replace("float(x.sum())", "0.0")
    result = _findings(program)
    assert not _about_x(result.findings)
    (refusal,) = [r for r in result.refusals if r.parameter == "x"]
    assert "not worth donating" in refusal.reason and "rng.normal" in refusal.reason, refusal.reason


@pytest.mark.parametrize("make", [jnp.asarray, jnp.array, jax.device_put, lambda x: jnp.asarray(x, dtype=x.dtype)],
                         ids=["asarray", "array", "device_put", "asarray with dtype"])
def test_donating_a_device_copy_leaves_the_numpy_data_as_it_was(make):
    # On the CPU backend a large aligned NumPy array may be shared, not copied; the
    # donated buffer is then only deleted, never written into.
    storage = np.empty(4 * (1 << 20) + 256, np.uint8)
    offset = (-storage.ctypes.data) % 256
    x = storage[offset:offset + 4 * (1 << 20)].view(np.float32)
    x[:] = np.arange(x.size, dtype=np.float32)
    before = x.copy()
    copy = make(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = jax.jit(lambda v: v.at[0].set(-1.0) * 2, donate_argnums=0)(copy)
    assert copy.is_deleted() and float(out[1]) == 2.0
    np.testing.assert_array_equal(x, before)



LOOP = """
import functools

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def step(params, lr):
    return params - lr * params


def main(rounds):
    params = np.random.default_rng(0).normal(size=(4096,)).astype(np.float32)
    for _ in range(rounds):
        params = step(params, 0.1)
    return float(params.sum())


if __name__ == "__main__":
    print(main(3))
"""


def test_host_data_replaced_by_the_step_result_is_worth_donating(tmp_path):
    # the first round passes NumPy data (copied in); every later one the device arrays the step made
    (finding,) = _findings(LOOP).findings
    assert finding.code == "JXM001" and finding.confidence is Confidence.HIGH, finding.message
    path = fix_and_rerun(tmp_path, LOOP)
    params = jnp.ones(4096)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(path)["step"](params, 0.1)
    assert params.is_deleted()


def test_a_value_that_is_host_data_on_one_path_only_is_judged_by_the_other(tmp_path):
    body = """\
    x = rng.normal(size=(n,)).astype(np.float32) if n > 8 else jnp.ones((n,), jnp.float32)
    out = rotate(x, 2.0)"""
    program = PROGRAM.replace("BODY", body).replace("float(x.sum())", "0.0")
    (finding,) = _about_x(_findings(program).findings)
    assert finding.code == "JXM002", finding.message
    donated = program.replace(UNDONATED, DONATED)
    for n in (4096, 4):
        forced = run(sys.executable, "-W", "error", "-c", donated.replace("main(4096)", f"main({n})"), cwd=tmp_path)
        assert forced.returncode == 0, forced.stderr


def test_a_dead_device_array_passed_through_asarray_is_judged_as_itself(tmp_path):
    # jnp.asarray(x) of a device array is x: donating it deletes x, which nothing reads again
    body = "    x = jnp.ones((n,), jnp.float32)\n    out = rotate(jnp.asarray(x), 2.0)"
    program = PROGRAM.replace("BODY", body).replace("float(x.sum())", "0.0")
    (finding,) = _about_x(_findings(program).findings)
    assert finding.code == "JXM002", finding.message
    forced = run(sys.executable, "-W", "error", "-c", program.replace(UNDONATED, DONATED), cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    x = jnp.ones(8)
    jax.jit(lambda v, s: v * s, donate_argnums=0)(jnp.asarray(x), 2.0)
    assert x.is_deleted()  # the very array: what the parameter's verdict has to be about


def test_a_device_array_rebound_through_asarray_is_fixed_and_runs(tmp_path):
    body = "    x = jnp.ones((n,), jnp.float32)\n    for _ in range(3):\n        x = rotate(jnp.asarray(x), 2.0)\n    out = x"
    program = PROGRAM.replace("BODY", body)
    (finding,) = _about_x(_findings(program).findings)
    assert finding.code == "JXM001" and finding.confidence is Confidence.HIGH, finding.message
    fix_and_rerun(tmp_path, program)

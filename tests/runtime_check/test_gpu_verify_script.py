"""benchmarks/gpu_verify.py runs every case end to end with --small on CPU (2 forced devices for pmap)."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_small_run_writes_results_for_every_case(tmp_path):
    pytest.importorskip("flax.nnx")
    out = tmp_path / "result.json"
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "gpu_verify.py"), "--small",
                           "--out", str(out)], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["platform"] == "cpu"
    assert set(result["cases"]) == {"mlp_adam", "nnx_optax", "pmap_mlp_adam"}
    for case in result["cases"].values():
        assert case["all_leaves_reused"] is True
        assert case["prediction_equals_donated_state"] is True
        assert case["predicted_saving_bytes"] == case["donated_state_bytes"] > 0
        assert case["measured_saving_bytes"] is None  # the cpu backend has no memory statistics
    nnx_case = result["cases"]["nnx_optax"]
    assert nnx_case["nnx_jit_matches_functional"] is True and nnx_case["nnx_jit_all_leaves_reused"] is True
    assert result["cases"]["pmap_mlp_adam"]["devices"] == 2
    assert result["cases"]["pmap_mlp_adam"]["report"]["per_device_of"] == 2


def test_pmap_case_measures_in_worker_processes(tmp_path):
    # The GPU path without a GPU: workers rebuild the pmap case, create its inputs where
    # the program takes them, run it and see the donated inputs deleted (the plain jit
    # path is covered by test_measure; the nnx case's functional step is a plain jit).
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import gpu_verify\n"
        "from jaxmem.runtime_check.measure import measure_target\n"
        "from jaxmem.runtime_check.targets import resolve_target\n"
        "from jaxmem.runtime_check.verifier import verify_target\n"
        "for name in ('pmap_mlp_adam',):\n"
        "    fn, args, options, _ = gpu_verify.CASES[name](gpu_verify.SMALL)\n"
        "    target = resolve_target(fn, **options)\n"
        "    report = verify_target(target, args, {})\n"
        "    measured = measure_target(target, args, {}, report, require_memory_stats=False)\n"
        "    print(name, measured.donated_inputs_deleted)\n")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code, os.path.join(REPO, "benchmarks")], capture_output=True,
                          text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pmap_mlp_adam", "True"]

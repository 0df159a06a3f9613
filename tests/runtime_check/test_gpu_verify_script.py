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


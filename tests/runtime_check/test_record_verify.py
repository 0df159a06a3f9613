"""`jaxmem record` captures signatures of a real run; `jaxmem verify --record` reproduces them."""

import json

import pytest

from jaxmem.runtime_check.recorder import load_record

TRAIN = """
    import functools
    import jax
    import jax.numpy as jnp


    @functools.partial(jax.jit, static_argnums=2, donate_argnums=0)
    def train_step(params, batch, steps):
        return jax.tree.map(lambda p: p - steps * batch.mean(), params)


    def evaluate(params):
        return jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)


    evaluate_fn = jax.jit(evaluate, donate_argnums=0)


    def main():
        params = {"w": jnp.ones((8, 8)), "b": jnp.zeros((8,))}
        for _ in range(3):
            params = train_step(params, jnp.ones((4, 8)), 2)
        evaluate_fn(params)


    if __name__ == "__main__":
        main()
"""


@pytest.fixture
def recorded(write_file, run_commands, tmp_path):
    write_file("train.py", TRAIN)
    done = run_commands("record", "--out", "rec.json", "--", "python", "train.py")
    assert done.returncode == 0, done.stderr
    return load_record(str(tmp_path / "rec.json"))


def test_record_keys_definitions_by_file_and_line(recorded, tmp_path):
    by_name = {entry["qualname"]: entry for entry in recorded["functions"]}
    step, evaluate = by_name["train_step"], by_name["evaluate"]
    assert step["definition_path"] == str(tmp_path / "train.py")
    assert (step["definition_line"], step["code_first_line"]) == (7, 7)   # the jit decorator, as the analysis reports it
    assert evaluate["definition_line"] == 16                               # the jax.jit(...) line
    assert step["options"] == {"static_argnums": 2, "donate_argnums": 0}


def test_record_captures_shapes_dtypes_static_values_and_call_counts(recorded):
    step = next(entry for entry in recorded["functions"] if entry["qualname"] == "train_step")
    [signature] = step["signatures"]  # dict key order does not split signatures
    assert signature["calls"] == 3
    params, batch, steps = signature["args"]
    name, spec = params["dict"][1]
    assert (name, spec["array"]["shape"], spec["array"]["dtype"]) == ("w", [8, 8], "float32")
    assert "CpuDevice" in spec["array"]["sharding"]
    assert batch["array"]["shape"] == [4, 8]
    assert steps == {"static": 2, "repr": "2"}


def test_verify_record_reports_each_function_and_fails_on_unusable_donation(recorded, run_commands):
    done = run_commands("verify", "--record", "rec.json", "--format", "json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    reports = {report["function"]: report for report in data["reports"]}
    assert reports["train_step"]["ok"] and reports["train_step"]["definition_line"] == 7
    assert reports["train_step"]["predicted_saving_bytes"] == 8 * 8 * 4 + 8 * 4
    evaluate = reports["evaluate"]
    assert not evaluate["ok"]
    assert {leaf["reason_code"] for leaf in evaluate["leaves"]} == {"element-count-only"}


def test_verify_record_uses_the_static_analysis_proposal(write_file, run_commands):
    write_file("loop.py", """
        import jax
        import jax.numpy as jnp


        def step(state, batch):
            return state + batch.mean()


        step_fn = jax.jit(step)


        def main():
            state = jnp.ones((8, 8))
            for _ in range(2):
                state = step_fn(state, jnp.ones(4))


        if __name__ == "__main__":
            main()
    """)
    assert run_commands("record", "--out", "rec.json", "--", "python", "loop.py").returncode == 0
    done = run_commands("verify", "--record", "rec.json")
    if "static analysis" in done.stdout and "verified the declared donation only" in done.stdout:
        pytest.skip("the static analysis is not available in this build")
    assert "state         float32[8,8]  256 B  yes -> result" in done.stdout
    assert "state: proposed (JXM001" in done.stdout


def test_verify_rejects_a_file_that_is_not_a_record(write_file, run_commands):
    write_file("bogus.json", '{"functions": []}')
    done = run_commands("verify", "--record", "bogus.json")
    assert done.returncode == 2
    assert "bogus.json: not a jaxmem record file" in done.stderr


def test_record_without_a_program_is_a_usage_error(run_commands):
    done = run_commands("record", "--out", "x.json")
    assert done.returncode == 2 and "after '--'" in done.stderr


def test_verify_record_with_backend_compiles_rebuildable_signatures_again(recorded, run_commands):
    done = run_commands("verify", "--record", "rec.json", "--backend", "cpu", "--format", "json")
    assert done.returncode == 1, done.stderr
    reports = {report["function"]: report for report in json.loads(done.stdout)["reports"]}
    assert reports["train_step"]["ok"] and reports["train_step"]["predicted_saving_bytes"] == 8 * 8 * 4 + 8 * 4
    assert not any("while recording" in note for note in reports["train_step"]["notes"])


def test_recording_errors_and_failed_verifications_fail_the_run():
    from jaxmem.runtime_check.commands import render_run
    from jaxmem.runtime_check.runs import verify_record

    signature = {"args": [{"array": {"shape": [3], "dtype": "float32"}}], "kwargs": {}, "calls": 1,
                 "verify_error": "TypeError: something the verifier could not handle"}
    record = {"format": "jaxmem-record", "version": 2, "cwd": ".", "functions": [{
        "definition_path": "/x/train.py", "definition_line": 3, "code_path": "/x/train.py",
        "module": "__main__", "qualname": "step", "transform": "jit", "options": {"donate_argnums": 0},
        "errors": ["ValueError: could not encode an argument"], "signatures": [signature]}]}
    outcome = verify_record(record)
    assert not outcome.ok and [problem.failed for problem in outcome.problems] == [True, True]
    text = render_run(outcome)
    assert "FAILED: recording failed: ValueError: could not encode an argument" in text
    assert "verification failed: TypeError: something the verifier could not handle" in text
    assert "nothing was verified" in text


def test_records_of_the_pickling_format_are_refused(write_file, run_commands):
    write_file("old.json", json.dumps({"format": "jaxmem-record", "version": 1, "functions": []}))
    done = run_commands("verify", "--record", "old.json")
    assert done.returncode == 2 and "record format version 1 is not supported" in done.stderr

"""`jaxmem confirm` on the four stacks a new user tries, then `jaxmem-fix --verified` and a clean rerun.

Each program (in ``confirm_programs/``) is copied alone into a fresh
project, confirmed with the real CLI in a subprocess (real JAX on CPU),
fixed from the report, and run again; the fixed definition must then really
delete its donated inputs.
"""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "confirm_programs"


def _project(tmp_path, *names):
    for name in names:
        shutil.copy(PROGRAMS / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'user'\n")
    return tmp_path


def _confirm(project, *command):
    result = subprocess.run([sys.executable, "-m", "jaxmem.cli", "confirm", "--out", "report.json", "--", *command],
                            cwd=project, capture_output=True, text=True, timeout=300)
    report = json.loads((project / "report.json").read_text()) if (project / "report.json").exists() else None
    return result, report


def _fix(project, *paths):
    return subprocess.run([sys.executable, "-m", "jaxmem.codemod.cli", "--verified", "report.json", *paths],
                          cwd=project, capture_output=True, text=True, timeout=300)


def _run(project, code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=project, capture_output=True,
                          text=True, timeout=300)


def _by_parameter(report, function):
    return {p["parameter_name"]: p for p in report["proposals"] if p["function"] == function}


def test_functional_optax_confirmed_fixed_and_donating(tmp_path):
    project = _project(tmp_path, "optax_train.py")
    # An optimizer jaxmem cannot prove standard: a hyperparameter that may be an array
    # (a lambda's result: inject_hyperparams keeps a strong-typed array as it is), so
    # its init(params) may keep arrays as far as the analysis knows, and `params` is
    # proposed at medium only.
    program = project / "optax_train.py"
    program.write_text(program.read_text().replace(
        "tx = optax.adam(1e-3)", "tx = optax.inject_hyperparams(optax.adam)(learning_rate=lambda count: 1e-3)"))
    result, report = _confirm(project, "python", "optax_train.py")
    assert result.returncode == 0, result.stderr
    proposals = _by_parameter(report, "train_step")
    assert {p["outcome"] for p in proposals.values()} == {"confirmed"}
    assert proposals["params"]["confidence"] == "medium"  # applied although the analysis says medium
    assert proposals["params"]["donated_calls"] == 5 and proposals["params"]["reuse"]["reused_bytes"] > 0
    assert "CONFIRMED" in result.stdout
    fixed = _fix(project, "optax_train.py")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # 1: files changed
    assert "donate_argnums=(0, 1)" in (project / "optax_train.py").read_text()
    check = _run(project, """
        import jax.numpy as jnp
        import optax_train as m
        params = {"w": jnp.ones((4, 4)), "b": jnp.zeros((4,))}
        opt_state = m.tx.init(params)
        new = m.train_step(params, opt_state, jnp.ones((8, 4)))
        print(params["w"].is_deleted(), opt_state.inner_state[0].mu["w"].is_deleted())
        m.main()
    """)
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines()[0] == "True True"


def test_generator_holding_the_leaves_is_refuted_and_not_applied(tmp_path):
    project = _project(tmp_path, "optax_generator.py")
    result, report = _confirm(project, "python", "optax_generator.py")
    assert result.returncode == 0, result.stderr
    (proposal,) = report["proposals"]
    assert proposal["outcome"] == "refuted"
    message = proposal["refutations"][0]["message"]
    assert "the generator noisy()" in message and "optax_generator.py:10" in message
    assert report["runs"] == 1  # refuted before any donation: the program ran as written
    _fix(project, "optax_generator.py")
    assert "donate" not in (project / "optax_generator.py").read_text()


def test_read_after_is_refuted_with_both_sites_and_exit_status_passes_through(tmp_path):
    project = _project(tmp_path, "optax_read_after.py")
    result, report = _confirm(project, "python", "optax_read_after.py")
    (proposal,) = report["proposals"]
    assert proposal["outcome"] == "refuted"
    refutation = proposal["refutations"][0]
    assert refutation["kind"] == "read-after"
    assert refutation["read"].endswith("optax_read_after.py:15 in report()")
    assert refutation["call"].endswith("optax_read_after.py:23")
    # The first run failed because of the donation; the rerun without it is the program's own result.
    assert report["runs"] == 2 and result.returncode == 0 and report["exit_status"] == 0
    assert "first params 4.0" in result.stdout
    fixed = _fix(project, "optax_read_after.py")
    assert "refuted by the run" in fixed.stdout + fixed.stderr
    assert "donate" not in (project / "optax_read_after.py").read_text()


def test_program_failure_exit_status_passes_through(tmp_path):
    project = _project(tmp_path, "optax_train.py")
    (project / "failing.py").write_text("import optax_train\noptax_train.main()\nraise SystemExit(3)\n")
    result, report = _confirm(project, "python", "failing.py")
    assert result.returncode == 3
    assert report["exit_status"] == 3


def test_linen_train_state_with_helper_module(tmp_path):
    pytest.importorskip("flax.linen")
    project = _project(tmp_path, "linen_train.py", "linen_models.py")
    result, report = _confirm(project, "python", "linen_train.py", "3")
    assert result.returncode == 0, result.stderr
    assert _by_parameter(report, "train_step")["state"]["outcome"] == "confirmed"
    _fix(project, "linen_train.py")
    assert "donate_argnums" in (project / "linen_train.py").read_text()
    check = _run(project, """
        import jax, jax.numpy as jnp
        import linen_train as m
        state = m.create_state(jax.random.PRNGKey(0))
        new, loss = m.train_step(state, jnp.ones((8, 4)))
        print(state.params["params"]["Dense_0"]["kernel"].is_deleted())
        m.main(3, False)
    """)
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines()[0] == "True"


def test_linen_ema_copy_of_params_is_refuted_with_the_holder_named(tmp_path):
    pytest.importorskip("flax.linen")
    project = _project(tmp_path, "linen_train.py", "linen_models.py")
    result, report = _confirm(project, "python", "linen_train.py", "3", "--ema")
    assert result.returncode == 0, result.stderr
    proposal = _by_parameter(report, "train_step")["state"]
    assert proposal["outcome"] == "refuted"
    message = proposal["refutations"][0]["message"]
    assert "`state.ema_params['params']['Dense_0']" in message and "donate one buffer twice" in message
    assert report["runs"] == 1 and "loss" in result.stdout


def test_nnx_with_dropout_prng_keys(tmp_path):
    pytest.importorskip("flax.nnx")
    project = _project(tmp_path, "nnx_dropout.py")
    result, report = _confirm(project, "python", "nnx_dropout.py")
    assert result.returncode == 0, result.stderr
    assert _by_parameter(report, "train_step")["optimizer"]["outcome"] == "confirmed"
    assert _by_parameter(report, "ema_update")["ema"]["outcome"] == "confirmed"
    _fix(project, "nnx_dropout.py")
    text = (project / "nnx_dropout.py").read_text()
    assert text.count("donate_argnums") == 2
    check = _run(project, """
        import jax, jax.numpy as jnp, optax
        from flax import nnx
        import nnx_dropout as m
        model = m.Model(nnx.Rngs(0, dropout=1))
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        mu = optimizer.opt_state[0].mu["linear"]["kernel"][...]
        m.train_step(model, optimizer, jnp.ones((8, 4)))
        print(mu.is_deleted())
        m.main()
    """)
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines()[0] == "True"


def test_equinox_step_without_a_matching_donate_mode_is_not_applied(tmp_path):
    pytest.importorskip("equinox")
    project = _project(tmp_path, "eqx_train.py")
    result, report = _confirm(project, "python", "eqx_train.py")
    assert result.returncode == 0, result.stderr
    for proposal in _by_parameter(report, "train_step").values():
        assert proposal["outcome"] == "refuted" and proposal["calls"] == 4
        assert "donates by mode only" in proposal["refutations"][0]["message"]
    _fix(project, "eqx_train.py")
    assert "donate" not in (project / "eqx_train.py").read_text()


def test_confirm_under_pytest(tmp_path):
    project = _project(tmp_path, "optax_read_after.py")
    (project / "test_user.py").write_text(
        "import runpy\n\ndef test_main():\n    runpy.run_path('optax_read_after.py')\n")
    result, report = _confirm(project, "pytest", "-q", "-p", "no:cacheprovider", "test_user.py")
    (proposal,) = report["proposals"]
    assert proposal["outcome"] == "refuted" and proposal["refutations"][0]["kind"] == "read-after"
    assert result.returncode == 0 and report["runs"] == 2


def test_confirm_under_pytest_whose_config_makes_warnings_errors(tmp_path):
    """flax's pytest config says filterwarnings = ["error"]; pytest's note that it cannot rewrite
    jaxmem's already imported modules must not stop the user's tests from starting."""
    project = _project(tmp_path, "optax_read_after.py")
    (project / "pyproject.toml").write_text("[project]\nname = 'user'\n\n[tool.pytest.ini_options]\n"
                                            "filterwarnings = ['error']\n")
    (project / "test_user.py").write_text(
        "import runpy\n\ndef test_main():\n    runpy.run_path('optax_read_after.py')\n")
    result, report = _confirm(project, "pytest", "-q", "-p", "no:cacheprovider", "test_user.py")
    assert "PytestAssertRewriteWarning" not in result.stdout + result.stderr
    (proposal,) = report["proposals"]
    assert proposal["outcome"] == "refuted" and proposal["calls"] > 0
    assert result.returncode == 0 and "1 passed" in result.stdout


def test_one_array_in_two_arguments_refutes_both_and_the_program_runs(tmp_path):
    project = _project(tmp_path, "shared_cache.py")
    result, report = _confirm(project, "python", "shared_cache.py")
    assert result.returncode == 0, result.stderr
    assert "final" in result.stdout and report["runs"] == 1
    proposals = _by_parameter(report, "step")
    assert {p["outcome"] for p in proposals.values()} == {"refuted"}, proposals
    assert all("the same array" in p["refutations"][0]["message"] for p in proposals.values())


def test_an_argument_that_stops_flattening_after_the_call_does_not_break_the_program(tmp_path):
    project = _project(tmp_path, "nnx_self_reference.py")
    result, report = _confirm(project, "python", "nnx_self_reference.py")
    assert result.returncode == 0, result.stderr
    assert "calls 2" in result.stdout  # what flax's test checks: the second call retraced, the third did not
    assert report["exit_status"] == 0


def test_equinox_step_confirmed_with_the_matching_donate_mode(tmp_path):
    pytest.importorskip("equinox")
    project = _project(tmp_path, "eqx_all.py")
    result, report = _confirm(project, "python", "eqx_all.py")
    assert result.returncode == 0, result.stderr
    assert {p["outcome"] for p in _by_parameter(report, "step").values()} == {"confirmed"}
    _fix(project, "eqx_all.py")
    assert '@eqx.filter_jit(donate="all")' in (project / "eqx_all.py").read_text()
    check = _run(project, """
        import jax, jax.numpy as jnp, equinox as eqx
        import eqx_all as m
        model = eqx.nn.Linear(4, 4, key=jax.random.PRNGKey(0))
        state = {"m": jnp.zeros((4, 4))}
        m.step(model, state)
        print(model.weight.is_deleted(), state["m"].is_deleted())
        m.main()
    """)
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines()[0] == "True True"


def test_confirm_without_a_command_or_with_an_unwritable_report_is_a_usage_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "jaxmem.cli", "confirm"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2 and "give the program to run after '--'" in result.stderr
    result = subprocess.run([sys.executable, "-m", "jaxmem.cli", "confirm", "--out", "missing/dir/r.json", "--",
                             "python", "x.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "missing/dir/r.json" in result.stderr


def _write_confirm_report(tmp_path, outcome, name="report.json", **extra):
    proposal = {"definition_path": str(tmp_path / "train.py"), "definition_line": 5, "function": "step",
                "parameter_name": "state", "parameter_index": 0, "confidence": "medium", "outcome": outcome,
                "refutations": [{"kind": "read-after", "message": "`state` was read at train.py:9"}]
                if outcome == "refuted" else []}
    (tmp_path / name).write_text(json.dumps(
        {"format": "jaxmem-confirm", "version": 1, "proposals": [proposal], **extra}))
    return str(tmp_path / name)


def _confirm_report(tmp_path, outcome, **extra):
    from jaxmem.codemod.verified import load_verified

    return load_verified(_write_confirm_report(tmp_path, outcome, **extra))


def test_verified_reads_confirm_reports(tmp_path):
    from jaxmem.findings import DonationFix

    fix = DonationFix(definition_line=5, index=0, name="state")
    path = str(tmp_path / "train.py")
    confirmed = _confirm_report(tmp_path, "confirmed")
    assert confirmed.any_confidence and confirmed.why_not_confirmed(path, fix) is None
    assert "read at train.py:9" in _confirm_report(tmp_path, "refuted").why_not_confirmed(path, fix)
    assert "did not observe" in _confirm_report(tmp_path, "not observed").why_not_confirmed(path, fix)
    other = DonationFix(definition_line=5, index=1, name="batch")
    assert "no proposal for this parameter" in confirmed.why_not_confirmed(path, other)


@pytest.mark.parametrize(("outcomes", "applied"), [
    (("confirmed", "not observed"), True),  # each run covers the paths it took
    (("not observed", "confirmed"), True),
    (("confirmed", "refuted"), False),  # one run that read it after the call is enough to refute
    (("refuted", "confirmed"), False),
    (("not observed", "not observed"), False),
])
def test_verified_combines_several_confirm_reports(tmp_path, outcomes, applied):
    from jaxmem.codemod.verified import load_verified_reports
    from jaxmem.findings import DonationFix

    paths = [_write_confirm_report(tmp_path, outcome, name=f"r{i}.json") for i, outcome in enumerate(outcomes)]
    why = load_verified_reports(paths).why_not_confirmed(str(tmp_path / "train.py"),
                                                         DonationFix(definition_line=5, index=0, name="state"))
    assert (why is None) == applied
    if "refuted" in outcomes:
        assert "read at train.py:9" in why


def test_verified_refuses_confirm_and_verify_reports_together(tmp_path):
    from jaxmem.codemod.verified import VerifiedReportError, load_verified_reports

    confirm = _write_confirm_report(tmp_path, "confirmed")
    (tmp_path / "verify.json").write_text(json.dumps({"format": "jaxmem-verify", "version": 1, "reports": []}))
    with pytest.raises(VerifiedReportError, match="verify.json: a verify report given with confirm reports"):
        load_verified_reports([confirm, str(tmp_path / "verify.json")])


def test_verified_rejects_a_confirm_report_of_another_version(tmp_path):
    from jaxmem.codemod.verified import VerifiedReportError

    with pytest.raises(VerifiedReportError, match="report.json: confirm report version 9"):
        _confirm_report(tmp_path, "confirmed", version=9)


def test_the_programs_own_read_after_donation_refutes_no_proposal(tmp_path):
    """examples/train.py crashes on its own (ema_update's declared donation, JXM101): exit 1 passes
    through, `params` is confirmed, and `opt_state` (mu and nu share one tree) is refuted."""
    shutil.copy(Path(__file__).parents[2] / "examples" / "train.py", tmp_path / "train.py")
    (tmp_path / "pyproject.toml").write_text("")
    result, report = _confirm(tmp_path, "python", "train.py")
    assert result.returncode == 1 and report["exit_status"] == 1 and report["runs"] == 1
    assert "Array has been deleted" in result.stderr
    proposals = _by_parameter(report, "train_step")
    assert proposals["params"]["outcome"] == "confirmed"
    assert proposals["opt_state"]["outcome"] == "refuted"
    assert "(the same array, donated twice)" in proposals["opt_state"]["refutations"][0]["message"]


def test_verified_with_two_runs_applies_only_what_neither_refuted(tmp_path):
    """One definition, two programs: a plain loop confirms `params`; a loop whose logger reads
    the old params after the step refutes it. Given both reports, the fixer leaves it alone."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "lib.py").write_text(textwrap.dedent("""
        import jax


        @jax.jit
        def step(params, scale):
            return jax.tree.map(lambda p: p * scale, params)
    """))
    (tmp_path / "plain.py").write_text(textwrap.dedent("""
        import jax.numpy as jnp
        from lib import step

        params = {"w": jnp.ones((256,))}
        for _ in range(3):
            params = step(params, 0.5)
        print(float(params["w"].sum()))
    """))
    logged = (PROGRAMS / "optax_read_after.py").read_text()
    logged = logged.replace("@jax.jit\ndef step(params, batch):\n    return jax.tree.map(lambda p: p - 0.1 * "
                            "batch.mean(), params)\n", "from lib import step\n")
    (tmp_path / "logged.py").write_text(logged.replace("step(params, jnp.ones((2,)))", "step(params, 0.5)"))
    assert "from lib import step" in (tmp_path / "logged.py").read_text()
    reports = []
    for program in ("plain.py", "logged.py"):
        result = subprocess.run([sys.executable, "-m", "jaxmem.cli", "confirm", "--out", f"{program}.json", "--",
                                 "python", program], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        (proposal,) = [p for p in json.loads((tmp_path / f"{program}.json").read_text())["proposals"]
                       if p["function"] == "step"]
        reports.append(proposal["outcome"])
    assert reports == ["confirmed", "refuted"]

    def fixed(*reports):
        (tmp_path / "lib.py").write_text((tmp_path / "lib.py").read_text().replace("@jax.jit(donate_argnums=0)",
                                                                                   "@jax.jit"))
        args = [word for report in reports for word in ("--verified", report)]
        result = subprocess.run([sys.executable, "-m", "jaxmem.codemod.cli", *args, "lib.py"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=300)
        return result, (tmp_path / "lib.py").read_text()

    result, text = fixed("plain.py.json", "logged.py.json")
    assert "donate" not in text and "refuted by the run" in result.stdout + result.stderr
    result, text = fixed("plain.py.json")
    assert "donate_argnums=0" in text, result.stdout + result.stderr
    run = subprocess.run([sys.executable, "-c", "import jax.numpy as jnp\nfrom lib import step\n"
                          "p = {'w': jnp.ones((256,))}\nq = step(p, 0.5)\nprint(p['w'].is_deleted())"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == "True", run.stderr


# -- a notebook, run cell by cell: `jaxmem confirm -- train.ipynb` -----------------------------

def _notebook(project, name, cells):
    """Write ``name`` with ``cells`` (source, is code); a markdown cell counts in the numbering."""
    from jaxmem.notebooks import cells_json

    (project / name).write_text(cells_json(cells))
    return project / name


def _logged_training(logger: str, after=()):
    """Cells whose `step` is proposed at medium confidence: the state goes to ``logger``,
    a module outside the project (jaxmem cannot see what it does with it)."""
    return [("import sys\nsys.path.insert(0, '../elsewhere')\nimport jax, jax.numpy as jnp\nimport " + logger, True),
            ("## Training", False),
            ("@jax.jit\ndef step(state, x):\n    return state * 0.9 + x", True),
            (f"state = jnp.ones((4, 4))\nfor i in range(3):\n    {logger}.log(state)\n    state = step(state, 1.0)\n"
             "print('trained', float(state.sum()))", True), *after]


@pytest.fixture
def notebook_project(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "quiet_logger.py").write_text("def log(x):\n    pass\n")
    (elsewhere / "last_logger.py").write_text("last = None\ndef log(x):\n    global last\n    last = x\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'user'\n")
    return project


def test_a_notebook_is_run_cell_by_cell_confirmed_fixed_and_donating(notebook_project):
    project = notebook_project
    notebook = _notebook(project, "train.ipynb", _logged_training("quiet_logger"))
    result, report = _confirm(project, "train.ipynb")
    assert result.returncode == 0, result.stderr
    assert "trained 55.02" in result.stdout  # the cells really ran
    (proposal,) = report["proposals"]
    assert (proposal["outcome"], proposal["confidence"], proposal["definition_line"]) == ("confirmed", "medium", 5)
    assert "train.ipynb:cell 3:1: step: donate `state` (medium confidence): CONFIRMED: 3 call(s)" in result.stdout
    assert "train.ipynb:cell 4, line 4" in proposal["notes"][0]  # cells, not IPython's code names
    fixed = _fix(project, "train.ipynb")
    assert "jaxmem-fix: added 1 donation(s) in 1 file(s)" in fixed.stdout, fixed.stdout + fixed.stderr
    from jaxmem.notebooks import read_notebook

    code = read_notebook("train.ipynb", notebook.read_bytes()).text
    assert "donate_argnums=0" in code
    ran = _run(project, code.replace("print('trained'", "old = state\nfor i in range(3):\n"
                                     "    state = step(state, 1.0)\nprint(old.is_deleted())\nprint('trained'"))
    assert ran.stdout.startswith("True\n"), ran.stderr  # the fixed notebook's code really donates


def test_a_later_cell_reading_the_donated_state_refutes_it_and_the_rerun_passes(notebook_project):
    project = notebook_project
    _notebook(project, "reads.ipynb", _logged_training("last_logger", after=[
        ("print('last', round(float(last_logger.last.sum()), 2))", True)]))
    result, report = _confirm(project, "reads.ipynb")
    (proposal,) = report["proposals"]
    assert proposal["outcome"] == "refuted"
    assert proposal["refutations"][0]["message"] == (
        "`state` was read at reads.ipynb:cell 5, line 1 in <module>() after the call at reads.ipynb:cell 4, line 4 "
        "donated it")
    assert "reads.ipynb: cell 5 failed; the cells after it did not run" in result.stderr
    # the rerun without the refuted donation is the notebook's own result
    assert report["runs"] == 2 and result.returncode == 0 and "last 43.36" in result.stdout
    fixed = _fix(project, "reads.ipynb")
    assert "donate" not in (project / "reads.ipynb").read_text()
    assert "refuted by the run" in fixed.stdout + fixed.stderr


def test_a_notebook_that_is_not_json_is_a_usage_error(notebook_project):
    (notebook_project / "broken.ipynb").write_text("{not json")
    result, _ = _confirm(notebook_project, "broken.ipynb")
    assert result.returncode == 2
    assert result.stderr.startswith("jaxmem confirm: broken.ipynb: ")


def test_nnx_jit_passes_a_shared_reference_once_so_its_donation_is_confirmed_and_runs(tmp_path):
    # flax's pytree guide: `right = left`; jax's own flattening sees the array twice, nnx.jit once
    project = _project(tmp_path, "nnx_shared_reference.py")
    result, report = _confirm(project, "python", "nnx_shared_reference.py")
    assert "shared True 4.0" in result.stdout
    (proposal,) = report["proposals"]
    assert proposal["outcome"] == "confirmed", proposal
    _fix(project, "nnx_shared_reference.py")
    assert "donate_argnums=0" in (project / "nnx_shared_reference.py").read_text()
    ran = _run(project, """
        import nnx_shared_reference as program
        m = program.Parent()
        old = m.left.x
        m = program.f(m)
        print(old.is_deleted(), m.left is m.right, float(m.right.x))
    """)
    assert ran.stdout == "True True 2.0\n", ran.stderr


def test_nnx_split_state_held_by_its_module_until_update_is_confirmed_and_donates(tmp_path):
    # flax's performance guide: split once, a jax.jit step, nnx.update after the loop.  The
    # Module holds the state's Variables meanwhile; the high proposal proved nothing reads it.
    project = _project(tmp_path, "nnx_split_state.py")
    result, report = _confirm(project, "python", "nnx_split_state.py")
    assert "updated 36.0" in result.stdout, result.stderr
    (proposal,) = report["proposals"]
    assert proposal["confidence"] == "high"
    assert proposal["outcome"] == "confirmed", proposal
    assert any("among the objects `nnx.split` or `nnx.state` made `state` from" in note
               for note in proposal["notes"]), proposal["notes"]
    _fix(project, "nnx_split_state.py")
    assert "donate_argnums=1" in (project / "nnx_split_state.py").read_text()
    ran = _run(project, """
        import jax.numpy as jnp
        from flax import nnx
        import nnx_split_state as program
        model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        graphdef, state = nnx.split(model)
        old = state["kernel"].get_value()
        state = program.step(graphdef, state, jnp.ones(2))
        nnx.update(model, state)
        print(old.is_deleted(), float(model.kernel[...].sum() - old.shape[0] * 0))
    """)
    assert ran.stdout.startswith("True "), ran.stderr


def test_performance_guide_with_an_evaluation_after_update_is_high_confirmed_and_runs_fixed(tmp_path):
    # the step returns the whole state of what it merged, so nnx.update writes back every
    # donated array: the evaluation after it reads new arrays (lint/values/nnx_write_back.py)
    name = "nnx_split_eval_after_update.py"
    project = _project(tmp_path, name)
    plain = _run(project, f"import runpy; runpy.run_path({name!r}, run_name='__main__')")
    assert "eval 1.881 steps 5" in plain.stdout, plain.stderr
    result, report = _confirm(project, "python", name)
    (proposal,) = [p for p in report["proposals"] if p["function"] == "train_step"]
    assert (proposal["confidence"], proposal["outcome"]) == ("high", "confirmed"), proposal
    fixed = subprocess.run([sys.executable, "-m", "jaxmem.codemod.cli", name], cwd=project, capture_output=True,
                           text=True, timeout=300)
    assert "@partial(jax.jit, donate_argnums=1)" in (project / name).read_text(), fixed.stdout + fixed.stderr
    ran = _run(project, f"""
        import runpy
        import jax
        from flax import nnx
        program = runpy.run_path({name!r})
        seen = []  # the arrays of the first state, as split (its Variables get new ones from nnx.update)
        original = nnx.split
        nnx.split = lambda *a: seen.append((parts := original(*a), jax.tree.leaves(parts[1]))) or parts
        program["__name__"] = "__main__"
        exec(compile(open({name!r}).read(), {name!r}, "exec"), program)
        print("deleted", sum(leaf.is_deleted() for leaf in seen[0][1]), "of", len(seen[0][1]))
    """)
    assert "eval 1.881 steps 5" in ran.stdout and "deleted 0 of" not in ran.stdout, ran.stdout + ran.stderr


def test_a_cached_partials_clones_sharing_the_split_objects_variables_confirm_every_donation(tmp_path):
    # flax's performance guide in order: the nnx.jit step called through nnx.cached_partial (its
    # clones of the model and the optimizer share their Variables), then the functional API on a
    # split of both.  Refuted before: the partial's tuple holds the model (nnx.jit writes the new
    # arrays back into it), and the clones hold the split objects' Variables (nnx.update does).
    name = "nnx_split_cached_partial.py"
    project = _project(tmp_path, name)
    result, report = _confirm(project, "python", name)
    assert result.stdout.startswith("steps 5 -1.302"), result.stderr
    outcomes = {(p["function"], p["parameter_name"]): (p["confidence"], p["outcome"]) for p in report["proposals"]}
    assert outcomes == {("train_step", "model"): ("high", "confirmed"),
                        ("train_step", "optimizer"): ("high", "confirmed"),
                        ("jax_train_step", "state"): ("high", "confirmed")}, report["proposals"]
    _fix(project, name)
    source = (project / name).read_text()
    assert "@partial(nnx.jit, donate_argnums=(0, 1))" in source and "@partial(jax.jit, donate_argnums=1)" in source
    ran = _run(project, f"import runpy; runpy.run_path({name!r}, run_name='__main__')")
    assert ran.stdout == "steps 5 -1.302\n", ran.stderr


def test_nnx_split_state_whose_module_is_read_before_update_is_refuted(tmp_path):
    project = _project(tmp_path, "nnx_split_read_before_update.py")
    result, report = _confirm(project, "python", "nnx_split_read_before_update.py")
    assert "read -1.584" in result.stdout and "updated 36.0" in result.stdout, result.stderr
    (proposal,) = report["proposals"]
    assert proposal["outcome"] == "refuted"
    assert "also held by the attribute `kernel` of a Linear object" in proposal["refutations"][0]["message"]


def test_nnx_jit_with_one_array_in_two_params_is_refuted_and_runs_undonated(tmp_path):
    project = _project(tmp_path, "nnx_one_array_two_params.py")
    result, report = _confirm(project, "python", "nnx_one_array_two_params.py")
    assert result.returncode == 0 and "twice 12.0 24.0" in result.stdout
    (proposal,) = report["proposals"]
    assert proposal["outcome"] == "refuted"
    assert proposal["refutations"][0]["message"].startswith(
        "`m['a'].value` is also held by `m['b'].value` (the same array, donated twice)")


def test_an_ema_whose_applied_model_shares_its_variables_is_confirmed_and_runs_donated(tmp_path):
    # nnx.jit writes the new arrays back into the EMA's Variables, which `ema.apply_to(model)`'s
    # Layers hold too: that holder sees new arrays, not deleted ones (it refuted `ema` before)
    name = "nnx_ema_apply_to.py"
    project = _project(tmp_path, name)
    plain = _run(project, f"import runpy; runpy.run_path({name!r}, run_name='__main__')")
    assert plain.returncode == 0 and plain.stdout.startswith("ema "), plain.stderr
    result, report = _confirm(project, "python", name)
    assert result.stdout.startswith(plain.stdout), result.stderr
    proposals = _by_parameter(report, "train_step")
    assert {p: (proposals[p]["confidence"], proposals[p]["outcome"]) for p in proposals} == {
        "model": ("high", "confirmed"), "optimizer": ("high", "confirmed"), "ema": ("high", "confirmed")}, proposals
    _fix(project, name)
    assert "donate_argnums=(0, 1, 2)" in (project / name).read_text()
    fixed = _run(project, f"import runpy; runpy.run_path({name!r}, run_name='__main__')")
    assert fixed.returncode == 0 and fixed.stdout == plain.stdout, fixed.stderr
    ran = _run(project, """
        import jax.numpy as jnp
        import optax
        from flax import nnx
        import nnx_ema_apply_to as program
        model = program.Model(nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
        ema = nnx.EMA(model, decay=0.9)
        ema_model = ema.apply_to(model)
        old = ema_model.lin.kernel[...]
        program.train_step(model, optimizer, ema, jnp.ones((4, 2)))
        print(old.is_deleted(), ema_model.lin.kernel[...].is_deleted(), float(program.eval_step(ema_model, jnp.ones((4, 2)))) > 0)
    """)
    assert ran.stdout == "True False True\n", ran.stderr

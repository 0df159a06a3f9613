"""The accuracy benchmark's pure pieces: donation finder and stripper, read injector, classifiers."""

import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
sys.path.insert(0, BENCHMARKS)

from _donations import find_donations, inject_reads, injection_sites, line_map, strip_donations  # noqa: E402
from _jaxmem_cli import Finding  # noqa: E402
from _scoring import (  # noqa: E402
    donated_parameters, donation_status, fix_verdict, injected_read_reported, recovered_by, restored_in,
    run_outcome, shortcut_differences,
)

PROGRAM = textwrap.dedent("""\
    import functools

    import jax
    import jax.numpy as jnp


    @functools.partial(jax.jit, donate_argnums=(0,))
    def step(state, batch):
        return state + batch


    def train_step(params, grads):
        return params - grads


    def main():
        update = jax.jit(
            train_step,
            donate_argnums=0,
        )
        state = jnp.ones(3)
        params = jnp.ones(3)
        for _ in range(2):
            state = step(state, 1.0)
        new_params = update(params, jnp.ones(3))
        return state, new_params


    main()
""")


def _finding(code, line, index=None, name=None, definition_line=None, path="m.py", confidence="high"):
    return Finding(code=code, path=path, line=line, col=1, message="m", confidence=confidence,
                   definition_line=definition_line, parameter_index=index, parameter_name=name)


def _run(source, tmp_path):
    script = tmp_path / "program.py"
    script.write_text(source)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)


def test_finds_decorator_and_call_donations_with_parameters_and_call_sites():
    decorated, wrapped = find_donations(PROGRAM)
    assert (decorated.form, decorated.bound_to, decorated.names, decorated.indices) == ("decorator", "step", ("state",), (0,))
    assert decorated.span == (7, 8)
    assert [(c.line, c.donated_names, c.rebound) for c in decorated.calls] == [(24, ("state",), ("state",))]
    assert (wrapped.form, wrapped.bound_to, wrapped.wrapped, wrapped.names) == ("call", "update", "train_step", ("params",))
    assert wrapped.span == (17, 20)
    assert [(c.line, c.donated_names, c.rebound) for c in wrapped.calls] == [(25, ("params",), ())]
    assert donation_status(decorated) == "rebound" and donation_status(wrapped) == "not-rebound"


@pytest.mark.parametrize("source, names, literal", [
    pytest.param("import jax\n@jax.jit(donate_argnames='s')\ndef f(s, b): return s\n", ("s",), True, id="argnames"),
    pytest.param("import equinox as eqx\n@eqx.filter_jit(donate='all-except-first')\ndef f(m, a, b): return a\n",
                 ("a", "b"), True, id="equinox-all-except-first"),
    pytest.param("import jax\ng = jax.pmap(lambda s: s, donate_argnums=DONATE)\n", (), False, id="not-literal"),
    pytest.param("import haliax as hax\n@hax.named_jit(axis_resources=m, donate_args=(True, False))\ndef f(a, b): return a\n",
                 ("a",), True, id="haliax-named-jit"),
    pytest.param("import jax, functools\ng = functools.partial(jax.jit, donate_argnums=(1,))(h)\ndef h(a, b): return b\n",
                 ("b",), True, id="partial-called-at-once"),
])
def test_donation_forms(source, names, literal):
    (donation,) = find_donations(source)
    assert donation.names == names and donation.literal is literal


def test_stripped_program_has_no_donation_and_still_runs(tmp_path):
    stripped = strip_donations(PROGRAM)
    assert "donate" not in stripped and find_donations(stripped) == []
    assert _run(stripped, tmp_path).returncode == 0
    # the definition's first line still maps to the definition after the edit
    assert line_map(PROGRAM, stripped)(17) == 17 and line_map(PROGRAM, stripped)(24) == stripped.splitlines().index(
        "        state = step(state, 1.0)") + 1


@pytest.mark.parametrize("through_alias", [False, True], ids=["direct", "alias"])
def test_injected_reads_really_read_a_deleted_array(tmp_path, through_alias):
    pairs = injection_sites(find_donations(PROGRAM), through_alias)
    # a direct read after `state = step(state, ...)` reads the new state: only the alias read is a bug there
    assert [name for _, name in pairs] == (["state", "params"] if through_alias else ["params"])
    text, injections = inject_reads(PROGRAM, pairs, through_alias)
    lines = text.splitlines()
    for injection in injections:
        assert lines[injection.line - 1].strip().startswith("print(")
    done = _run(text, tmp_path)
    assert done.returncode != 0 and "has been deleted" in done.stderr
    assert run_outcome(done.returncode, done.stderr) == "donation-failure"


def test_recall_matching_by_definition_span_and_parameter():
    decorated, wrapped = find_donations(PROGRAM)
    findings = [_finding("JXM001", 17, index=0, name="params", definition_line=17),
                _finding("JXM002", 7, index=1, name="batch", definition_line=7)]
    assert recovered_by(wrapped, "m.py", *donated_parameters(wrapped)[0], findings) is findings[0]
    assert recovered_by(decorated, "m.py", *donated_parameters(decorated)[0], findings) is None
    assert recovered_by(wrapped, "other.py", 0, "params", findings) is None


def test_restored_when_the_fixed_file_donates_the_parameter_again():
    stripped_donations = find_donations(PROGRAM)
    assert restored_in(stripped_donations[0], 0, "state", find_donations(PROGRAM))
    assert not restored_in(stripped_donations[0], 0, "state", find_donations(strip_donations(PROGRAM)))


def test_injected_read_needs_jxm101_on_its_line():
    pairs = injection_sites(find_donations(PROGRAM), False)
    _, (injection,) = inject_reads(PROGRAM, pairs, False)
    assert injected_read_reported(injection, "m.py", [_finding("JXM101", injection.line)])
    assert not injected_read_reported(injection, "m.py", [_finding("JXM101", injection.line + 1),
                                                          _finding("JXM104", injection.line)])


def test_shortcut_differences_lists_both_sides():
    a, b, c = _finding("JXM001", 1), _finding("JXM101", 2), _finding("JXM001", 3, confidence="medium")
    assert shortcut_differences([a, b], [a, b]) == {"missing": [], "extra": []}
    assert shortcut_differences([a, b], [a, c]) == {"missing": [b.identity()], "extra": [c.identity()]}


@pytest.mark.parametrize("before, after, verdict", [
    ("passed", "donation-failure", "unsafe"),
    ("failed", "donation-failure", "unsafe"),
    ("passed", "passed", "same"),
    ("failed", "failed", "same"),
    ("passed", "failed", "broke"),
    ("failed", "passed", "repaired"),
])
def test_fix_verdict(before, after, verdict):
    assert fix_verdict(before, after) == verdict


def test_run_outcome():
    assert run_outcome(0, "") == "passed"
    assert run_outcome(None, "") == "timeout"
    assert run_outcome(1, "RuntimeError: Array has been deleted with shape=float32[3].") == "donation-failure"
    assert run_outcome(1, "ValueError: shapes do not match") == "failed"


def test_call_sites_are_looked_for_where_the_jitted_name_is_visible():
    source = textwrap.dedent("""\
        import functools, jax

        def test_a(params):
            @functools.partial(jax.jit, donate_argnums=0)
            def step(p):
                return p
            params = step(params)

        def test_b(params):
            @jax.jit
            def step(p):
                return p
            other = step(params)
    """)
    (donation,) = find_donations(source)
    assert [site.line for site in donation.calls] == [7]


def test_nnx_jit_calls_get_no_injected_read():
    # flax nnx writes the outputs back into the donated Modules: reading them afterwards is fine
    source = textwrap.dedent("""\
        from flax import nnx

        @nnx.jit(donate_argnums=(0,))
        def train_step(model, batch):
            pass

        def main(model, batch):
            train_step(model, batch)
    """)
    donations = find_donations(source)
    assert donations[0].calls and injection_sites(donations, False) == injection_sites(donations, True) == []


def test_fix_then_run_sample_takes_default_fixes_first_round_robin():
    from _fix_run import sample_runs

    changed = {"a": {"fix": ["a1", "a2", "a3"], "unsafe-fix": ["a1", "a2", "a3", "a4"]},
               "b": {"fix": [], "unsafe-fix": ["b1", "b2"]},
               "c": {"fix": ["c1"], "unsafe-fix": ["c1"]}}
    assert sample_runs(changed, 6) == [("a", "a1"), ("c", "c1"), ("a", "a2"), ("a", "a3"), ("a", "a4"), ("b", "b1")]
    assert sample_runs(changed, 2) == [("a", "a1"), ("c", "c1")]


def test_calls_traced_inside_a_jitted_function_get_no_injected_read():
    # a nested jit is traced, not dispatched: its donation deletes nothing
    source = textwrap.dedent("""\
        import jax

        @jax.jit(donate_argnames=("cache",))
        def update(new, cache):
            return cache + new

        @jax.jit
        def attention(new, cache):
            cache = update(new, cache)
            return cache

        def main(new, cache):
            out = update(new, cache)
    """)
    (donation,) = find_donations(source)
    assert [(site.line, site.in_simple_statement) for site in donation.calls] in (
        [(9, False), (13, True)], [(13, True), (9, False)])
    assert [site.line for site, _ in injection_sites([donation], True)] == [13]


@pytest.mark.parametrize("decorator", ["@partial(jax.shard_map, mesh=mesh)", "@jax.vmap", "@jax.shard_map(mesh=mesh)"])
def test_calls_inside_a_function_another_transform_traces_get_no_injected_read(decorator):
    # easydel's inference_gdn: a donating jit called in a shard_map body receives tracers
    source = textwrap.dedent(f"""\
        from functools import partial
        import jax

        @jax.jit(donate_argnames=("cache",))
        def update(new, cache):
            return cache + new

        def run(new, cache, mesh):
            {decorator}
            def body(new, cache):
                out = update(new, cache)
                return out
            return body(new, cache)
    """)
    (donation,) = find_donations(source)
    assert [site.line for site in donation.calls] == [11]
    assert injection_sites([donation], True) == injection_sites([donation], False) == []


def test_fix_then_run_selects_the_test_functions_the_fix_changed():
    from _fix_run import changed_tests

    before = textwrap.dedent("""\
        import jax

        class T:
            def test_a(self):
                @jax.jit
                def step(s):
                    return s

            def test_b(self):
                pass
    """)
    after = before.replace("@jax.jit", "@jax.jit(donate_argnums=0)")
    assert changed_tests(before, after) == ["test_a"]
    assert changed_tests(before, "from functools import partial\n" + after) is None


TRAINING = textwrap.dedent("""\
    import jax
    import optax


    @jax.jit
    def step(state, batch):
        return jax.tree_util.tree_map(lambda s: s - 0.1 * batch, state)


    def train(params, batches, tx):
        state = tx.init(params)  # an optimizer jaxmem cannot see: medium
        for batch in batches:
            state = step(state, batch)
        return state


    class Trainer:
        def __init__(self, state):
            self.state = state
            self._step = jax.jit(self.update)

        def update(self, state, batch):
            return state + batch

        def fit(self, batches):
            for batch in batches:
                self.state = self._step(self.state, batch)
""")


def test_medium_doubts_come_from_jaxmems_evidence_and_group_by_category(tmp_path):
    from _jaxmem_cli import check
    from _scoring import confidence_doubts, reason_category, tally_reasons

    (tmp_path / "train.py").write_text(TRAINING)
    findings = {(f.code, f.parameter_name, f.line): f for f in check(tmp_path)}
    medium = sorted((f for f in findings.values() if f.code == "JXM001" and f.confidence == "medium"),
                    key=lambda f: f.line)
    assert len(medium) == 2, findings
    doubts = [confidence_doubts(f) for f in medium]
    # the call-site description is not a doubt; each doubt is jaxmem's own text
    assert not any("rebound by the call's result" in d for ds in doubts for d in ds)
    assert [[reason_category(d) for d in ds] for ds in doubts] == [
        ["not proved its own: a method's result its object still holds (`.init(...)`)"],
        ["owned outside the function (attribute or global)"],
    ]
    cases = [{"doubts": ds} for ds in doubts + doubts[1:]]
    assert tally_reasons(cases) == [
        ("owned outside the function (attribute or global)", 2),
        ("not proved its own: a method's result its object still holds (`.init(...)`)", 1),
    ]


def test_doubts_fall_back_to_the_message_and_high_findings_have_none():
    from _scoring import confidence_doubts

    medium = Finding(code="JXM001", path="m.py", line=3, col=1, confidence="medium", definition_line=3,
                     parameter_index=0, parameter_name="state",
                     message="`step` does not donate `state`: add donate_argnums=(0,) (medium confidence: "
                             "`step` is public: callers outside this project are not seen)")
    assert confidence_doubts(medium) == ["`step` is public: callers outside this project are not seen"]
    high = Finding(code="JXM001", path="m.py", line=3, col=1, message="m", confidence="high", definition_line=3,
                   parameter_index=0, parameter_name="state", evidence=("`state` is rebound; odd",))
    assert confidence_doubts(high) == []
    # a doubt repeated at two call sites counts once
    twice = Finding(code="JXM001", path="m.py", line=3, col=1, message="m", confidence="medium", definition_line=3,
                    parameter_index=0, parameter_name="state",
                    evidence=("`s` is not read after the call at a.py:4; the caller of the enclosing function may "
                              "still hold it", "`s` is not read after the call at a.py:9; the caller of the "
                              "enclosing function may still hold it"))
    assert confidence_doubts(twice) == ["the caller of the enclosing function may still hold it"]
    # why an output can take the buffers (a loop carries the call's own result back) is evidence, not a doubt
    carried = Finding(code="JXM001", path="m.py", line=3, col=1, message="m", confidence="medium", definition_line=3,
                      parameter_index=0, parameter_name="state",
                      evidence=("`s` is rebound by the call's result at a.py:4 (line 4) and not read before; "
                                "`s` is owned outside this function",
                                "`s` comes back to every call as `step`'s own result of the loop's previous "
                                "iteration: from the second iteration an output has its shapes and dtypes"))
    assert confidence_doubts(carried) == ["`s` is owned outside this function"]


@pytest.mark.parametrize("text, category", [
    ("`state` (train.py:40) may share buffers with `config`, `keys`, read again at line 88",
     "may share buffers with an input of its maker read later"),
    ("`init_state(cfg, rng)` (a/b.py:12) may share buffers with `rng`, which the caller may still hold",
     "may share buffers with an input the caller may hold"),
    ("it was passed to `chrono.pause(wait_for=state)` (line 51), which may keep it",
     "passed to a call which may keep it (`.pause(...)`)"),
    ("its buffers are not proved to be its own: `TrainState.create(apply_fn=f, params=p, tx=tx)` (m.py:7)",
     "not proved its own: made by a call jaxmem does not know (`.create(...)`)"),
    ("its buffers are not proved to be its own: a loop variable taken from `states`, which still holds it (line 3)",
     "not proved its own: a loop variable from a container still holding it"),
    ("the caller of the enclosing function may still hold it", "a parameter: the caller may still hold it"),
    ("`train_step` is public: callers outside this project are not seen",
     "public definition: callers outside the project not seen"),
    ("`x` reaches the outputs of `f` only through calls jaxmem does not know (shape and dtype unproved)",
     "outputs reached only through calls jaxmem does not know"),
    ("something new at train.py:12 about `state` and `opt`, line 40",
     "other: something new at FILE:N about `X`, line N"),
])
def test_reason_categories(text, category):
    from _scoring import reason_category

    assert reason_category(text) == category


def test_normalize_reason_drops_names_paths_and_numbers():
    from _scoring import normalize_reason

    assert normalize_reason("`a` (x/y.py:12) may share buffers with `b`, `c` and `d`, read again at line 9") == \
        "`X` (FILE:N) may share buffers with `X`, read again at line N"


def test_fixed_point_changes_lists_files_and_lines_the_second_run_changed():
    from _scoring import fixed_point_changes

    first = {"a.py": "x = 1\n@jax.jit(donate_argnums=0)\ndef f(s, b):\n", "b.py": "pass\n"}
    assert fixed_point_changes(first, dict(first)) == []
    second = dict(first, **{"a.py": first["a.py"].replace("donate_argnums=0", "donate_argnums=(0, 1)")})
    (change,) = fixed_point_changes(first, second)
    assert change["path"] == "a.py" and change["what"] == "edited"
    assert change["lines"] == [{"line": 2, "before": "@jax.jit(donate_argnums=0)",
                                "after": "@jax.jit(donate_argnums=(0, 1))"}]
    assert [c["what"] for c in fixed_point_changes(first, {"a.py": first["a.py"]})] == ["removed"]


def test_measure_fixed_point_runs_the_fixer_twice_on_a_real_project(tmp_path):
    import accuracy

    (tmp_path / "train.py").write_text(TRAINING.replace(
        "def train(params, batches, tx):\n    state = tx.init(params)  # an optimizer jaxmem cannot see: medium\n",
        "def train(params, batches, tx):\n    state = jax.numpy.zeros(3)\n"))
    result = accuracy.measure_fixed_point(tmp_path, False, "test")
    fixed = (tmp_path / "train.py").read_text()
    assert result["files"] == 1 and result["changed_by_first"] == ["train.py"] and "donate_argnums" in fixed
    assert result["changed_by_second"] == [] and result["exit"][1] in (0, 1) and result["errors"] == []
    assert not (tmp_path / ".jaxmem_cache").exists()


def test_fix_then_run_all_when_max_runs_is_zero():
    from _fix_run import sample_runs

    changed = {"a": {"fix": ["a1"], "unsafe-fix": ["a1", "a2"]}, "b": {"fix": [], "unsafe-fix": ["b1"]}}
    assert sample_runs(changed, 0) == [("a", "a1"), ("a", "a2"), ("b", "b1")]


def test_comparison_puts_two_results_side_by_side():
    from _report import format_comparison

    def report(date, restored, doubts):
        case = {"package": "p", "path": "m.py", "line": 1, "resolution": "resolved", "status": "rebound",
                "reported": "JXM001", "confidence": "high" if restored else "medium", "doubts": doubts,
                "restored_by_fix": restored, "restored_by_unsafe_fix": True}
        return {"date": date, "packages": [], "exactness": {}, "recall": [case], "injection": [],
                "precision_candidates": [], "review": {}}

    text = format_comparison(report("before", False, ["the caller of the enclosing function may still hold it"]),
                             report("after", True, []))
    row = next(line for line in text.splitlines() if line.startswith("recall: default fix restores (rebound"))
    assert "0/1 (0.0%)" in row and "1/1 (100.0%)" in row
    assert "     1    0  a parameter: the caller may still hold it" in text


def test_an_unreported_parameter_gets_the_reason_jaxmem_skipped_it(tmp_path):
    from _jaxmem_cli import check
    from _scoring import refusal_category, refusal_of

    source = textwrap.dedent("""\
        import jax


        @jax.jit
        def step(state, lr: float):
            return state * lr


        def train(state, rate):
            for _ in range(3):
                state = step(state, rate)
            return state
    """)
    (tmp_path / "m.py").write_text(source)
    skipped = []
    findings = check(tmp_path, skipped=skipped)
    donation = SimpleNamespace(span=(4, 6))
    assert not [f for f in findings if f.parameter_name == "lr"]
    reason = refusal_of(donation, "m.py", "lr", skipped)
    assert reason and "lr" in reason, skipped
    assert "`lr`" not in refusal_category(reason) and refusal_category(reason) == refusal_category(
        reason.replace("`lr`", "`rate`"))
    assert refusal_of(donation, "other.py", "lr", skipped) is None


def test_work_folder_under_a_project_root_is_refused(tmp_path):
    import accuracy

    work = tmp_path / "a" / "jaxmem-accuracy-work"
    accuracy.check_work_folder(work)  # nothing marks a root above it
    (tmp_path / ".git").mkdir()
    with pytest.raises(SystemExit, match=r"\.git marks .* as a project root above the work folder"):
        accuracy.check_work_folder(work)


def test_confirm_runs_only_sdists_whose_run_venv_exists(tmp_path):
    from _confirm_run import confirmable

    (tmp_path / "optax-0.2.8").mkdir()
    (tmp_path / "optax-0.2.8" / "installed.txt").write_text("ok\n")
    ready, skipped = confirmable([("optax", "0.2.8", "sdist"), ("flax", "0.12.8", "sdist"),
                                  ("paxml", "1.4.0", "wheel")], venvs=tmp_path)
    assert ready == [("optax", "0.2.8", "sdist")]
    assert skipped[0].startswith("flax-0.12.8: no run venv") and "--fix-run-into" in skipped[0]
    assert skipped[1].startswith("paxml-1.4.0: a wheel")


def test_confirm_into_a_file_with_nothing_to_run_fails_and_keeps_it(tmp_path):
    results = tmp_path / "accuracy.json"
    results.write_text('{"recall": []}\n')
    done = subprocess.run(
        [sys.executable, os.path.join(BENCHMARKS, "accuracy.py"), "--confirm-run-into", str(results),
         "--package", "paxml==1.4.0:wheel"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "no package can be confirmed" in done.stderr and "paxml-1.4.0: a wheel" in done.stderr
    assert results.read_text() == '{"recall": []}\n'

"""The accuracy benchmark's pure pieces: donation finder and stripper, read injector, classifiers."""

import os
import subprocess
import sys
import textwrap

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


def test_second_fix_run_over_a_fixed_tree_changes_nothing(tmp_path):
    from accuracy import second_fix_changes

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp
        from lib import train_step

        step = jax.jit(train_step)


        def main():
            state, x = jnp.zeros(3), jnp.ones(3)
            for _ in range(3):
                state, x = step(state, x)
            return state
        """))
    assert second_fix_changes(tmp_path, unsafe=True) == []
    assert "donate_argnums=(0, 1)" in (tmp_path / "train.py").read_text()  # both positions in one run


def test_fixed_point_row_in_the_summary():
    from _report import _rows, summarize

    report = {"exactness": {}, "recall": [], "injection": [], "precision_candidates": [],
              "fixed_point": {"flax-0.12.8": {"fix": [], "unsafe-fix": ["tests/a_test.py"]}}}
    report["summary"] = summarize(report)
    (row,) = [r for r in _rows(report) if r[0].startswith("fixed point")]
    assert row[1:] == ("0 / 1", "0", "MISSED")

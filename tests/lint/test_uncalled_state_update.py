"""JXM003: a jitted state update that no call of the project reaches (library
code) is noted at low confidence, never fixed; the donation it suggests,
applied by hand, really deletes the old state of a caller that rebinds it."""

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from jaxmem.api import check_paths
from jaxmem.findings import Confidence
from jaxmem.lint.engine import analyze_source, facts_for_file, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)
BIN = Path(sys.executable).parent

LIBRARY = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp


    @jax.jit
    def train_step(state, batch):
        grads = jax.tree.map(lambda p: jnp.mean(batch) * jnp.ones_like(p), state)
        new_state = jax.tree.map(lambda p, g: p - 0.1 * g, state, grads)
        return new_state, jnp.mean(batch)
    """)

USER = textwrap.dedent("""\
    import jax.numpy as jnp
    from library import train_step

    state = {"w": jnp.ones((4, 4)), "b": jnp.zeros(4)}
    old = state
    for _ in range(3):
        state, loss = train_step(state, jnp.ones(8))
    print(all(leaf.is_deleted() for leaf in old.values()), float(state["b"][0]))
    """)


def _findings(sources: dict[str, str], code="JXM003", folder: Path | None = None):
    """``code``'s findings of a whole-project ``jaxmem check`` of ``sources`` (written into ``folder``),
    or of the join of their facts alone when no folder is given."""
    if folder is None:
        facts = [facts_for_file(path, text, ALL) for path, text in sources.items()]
        return [f for r in report(facts, ALL) for f in r.findings if f.code == code]
    (folder / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for path, text in sources.items():
        (folder / path).write_text(text)
    reports = check_paths([str(folder)], ALL, use_cache=False)
    return [f for r in reports for f in r.findings if f.code.startswith(code)]


def _run(folder: Path) -> str:
    result = subprocess.run([sys.executable, "user.py"], cwd=folder, capture_output=True, text=True, timeout=120,
                            env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_library_step_without_a_call_is_reported_low_and_not_fixable():
    (finding,) = _findings({"library.py": LIBRARY})
    assert (finding.parameter_name, finding.parameter_index, finding.confidence) == ("state", 0, Confidence.LOW)
    assert finding.span.line == 5 and finding.fix is None
    assert "`train_step` returns an update of `state` but no call of it is visible" in finding.message
    assert "donate_argnums=(0,)" in finding.message
    assert any("no call of `train_step`" in e.message for e in finding.evidence)


def test_the_suggested_donation_applied_by_hand_deletes_the_old_state(tmp_path):
    (finding,) = _findings({"library.py": LIBRARY})
    spelled = re.search(r"\((donate_argnums=\(\d+,\))\)", finding.message).group(1)
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "library.py").write_text(LIBRARY)
    deleted, result = _run(tmp_path).split()
    assert deleted == "False"  # not donated: the old state survives
    donated = "from functools import partial\n" + LIBRARY.replace("@jax.jit", f"@partial(jax.jit, {spelled})")
    (tmp_path / "library.py").write_text(donated)
    # donated: the old state of the caller, which rebinds it, is deleted; the result is the same
    assert _run(tmp_path).split() == ["True", result]
    assert _findings({"library.py": donated}) == []


def test_a_call_anywhere_in_the_project_leaves_it_to_jxm001(tmp_path):
    assert [f.parameter_name for f in _findings({"library.py": LIBRARY}, folder=tmp_path)] == ["state"]
    assert _findings({"library.py": LIBRARY, "user.py": USER}, folder=tmp_path) == []
    # The call sites decide: `old` reads the state after the call above; a caller that only rebinds it
    # gets JXM001.
    rebinds = textwrap.dedent("""\
        import jax.numpy as jnp
        from library import train_step

        def train(batches):
            state = {"w": jnp.ones((4, 4)), "b": jnp.zeros(4)}
            for batch in batches:
                state, loss = train_step(state, batch)
            return state
        """)
    (tmp_path / "user.py").unlink()
    found = _findings({"library.py": LIBRARY, "train.py": rebinds}, "JXM", tmp_path)
    assert [(f.code, f.parameter_name) for f in found] == [("JXM001", "state")]


def test_a_call_inside_traced_code_is_a_call_too():
    source = LIBRARY + textwrap.dedent("""\

        @jax.jit
        def evaluate_step(state, batch):
            _, loss = train_step(state, batch)
            return state - loss
        """)
    assert [(f.function, f.parameter_name) for f in _findings({"library.py": source})] == [("evaluate_step", "state")]


def test_no_output_built_from_the_parameter_is_not_reported():
    source = textwrap.dedent("""\
        import jax
        import jax.numpy as jnp

        @jax.jit
        def loss(params, batch):
            return jnp.mean((batch @ params["w"]) ** 2)

        @jax.jit
        def predict(params, x):
            return model.apply(params, x)
        """)
    assert _findings({"library.py": source}) == []


def test_prng_keys_static_and_scalar_parameters_are_not_reported():
    source = textwrap.dedent("""\
        import jax
        from functools import partial

        @partial(jax.jit, static_argnums=(2,))
        def noisy(state, key, scale, lr: float = 0.1):
            return state + lr * scale * jax.random.normal(key, state.shape)
        """)
    assert [f.parameter_name for f in _findings({"library.py": source})] == ["state"]


def test_one_file_alone_says_nothing():
    # flake8 and the codemod's single-file view: a caller in another file may exist.
    assert [f for f in analyze_source(LIBRARY, "library.py").findings if f.code == "JXM003"] == []


def test_method_and_keyword_only_spellings():
    source = textwrap.dedent("""\
        import jax
        from functools import partial

        class Trainer:
            @partial(jax.jit, static_argnums=0)
            def step(self, state, *, opt_state):
                return state * 2, opt_state + 1
        """)
    found = {(f.parameter_name, f.parameter_index): f.message for f in _findings({"trainer.py": source})}
    assert set(found) == {("state", 1), ("opt_state", None)}
    assert "donate_argnums=(1,)" in found[("state", 1)]
    assert "donate_argnames=('opt_state',)" in found[("opt_state", None)]


def test_check_json_and_fix_agree_it_has_no_fix(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "library.py").write_text(LIBRARY)
    checked = subprocess.run([str(BIN / "jaxmem"), "check", "--format", "json", "--min-confidence", "low",
                              "--no-cache", "."], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    (finding,) = [f for f in json.loads(checked.stdout)["findings"] if f["code"] == "JXM003"]
    assert finding["fix"] is False and finding["confidence"] == "low" and finding["severity"] == "info"
    fixed = subprocess.run([str(BIN / "jaxmem-fix"), "--unsafe-fixes", "--no-cache", "."], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert fixed.returncode in (0, 1), fixed.stderr
    assert (tmp_path / "library.py").read_text() == LIBRARY
    ignored = check_paths([str(tmp_path / "library.py")], Settings(min_confidence=Confidence.LOW,
                                                                  ignore=("JXM003",)), use_cache=False)
    selected = check_paths([str(tmp_path / "library.py")], Settings(min_confidence=Confidence.LOW,
                                                                   select=("JXM003",)), use_cache=False)
    assert [f.code for r in ignored for f in r.findings] == []
    assert [f.code for r in selected for f in r.findings] == ["JXM003"]
    default = check_paths([str(tmp_path / "library.py")], Settings(), use_cache=False)
    assert [f.code for r in default for f in r.findings] == []  # low: shown only with --min-confidence low


def test_nnx_and_equinox_definitions_are_left_to_their_call_sites():
    source = textwrap.dedent("""\
        import equinox as eqx
        from flax import nnx

        @nnx.jit
        def f(cached_m, m):
            return cached_m

        @eqx.filter_jit
        def g(state, batch):
            return state + batch
        """)
    assert _findings({"library.py": source}) == []


def test_noqa_on_the_def_line_silences_it(tmp_path):
    silenced = LIBRARY.replace("def train_step(state, batch):", "def train_step(state, batch):  # noqa: JXM003")
    assert _findings({"library.py": silenced}, folder=tmp_path) == []


def test_a_body_handed_to_a_jax_loop_runs_traced_and_is_not_reported():
    # jax-md's notebooks: @jit def body_fn(i, val) handed to lax.fori_loop; qdax's steps to lax.scan
    source = textwrap.dedent("""\
        import jax
        from jax import lax

        @jax.jit
        def body_fn(i, val):
            return val * 0.5

        @jax.jit
        def step(carry, x):
            return carry + x, x

        def simulate(val, xs):
            val = lax.fori_loop(0, 10, body_fn, val)
            return lax.scan(step, val, xs)
        """)
    assert _findings({"sim.py": source}) == []
    # the same definitions with no loop to hand them to are library steps: reported
    library = source.split("def simulate")[0]
    assert {f.parameter_name for f in _findings({"sim.py": library})} == {"val", "carry", "x"}

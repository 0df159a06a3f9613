"""A partial view (pre-commit's staged files, one file on the command line)
never decides a donation alone: the project's other files are analysed for
their call sites, without being reported."""

import textwrap

from jaxmem.api import check_paths
from jaxmem.findings import Confidence
from jaxmem.settings import Settings

LIB = """
import jax

@jax.jit
def step(state, batch):
    return state + batch
"""
SAFE_CALLER = """
import jax.numpy as jnp
from lib import step

def train(batches):
    state = jnp.zeros(3)
    for batch in batches:
        state = step(state, batch)
    return state
"""
UNSAFE_CALLER = """
import jax.numpy as jnp
from lib import step

def evaluate(batch):
    state = jnp.zeros(3)
    new = step(state, batch)
    return new, state
"""


def _project(tmp_path, marker=True):
    if marker:
        (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in {"lib.py": LIB, "train.py": SAFE_CALLER, "evaluate.py": UNSAFE_CALLER}.items():
        (tmp_path / name).write_text(textwrap.dedent(text))


def _jxm001(reports):
    return [(r.path, f.parameter_name, f.confidence) for r in reports for f in r.findings if f.code == "JXM001"]


def test_a_staged_file_sees_the_call_sites_of_unstaged_ones(tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    settings = Settings(min_confidence=Confidence.LOW)
    reports = check_paths(["lib.py", "train.py"], settings, use_cache=False)
    assert [r.path for r in reports] == ["lib.py", "train.py"]  # evaluate.py is context, not reported
    assert _jxm001(reports) == []  # evaluate.py reads `state` after the call
    (lib,) = [r for r in reports if r.path == "lib.py"]
    assert any("evaluate.py" in refusal.reason for refusal in lib.refusals)


def test_without_a_project_root_the_run_is_the_view(tmp_path, monkeypatch):
    _project(tmp_path, marker=False)
    monkeypatch.chdir(tmp_path)
    reports = check_paths(["lib.py", "train.py"], Settings(), use_cache=False, whole_project=True)
    assert _jxm001(reports) == [("lib.py", "state", Confidence.HIGH)]


def test_the_whole_project_agrees_with_a_partial_view(tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    whole = check_paths(["."], Settings(), use_cache=False)
    assert _jxm001(whole) == []


def test_one_file_alone_never_gets_high_confidence():
    from jaxmem.lint.engine import analyze_source

    text = textwrap.dedent(LIB + SAFE_CALLER.replace("from lib import step\n", ""))
    (alone,) = [f for f in analyze_source(text, "m.py").findings if f.code == "JXM001"]
    assert alone.confidence is Confidence.MEDIUM
    assert "only this file was analysed" in alone.message
    (whole,) = [f for f in analyze_source(text, "m.py", partial_view=False).findings if f.code == "JXM001"]
    assert whole.confidence is Confidence.HIGH


def test_context_is_what_can_change_the_advice():
    from jaxmem.lint.syntax.relevance import context_selector

    wanted = context_selector({"pkg/lib.py": "import jax\nfrom pkg.util import helper\n\n@jax.jit\ndef step(s):\n    return s\n"})
    assert wanted("pkg/train.py", "from pkg.lib import step\nstate = step(state)\n")  # a call site
    assert wanted("pkg/util.py", "def helper():\n    return 1\n")  # imported by the requested file
    assert not wanted("pkg/other.py", "def stepper():\n    return 2\n")  # neither



EXAMPLE_TRAIN = """
import jax
import jax.numpy as jnp

@jax.jit
def train_step(state, batch):
    return state + batch

def make_step():
    def step({carry}, batch):
        return {carry} * batch
    return step

def init():
    return jnp.zeros(3)
"""
EXAMPLES = {
    # Reads its state after the call: its own train.py must not be donated. Its
    # folder sorts first, so a first-found resolution would pick it for both.
    "lm1b": ("old", """
import jax.numpy as jnp
import train

def main():
    state = train.init()
    new = train.train_step(state, jnp.ones(3))
    return new, state
"""),
    # Rebinds its state: a real donation, through its own train.py.
    "seq2seq": ("carry", """
import jax
import jax.numpy as jnp
import train
from train import make_step

step_fn = make_step()
p_step = jax.jit(step_fn)

def main():
    state = train.init()
    for _ in range(3):
        state = train.train_step(state, jnp.ones(3))
        state = p_step(state, jnp.ones(3))
    return state
"""),
}


def test_import_resolves_to_the_module_beside_the_importing_file(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for example, (carry, main) in EXAMPLES.items():
        folder = tmp_path / "examples" / example
        folder.mkdir(parents=True)
        (folder / "train.py").write_text(textwrap.dedent(EXAMPLE_TRAIN.format(carry=carry)))
        (folder / "main.py").write_text(textwrap.dedent(main))
    monkeypatch.chdir(tmp_path)
    reports = check_paths(["."], Settings(), use_cache=False)
    assert sorted((path, name) for path, name, _ in _jxm001(reports)) == [
        ("examples/seq2seq/main.py", "carry"),  # the factory beside main.py gave the signature
        ("examples/seq2seq/train.py", "state"),  # lm1b's call site does not reach it
    ]

"""A private top-level function's callers decide whether its parameter is still
held (issue 14, item 2): ``_train_epoch`` defined once, called only by name in
its own file (module code, top-level functions, methods), and named by no
other file, has all its calls in view.  The parameter may also be rebound by
the step's result in a loop (``state = step(state, batch)``): the callers then
decide the first value, the loop's own writes the others.  VALID: the donation
inside it is proposed at high confidence; INVALID: it stays medium."""

import textwrap

import pytest
from partial_runs import assert_partial_run_reads_the_other_file

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

STEP = """
import jax
import jax.numpy as jnp


@jax.jit
def _step(state, batch):
    return state + batch
"""

HELPER = """

def _advance(state, batch):
    state = _step(state, batch)
    return state
"""

LOOP_HELPER = """

def _train_epoch(state, batches):
    for batch in batches:
        state = _step(state, batch)
    return state
"""

CALLER = """

def train(n):
    state = jnp.zeros((4,))
    for i in range(n):
        state = _advance(state, jnp.full((4,), i))
    return float(state.sum())
"""

LOOP_CALLER = """

def train(n):
    state = jnp.zeros((4,))
    batches = [jnp.ones((4,))] * 3
    for _ in range(n):
        state = _train_epoch(state, batches)
    return float(state.sum())
"""

METHOD_CALLER = """

class Trainer:
    def __init__(self):
        self.batches = [jnp.ones((4,))] * 3

    def fit(self, n):
        state = jnp.zeros((4,))
        for _ in range(n):
            state = _train_epoch(state, self.batches)
        return state
"""


def _finding(files: dict[str, str]):
    texts = {path: textwrap.dedent(text) for path, text in files.items()}
    hints = project_hints(texts)
    facts = [facts_for_file(path, text, ALL, hints) for path, text in texts.items()]
    found = [f for r in report(facts, ALL) for f in r.findings if f.code == "JXM001" and f.parameter_name == "state"]
    assert len(found) <= 1, found
    return found[0] if found else None


@pytest.mark.parametrize("program", [
    pytest.param(STEP + HELPER + CALLER, id="helper-called-by-a-function"),
    pytest.param(STEP + LOOP_HELPER + LOOP_CALLER, id="helper-loop-rebinds-the-parameter"),
    pytest.param(STEP + LOOP_HELPER + METHOD_CALLER, id="called-by-a-method"),
    pytest.param(STEP + LOOP_HELPER + LOOP_CALLER.replace("def train(n):", "def _train(n):")
                 + "\n\ndef main():\n    return _train(3)\n", id="called-by-another-private-function"),
    pytest.param(STEP + "\n\ndef train(n):\n    def epoch(state, batches):\n        for batch in batches:\n"
                        "            state = _step(state, batch)\n        return state\n\n"
                        "    state = jnp.zeros((4,))\n    for _ in range(n):\n"
                        "        state = epoch(state, [jnp.ones((4,))])\n    return state\n",
                 id="nested-def-loop-rebinds-the-parameter"),
    pytest.param(STEP + HELPER + "\n\nstate = jnp.zeros((4,))\nstate = _advance(state, jnp.ones((4,)))\n",
                 id="module-code-rebinds-its-global"),
])
def test_a_private_function_whose_every_call_passes_a_dead_value_is_proved(program):
    finding = _finding({"train.py": program})
    assert finding is not None and finding.confidence == Confidence.HIGH, finding and finding.message
    assert any("is called only" in e.message for e in finding.evidence), finding.evidence


def test_the_evidence_names_the_calls():
    finding = _finding({"train.py": STEP + HELPER + CALLER})
    text = " ".join(e.message for e in finding.evidence)
    assert "the private function `_advance` is called only in this file (line 19; no other file names it)" in text


@pytest.mark.parametrize("program,other", [
    pytest.param(STEP + HELPER + CALLER.replace("        state = _advance", "        old = state\n        state = _advance")
                 .replace("return float(state.sum())", "return float(state.sum()), old"),
                 None, id="the-caller-keeps-an-alias"),
    pytest.param(STEP + HELPER + CALLER, "from train import _advance\n\n\ndef go(x):\n    return _advance(x, 1), x\n",
                 id="another-file-imports-it"),
    pytest.param(STEP + HELPER + CALLER, "import train\n\n\ndef go(x):\n    return getattr(train, '_advance')(x, 1)\n",
                 id="another-file-names-it-in-a-string"),
    pytest.param(STEP + HELPER + CALLER + "\n\ndef later(x):\n    def inner():\n        return _advance(x, 1)\n"
                                          "    return inner(), x\n", None, id="called-from-a-nested-def"),
    pytest.param(STEP + HELPER + CALLER + "\n\nSTEPS = [_advance]\n", None, id="passed-as-a-value"),
    pytest.param(STEP + HELPER + "\n\nclass C:\n    base = jnp.zeros((4,))\n    y = _advance(base, jnp.ones((4,)))\n"
                                 "    print(base)\n", None, id="called-in-a-class-body"),
    pytest.param(STEP + HELPER + "\n\ndef run(x):\n    f = lambda s: _advance(s, jnp.ones((4,)))\n"
                                 "    return f(x), x\n", None, id="called-in-a-lambda"),
    pytest.param(STEP + HELPER + CALLER + "\n\nstate = jnp.zeros((4,))\nnew = _advance(state, jnp.ones((4,)))\n"
                                          "print(state)\n", None, id="module-code-reads-its-global-after"),
    pytest.param(STEP + HELPER + CALLER.replace("def train", "# _advance is also used by tools\ndef train"), None,
                 id="named-in-a-comment"),
    pytest.param(STEP + HELPER.replace("_advance", "advance") + CALLER.replace("_advance", "advance"), None,
                 id="a-public-function-is-not-followed"),
    pytest.param(STEP + "\nif jax.__version__:" + textwrap.indent(HELPER, "    ") + "\nelse:"
                 + textwrap.indent(HELPER.replace("+ batch", "- batch"), "    ") + CALLER, None,
                 id="defined-twice"),
    pytest.param(STEP + LOOP_HELPER.replace("    for batch", "    first = state\n    for batch")
                 .replace("return state", "return state, first") + LOOP_CALLER.replace(
                     "state = _train_epoch(state, batches)", "state, _ = _train_epoch(state, batches)"),
                 None, id="the-helper-keeps-the-first-value"),
    pytest.param(STEP.replace("state + batch", "{'w': state['w'] + batch}") + LOOP_HELPER.replace(
        "    for batch", "    state['seen'] = jnp.zeros(())\n    for batch")
                 + LOOP_CALLER.replace("jnp.zeros((4,))\n", "{'w': jnp.zeros((4,))}\n")
                 .replace("float(state.sum())", "state"), None, id="the-helper-writes-into-the-parameter"),
])
def test_kept_at_medium_when_a_call_may_be_unseen_or_the_caller_holds_it(program, other):
    files = {"train.py": program}
    if other is not None:
        files["other.py"] = other
    finding = _finding(files)  # none when the value is proved read later
    assert finding is None or finding.confidence == Confidence.MEDIUM, finding.message


def test_a_partial_run_reads_the_other_files_that_import_the_private_function(tmp_path):
    assert_partial_run_reads_the_other_file(
        tmp_path, "train.py", STEP + HELPER + CALLER,
        naming="from train import _advance\n\n\ndef poke(x):\n    return _advance(x, 1), x\n",
        clean="def poke(x):\n    return x\n")

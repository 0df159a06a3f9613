"""A private method's callers decide whether its parameter is still held
(issue 14, item 2): ``_helper`` called only through ``self`` in its own
class, and named by no other file, has all its calls in view.  VALID: the
donation inside it is proposed at high confidence; INVALID: it stays medium."""

import textwrap

import pytest
from partial_runs import assert_partial_run_reads_the_other_file

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

RUNNER = """
import jax
import jax.numpy as jnp


@jax.jit
def _advance(seq_lens, delta):
    return seq_lens - delta


class Runner:
    def __init__(self, n):
        self.n = n

    def _subtract(self, seq_lens, delta):
        seq_lens = _advance(seq_lens, delta)
        return seq_lens
"""

CALLER = """
    def prepare(self, step):
        seq_lens = jnp.full((self.n,), step + 10)
        seq_lens = self._subtract(seq_lens, jnp.ones((), jnp.int32))
        return int(seq_lens.sum())
"""


def _confidence(files: dict[str, str]):
    texts = {path: textwrap.dedent(text) for path, text in files.items()}
    hints = project_hints(texts)
    facts = [facts_for_file(path, text, ALL, hints) for path, text in texts.items()]
    found = [f for r in report(facts, ALL) for f in r.findings
             if f.code == "JXM001" and f.parameter_name == "seq_lens"]
    assert len(found) == 1, found
    return found[0].confidence, found[0].message


def test_a_private_method_whose_every_call_passes_a_dead_value_is_proved():
    confidence, message = _confidence({"runner.py": RUNNER + CALLER})
    assert confidence == Confidence.HIGH, message


@pytest.mark.parametrize("caller,other", [
    pytest.param(CALLER.replace("return int(seq_lens.sum())", "return int(seq_lens.sum()), old")
                 .replace("seq_lens = self._subtract", "old = seq_lens\n        seq_lens = self._subtract"),
                 None, id="the-caller-keeps-an-alias"),
    pytest.param(CALLER, "from runner import Runner\n\nclass Sub(Runner):\n    def go(self, x):\n"
                         "        return self._subtract(x, 1), x\n", id="another-file-calls-it"),
    pytest.param(CALLER, "def poke(runner, x):\n    return getattr(runner, '_subtract')(x, 1), x\n",
                 id="another-file-names-it-in-a-string"),
    pytest.param(CALLER + "\n    def later(self, x):\n        def inner():\n            return self._subtract(x, 1)\n"
                          "        return inner(), x\n", None, id="called-from-a-nested-def"),
    pytest.param(CALLER + "\n    def handle(self):\n        return self._subtract\n", None, id="passed-as-a-value"),
    pytest.param(CALLER.replace("def prepare", "# _subtract is also used by tools\n    def prepare"), None,
                 id="named-in-a-comment"),
])
def test_kept_at_medium_when_a_call_may_be_unseen_or_the_caller_holds_it(caller, other):
    files = {"runner.py": RUNNER + caller}
    if other is not None:
        files["other.py"] = other
    confidence, message = _confidence(files)
    assert confidence == Confidence.MEDIUM, message
    assert "the caller of the enclosing function may still hold it" in message


def test_a_public_method_is_not_followed():
    public = (RUNNER + CALLER).replace("_subtract", "subtract")
    assert _confidence({"runner.py": public})[0] == Confidence.MEDIUM


def test_a_partial_run_reads_the_other_files_that_name_the_private_method(tmp_path):
    assert_partial_run_reads_the_other_file(
        tmp_path, "runner.py", RUNNER + CALLER,
        naming="def poke(runner, x):\n    return runner._subtract(x, 1), x\n",
        clean="def poke(runner, x):\n    return x\n")

"""A text's summary gives every pre-filter verdict the text itself gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxmem.cache import FactsCache
from jaxmem.lint.syntax.relevance import (
    hints_of,
    might_involve_jit,
    project_hints,
    reachable_hints,
    summarize,
    summary_involves_jit,
    summary_reachable_hints,
)
from jaxmem.settings import Settings
from jaxmem.summaries import Summaries

REPO = Path(__file__).resolve().parents[2]

CRAFTED = {
    "crlf.py": "import jax\r\n\r\n@jax.jit\r\ndef step(s):\r\n    return s\r\n",
    "cr.py": "from pkg.lib import step\rstep(1)\r",
    "doc_only.py": '"""Uses jax.jit a lot."""\n# pmap too\ndef f(x):\n    return x\n',
    "caller.py": "import pkg.lib\n\n\ndef run(s):\n    return pkg.lib.step(s)\n",
    "library_only.py": "import numpy\nfrom numpy import step\nnumpy.step(1)\n",
    "relative.py": "from .lib import (\n    step,\n    other_fn,\n)\n",
    "factory.py": "import jax\nfrom pkg.make import make_step\n\nrun = jax.jit(make_step())\n",
    "wrapper.py": "from mylib import my_jit\n\n@my_jit\ndef f(x):\n    return x\n",
    "debug.py": 'import jax\njax.config.update("jax_debug_nans", True)\n',
    "empty.py": "",
}


def _texts() -> dict[str, str]:
    texts = dict(CRAFTED)
    for folder in ("examples", "jaxmem", "lint", "codemod", "runtime_check", "tests", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if ".cache" in path.parts or not path.is_file():
                continue  # benchmarks/.cache holds the downloaded corpus, not this repository's code
            texts[str(path.relative_to(REPO))] = path.read_text(encoding="utf-8", errors="surrogateescape")
    return texts


TEXTS = _texts()
ALL_HINTS = project_hints(TEXTS)
HINT_SETS = [frozenset(), ALL_HINTS, frozenset({"step", "other_fn", "make_step", "check_paths", "run"})]
SETTINGS = [Settings(), Settings(extra_wrappers=("mylib.my_jit",)), Settings(extra_wrappers=("x.",))]


def test_the_corpus_is_real():
    assert len(TEXTS) > 100 and len(ALL_HINTS) > 10


def test_hints_from_summaries_are_the_project_hints():
    assert hints_of(summarize(t) for t in TEXTS.values()) == ALL_HINTS
    assert hints_of([]) == project_hints({})
    for name, text in TEXTS.items():
        assert hints_of([summarize(text)]) == project_hints({name: text}), name


@pytest.mark.parametrize("hints", HINT_SETS, ids=["none", "project", "chosen"])
def test_verdicts_from_summaries_are_the_verdicts_from_text(hints):
    for name, text in TEXTS.items():
        summary = summarize(text)
        assert summary_reachable_hints(summary, hints) == reachable_hints(text, hints), name
        for settings in SETTINGS:
            assert summary_involves_jit(summary, text, settings, hints) == might_involve_jit(text, settings, hints), name


def test_without_shortcuts_everything_involves_jit(monkeypatch):
    monkeypatch.setenv("JAXMEM_NO_SHORTCUTS", "1")
    assert summary_involves_jit(summarize("x = 1\n"), "x = 1\n", Settings(), frozenset())


def test_summaries_round_trip_through_the_index(tmp_path):
    cache = FactsCache(tmp_path, Settings())
    first = Summaries(cache)
    computed = {name: first.summary(f"digest-{name}", text) for name, text in TEXTS.items()}
    first.save(limit=10_000)
    second = Summaries(cache)
    assert set(second.stored) == {f"digest-{name}" for name in TEXTS}
    # The text passed is never read when the digest is in the index.
    assert {name: second.summary(f"digest-{name}", "") for name in TEXTS} == computed

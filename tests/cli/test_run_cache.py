"""Warm runs: the whole-run entry and the summaries index give the same reports as no cache."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from jaxmem.api import check_paths
from jaxmem.cache import CACHE_DIR_NAME
from jaxmem.factcodec import decode, encode
from jaxmem.findings import Confidence
from jaxmem.settings import Settings

from .conftest import MISSED_DONATION, write

LIB = """\
import jax


@jax.jit
def train_step(state, batch):
    return state + batch
"""

CALLER = """\
import jax.numpy as jnp
from lib import train_step


def train(batches):
    state = jnp.zeros(3)
    for batch in batches:
        state = train_step(state, batch)
    return state
"""

SUPPRESSED = MISSED_DONATION.replace("@jax.jit\n", "@jax.jit  # noqa: JXM001\n")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project of real files (cross-file call, noqa, syntax error, bad bytes), as the cwd."""
    write(tmp_path, "pyproject.toml", "[project]\nname = 'demo'\n")
    write(tmp_path, "lib.py", LIB)
    write(tmp_path, "main.py", CALLER)
    write(tmp_path, "train.py", MISSED_DONATION)
    write(tmp_path, "quiet.py", SUPPRESSED)
    write(tmp_path, "broken.py", "import jax\n\n@jax.jit\ndef f(:\n")
    write(tmp_path, "binary.py", b"x = 1\0\n")
    write(tmp_path, "latin.py", b"s = '\xe9'\n")
    write(tmp_path, "plain.py", "def helper(x):\n    return x\n")
    os.mkfifo(tmp_path / "fifo.py")  # a read problem: JXM900 from the run entry too
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _runs(project):
    return sorted((project / CACHE_DIR_NAME / "facts").glob("run-*.json"))


def _check(paths=(".",), settings=None, **options):
    return check_paths(list(paths), settings or Settings(), **options)


def test_warm_runs_equal_a_run_without_cache(project):
    expected = _check(use_cache=False)
    assert {r.path for r in expected if r.findings} >= {
        "lib.py", "train.py", "broken.py", "binary.py", "latin.py", "fifo.py"}
    cold = _check()
    assert len(_runs(project)) == 1
    assert cold == expected
    assert _check() == expected
    assert _check(jobs=2) == expected


def test_the_run_entry_is_what_a_warm_run_returns(project):
    _check()
    (entry,) = _runs(project)
    data = json.loads(entry.read_text())
    assert "train_step" in json.dumps(data["reports"])
    data["reports"] = json.loads(json.dumps(data["reports"]).replace("train_step", "renamed_step"))
    entry.write_text(json.dumps(data))
    assert "renamed_step" in repr(_check())  # a hit: the stored reports
    write(project, "plain.py", "def helper(x):\n    return x + 1\n")
    assert "renamed_step" not in repr(_check())  # a file changed: a miss


def test_the_stored_join_serves_edits_that_keep_every_file_s_facts(project):
    _check()
    (entry,) = _runs(project)
    data = json.loads(entry.read_text())
    assert "train_step" in json.dumps(data["joined"])
    data["joined"] = json.loads(json.dumps(data["joined"]).replace("train_step", "renamed_step"))
    entry.write_text(json.dumps(data))
    write(project, "main.py", CALLER + "# a comment changes no facts\n")
    assert "renamed_step" in repr(_check())  # the stored join, read back
    write(project, "main.py", CALLER.replace("state = jnp.zeros(3)", "state = jnp.ones(3)"))
    assert "renamed_step" not in repr(_check())  # other facts: joined again


def test_one_changed_file_equals_a_run_without_cache(project):
    _check()
    _check(["main.py"], force_exclude=True)
    write(project, "lib.py", LIB.replace("state + batch", "state * batch"))
    write(project, "main.py", CALLER + "\n\ndef more(x):\n    return train_step(x, x)\n")
    for paths in (["."], ["main.py"], ["lib.py", "main.py"]):
        assert _check(paths, force_exclude=True) == _check(paths, use_cache=False, force_exclude=True)
        assert _check(paths) == _check(paths, use_cache=False)


def test_settings_and_requested_paths_are_part_of_the_run_key(project):
    _check()
    low = Settings(min_confidence=Confidence.LOW, select=("JXM0",))
    assert _check(settings=low) == _check(settings=low, use_cache=False)
    assert _check(["train.py"]) == _check(["train.py"], use_cache=False)
    assert [r.path for r in _check(["train.py"])] == ["train.py"]
    assert _check(["train.py"], whole_project=False) == _check(["train.py"], whole_project=False, use_cache=False)


def test_a_new_package_marker_changes_the_facts_even_when_excluded(project):
    """Functions of a package are public (medium confidence): an ``__init__.py``
    appearing beside a file changes its findings, even one discovery skips."""
    write(project, "pkg/steps.py", MISSED_DONATION)
    settings = Settings(exclude=("__init__.py",))
    before = _check(settings=settings)
    write(project, "pkg/__init__.py", "")
    after = _check(settings=settings)
    assert after == _check(settings=settings, use_cache=False)
    assert after != before


def test_a_run_where_the_engine_failed_on_a_file_is_not_kept(project):
    """Such a file is analysed again next run (the facts cache keeps no error either)."""
    write(project, "deep.py", "import jax\n\nf = jax.jit(abs)\nx = " + "(" * 300 + ")" * 300 + "\n")
    reports = _check()
    assert any(f.code == "JXM900" for r in reports if r.path == "deep.py" for f in r.findings)
    assert _runs(project) == []
    assert _check() == reports == _check(use_cache=False)


def test_stdin_runs_write_no_run_entry(project):
    import io

    reports = _check(["-"], stdin_filename="train.py", stdin=io.BytesIO(MISSED_DONATION.encode()))
    assert [f.code for r in reports for f in r.findings] == ["JXM001"]
    assert _runs(project) == []


def _hostile(original: dict) -> dict:
    reports = decode(original["reports"])
    first = reports[0]
    finding = next(f for r in reports for f in r.findings)

    def with_reports(value):
        return json.dumps({**original, "reports": value})

    def with_report(**fields):
        return with_reports(encode([dataclasses.replace(first, **fields)]))

    return {
        "not JSON": "\x00garbage",
        "JSON of the wrong shape": "[1, 2, 3]",
        "another format": json.dumps({**original, "format": "jaxmem-run-0"}),
        "other inputs": json.dumps({**original, "inputs": "0" * 64}),
        "not a list": with_reports(encode(tuple(reports))),
        "a class outside jaxmem": with_reports({"l": [{"c": ["subprocess:Popen", "x"]}]}),
        "facts, not a report": with_reports(encode([finding.span])),
        "a file the run did not ask for": with_report(path="elsewhere.py"),
        "a path that is not text": with_report(path=3),
        "a span that is not a span": with_report(findings=[dataclasses.replace(finding, span="1:1")]),
        "a line that is a boolean": with_report(findings=[
            dataclasses.replace(finding, span=dataclasses.replace(finding.span, line=True))]),
        "findings not in a list": with_report(findings=(finding,)),
        "a report twice": with_reports(encode([first, first])),
        "a report also empty": json.dumps({**original, "empty": original["empty"] + [[first.path, None]]}),
        "an empty report of a number": json.dumps({**original, "empty": [[1, None]]}),
        "no empty reports list": json.dumps({key: v for key, v in original.items() if key != "empty"}),
        "deep nesting": "[" * 100_000 + "]" * 100_000,
    }


HOSTILE = ["not JSON", "JSON of the wrong shape", "another format", "other inputs", "not a list",
           "a class outside jaxmem", "facts, not a report", "a file the run did not ask for",
           "a path that is not text", "a span that is not a span", "a line that is a boolean",
           "findings not in a list", "a report twice", "a report also empty", "an empty report of a number",
           "no empty reports list", "deep nesting"]


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_run_entry_is_a_miss(project, case):
    expected = _check(use_cache=False)
    _check()
    (entry,) = _runs(project)
    entry.write_text(_hostile(json.loads(entry.read_text()))[case])
    assert _check() == expected


def test_a_hostile_summaries_index_is_a_miss(project):
    expected = _check(use_cache=False)
    _check()
    (index,) = (project / CACHE_DIR_NAME / "facts").glob("summaries-*.json")
    data = json.loads(index.read_text())
    digest = next(iter(data["entries"]))
    for entries in ({digest: [1, "", ""]}, {digest: [True, ["x"], ""]}, {digest: [True, "", ""], "x": None}):
        index.write_text(json.dumps({**data, "entries": entries}))
        for run in _runs(project):
            run.unlink()
        assert _check() == expected
    index.write_text("[")
    assert _check() == expected


def test_indexes_keep_entries_of_other_runs_up_to_a_limit(project):
    from jaxmem.cache import FactsCache

    cache = FactsCache(project, Settings())
    cache.save_index("i.json", "f", {}, {"a": 1, "b": 2}, limit=3)
    assert cache.load_index("i.json", "f", lambda e: True) == {"a": 1, "b": 2}
    cache.save_index("i.json", "f", {"a": 1, "b": 2}, {"c": 3, "a": 1}, limit=3)
    assert list(cache.load_index("i.json", "f", lambda e: True)) == ["b", "c", "a"]
    cache.save_index("i.json", "f", {"b": 2, "c": 3, "a": 1}, {"d": 4}, limit=3)
    assert list(cache.load_index("i.json", "f", lambda e: True)) == ["c", "a", "d"]
    assert cache.load_index("i.json", "f", lambda e: e != 4) == {}


def test_a_hook_run_keeps_the_summaries_of_the_whole_project(project):
    _check()
    (index,) = (project / CACHE_DIR_NAME / "facts").glob("summaries-*.json")
    before = set(json.loads(index.read_text())["entries"])
    write(project, "main.py", CALLER + "# changed\n")
    _check(["main.py"], force_exclude=True)
    after = set(json.loads(index.read_text())["entries"])
    assert before < after



def test_cli_flags_change_what_a_warm_run_reports(project, jaxmem):
    for flags in ([], ["--min-confidence", "low"], ["--ignore", "JXM001"], ["--select", "JXM9"], []):
        warm = [jaxmem("check", *flags, ".") for _ in range(2)]
        uncached = jaxmem("check", "--no-cache", *flags, ".")
        assert warm[0].stdout == warm[1].stdout == uncached.stdout, flags
        assert warm[1].returncode == uncached.returncode

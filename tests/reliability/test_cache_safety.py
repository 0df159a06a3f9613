"""Item 7: a cache entry is data, never code; anything unexpected in it is a miss.

The entries of ``.jaxmem_cache/`` are written by whoever controls the
repository.  A pickle there used to run code on load, and a valid pickle
of the wrong object aborted the whole run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle

import pytest

from jaxmem.api import check_paths
from jaxmem.cache import FactsCache
from jaxmem.config import load_config

from .conftest import MISSED_DONATION, MISSED_DONATION_LINE, write


class RunsCode:
    """Unpickling this runs ``touch PWNED``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _entries(project):
    return sorted((project / ".jaxmem_cache" / "facts").glob("[0-9a-f]*"))


def _forget_runs(project):
    """Drop the whole-run entries, so the next run reads the per-file entries."""
    for entry in (project / ".jaxmem_cache" / "facts").glob("run-*.json"):
        entry.unlink()


def _expected(reports):
    return [(f.code, f.span.line) for r in reports for f in r.findings]


def _warm(project):
    write(project, "train.py", MISSED_DONATION)
    settings = load_config([project]).settings
    first = check_paths([project], settings)
    assert _expected(first) == [("JXM001", MISSED_DONATION_LINE)]
    [entry] = _entries(project)
    return settings, entry


def _with_path(values, path):
    """FileFacts' encoded field values with another ``path``."""
    from jaxmem.lint.join.facts import FileFacts

    names = [f.name for f in dataclasses.fields(FileFacts)]
    assert values[names.index("path")].endswith("train.py")
    return [path if name == "path" else value for name, value in zip(names, values)]


def _hostile_entries(project, marker):
    settings, entry = _warm(project)
    head, _, arguments = entry.read_bytes().partition(b"\n")  # see jaxmem.factentry
    original = json.loads(head)
    facts = original["facts"]
    calls = json.loads(arguments)
    assert calls and original["calls"]

    def entry_of(value, second_line=arguments) -> bytes:
        return json.dumps(value).encode() + b"\n" + second_line

    popen = {"c": ["subprocess:Popen", {"args": ["touch", str(marker)]}]}
    return settings, entry, {
        "code-running pickle": pickle.dumps(RunsCode(marker)),
        "pickle of the wrong object": pickle.dumps({"definitions": 3}),
        "not JSON": b"\x00\x01garbage",
        "JSON of the wrong shape": b"[1, 2, 3]",
        "another format": entry_of({**original, "format": "jaxmem-facts-0"}),
        "another entry's key": entry_of({**original, "key": "0" * 64}),
        "a class outside jaxmem": entry_of({**original, "facts": popen}),
        "a module jaxmem never loaded": entry_of(
            {**original, "facts": {"c": ["jaxmem.runtime_check.record:Recorder", {}]}}),
        "a function, not a dataclass": entry_of({**original, "facts": {"c": ["jaxmem.api:check_paths", {}]}}),
        "missing fields": entry_of({**original, "facts": {"c": [facts["c"][0]]}}),
        "one value too many": entry_of({**original, "facts": {"c": [*facts["c"], None]}}),
        "the facts of another file": entry_of(
            {**original, "facts": {"c": [facts["c"][0], *_with_path(facts["c"][1:], "other.py")]}}),
        "deep nesting": b"[" * 100_000 + b"]" * 100_000,
        "a call stub too short": entry_of({**original, "calls": [stub[:-1] for stub in original["calls"]]}),
        # The calls' arguments are read when the join needs them: still a miss, never a crash.
        "arguments that are not JSON": entry_of(original, b"\x00garbage"),
        "arguments of fewer calls": entry_of(original, json.dumps(calls[:-1]).encode()),
        "arguments of a class outside jaxmem": entry_of(original, json.dumps([[popen, []]] * len(calls)).encode()),
        "arguments of the wrong type": entry_of(original, json.dumps([[1, 2]] * len(calls)).encode()),
        "arguments nested deeply": entry_of(original, b"[" * 100_000 + b"]" * 100_000),
    }


@pytest.mark.parametrize("case", [
    "code-running pickle", "pickle of the wrong object", "not JSON", "JSON of the wrong shape",
    "another format", "another entry's key", "a class outside jaxmem", "a module jaxmem never loaded",
    "a function, not a dataclass", "missing fields", "one value too many", "the facts of another file",
    "deep nesting", "a call stub too short", "arguments that are not JSON", "arguments of fewer calls",
    "arguments of a class outside jaxmem", "arguments of the wrong type", "arguments nested deeply",
])
def test_a_hostile_entry_is_a_miss_and_runs_nothing(project, case):
    marker = project / "PWNED"
    settings, entry, entries = _hostile_entries(project, marker)
    entry.write_bytes(entries[case])
    _forget_runs(project)
    reports = check_paths([project], settings)
    assert _expected(reports) == [("JXM001", MISSED_DONATION_LINE)]
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_file_as_an_entry_is_a_miss(project, kind):
    settings, entry = _warm(project)
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    else:
        os.symlink("/dev/zero", entry)
    _forget_runs(project)
    assert _expected(check_paths([project], settings)) == [("JXM001", MISSED_DONATION_LINE)]


def test_a_cache_folder_linked_elsewhere_is_not_written(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (project / ".jaxmem_cache").symlink_to(elsewhere, target_is_directory=True)
    write(project, "train.py", MISSED_DONATION)
    assert _expected(check_paths([project], load_config([project]).settings)) == [
        ("JXM001", MISSED_DONATION_LINE)]
    assert list(elsewhere.iterdir()) == []


def test_the_cache_round_trips_real_facts_exactly(project):
    settings, _ = _warm(project)
    cache = FactsCache(project, settings)
    from jaxmem.lint import engine

    facts = engine.facts_for_file("train.py", MISSED_DONATION, settings)
    cache.put("train.py", "digest", facts)
    assert cache.get("train.py", "digest") == facts

"""Facts cache entries: the calls' arguments apart, decoded only for the calls the join reads."""

from __future__ import annotations

import copy
import pickle

import pytest

from jaxmem.cache import FactsCache, StaleEntry, facts_digest
from jaxmem.lint import engine
from jaxmem.lint.join.facts import CallFacts
from jaxmem.settings import Settings

from .conftest import MISSED_DONATION

# Two calls: `step` (jitted here) and `refresh`, which another file may jit (a hint).
PROGRAM = MISSED_DONATION + """

from helpers import refresh


def evaluate(state, batches):
    for batch in batches:
        state = refresh(state, batch)
    return state
"""
HINTS = frozenset({"refresh"})


@pytest.fixture
def cached(tmp_path):
    """``(facts as computed, facts read back from the cache, their digest)``."""
    facts = engine.facts_for_file("train.py", PROGRAM, Settings(), HINTS)
    assert [call.text for call in facts.calls] == ["step(state, batch)", "refresh(state, batch)"]
    cache = FactsCache(tmp_path, Settings())
    digest = cache.put("train.py", "d1", facts)
    loaded, loaded_digest = cache.load("train.py", "d1")
    assert loaded_digest == digest == facts_digest(facts)
    return facts, loaded, digest


def test_read_back_facts_equal_the_computed_ones(cached):
    facts, loaded, _ = cached
    assert loaded == facts and facts == loaded
    assert loaded.calls == facts.calls and facts.calls == loaded.calls
    assert all(isinstance(call, CallFacts) for call in loaded.calls)
    assert [hash(call) for call in loaded.calls] == [hash(call) for call in facts.calls]


def test_the_join_decodes_the_arguments_of_the_calls_it_resolves_only(cached):
    facts, loaded, _ = cached
    reports = engine.report([loaded], Settings())
    assert reports == engine.report([facts], Settings())
    assert [f.code for f in reports[0].findings] == ["JXM001"]
    assert [call.text for call in loaded.calls if "positional" in vars(call)] == ["step(state, batch)"]


def test_copies_and_pickles_are_plain_calls(cached):
    facts, loaded, _ = cached
    for call, original in zip(loaded.calls, facts.calls):
        for copied in (pickle.loads(pickle.dumps(call)), copy.deepcopy(call)):
            assert type(copied) is CallFacts and copied == original


def test_unusable_arguments_raise_stale_entry_when_first_read(tmp_path, cached):
    cache = FactsCache(tmp_path, Settings())
    entry = cache.folder / cache.key("train.py", "d1")
    head, _, _ = entry.read_bytes().partition(b"\n")
    entry.write_bytes(head + b"\n[[1")
    loaded, _ = cache.load("train.py", "d1")  # the first line is fine
    with pytest.raises(StaleEntry) as error:
        engine.report([loaded], Settings())
    assert error.value.path == "train.py"
    assert cache.get("train.py", "d1") is None  # get() reads everything: a miss
    entry.write_bytes(head)  # no second line at all
    assert cache.load("train.py", "d1") is None


def test_equal_facts_have_equal_digests_and_other_facts_others():
    settings = Settings()
    one = engine.facts_for_file("train.py", PROGRAM, settings, HINTS)
    assert facts_digest(one) == facts_digest(
        engine.facts_for_file("train.py", PROGRAM + "# comment\n", settings, HINTS))
    for other in (engine.facts_for_file("train.py", "\n" + PROGRAM, settings, HINTS),
                  engine.facts_for_file("other.py", PROGRAM, settings, HINTS),
                  engine.facts_for_file("train.py", PROGRAM, settings)):
        assert facts_digest(other) != facts_digest(one)
    assert facts_digest({"not": lambda: 1}) is None

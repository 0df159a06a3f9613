"""The facts codec: every plain-data shape comes back equal and of the same type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jaxmem.factcodec import DecodeError, decode, encode
from jaxmem.findings import Confidence, Evidence, FileReport, Finding, Severity, Span
from jaxmem.lint import engine
from jaxmem.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _round_trip(value):
    return decode(json.loads(json.dumps(encode(value))))


def test_containers_keep_their_types():
    value = {"t": (1, (2.5, None), ()), "l": [True, [], ("a",)], "s": {1, 2}, "f": frozenset({("x", 1)}),
             ("k", 2): {"nested": [{"d": ()}]}}
    back = _round_trip(value)
    assert back == value
    assert type(back["t"]) is tuple and type(back["l"]) is list and type(back["l"][2]) is tuple
    assert type(back["s"]) is set and type(back["f"]) is frozenset and (("x", 1) in back["f"])


def test_dataclasses_and_enums_come_back_equal():
    finding = Finding("JXM001", "a.py", Span(1, 0, 1, 4), "m", Severity.WARNING, Confidence.HIGH,
                      evidence=(Evidence("e", "a.py", 2),))
    values = [finding, FileReport("a.py", [finding], [], "d"), Settings(select=("JXM0",), min_confidence=Confidence.LOW)]
    for value in values:
        back = _round_trip(value)
        assert back == value and type(back) is type(value)
    assert type(_round_trip(finding).confidence) is Confidence


@pytest.mark.parametrize("path", ["examples/train.py", "tests/training_programs.py", "lint/values/flow.py"])
def test_real_facts_round_trip(path):
    text = (REPO / path).read_text()
    facts = engine.facts_for_file(path, text, Settings())
    assert _round_trip(facts) == facts


@pytest.mark.parametrize("data", [
    {"c": []}, {"c": ["jaxmem.findings:Span", 1, 2, 3]}, {"c": ["jaxmem.findings:Span", 1, 2, 3, 4, 5]},
    {"c": ["os:system", "x"]}, {"c": [["x"], 1]}, {"e": ["jaxmem.findings:Confidence", "??"]},
    {"e": ["jaxmem.findings:Span", 1]}, {"x": []}, {"l": 3}, {"d": [[1]]}, {"{": [{"l": []}]}, {"a": 1, "b": 2},
])
def test_malformed_data_is_a_decode_error(data):
    with pytest.raises(DecodeError):
        decode(data)

"""``jaxmem.api.check_paths``: the pipeline as a function."""

from __future__ import annotations

from jaxmem.api import check_paths, is_internal_error
from jaxmem.lint import engine
from jaxmem.settings import Settings

from .conftest import MISSED_DONATION, MISSED_DONATION_LINE, write


def test_an_engine_bug_on_one_file_is_reported_and_the_rest_still_checked(
    tmp_path, monkeypatch
):
    write(tmp_path, "boom.py", "import jax\nf = jax.jit(abs)\n")
    write(tmp_path, "train.py", MISSED_DONATION)
    real_facts_for_file = engine.facts_for_file

    def facts_for_file(path, text, settings, *hints):
        if path.endswith("boom.py"):
            raise ValueError("a bug in the engine")
        return real_facts_for_file(path, text, settings, *hints)

    monkeypatch.setattr(engine, "facts_for_file", facts_for_file)
    reports = check_paths([tmp_path], Settings(), use_cache=False)
    by_name = {r.path.rsplit("/", 1)[-1]: r for r in reports}
    [bug] = by_name["boom.py"].findings
    assert bug.code == "JXM900" and is_internal_error(bug)
    assert bug.message.startswith("internal error: ValueError: a bug in the engine")
    assert bug.message.endswith("please report it to the jaxmem developers")
    assert [(f.code, f.span.line) for f in by_name["train.py"].findings] == [
        ("JXM001", MISSED_DONATION_LINE)
    ]


def test_progress_is_called_once_per_file(tmp_path):
    for name in ("a.py", "b.py", "c.py"):
        write(tmp_path, name, MISSED_DONATION)
    calls = []
    check_paths([tmp_path], use_cache=False, progress=lambda *a: calls.append(a))
    assert [done for done, _, _ in calls] == [1, 2, 3]
    assert {total for _, total, _ in calls} == {3}


def test_every_file_gets_a_report_sorted_by_path(tmp_path):
    write(tmp_path, "b.py", "x = 1\n")
    write(tmp_path, "a.py", MISSED_DONATION)
    reports = check_paths([tmp_path], use_cache=False)
    assert [r.path.rsplit("/", 1)[-1] for r in reports] == ["a.py", "b.py"]
    assert reports[1].findings == []

"""A warm run after one file changed reports exactly what a cold run reports,
also when the change decides findings in another file (cross-file call sites)."""

from __future__ import annotations

import json
import textwrap

import pytest

from jaxmem.api import check_paths
from jaxmem.cache import CACHE_DIR_NAME
from jaxmem.settings import Settings

from .conftest import write

STEP = textwrap.dedent("""\
    import jax


    @jax.jit
    def step(state, batch):
        return state + batch
    """)

LOOP = textwrap.dedent("""\
    import jax.numpy as jnp

    from pkg.model import step


    def train(batches):
        state = jnp.zeros(3)
        for batch in batches:
            state = step(state, batch)
        return state
    """)

# The same loop, reading the old state after the call: donating it would crash.
LOOP_READS_AFTER = LOOP.replace("        state = step(state, batch)\n",
                                "        new = step(state, batch)\n        print(state)\n        state = new\n")
assert LOOP_READS_AFTER != LOOP


def test_one_changed_file_warm_equals_cold_across_files(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/model.py", STEP)
    write(tmp_path, "pkg/train.py", LOOP)
    for n in range(5):  # files the change does not touch, served from the cache
        write(tmp_path, f"pkg/other{n}.py", STEP.replace("step", f"step{n}"))

    def both_runs() -> str:
        warm = jaxmem("check", "--format", "json", ".")
        cold = jaxmem("check", "--no-cache", "--format", "json", ".")
        assert warm.stdout == cold.stdout, (warm.stdout, cold.stdout)
        return warm.stdout

    first = both_runs()
    assert '"code": "JXM001"' in first and '"path": "pkg/model.py"' in first
    write(tmp_path, "pkg/train.py", LOOP_READS_AFTER)  # changes pkg/model.py's finding
    second = both_runs()
    assert second != first
    assert '"path": "pkg/model.py"' not in second
    write(tmp_path, "pkg/train.py", LOOP)  # and back, the entry for the first text reused
    assert both_runs() == first


# A jitted function in a.py whose donation decides the findings of b.py, its caller.
DONATION = 'functools.partial(jax.jit, donate_argnames="state")'
A_DONATES = textwrap.dedent("""\
    import functools

    import jax


    @functools.partial(jax.jit, donate_argnames="state")
    def update(state, grads):
        return state - grads
    """)

B_READS_AFTER = textwrap.dedent("""\
    import jax.numpy as jnp

    from a import update


    def train(grads):
        state = jnp.zeros(3)
        new = update(state, grads)
        print(state)
        return new
    """)


@pytest.fixture
def cross_file(tmp_path, monkeypatch):
    """a.py defines a jitted function that b.py calls; more files the edits never touch."""
    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\n")
    write(tmp_path, "a.py", A_DONATES)
    write(tmp_path, "b.py", B_READS_AFTER)
    for n in range(3):
        write(tmp_path, f"other{n}.py", STEP.replace("step", f"step{n}"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _warm_equals_cold(paths=(".",)) -> list:
    """The warm run's reports, checked equal (findings, messages, evidence, refusals) to a run without cache."""
    warm = check_paths(list(paths), Settings())
    cold = check_paths(list(paths), Settings(), use_cache=False)
    assert warm == cold
    return warm


def _codes(reports, path: str) -> list[str]:
    return [f.code for r in reports if r.path == path for f in r.findings]


@pytest.mark.parametrize("edit, b_codes", [
    # the donation removed: b.py's read is fine now
    (lambda text: text.replace(DONATION, "jax.jit"), []),
    # the parameters swapped: the donated name `state` now binds b.py's `grads`, never read again
    (lambda text: text.replace("def update(state, grads)", "def update(grads, state)"), []),
    # the function renamed: b.py's call reaches nothing
    (lambda text: text.replace("def update", "def apply_update"), []),
    # the body changed: no output can take the state's buffers, so the read only "may" raise
    (lambda text: text.replace("return state - grads", "return grads.sum()"), ["JXM101"]),
])
def test_an_edit_of_a_py_changes_b_py_warm_as_cold(cross_file, edit, b_codes):
    first = _warm_equals_cold()
    assert _codes(first, "b.py") == ["JXM101"]
    before = [f.message for r in first if r.path == "b.py" for f in r.findings]
    write(cross_file, "a.py", edit(A_DONATES))
    second = _warm_equals_cold()
    assert _codes(second, "b.py") == b_codes
    assert [f.message for r in second if r.path == "b.py" for f in r.findings] != before
    write(cross_file, "a.py", A_DONATES)  # and back: the first facts' entries reused
    assert _warm_equals_cold() == first


def test_deleting_and_adding_files_warm_as_cold(cross_file):
    first = _warm_equals_cold()
    assert _codes(first, "b.py") == ["JXM101"]
    (cross_file / "a.py").unlink()
    assert _codes(_warm_equals_cold(), "b.py") == []
    write(cross_file, "lib/model.py", A_DONATES)  # a new file b.py does not import from
    assert _codes(_warm_equals_cold(), "b.py") == []
    write(cross_file, "lib/a.py", A_DONATES)  # a new file b.py's `from a import update` may name
    assert _codes(_warm_equals_cold(), "b.py") == ["JXM101"]
    # a new caller that reads nothing after its call does not change b.py, and adds no proposal
    write(cross_file, "c.py", B_READS_AFTER.replace("        print(state)\n", ""))
    assert _codes(_warm_equals_cold(), "b.py") == ["JXM101"]


def test_an_edit_that_keeps_the_facts_reuses_the_stored_join(cross_file):
    first = _warm_equals_cold()
    write(cross_file, "b.py", B_READS_AFTER + "# a comment: the same facts\n")
    assert _said(_warm_equals_cold()) == _said(first)
    (run,) = (cross_file / CACHE_DIR_NAME / "facts").glob("run-*.json")
    data = json.loads(run.read_text())
    data["joined"] = json.loads(json.dumps(data["joined"]).replace("donated to", "given to"))
    run.write_text(json.dumps(data))
    write(cross_file, "b.py", B_READS_AFTER + "# another comment\n")
    assert "given to" in repr(check_paths(["."], Settings()))  # the stored join, not joined again
    # a `# noqa` keeps the facts too, but not the reports: filtering comes after the join
    write(cross_file, "b.py", B_READS_AFTER.replace("print(state)", "print(state)  # noqa: JXM101"))
    assert _codes(_warm_equals_cold(), "b.py") == []


def test_entries_gone_behind_the_stored_join_are_analysed_again(cross_file):
    first = _warm_equals_cold()
    for entry in (cross_file / CACHE_DIR_NAME / "facts").glob("[0-9a-f]*"):
        entry.unlink()  # pruned by another run, say: the stored join still names them
    write(cross_file, "a.py", A_DONATES.replace(DONATION, "jax.jit"))
    assert _codes(_warm_equals_cold(), "b.py") == []
    write(cross_file, "a.py", A_DONATES)
    assert _warm_equals_cold() == first


def test_a_corrupt_stored_join_is_joined_again(cross_file):
    first = _warm_equals_cold()
    (run,) = (cross_file / CACHE_DIR_NAME / "facts").glob("run-*.json")
    data = json.loads(run.read_text())
    data["joined"] = {"c": ["jaxmem.api:check_paths"]}
    data["facts"]["b.py"] = ["not a key", 3]
    run.write_text(json.dumps(data))
    write(cross_file, "b.py", B_READS_AFTER + "# a comment: the same facts\n")
    assert _said(_warm_equals_cold()) == _said(first)
    run.write_text(json.dumps({**data, "facts": [1, 2]}))
    write(cross_file, "b.py", B_READS_AFTER)
    assert _warm_equals_cold() == first


def _said(reports) -> list:
    """What reports say, without the digests of the files' bytes."""
    return [(r.path, r.findings, r.refusals) for r in reports]

"""The per-file facts cache under ``.jaxmem_cache/``."""

from __future__ import annotations

import jaxmem
from jaxmem.cache import CACHE_DIR_NAME, FactsCache
from jaxmem.findings import Confidence
from jaxmem.lint import engine
from jaxmem.settings import Settings

from .conftest import MISSED_DONATION, write

FACTS = engine.facts_for_file("a.py", MISSED_DONATION, Settings())


def test_round_trip_and_cache_dir_markers(tmp_path):
    cache = FactsCache(tmp_path, Settings())
    assert cache.get("a.py", "d1") is None
    cache.put("a.py", "d1", FACTS)
    assert cache.get("a.py", "d1") == FACTS
    top = tmp_path / CACHE_DIR_NAME
    assert (top / "CACHEDIR.TAG").read_text().startswith(
        "Signature: 8a477f597d28d172789f06886806bc55")
    assert (top / ".gitignore").read_text().splitlines()[-1] == "*"


def test_content_path_settings_and_version_are_part_of_the_key(tmp_path, monkeypatch):
    FactsCache(tmp_path, Settings()).put("a.py", "d1", FACTS)
    assert FactsCache(tmp_path, Settings()).get("a.py", "d2") is None
    assert FactsCache(tmp_path, Settings()).get("b.py", "d1") is None
    low = Settings(min_confidence=Confidence.LOW)
    assert FactsCache(tmp_path, low).get("a.py", "d1") is None
    monkeypatch.setattr(jaxmem, "__version__", "999.0")
    assert FactsCache(tmp_path, Settings()).get("a.py", "d1") is None


def test_corrupt_entries_are_misses(tmp_path):
    cache = FactsCache(tmp_path, Settings())
    cache.put("a.py", "d1", FACTS)
    entry = cache.folder / cache.key("a.py", "d1")
    entry.write_bytes(b'{"format": "jaxmem-facts-1", "key"')
    assert cache.get("a.py", "d1") is None
    entry.write_bytes(b"")
    assert cache.get("a.py", "d1") is None


def test_an_unwritable_cache_is_silently_skipped(tmp_path):
    (tmp_path / CACHE_DIR_NAME).write_text("a file where the folder should be")
    cache = FactsCache(tmp_path, Settings())
    cache.put("a.py", "d1", FACTS)
    assert cache.get("a.py", "d1") is None


def test_facts_that_are_not_plain_data_are_not_cached(tmp_path):
    cache = FactsCache(tmp_path, Settings())
    cache.put("a.py", "d1", {"f": lambda: 1})
    assert cache.get("a.py", "d1") is None
    assert not list(cache.folder.glob(".tmp-*"))


def test_check_fills_the_cache_and_no_cache_leaves_none(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\n")
    write(tmp_path, "train.py", MISSED_DONATION)
    first = jaxmem("check", "--no-cache", ".")
    assert first.returncode == 1, first.stderr
    assert not (tmp_path / CACHE_DIR_NAME).exists()
    second = jaxmem("check", ".")
    assert (tmp_path / CACHE_DIR_NAME / "CACHEDIR.TAG").is_file()
    assert len(list((tmp_path / CACHE_DIR_NAME / "facts").glob("[0-9a-f]*"))) == 1  # one file's facts
    third = jaxmem("check", ".")  # served from the cache
    assert first.stdout == second.stdout == third.stdout
    assert "JXM001" in third.stdout


def test_cached_facts_follow_the_names_other_files_jit(tmp_path):
    """A file that only calls another file's function is re-analysed once
    that function becomes jitted: its cache entry depends on those names."""
    from jaxmem.api import check_paths
    from jaxmem.settings import Settings

    (tmp_path / "lib.py").write_text("def train_step(s, b):\n    return s\n")
    (tmp_path / "main.py").write_text(
        "import jax\nimport helpers\nfrom lib import train_step\n\n\ndef other(x):\n    return jax.jit(abs)(x)\n\n\n"
        "def run(batches):\n    state = helpers.init()\n    for b in batches:\n"
        "        state = train_step(state, b)\n    return state\n"
    )
    first = check_paths([str(tmp_path)], Settings())
    assert not any(f.code == "JXM001" for r in first for f in r.findings)
    (tmp_path / "lib.py").write_text("import jax\n\n\n@jax.jit\ndef train_step(s, b):\n    return s\n")
    second = check_paths([str(tmp_path)], Settings())
    assert any(f.code == "JXM001" and f.parameter_name == "s" for r in second for f in r.findings)


def test_skipped_files_verdicts_come_from_one_index(tmp_path, monkeypatch):
    from jaxmem.api import check_paths

    write(tmp_path, "pyproject.toml", "[project]\nname = 'p'\n")
    write(tmp_path, "ok.py", "x = 1\n")
    write(tmp_path, "broken.py", "def f(:\n")
    monkeypatch.chdir(tmp_path)

    def codes():
        return {r.path: [f.code for f in r.findings] for r in check_paths(["."], Settings())}

    cold = codes()
    assert cold == {"broken.py": ["JXM900"], "ok.py": []}
    (index,) = (tmp_path / CACHE_DIR_NAME / "facts").glob("skipped-*.json")
    assert codes() == cold  # warm: verdicts read from the index
    # A crafted or foreign index is ignored, never trusted.
    index.write_text('{"format": "jaxmem-skipped-1", "verdicts": {"x": [1, "no", 3]}}')
    assert codes() == cold
    index.write_text("not json")
    assert codes() == cold

"""The cache's size cap (least recently used first), ``jaxmem clean`` and ``--clear-cache``."""

from __future__ import annotations

import os
import threading

import pytest

from jaxmem.cache import CACHE_DIR_NAME, FactsCache, clear
from jaxmem.config import ConfigError, settings_from_table
from jaxmem.lint import engine
from jaxmem.settings import DEFAULT_CACHE_MAX_SIZE, Settings

from .conftest import MISSED_DONATION, write

FACTS = engine.facts_for_file("a.py", MISSED_DONATION, Settings())


def _fill(cache: FactsCache, count: int) -> list:
    """``count`` entries, each one second older than the next (``put`` order = use order)."""
    entries = []
    for n in range(count):
        cache.put("a.py", f"d{n}", FACTS)
        entry = cache.folder / cache.key("a.py", f"d{n}")
        os.utime(entry, (1_000_000 + n, 1_000_000 + n))
        entries.append(entry)
    return entries


def test_entries_used_longest_ago_go_first_down_to_nine_tenths_of_the_cap(tmp_path):
    entry_size = len((_fill(FactsCache(tmp_path, Settings()), 1)[0]).read_bytes())
    cache = FactsCache(tmp_path, Settings(cache_max_size=10 * entry_size))
    entries = _fill(cache, 12)
    assert cache.get("a.py", "d0") == FACTS  # a hit is a use: d0 is now the newest
    freed = cache.prune()
    kept = [entry.exists() for entry in entries]
    assert freed == entry_size * kept.count(False)
    assert sum(entry.stat().st_size for entry in entries if entry.exists()) <= 9 * entry_size
    assert kept[0] and kept[-1]
    assert kept[1:4] == [False, False, False]  # the oldest unused ones


def test_under_the_cap_nothing_is_removed(tmp_path):
    cache = FactsCache(tmp_path, Settings())
    entries = _fill(cache, 5)
    assert cache.prune() == 0
    assert all(entry.exists() for entry in entries)


def test_a_fresh_temporary_file_of_another_run_is_left_alone(tmp_path):
    cache = FactsCache(tmp_path, Settings(cache_max_size=1))
    _fill(cache, 3)
    writing = cache.folder / ".tmp-another-run"
    writing.write_bytes(b"x" * 100)
    os.utime(writing, (1_000_000, 1_000_000))  # stale: removed
    cache.prune()
    assert not writing.exists()
    writing.write_bytes(b"x" * 100)  # being written now: kept
    cache.prune()
    assert writing.exists()
    assert not list(cache.folder.glob("[0-9a-f]*"))


def test_concurrent_pruning_and_reading_only_ever_miss(tmp_path):
    cache = FactsCache(tmp_path, Settings(cache_max_size=1))
    _fill(cache, 40)
    seen, errors = [], []

    def read_all():
        try:
            for n in range(40):
                seen.append(FactsCache(tmp_path, Settings()).get("a.py", f"d{n}"))
        except Exception as error:  # pragma: no cover - the failure being tested for
            errors.append(error)

    threads = [threading.Thread(target=read_all) for _ in range(2)]
    threads += [threading.Thread(target=FactsCache(tmp_path, Settings(cache_max_size=1)).prune) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert all(facts is None or facts == FACTS for facts in seen)
    assert not list(cache.folder.glob("[0-9a-f]*"))


def test_a_check_that_writes_prunes_to_the_configured_cap(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\ncache-max-size = "1KiB"\n')
    for n in range(4):
        write(tmp_path, f"train{n}.py", MISSED_DONATION.replace("step", f"step{n}"))
    result = jaxmem("check", ".")
    assert result.returncode == 1, result.stderr
    folder = tmp_path / CACHE_DIR_NAME / "facts"
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 1024
    again = jaxmem("check", ".")
    assert again.stdout == result.stdout  # a pruned cache only costs time


def test_cache_max_size_in_the_config(tmp_path):
    path = tmp_path / "pyproject.toml"
    assert settings_from_table({}, path).cache_max_size == DEFAULT_CACHE_MAX_SIZE == 256 * 2**20
    assert settings_from_table({"cache-max-size": "256MiB"}, path).cache_max_size == 256 * 2**20
    assert settings_from_table({"cache-max-size": "1.5 GB"}, path).cache_max_size == 1_500_000_000
    assert settings_from_table({"cache-max-size": 5_000_000}, path).cache_max_size == 5_000_000
    for bad in ("lots", "12 parsecs", 0, "0MiB", True, -3):
        with pytest.raises(ConfigError, match=r"pyproject.toml: \[tool.jaxmem\] cache-max-size: .* is not a size"):
            settings_from_table({"cache-max-size": bad}, path)


def test_the_cap_does_not_change_the_cache_key(tmp_path):
    FactsCache(tmp_path, Settings()).put("a.py", "d1", FACTS)
    assert FactsCache(tmp_path, Settings(cache_max_size=10**9)).get("a.py", "d1") == FACTS


def test_clean_removes_the_cache_and_says_how_much_it_freed(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\n")
    write(tmp_path, "pkg/train.py", MISSED_DONATION)
    jaxmem("check", ".")
    size = sum(p.stat().st_size for p in (tmp_path / CACHE_DIR_NAME).rglob("*") if p.is_file())
    cleaned = jaxmem("clean", "pkg")  # any path in the project names its root
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"removed {tmp_path / CACHE_DIR_NAME} ({size / 2**20:.2f} MiB freed)" in cleaned.stdout
    assert not (tmp_path / CACHE_DIR_NAME).exists()
    again = jaxmem("clean")
    assert again.returncode == 0 and "no cache to remove" in again.stdout
    missing = jaxmem("clean", "nowhere")
    assert missing.returncode == 2 and "nowhere: no such file or directory" in missing.stderr


def test_clear_cache_starts_the_check_from_an_empty_cache(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\n")
    write(tmp_path, "train.py", MISSED_DONATION)
    first = jaxmem("check", ".")
    stale = tmp_path / CACHE_DIR_NAME / "facts" / "stale-entry"
    stale.write_text("from an older run")
    second = jaxmem("check", "--clear-cache", "--format", "json", ".")
    assert second.returncode == 1
    assert "MiB freed" in second.stderr and "MiB freed" not in second.stdout
    assert not stale.exists()
    assert (tmp_path / CACHE_DIR_NAME / "facts").is_dir()  # filled again by the check
    assert jaxmem("check", ".").stdout == first.stdout


def test_clear_removes_a_linked_cache_folder_without_following_it(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, "keep.txt", "not jaxmem's")
    project = tmp_path / "project"
    project.mkdir()
    (project / CACHE_DIR_NAME).symlink_to(elsewhere, target_is_directory=True)
    assert clear(project) == 0
    assert not (project / CACHE_DIR_NAME).exists()
    assert (elsewhere / "keep.txt").read_text() == "not jaxmem's"
    assert clear(project) is None

"""The flake8 plugin through flake8's real command line."""

from __future__ import annotations

from jaxmem.lint.flake8_plugin import JaxmemChecker

from .conftest import (
    CLEAN, MISSED_DONATION, MISSED_DONATION_LINE, READ_AFTER_DONATION,
    READ_AFTER_DONATION_LINE, write,
)


def test_flake8_reports_a_missed_donation(tmp_path, flake8):
    write(tmp_path, "train.py", MISSED_DONATION)
    result = flake8("train.py")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"train.py:{MISSED_DONATION_LINE}:1: JXM001 ")
    assert result.stdout.count("\n") == 1


def test_flake8_reports_a_read_after_donation(tmp_path, flake8):
    write(tmp_path, "use.py", READ_AFTER_DONATION)
    result = flake8("use.py")
    assert result.returncode == 1, result.stderr
    assert f"use.py:{READ_AFTER_DONATION_LINE}:17: JXM101 " in result.stdout


def test_flake8_clean_file(tmp_path, flake8):
    write(tmp_path, "clean.py", CLEAN)
    result = flake8("clean.py")
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_flake8_honours_noqa(tmp_path, flake8):
    write(tmp_path, "a.py", MISSED_DONATION.replace("@jax.jit\n", "@jax.jit  # noqa: JXM001\n"))
    write(tmp_path, "b.py", MISSED_DONATION.replace("@jax.jit\n", "@jax.jit  # noqa: E501\n"))
    result = flake8("a.py", "b.py")
    assert result.stdout.startswith(f"b.py:{MISSED_DONATION_LINE}:1: JXM001 ")
    assert "a.py" not in result.stdout


def test_flake8_with_bom_and_crlf(tmp_path, flake8):
    write(tmp_path, "bom.py", b"\xef\xbb\xbf" + MISSED_DONATION.encode())
    write(tmp_path, "crlf.py", MISSED_DONATION.replace("\n", "\r\n").encode())
    result = flake8("bom.py", "crlf.py")
    assert result.returncode == 1, result.stderr
    assert sorted(line.split(": ")[0] for line in result.stdout.splitlines()) == [
        f"bom.py:{MISSED_DONATION_LINE}:1", f"crlf.py:{MISSED_DONATION_LINE}:1",
    ]


def test_flake8_reads_stdin(tmp_path, flake8):
    result = flake8("--stdin-display-name", "train.py", "-", input=MISSED_DONATION)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"train.py:{MISSED_DONATION_LINE}:1: JXM001 ")


def test_flake8_follows_tool_jaxmem_config(tmp_path, flake8):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nignore = ["JXM001"]\n')
    write(tmp_path, "train.py", MISSED_DONATION)
    result = flake8("train.py")
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_flake8_reports_an_invalid_config_instead_of_crashing(tmp_path, flake8):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\ncolour = "red"\n')
    write(tmp_path, "train.py", MISSED_DONATION)
    result = flake8("train.py")
    assert result.returncode == 1
    assert "train.py:1:1: JXM900 invalid jaxmem configuration" in result.stdout
    assert "unknown key 'colour'" in result.stdout


def test_plugin_uses_the_lines_flake8_gives_it(tmp_path):
    # the file on disk says something else: the plugin must not re-read it
    path = write(tmp_path, "train.py", CLEAN)
    checker = JaxmemChecker(None, str(path), MISSED_DONATION.splitlines(keepends=True))
    found = [(line, col, message.split()[0]) for line, col, message, _ in checker.run()]
    assert found == [(MISSED_DONATION_LINE, 0, "JXM001")]
    assert JaxmemChecker.name == "jaxmem"


def test_flake8_lists_the_plugin(tmp_path):
    import jaxmem
    from .conftest import run_tool

    result = run_tool("flake8", "--version", cwd=tmp_path)
    assert f"jaxmem: {jaxmem.__version__}" in result.stdout


def _plugin_findings(path, text: str) -> list:
    checker = JaxmemChecker(None, str(path), text.splitlines(keepends=True))
    return [(line, col, message) for line, col, message, _ in checker.run()]


def test_plugin_keeps_facts_in_the_project_cache_and_reuses_them(tmp_path, monkeypatch):
    from jaxmem.cache import CACHE_DIR_NAME
    from jaxmem.lint import engine

    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\n")
    path = write(tmp_path, "train.py", MISSED_DONATION)
    clean = write(tmp_path, "clean.py", CLEAN)
    analysed = []
    real_facts_for_file = engine.facts_for_file

    def counting(path, text, *args, **kwargs):
        analysed.append(path)
        return real_facts_for_file(path, text, *args, **kwargs)

    monkeypatch.setattr(engine, "facts_for_file", counting)
    first = _plugin_findings(path, MISSED_DONATION)
    assert [f[2].split()[0] for f in first] == ["JXM001"]
    assert "(high confidence)" not in first[0][2]  # one file seen: never high
    entries = list((tmp_path / CACHE_DIR_NAME / "facts").glob("[0-9a-f]*"))
    assert len(entries) == 1
    assert _plugin_findings(path, MISSED_DONATION) == first  # from the cache
    assert analysed == [str(path)]
    changed = MISSED_DONATION + "\n\nprint(state)\n"  # an unsaved edit: a new text, a new analysis
    assert _plugin_findings(path, changed)[0][:2] == first[0][:2]
    assert analysed == [str(path)] * 2
    assert _plugin_findings(clean, CLEAN) == []  # no jit: analysed each time, nothing stored
    assert len(list((tmp_path / CACHE_DIR_NAME / "facts").glob("[0-9a-f]*"))) == 2


def test_plugin_reports_the_same_with_and_without_a_cache_entry(tmp_path, flake8):
    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\n")
    write(tmp_path, "train.py", MISSED_DONATION)
    write(tmp_path, "use.py", READ_AFTER_DONATION)
    cold = flake8("train.py", "use.py")
    warm = flake8("train.py", "use.py")
    assert cold.returncode == warm.returncode == 1, cold.stderr
    assert cold.stdout == warm.stdout
    assert "JXM001" in cold.stdout and "JXM101" in cold.stdout

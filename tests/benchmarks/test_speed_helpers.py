"""The speed benchmark's pure helpers: file selection, child-process measurement, ratios, reports."""

import json
import os
import sys

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
sys.path.insert(0, BENCHMARKS)

import _speed_report as report  # noqa: E402
import speed  # noqa: E402
from _measure import GNU_TIME, Case, CommandFailed, Sample, parse_gnu_time, run_case, run_once, run_rounds, summary  # noqa: E402,E501


@pytest.mark.parametrize("text, expected", [
    ("step = jax.jit(update)\n", True),
    ("@eqx.filter_jit\ndef f(x): ...\n", True),
    ("p_step = jax.pmap(step)\n", True),
    ("# we never jit here\n", True),
    ("import numpy as np\nx = np.zeros(3)\n", False),
])
def test_mentions_jit(text, expected):
    assert speed.mentions_jit(text) is expected


def test_jit_heavy_keeps_only_files_that_mention_jit(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text("import jax\nstep = jax.jit(lambda s: s)\n")
    (tmp_path / "pkg" / "data.py").write_text("def load():\n    return []\n")
    files = speed.python_files(tmp_path)
    assert files == ["pkg/data.py", "pkg/train.py"]
    assert speed.jit_heavy(tmp_path, files) == ["pkg/train.py"]
    assert speed.count_lines(tmp_path, files) == 4


def test_run_once_reports_the_childs_status_cpu_and_peak_memory(tmp_path):
    allocate = "import sys; block = bytearray(64 * 1024 * 1024); block[::4096] = b'x' * len(block[::4096]); " \
               "print('done'); sys.exit(3)"
    sample, stdout, _ = run_once([sys.executable, "-c", allocate], cwd=str(tmp_path))
    assert sample.returncode == 3
    assert stdout == "done\n"
    assert sample.max_rss_mib >= 64
    assert sample.cpu_seconds > 0


def test_run_case_prepares_each_run_and_rejects_unexpected_exit_status(tmp_path):
    marker = tmp_path / "round.txt"
    case = Case("set", "reads the marker", [sys.executable, "-c", "print(open('round.txt').read())"], str(tmp_path),
                prepare=lambda number: marker.write_text(f"round {number}"))
    run_case(case, 0)
    run_case(case, 1)
    assert case.output == "round 1\n" and len(case.samples) == 2
    failing = Case("set", "fails", [sys.executable, "-c", "raise SystemExit(2)"], str(tmp_path))
    with pytest.raises(CommandFailed, match="fails.*exited 2"):
        run_case(failing, 0)


@pytest.mark.skipif(not os.access(GNU_TIME, os.X_OK), reason="needs GNU time at /usr/bin/time")
def test_peak_memory_is_the_childs_own_not_this_process_size(tmp_path):
    # Linux keeps a process's peak across exec: a child forked from a large
    # process must still report its own (small) size.
    ballast = bytearray(256 * 1024 * 1024)
    ballast[::4096] = b"x" * len(ballast[::4096])
    sample, _, _ = run_once([sys.executable, "-c", "pass"], cwd=str(tmp_path))
    assert sample.max_rss_mib < 200
    del ballast


def test_parse_gnu_time_reads_the_last_line():
    assert parse_gnu_time("Command exited with non-zero status 1\n204800 1.50 0.25\n") == (204800, 1.75)


def test_run_rounds_alternates_cases_and_reports_each_round(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("")
    cases = [Case("set", name, [sys.executable, "-c", f"open('log.txt', 'a').write('{name} ')"], str(tmp_path))
             for name in ("a", "b")]
    rounds = []
    run_rounds(cases, 2, after_round=rounds.append)
    assert log.read_text() == "a b a b "
    assert rounds == [1, 2]


def test_summary_takes_medians_and_the_largest_peak():
    samples = [Sample(3.0, 2.0, 100.0, 1.0, 0), Sample(1.0, 1.0, 300.0, 3.0, 0), Sample(2.0, 4.0, 200.0, 2.0, 1)]
    got = summary(samples)
    assert (got["seconds"], got["cpu_seconds"], got["max_rss_mib"], got["load"]) == (2.0, 2.0, 300.0, 2.0)
    assert got["all_seconds"] == [3.0, 1.0, 2.0]


def _case(seconds, cpu=None, rss=100.0, load=1.0):
    return {"seconds": seconds, "cpu_seconds": cpu if cpu is not None else seconds, "max_rss_mib": rss,
            "load": load, "all_seconds": [seconds], "all_loads": [load]}


def _results(jaxmem_seconds, flake8_seconds, warm_seconds, jobs2_seconds, hook_seconds, rss=100.0):
    per_set = {report.NO_CACHE_1: _case(jaxmem_seconds, rss=rss), report.NO_CACHE_2: _case(jobs2_seconds),
               report.COLD: _case(jaxmem_seconds), report.WARM: _case(warm_seconds),
               report.FLAKE8: _case(flake8_seconds), report.RUFF_1: _case(0.5), report.RUFF_ALL: _case(0.3)}
    return {report.JIT_HEAVY: dict(per_set), report.PROJECT: dict(per_set),
            report.INCREMENTAL: {report.HOOK: _case(hook_seconds), report.CHECK_FILE: _case(hook_seconds),
                                 report.FLAKE8_PLUGIN: _case(2.0), report.RUFF_FILE: _case(0.01)}}


def _by_name(figures):
    return {(f["group"], f["name"]): f for f in figures}


def test_target_figures_meet_and_miss_issue_10s_targets():
    met = _by_name(report.target_figures(_results(4.0, 20.0, 0.1, 2.2, 0.5)))
    assert met[(report.JIT_HEAVY, "jaxmem / flake8 (one job, no cache)")]["value"] == 0.2
    assert met[(report.PROJECT, "warm / cold")]["value"] == 0.025
    assert met[(report.PROJECT, "--jobs 2 speed-up")]["value"] == pytest.approx(1.818, abs=1e-3)
    assert all(f["met"] is not False for f in met.values())
    missed = _by_name(report.target_figures(_results(12.0, 20.0, 3.0, 10.0, 1.5, rss=2048.0)))
    assert missed[(report.JIT_HEAVY, "jaxmem / flake8 (one job, no cache)")]["met"] is False
    assert missed[(report.PROJECT, "jaxmem / flake8 (one job, no cache)")]["met"] is False
    assert missed[(report.PROJECT, "warm / cold")]["met"] is False
    assert missed[(report.PROJECT, "--jobs 2 speed-up")]["met"] is False
    assert missed[(report.INCREMENTAL, report.HOOK)]["met"] is False
    assert missed[("all", "peak memory of any jaxmem run")]["met"] is False
    assert missed[(report.JIT_HEAVY, "jaxmem / ruff (one thread)")]["met"] is None  # no target set


def test_findings_check_compares_every_jaxmem_variant():
    finding = {"path": "a.py", "line": 3, "code": "JXM001", "message": "m"}
    same = [Case("s", name, [], ".", output=json.dumps({"findings": [finding]}))
            for name in (report.NO_CACHE_1, report.WARM)]
    flake8 = Case("s", report.FLAKE8, [], ".", output="a.py:1:1: E501 line too long\n")
    assert speed.findings_check([*same, flake8]) == {"identical": True, "counts": {"JXM001": 1}}
    differing = Case("s", report.COLD, [], ".", output=json.dumps({"findings": []}))
    assert speed.findings_check([*same, differing])["identical"] is False


def test_reports_show_every_case_target_and_load():
    results = _results(12.0, 20.0, 3.0, 10.0, 1.5)
    figures = {
        "date": "2026-11-30", "command": ".venv/bin/python benchmarks/speed.py --quick", "runs": 1,
        "machine": {"cpus": 2, "platform": "Linux", "load_before": [1.0, 1.0, 1.0], "load_after": [2.0, 1.0, 1.0]},
        "versions": {"jaxmem": "0.1.0"}, "packages": ["optax==0.2.8"],
        "sets": {group: {"files": 3, "lines": 1200, "description": f"about {group}"} for group in results},
        "results": results, "targets": report.target_figures(results),
        "findings": {report.JIT_HEAVY: {"identical": True, "counts": {"JXM001": 2}}},
        "commands": {"jit-heavy files / flake8": "flake8 FILES"},
    }
    markdown = report.format_markdown(figures)
    table = report.format_table(figures)
    for group, cases in results.items():
        assert f"## {group}" in markdown
        for name in cases:
            assert f"| {name} |" in markdown and name in table
    assert "MISSES <= 0.50" in markdown and "MISSES <= 1.00 s" in table
    assert "| 1.0 |" in markdown  # every figure's load
    assert "identical across the jaxmem variants: yes" in markdown


def test_shown_command_replaces_a_file_list_by_files(tmp_path):
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    assert speed._shown(["ruff", "check", "a.py", "b.py"], tmp_path) == "ruff check FILES"
    assert speed._shown(["jaxmem", "check", "a.py"], tmp_path) == "jaxmem check a.py"

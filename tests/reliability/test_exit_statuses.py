"""Items 10 and 11: every bad input gets a message naming what is wrong and the right exit status.

0 clean, 1 findings (or files changed / not fixable for jaxmem-fix),
2 usage, configuration or internal errors; never a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .conftest import MISSED_DONATION, MISSED_DONATION_LINE, TRAIN, TRAIN_FIXED, run_tool, write


def _no_traceback(result):
    assert "Traceback" not in result.stdout + result.stderr


def _refused(result, project, name: str, message: str) -> None:
    """Exit 2 with a message naming ``name``, no traceback, train.py untouched."""
    _no_traceback(result)
    assert result.returncode == 2
    assert f"{name}: " in result.stderr and message in result.stderr
    assert (project / "train.py").read_text() == TRAIN


@pytest.mark.parametrize("tool", ["jaxmem", "jaxmem-fix"])
@pytest.mark.parametrize("pyproject, message", [
    (b"tool = 3\n", "`tool` must be a table"),
    (b'[tool.jaxmem]\nselect = ["JXM001"]\n# caf\xe9\n', "not UTF-8 (byte 0xe9"),
    (b"[tool.jaxmem\n", "invalid TOML"),
])
def test_a_bad_pyproject_is_exit_2_naming_the_file(project, tool, pyproject, message):
    (project / "pyproject.toml").write_bytes(pyproject)
    write(project, "train.py", TRAIN)
    args = ("check", "train.py") if tool == "jaxmem" else ("train.py",)
    _refused(run_tool(tool, *args, cwd=project), project, "pyproject.toml", message)


def test_output_file_in_a_missing_folder_is_refused_before_the_analysis(project, jaxmem):
    write(project, "train.py", MISSED_DONATION)
    result = jaxmem("check", "--output-file", "missing/report.json", "train.py")
    _no_traceback(result)
    assert result.returncode == 2
    assert "missing/report.json: cannot write the report: folder" in result.stderr
    assert "does not exist; create it first" in result.stderr
    assert "finding" not in result.stderr  # it stopped before analysing


def test_record_out_in_a_missing_folder_is_refused_before_running_the_program(project, jaxmem):
    marker = project / "PROGRAM-RAN"
    write(project, "prog.py", f"open({str(marker)!r}, 'w').close()\n")
    result = jaxmem("record", "--out", "missing/calls.json", "--", sys.executable, "prog.py")
    _no_traceback(result)
    assert result.returncode == 2
    assert "missing/calls.json: cannot write the report" in result.stderr
    assert not marker.exists()


def test_a_record_of_the_wrong_shape_is_exit_2_naming_the_file(project, jaxmem):
    (project / "calls.json").write_text(json.dumps({"format": "jaxmem-record", "version": 1, "functions": 3}))
    result = jaxmem("verify", "--record", "calls.json")
    _no_traceback(result)
    assert result.returncode == 2
    assert "calls.json" in result.stderr


_WITH_DEFAULT_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                        "os.execv(sys.argv[1], sys.argv[1:])")


def _interrupt(project, tool, args, stdin):
    # SIGINT back to its default before the tool starts: a runner started in the background
    # (``nohup .ci/run &``) ignores it, and Python then never raises KeyboardInterrupt.  A
    # trampoline that execs the tool, not preexec_fn: running Python between fork and exec
    # in this multithreaded (JAX) process may deadlock.
    tool_path = os.path.join(os.path.dirname(sys.executable), tool)
    process = subprocess.Popen([sys.executable, "-c", _WITH_DEFAULT_SIGINT, tool_path, *args], cwd=project,
                               stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)  # past the interpreter's start, into the command
    if process.poll() is not None:
        process.communicate()
        pytest.skip("the command finished before it could be interrupted")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert "Traceback" not in out + err and "KeyError" not in out + err
    assert "interrupted (Ctrl-C)" in err
    assert process.returncode == 2


@pytest.mark.parametrize("tool", ["jaxmem", "jaxmem-fix"])
def test_ctrl_c_while_reading_is_a_message_and_exit_2(project, tool):
    # Blocked reading stdin, which never ends: the interrupt always lands in the command.
    args = ["check", "--no-cache", "-"] if tool == "jaxmem" else ["--no-cache", "-"]
    _interrupt(project, tool, args, stdin=subprocess.PIPE)


@pytest.mark.parametrize("tool", ["jaxmem", "jaxmem-fix"])
def test_ctrl_c_during_the_analysis_is_a_message_and_exit_2(project, tool):
    # A file slow enough to be interrupted mid-analysis: 500 elif branches.
    lines = ["import jax", "@jax.jit", "def step(s, b):", "    return s + b",
             "def loop(s, x):", "    if x == 0:", "        s = step(s, 0)"]
    for number in range(1, 500):
        lines += [f"    elif x == {number}:", f"        s = step(s, {number})"]
    write(project, "slow.py", "\n".join(lines) + "\n    return s\n")
    args = ["check", "--no-cache", "slow.py"] if tool == "jaxmem" else ["--no-cache", "slow.py"]
    _interrupt(project, tool, args, stdin=subprocess.DEVNULL)


def test_select_does_not_hide_a_file_that_could_not_be_read(project, jaxmem):
    write(project, "binary.py", b"x = 1\n\x00\n")
    write(project, "train.py", MISSED_DONATION)
    result = jaxmem("check", "--no-cache", "--select", "JXM001", ".")
    assert "binary.py:2:1: JXM900" in result.stdout
    assert result.returncode == 1
    ignored = jaxmem("check", "--no-cache", "--select", "JXM001", "--ignore", "JXM900", ".")
    assert "JXM900" not in ignored.stdout


def test_a_missing_path_does_not_stop_jaxmem_fix_on_the_others(project, jaxmem_fix):
    write(project, "train.py", TRAIN)
    result = jaxmem_fix("--no-cache", "nope.py", "train.py")
    assert result.returncode == 2
    assert "nope.py: no such file or directory" in result.stderr
    assert (project / "train.py").read_text() == TRAIN_FIXED


def test_one_file_named_twice_is_reported_once(project, jaxmem):
    write(project, "train.py", MISSED_DONATION)
    result = jaxmem("check", "--no-cache", "train.py", str(project / "train.py"), "./train.py")
    assert result.stdout.count(" JXM001 ") == 1


def test_a_file_name_that_is_not_utf8_gives_valid_json(project):
    name = b"caf\xe9.py"
    with open(os.path.join(os.fsencode(project), name), "w") as handle:
        handle.write(MISSED_DONATION)
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "jaxmem"), "check", "--no-cache",
                             "--format", "json", "."], cwd=project, capture_output=True)
    assert result.returncode == 1, result.stderr.decode()
    document = json.loads(result.stdout.decode("utf-8"))
    [finding] = document["findings"]
    assert finding["path"] == "caf\ufffd.py" and finding["line"] == MISSED_DONATION_LINE
    sarif = subprocess.run([os.path.join(os.path.dirname(sys.executable), "jaxmem"), "check", "--no-cache",
                            "--format", "sarif", "."], cwd=project, capture_output=True)
    assert json.loads(sarif.stdout.decode("utf-8"))["runs"][0]["results"]


def test_a_tab_error_is_placed_on_its_line(project, jaxmem):
    write(project, "tabs.py", "import jax\n@jax.jit\ndef f(s):\n    return s\nif True:\n\tx = f(1)\n        y = 2\n")
    result = jaxmem("check", "--no-cache", "tabs.py")
    assert result.stdout.startswith("tabs.py:7:")
    assert "inconsistent use of tabs and spaces" in result.stdout


@pytest.mark.parametrize("report, message", [
    (b'{"format": "jaxmem-verify", "version": 1, "reports": [3]}', '"reports" must be a list of objects'),
    (b'{"format": "jaxmem-verify", "version": 1, "reports": {"a": 1}}', '"reports" must be a list of objects'),
    (b'{"format": "jaxmem-verify", "version": 1, "reports": [], "x": "caf\xe9"}', "not UTF-8"),
    (b"[" * 100_000, "nested too deeply"),
    ("fifo", "not a regular file (a FIFO)"),
])
def test_a_bad_verified_report_is_exit_2_naming_the_file(project, jaxmem_fix, report, message):
    write(project, "train.py", TRAIN)
    if report == "fifo":
        os.mkfifo(project / "report.json")
    else:
        (project / "report.json").write_bytes(report)
    _refused(jaxmem_fix("--no-cache", "--verified", "report.json", "train.py"), project, "report.json", message)


def test_a_broken_link_among_the_paths_does_not_stop_the_others(project, jaxmem):
    write(project, "train.py", MISSED_DONATION)
    os.symlink("nowhere.py", project / "broken.py")
    result = jaxmem("check", "--no-cache", "broken.py", "train.py")
    assert result.returncode == 2
    assert "broken.py: no such file or directory" in result.stderr
    assert f"train.py:{MISSED_DONATION_LINE}:1: JXM001" in result.stdout

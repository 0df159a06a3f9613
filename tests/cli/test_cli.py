"""``jaxmem check`` end to end: the installed console script, real files, real exit codes."""

from __future__ import annotations

import json
import re

from .conftest import (
    CLEAN, MISSED_DONATION, MISSED_DONATION_LINE, READ_AFTER_DONATION,
    READ_AFTER_DONATION_LINE, write,
)
from .sarif_shape import problems


def codes_at(stdout: str) -> list[tuple[str, int, str]]:
    """``(path, line, code)`` of every flake8-format line."""
    found = []
    for line in stdout.splitlines():
        path, number, _col, rest = line.split(":", 3)
        found.append((path, int(number), rest.split()[0]))
    return found


def test_missed_donation_text_output_and_exit_1(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    result = jaxmem("check", "train.py")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"train.py:{MISSED_DONATION_LINE}:1: JXM001 ")
    assert codes_at(result.stdout) == [("train.py", MISSED_DONATION_LINE, "JXM001")]


def test_read_after_donation_is_reported_at_the_read(tmp_path, jaxmem):
    write(tmp_path, "use.py", READ_AFTER_DONATION)
    result = jaxmem("check", "use.py")
    assert result.returncode == 1, result.stderr
    assert ("use.py", READ_AFTER_DONATION_LINE, "JXM101") in codes_at(result.stdout)
    line = next(x for x in result.stdout.splitlines() if " JXM101 " in x)
    assert line.startswith(f"use.py:{READ_AFTER_DONATION_LINE}:17: JXM101 ")  # print(x)'s x


def test_clean_code_exits_0_with_no_output(tmp_path, jaxmem):
    write(tmp_path, "clean.py", CLEAN)
    result = jaxmem("check", "clean.py")
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_no_path_means_the_current_folder(tmp_path, jaxmem):
    write(tmp_path, "pkg/train.py", MISSED_DONATION)
    write(tmp_path, "pkg/clean.py", CLEAN)
    result = jaxmem("check")
    assert result.returncode == 1, result.stderr
    assert codes_at(result.stdout) == [("pkg/train.py", MISSED_DONATION_LINE, "JXM001")]


def test_json_output(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    result = jaxmem("check", "--format", "json", "train.py")
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["version"] == 1
    assert document["tool"]["name"] == "jaxmem"
    [finding] = document["findings"]
    assert finding["code"] == "JXM001"
    assert (finding["path"], finding["line"], finding["col"]) == (
        "train.py", MISSED_DONATION_LINE, 1)
    assert finding["severity"] == "warning"
    assert finding["confidence"] == "high"
    assert finding["function"] == "step" and finding["wrapped"] == "step"
    assert finding["definition"] == {"path": "train.py", "line": MISSED_DONATION_LINE, "cell": None}
    assert finding["cell"] is None
    assert finding["parameter"] == {"index": 0, "name": "state"}
    assert finding["fix"] is True
    assert any(e["line"] == 11 for e in finding["evidence"])
    assert isinstance(document["skipped"], list)


def test_json_output_when_clean(tmp_path, jaxmem):
    write(tmp_path, "clean.py", CLEAN)
    result = jaxmem("check", "--format", "json", "clean.py")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["findings"] == []


def test_sarif_output_is_valid_2_1_0(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    write(tmp_path, "use.py", READ_AFTER_DONATION)
    write(tmp_path, "broken.py", "def broken(:\n")
    result = jaxmem("check", "--format", "sarif", ".")
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    assert problems(log) == []
    run = log["runs"][0]
    rule_ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert {"JXM001", "JXM101", "JXM900"} <= rule_ids
    located = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         r["locations"][0]["physicalLocation"]["region"]["startLine"])
        for r in run["results"]
    }
    assert ("JXM001", "train.py", MISSED_DONATION_LINE) in located
    assert ("JXM101", "use.py", READ_AFTER_DONATION_LINE) in located
    assert any(rule == "JXM900" and uri == "broken.py" for rule, uri, _ in located)
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def test_a_syntax_error_is_jxm900_and_other_files_are_still_checked(tmp_path, jaxmem):
    write(tmp_path, "a_broken.py", "import jax\n\ndef f(x:\n    return x\n")
    write(tmp_path, "b_train.py", MISSED_DONATION)
    result = jaxmem("check", ".")
    assert result.returncode == 1, result.stderr
    found = codes_at(result.stdout)
    assert [c for c in found if c[0] == "a_broken.py"][0][2] == "JXM900"
    assert ("b_train.py", MISSED_DONATION_LINE, "JXM001") in found


def test_latin1_with_a_cookie_is_analysed(tmp_path, jaxmem):
    source = "# -*- coding: latin-1 -*-\n" + MISSED_DONATION.replace(
        "import jax\n", "import jax  # café\n", 1)
    write(tmp_path, "train.py", source.encode("latin-1"))
    result = jaxmem("check", "train.py")
    assert result.returncode == 1, result.stderr
    assert codes_at(result.stdout) == [("train.py", MISSED_DONATION_LINE + 1, "JXM001")]


def test_latin1_without_a_cookie_is_jxm900(tmp_path, jaxmem):
    write(tmp_path, "train.py", ("# café\n" + MISSED_DONATION).encode("latin-1"))
    write(tmp_path, "other.py", MISSED_DONATION)
    result = jaxmem("check", ".")
    assert result.returncode == 1, result.stderr
    assert ("train.py", 1, "JXM900") in codes_at(result.stdout)
    assert "cannot decode byte 0xe9" in result.stdout
    assert ("other.py", MISSED_DONATION_LINE, "JXM001") in codes_at(result.stdout)


def test_a_utf8_bom_does_not_shift_positions(tmp_path, jaxmem):
    write(tmp_path, "train.py", b"\xef\xbb\xbf" + MISSED_DONATION.encode())
    result = jaxmem("check", "train.py")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"train.py:{MISSED_DONATION_LINE}:1: JXM001 ")


def test_crlf_line_endings(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION.replace("\n", "\r\n").encode())
    result = jaxmem("check", "train.py")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"train.py:{MISSED_DONATION_LINE}:1: JXM001 ")


def test_an_empty_file_is_clean(tmp_path, jaxmem):
    write(tmp_path, "empty.py", b"")
    result = jaxmem("check", "empty.py")
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_a_very_large_file(tmp_path, jaxmem):
    filler = "".join(f"value_{i} = {i} * 2\n" for i in range(50_000))
    write(tmp_path, "big.py", MISSED_DONATION + filler)
    result = jaxmem("check", "big.py")
    assert result.returncode == 1, result.stderr
    assert codes_at(result.stdout) == [("big.py", MISSED_DONATION_LINE, "JXM001")]


def test_a_missing_path_exits_2_naming_it(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    result = jaxmem("check", "train.py", "no_such_dir")
    assert result.returncode == 2
    assert "no_such_dir: no such file or directory" in result.stderr
    # The other paths are still checked.
    assert codes_at(result.stdout) == [("train.py", MISSED_DONATION_LINE, "JXM001")]


def test_an_invalid_config_exits_2_naming_file_and_key(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nmin-confidence = "sure"\n')
    write(tmp_path, "train.py", MISSED_DONATION)
    result = jaxmem("check", ".")
    assert result.returncode == 2
    assert str(tmp_path / "pyproject.toml") in result.stderr
    assert "min-confidence" in result.stderr and "low, medium, high" in result.stderr


def test_config_ignore_and_command_line_select(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nignore = ["JXM001"]\n')
    write(tmp_path, "train.py", MISSED_DONATION)
    assert jaxmem("check", ".").returncode == 0
    reselected = jaxmem("check", "--ignore", "JXM9", ".")
    assert reselected.returncode == 1, reselected.stderr
    assert "JXM001" in reselected.stdout


def test_select_ignore_flags(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    write(tmp_path, "use.py", READ_AFTER_DONATION)
    only_crashes = jaxmem("check", "--select", "JXM1", ".")
    assert {c for _, _, c in codes_at(only_crashes.stdout)} == {"JXM101"}
    no_crashes = jaxmem("check", "--extend-ignore", "JXM101", ".")
    assert "JXM101" not in no_crashes.stdout and "JXM001" in no_crashes.stdout


def test_min_confidence_filters(tmp_path, jaxmem):
    # state is a parameter of train here: caller-owned, so medium confidence at most
    source = MISSED_DONATION.replace("def train(batches):\n    state = jnp.zeros(3)\n",
                                     "def train(state, batches):\n")
    write(tmp_path, "train.py", source)
    assert "JXM001" in jaxmem("check", "--min-confidence", "low", ".").stdout
    strict = jaxmem("check", "--min-confidence", "high", ".")
    assert (strict.returncode, strict.stdout) == (0, ""), strict.stderr


def test_bad_flags_exit_2(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    bad_code = jaxmem("check", "--select", "E501", ".")
    assert bad_code.returncode == 2 and "--select: 'E501'" in bad_code.stderr
    bad_confidence = jaxmem("check", "--min-confidence", "sure", ".")
    assert bad_confidence.returncode == 2 and "--min-confidence" in bad_confidence.stderr
    assert jaxmem("check", "--format", "xml", ".").returncode == 2
    assert jaxmem("frobnicate").returncode == 2
    assert jaxmem().returncode == 2


def test_noqa_silences_only_the_named_code(tmp_path, jaxmem):
    silenced = MISSED_DONATION.replace("@jax.jit\n", "@jax.jit  # noqa: JXM001\n")
    wrong_code = MISSED_DONATION.replace("@jax.jit\n", "@jax.jit  # noqa: JXM101\n")
    write(tmp_path, "silenced.py", silenced)
    write(tmp_path, "wrong_code.py", wrong_code)
    result = jaxmem("check", ".")
    assert codes_at(result.stdout) == [("wrong_code.py", MISSED_DONATION_LINE, "JXM001")]
    write(tmp_path, "wrong_code.py", MISSED_DONATION.replace("@jax.jit\n", "@jax.jit  # noqa\n"))
    assert jaxmem("check", ".").returncode == 0


def test_exclude_flag_and_config(tmp_path, jaxmem):
    write(tmp_path, "src/train.py", MISSED_DONATION)
    write(tmp_path, "vendor/train.py", MISSED_DONATION)
    result = jaxmem("check", "--exclude", "vendor", ".")
    assert codes_at(result.stdout) == [("src/train.py", MISSED_DONATION_LINE, "JXM001")]
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nexclude = ["src/*"]\n')
    result = jaxmem("check", ".")
    assert codes_at(result.stdout) == [("vendor/train.py", MISSED_DONATION_LINE, "JXM001")]
    assert jaxmem("check", "src/train.py").returncode == 1
    assert jaxmem("check", "--force-exclude", "src/train.py").returncode == 0


def test_skipped_folders(tmp_path, jaxmem):
    for folder in (".git", "build", "dist", "node_modules", "__pycache__", "x.egg-info"):
        write(tmp_path, f"{folder}/train.py", MISSED_DONATION)
    write(tmp_path, "venv/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "venv/lib/train.py", MISSED_DONATION)
    result = jaxmem("check", ".")
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_jobs_give_the_same_report(tmp_path, jaxmem):
    for i in range(6):
        write(tmp_path, f"m{i}.py", MISSED_DONATION)
    write(tmp_path, "use.py", READ_AFTER_DONATION)
    write(tmp_path, "broken.py", "def (\n")
    serial = jaxmem("check", "--no-cache", "--jobs", "1", ".")
    parallel = jaxmem("check", "--no-cache", "--jobs", "2", ".")
    assert serial.returncode == parallel.returncode == 1
    assert serial.stdout == parallel.stdout
    assert len(codes_at(serial.stdout)) >= 8


def test_stdin_with_stdin_filename(tmp_path, jaxmem):
    result = jaxmem("check", "--stdin-filename", "pkg/train.py", "-", input=MISSED_DONATION)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"pkg/train.py:{MISSED_DONATION_LINE}:1: JXM001 ")
    implicit = jaxmem("check", "--stdin-filename", "pkg/train.py", input=MISSED_DONATION)
    assert implicit.stdout == result.stdout


def test_output_file(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    result = jaxmem("check", "--format", "json", "--output-file", "report.json", "train.py")
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    document = json.loads((tmp_path / "report.json").read_text())
    assert [f["code"] for f in document["findings"]] == ["JXM001"]


def test_quiet_and_statistics(tmp_path, jaxmem):
    write(tmp_path, "a.py", MISSED_DONATION)
    write(tmp_path, "b.py", MISSED_DONATION)
    loud = jaxmem("check", ".")
    assert "2 finding(s) in 2 file(s)" in loud.stderr
    quiet = jaxmem("check", "--quiet", "--statistics", ".")
    assert quiet.stderr == ""
    assert quiet.stdout.splitlines()[-1].split()[:2] == ["2", "JXM001"]
    assert jaxmem("check", "--exit-zero", ".").returncode == 0


def test_colour_is_forced_or_off(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    forced = jaxmem("check", "train.py", env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert "\x1b[" in forced.stdout
    piped = jaxmem("check", "train.py")
    assert "\x1b[" not in piped.stdout and "\x1b[" not in piped.stderr


def test_rule_command(tmp_path, jaxmem):
    doc = jaxmem("rule", "JXM001")
    assert doc.returncode == 0, doc.stderr
    assert doc.stdout.startswith("# ") and "(JXM001)" in doc.stdout.splitlines()[0]
    assert "## What it does" in doc.stdout
    assert jaxmem("rule", "jxm101").returncode == 0
    listing = jaxmem("rule", "--all")
    assert listing.returncode == 0
    codes = [line.split()[0] for line in listing.stdout.splitlines()]
    assert {"JXM001", "JXM002", "JXM101", "JXM102", "JXM103", "JXM104", "JXM105",
            "JXM106", "JXM107"} <= set(codes)
    unknown = jaxmem("rule", "JXM999")
    assert unknown.returncode == 2 and "unknown rule 'JXM999'" in unknown.stderr


def test_version_and_help(tmp_path, jaxmem):
    import jaxmem as package

    assert jaxmem("version").stdout == f"jaxmem {package.__version__}\n"
    assert jaxmem("--version").stdout == f"jaxmem {package.__version__}\n"
    helped = jaxmem("--help")
    assert helped.returncode == 0 and "check" in helped.stdout
    assert jaxmem("check", "--help").returncode == 0


def test_check_works_without_jax_and_never_imports_it(tmp_path):
    import subprocess
    import sys

    write(tmp_path, "train.py", MISSED_DONATION)
    script = (
        "import sys\n"
        "sys.modules['jax'] = None  # makes 'import jax' fail, as when it is not installed\n"
        "from jaxmem.cli import main\n"
        "status = main(['check', '--no-cache', 'train.py'])\n"
        "assert sys.modules['jax'] is None\n"
        "sys.exit(status)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"train.py:{MISSED_DONATION_LINE}:1: JXM001 ")


def test_a_broken_jax_file_is_jxm900_too(tmp_path, jaxmem):
    write(tmp_path, "broken.py", "import jax\n\n@jax.jit\ndef step(state:\n")
    result = jaxmem("check", "broken.py")
    assert result.returncode == 1, result.stderr
    [(path, _line, code)] = codes_at(result.stdout)
    assert (path, code) == ("broken.py", "JXM900")


def test_calls_in_files_that_never_mention_jit_are_joined_across_files(tmp_path, jaxmem):
    lib, main = MISSED_DONATION.split("def train", 1)
    write(tmp_path, "lib.py", lib)
    write(tmp_path, "main.py", "import jax.numpy as jnp\nfrom lib import step\n\ndef train" + main)
    result = jaxmem("check", "--format", "json", ".")
    assert result.returncode == 1, result.stderr
    [finding] = json.loads(result.stdout)["findings"]
    assert (finding["code"], finding["path"], finding["line"]) == (
        "JXM001", "lib.py", MISSED_DONATION_LINE)
    assert [e["path"] for e in finding["evidence"]] == ["main.py"]


# GitHub's workflow-command grammar: ::command key=value,key=value::data, where
# property values hold no raw ':' or ',' and nothing holds a raw CR or LF.
WORKFLOW_COMMAND = re.compile(r"^::(error|warning|notice)( [A-Za-z]+=[^,:\r\n]*(,[A-Za-z]+=[^,:\r\n]*)*)?::[^\r\n]*$")


def test_github_format_prints_one_workflow_command_per_finding(tmp_path, jaxmem):
    write(tmp_path, "train.py", MISSED_DONATION)
    write(tmp_path, "use.py", READ_AFTER_DONATION)
    result = jaxmem("check", "--no-cache", "--format", "github", ".")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert all(WORKFLOW_COMMAND.match(line) for line in lines), lines
    line = MISSED_DONATION_LINE
    assert lines[0].startswith(f"::warning file=train.py,line={line},col=1,endLine={line},endColumn=9,"
                               "title=JXM001::`step` does not donate `state`")
    assert lines[1].startswith(f"::error file=use.py,line={READ_AFTER_DONATION_LINE},col=")
    assert ",title=JXM101::" in lines[1]


def test_show_source_prints_the_line_and_a_caret(tmp_path, jaxmem):
    write(tmp_path, "use.py", READ_AFTER_DONATION)
    result = jaxmem("check", "--no-cache", "--show-source", "--output-format", "text", "use.py")
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"use.py:{READ_AFTER_DONATION_LINE}:17: JXM101 ")
    assert lines[1:3] == ["    y = f(x); print(x)", "    " + " " * 16 + "^"]


DISAGREEING_CALLS = """\
import jax
import jax.numpy as jnp


@jax.jit
def step(state, batch):
    return state + batch


def train(batch):
    state = jnp.zeros(3)
    state = step(state, batch)
    return state


def evaluate(batch):
    state = jnp.zeros(3)
    new = step(state, batch)
    return new, state
"""


def test_refusals_are_summarised_and_listed_with_show_skipped(tmp_path, jaxmem):
    write(tmp_path, "train.py", DISAGREEING_CALLS)
    plain = jaxmem("check", "train.py")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == ""
    assert "1 parameter(s) not proposed; --show-skipped lists why" in plain.stderr

    shown = jaxmem("check", "--show-skipped", "train.py")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "train.py:5: step: `state` not proposed: call sites disagree: `state` is read after the call at "
        "train.py:18: `state` reads it (line 19)"
    ]
    assert "not proposed" not in shown.stderr  # listed, so not summarised again
    # The same refusals as the JSON document's `skipped`.
    document = json.loads(jaxmem("check", "--format", "json", "train.py").stdout)
    assert [(s["parameter"], s["line"]) for s in document["skipped"]] == [("state", 5)]
    # Nothing to say when donation advice is not selected.
    assert "not proposed" not in jaxmem("check", "--select", "JXM101", "train.py").stderr


def test_a_notebooks_refusals_name_their_cell(tmp_path, jaxmem):
    cells = ["import jax\nimport jax.numpy as jnp", *DISAGREEING_CALLS.split("\n\n\n")[1:]]
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": cell.strip("\n")} for cell in cells],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    write(tmp_path, "train.ipynb", json.dumps(notebook))
    shown = jaxmem("check", "--show-skipped", "train.ipynb")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "train.ipynb:cell 2:1: step: `state` not proposed: call sites disagree: `state` is read after the call at "
        "train.ipynb:cell 4:3: `state` reads it (cell 4, line 4)"
    ]

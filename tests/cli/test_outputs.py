"""Renderers: positions convert once, JSON keeps its schema, SARIF keeps 2.1.0's shape."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jaxmem
from jaxmem.findings import (
    Confidence, DonationFix, Evidence, FileReport, Finding, Refusal, Severity, Span,
)
from jaxmem.lint.rules.base import Example, Rule
from jaxmem.outputs import (
    render, render_json, render_sarif, render_statistics, render_text, use_color,
)

from .sarif_shape import problems

MISSED = Finding(
    code="JXM001",
    path="src/train.py",
    span=Span(4, 0, 4, 8),
    message="`state` is rebound by every call of `step`; donate it (donate_argnums=0)",
    severity=Severity.WARNING,
    confidence=Confidence.HIGH,
    function="p_step",
    wrapped="step",
    definition_path="src/train.py",
    definition_line=4,
    parameter_index=0,
    parameter_name="state",
    evidence=(Evidence("called at line 11; `state` rebound, not read afterwards",
                       "src/loop.py", 11),),
    fix=DonationFix(definition_line=4, index=0, name="state"),
)
# A read after donation on a line with non-ASCII text before it: columns
# are characters, so "naïve" counts 5 and the read of x sits at col 12.
READ = Finding(
    code="JXM101",
    path="src/naïve dir/run.py",
    span=Span(9, 12, 9, 13),
    message="`x` was donated to `f` at line 9 and is read here",
    severity=Severity.ERROR,
    confidence=Confidence.MEDIUM,
)
PARSE = Finding(
    code="JXM900",
    path="broken.py",
    span=Span(1, 0, 1, 0),
    message="syntax error",
    severity=Severity.ERROR,
    confidence=Confidence.HIGH,
)
REFUSAL = Refusal(path="src/train.py", line=20, function="eval_step",
                  parameter="params", reason="read after the call at line 31")

RULES = {
    "JXM001": Rule(
        code="JXM001",
        name="missed-donation",
        severity=Severity.WARNING,
        summary="argument dead after every call",
        doc="""
            ## What it does
            Finds arguments that could be donated.
            """,
        invalid=(Example("x = f(x)  # JXM001\n"),),
        fixable=True,
    ),
    "JXM101": Rule(
        code="JXM101",
        name="use-after-donation",
        severity=Severity.ERROR,
        summary="value read after it was donated",
        doc="## What it does\nFinds reads of donated values.\n",
    ),
    "JXM002": Rule(
        code="JXM002",
        name="dead-argument-not-rebound",
        severity=Severity.INFO,
        summary="dead argument not rebound",
        doc="## What it does\nLow-value donations.\n",
    ),
}

REPORTS = [
    FileReport("broken.py", [PARSE]),
    FileReport("src/naïve dir/run.py", [READ]),
    FileReport("src/train.py", [MISSED], [REFUSAL]),
]


def test_text_is_flake8_format_with_one_based_columns():
    assert render_text([MISSED, READ]) == (
        "src/train.py:4:1: JXM001 `state` is rebound by every call of `step`; "
        "donate it (donate_argnums=0)\n"
        "src/naïve dir/run.py:9:13: JXM101 `x` was donated to `f` at line 9 and is read here\n"
    )


def test_text_is_sorted_across_files():
    lines = render("text", REPORTS).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "broken.py", "src/naïve dir/run.py", "src/train.py",
    ]


def test_colour_codes_only_when_asked():
    assert "\x1b[" not in render_text([MISSED])
    coloured = render_text([MISSED], color=True)
    assert "\x1b[" in coloured and "JXM001" in coloured


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_colour_follows_tty_no_color_and_force_color():
    assert use_color(FakeTerminal(), environ={}) is True
    assert use_color(io.StringIO(), environ={}) is False
    assert use_color(FakeTerminal(), environ={"NO_COLOR": "1"}) is False
    assert use_color(io.StringIO(), environ={"FORCE_COLOR": "1"}) is True
    assert use_color(FakeTerminal(), environ={"NO_COLOR": "1", "FORCE_COLOR": "1"}) is False


def test_json_document_follows_schema_version_1():
    document = json.loads(render_json(REPORTS))
    assert document["version"] == 1
    assert document["tool"] == {"name": "jaxmem", "version": jaxmem.__version__}
    assert [f["code"] for f in document["findings"]] == ["JXM900", "JXM101", "JXM001"]
    missed = document["findings"][2]
    assert missed == {
        "code": "JXM001",
        "path": "src/train.py",
        "cell": None,
        "line": 4,
        "col": 1,
        "end_line": 4,
        "end_col": 9,
        "message": MISSED.message,
        "severity": "warning",
        "confidence": "high",
        "function": "p_step",
        "wrapped": "step",
        "definition": {"path": "src/train.py", "line": 4, "cell": None},
        "parameter": {"index": 0, "name": "state"},
        "evidence": [{"message": MISSED.evidence[0].message, "path": "src/loop.py", "cell": None, "line": 11}],
        "fix": True,
    }
    read = document["findings"][1]
    assert (read["line"], read["col"], read["end_col"]) == (9, 13, 14)
    assert read["definition"] is None and read["parameter"] is None
    assert read["function"] is None and read["fix"] is False and read["evidence"] == []
    assert document["skipped"] == [{
        "path": "src/train.py", "cell": None, "line": 20, "function": "eval_step",
        "parameter": "params", "reason": "read after the call at line 31",
    }]


def test_json_schema_keys_are_documented():
    doc = (Path(__file__).parents[2] / "docs" / "json-schema.md").read_text()
    document = json.loads(render_json(REPORTS))
    for key in [*document, *document["findings"][0], *document["skipped"][0]]:
        assert f"`{key}`" in doc, key


def test_sarif_has_the_required_shape():
    log = json.loads(render_sarif(REPORTS, RULES, base=Path("/repo")))
    assert problems(log) == []


def test_sarif_rules_carry_the_rendered_docs():
    log = json.loads(render_sarif(REPORTS, RULES, base=Path("/repo")))
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "jaxmem" and driver["version"] == jaxmem.__version__
    by_id = {rule["id"]: rule for rule in driver["rules"]}
    assert by_id["JXM001"]["help"]["markdown"] == RULES["JXM001"].render()
    assert by_id["JXM001"]["fullDescription"]["text"] == RULES["JXM001"].documentation
    assert by_id["JXM001"]["shortDescription"]["text"] == "argument dead after every call"
    assert by_id["JXM002"]["defaultConfiguration"]["level"] == "note"
    assert by_id["JXM101"]["defaultConfiguration"]["level"] == "error"
    # a code without a registered rule still gets a descriptor
    assert "JXM900" in by_id


def test_sarif_results_locations_and_levels():
    log = json.loads(render_sarif(REPORTS, RULES, base=Path("/repo")))
    run = log["runs"][0]
    results = {r["ruleId"]: r for r in run["results"]}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///repo/"
    missed = results["JXM001"]
    assert missed["level"] == "warning"
    location = missed["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 4, "startColumn": 1, "endLine": 4, "endColumn": 9}
    assert missed["relatedLocations"][0]["physicalLocation"]["region"] == {"startLine": 11}
    assert missed["properties"] == {"confidence": "high", "fix": True}
    read = results["JXM101"]
    assert read["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "src/na%C3%AFve%20dir/run.py"
    )
    assert read["locations"][0]["physicalLocation"]["region"]["startColumn"] == 13
    # a zero-width range has no end
    parse_region = results["JXM900"]["locations"][0]["physicalLocation"]["region"]
    assert parse_region == {"startLine": 1, "startColumn": 1}


def test_sarif_fingerprints_ignore_line_numbers_and_tell_twins_apart():
    moved = Finding(**{**MISSED.__dict__, "span": Span(40, 0, 40, 8)})
    first = json.loads(render_sarif([FileReport("src/train.py", [MISSED])], RULES))
    second = json.loads(render_sarif([FileReport("src/train.py", [moved])], RULES))

    def prints(log):
        return [r["partialFingerprints"] for r in log["runs"][0]["results"]]

    assert prints(first) == prints(second)
    twins = json.loads(render_sarif([FileReport("src/train.py", [MISSED, moved])], RULES))
    a, b = prints(twins)
    assert a != b


def test_paths_outside_the_base_become_file_uris():
    outside = Finding(**{**READ.__dict__, "path": "/elsewhere/x.py"})
    log = json.loads(render_sarif([FileReport("/elsewhere/x.py", [outside])], RULES,
                                  base=Path("/repo")))
    artifact = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "file:///elsewhere/x.py"}
    assert problems(log) == []


def test_an_empty_run_is_valid_sarif():
    log = json.loads(render_sarif([], RULES))
    assert log["runs"][0]["results"] == []
    assert problems(log) == []


def test_statistics_count_per_code():
    assert render_statistics([MISSED, READ, MISSED], RULES) == (
        "2  JXM001  missed-donation\n1  JXM101  use-after-donation\n"
    )


# -- GitHub workflow commands and GitLab Code Quality ------------------------------


def test_github_annotations_follow_the_workflow_command_syntax():
    lines = render("github", REPORTS).splitlines()
    assert lines == [
        "::error file=broken.py,line=1,col=1,title=JXM900::syntax error",
        "::error file=src/naïve dir/run.py,line=9,col=13,endLine=9,endColumn=14,title=JXM101::"
        "`x` was donated to `f` at line 9 and is read here",
        "::warning file=src/train.py,line=4,col=1,endLine=4,endColumn=9,title=JXM001::" + MISSED.message,
    ]


def test_github_escapes_data_and_properties_as_documented():
    # "Workflow commands for GitHub Actions": data escapes % CR LF; properties also : and ,
    odd = Finding(code="JXM002", path="a,b:c%.py", span=Span(2, 0, 2, 0),
                  message="100% dead\r\nsee: line 3, col 1", severity=Severity.INFO, confidence=Confidence.LOW)
    [line] = render("github", [FileReport(odd.path, [odd])]).splitlines()
    assert line == "::notice file=a%2Cb%3Ac%25.py,line=2,col=1,title=JXM002::100%25 dead%0D%0Asee: line 3, col 1"


def test_github_names_the_cell_of_a_notebook_finding_instead_of_a_json_line():
    in_cell = Finding(code="JXM001", path="train.ipynb", span=Span(5, 0, 5, 8), message="m",
                      severity=Severity.WARNING, confidence=Confidence.HIGH, cell=3)
    [line] = render("github", [FileReport(in_cell.path, [in_cell])]).splitlines()
    assert line == "::warning file=train.ipynb,title=JXM001 (cell 3%3A5%3A1)::m"
    assert render_text([in_cell]) == "train.ipynb:cell 3:5:1: JXM001 m\n"


def test_gitlab_code_quality_report():
    issues = json.loads(render("gitlab", REPORTS))
    assert [i["check_name"] for i in issues] == ["JXM900", "JXM101", "JXM001"]
    missed = issues[2]
    assert missed["description"] == "JXM001 " + MISSED.message
    assert missed["severity"] == "major" and issues[0]["severity"] == "critical"
    assert missed["location"] == {"path": "src/train.py", "lines": {"begin": 4}}
    assert len({i["fingerprint"] for i in issues}) == 3
    assert json.loads(render("gitlab", REPORTS)) == issues  # stable fingerprints


def test_show_source_puts_a_caret_under_the_range():
    text = render_text([READ], source_lines=lambda f: "aaaa naïve; x")  # x at column 12 (characters)
    assert text.splitlines()[1:] == ["    aaaa naïve; x", "    " + " " * 12 + "^"]

"""The server's analysis: ``jaxmem check FILE`` with the editor's text, and ``jaxmem-fix``'s edit."""

from __future__ import annotations

import os
import textwrap

import pytest
from training_programs import MISSED_DONATION as MISSED

from jaxmem.api import check_paths
from jaxmem.codemod.edits import add_donations
from jaxmem.config import ConfigError
from jaxmem.server.analysis import analyse_document, encode_like_file, fix_document, fixable

LATIN1 = textwrap.dedent("""\
    # -*- coding: latin-1 -*-
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda x: x * 2, donate_argnums=0)
    x = jnp.ones(3)
    y = f(x); print("café", x)
    """)


def _project(tmp_path, files: dict[str, str], config: str = ""):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n" + config)
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode_like_file(text))
    return tmp_path


def _summary(findings):
    return [(f.code, f.path, f.span, f.message, f.confidence) for f in findings]


def test_the_findings_are_those_of_check_file_from_the_root(tmp_path, monkeypatch):
    root = _project(tmp_path, {"pkg/train.py": MISSED, "pkg/__init__.py": "", "latin.py": LATIN1})
    for name in ("pkg/train.py", "latin.py"):
        analysis = analyse_document(root / name, (root / name).read_bytes().decode(
            "latin-1" if name == "latin.py" else "utf-8"))
        monkeypatch.chdir(root)
        (report,) = check_paths([name], use_cache=False)
        assert report.findings and _summary(analysis.findings) == _summary(report.findings)
        assert analysis.name == name and analysis.root == root.resolve()


def test_the_unsaved_text_is_analysed_not_the_file(tmp_path):
    root = _project(tmp_path, {"train.py": MISSED})
    assert [f.code for f in analyse_document(root / "train.py", MISSED).findings] == ["JXM001"]
    fixed = MISSED.replace("@jax.jit\n", "@jax.jit(donate_argnums=0)\n")
    assert analyse_document(root / "train.py", fixed).findings == []
    assert analyse_document(root / "new.py", MISSED).findings  # not saved yet at all


def test_a_file_outside_any_project_is_checked_alone_without_a_cache(tmp_path, monkeypatch):
    folder = tmp_path / "loose"
    folder.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    analysis = analyse_document(folder / "train.py", MISSED)
    assert [f.code for f in analysis.findings] == ["JXM001"]
    assert analysis.root == folder.resolve()
    assert os.getcwd() == str(elsewhere)
    assert not (folder / ".jaxmem_cache").exists() and not (elsewhere / ".jaxmem_cache").exists()


def test_a_bad_config_is_an_error_naming_the_file(tmp_path):
    root = _project(tmp_path, {"train.py": MISSED}, '\n[tool.jaxmem]\nmin-confidence = "sure"\n')
    with pytest.raises(ConfigError, match="pyproject.toml"):
        analyse_document(root / "train.py", MISSED)


def test_the_fix_is_jaxmem_fix_s_edit(tmp_path):
    root = _project(tmp_path, {"train.py": MISSED}, '\n[tool.jaxmem]\ndonation-style = "argnames"\n')
    analysis = analyse_document(root / "train.py", MISSED)
    (finding,) = analysis.findings
    assert fixable(finding, unsafe=False)
    fix = fix_document(analysis, [finding])
    assert fix.error is None and fix.before == MISSED
    assert fix.after == add_donations(MISSED, [finding.fix], style="argnames").source
    assert "donate_argnames=" in fix.after


@pytest.mark.parametrize("name, reason", [
    ("gen/train.py", "excluded"),
    (".venv/lib/python3.11/site-packages/lib/train.py", "site-packages"),
    ("build/lib/train.py", "inside build/"),
    ("env/train.py", "inside env/"),  # a virtualenv by its pyvenv.cfg
])
def test_files_jaxmem_does_not_walk_into_are_not_checked(tmp_path, name, reason):
    root = _project(tmp_path, {name: MISSED, "train.py": MISSED}, '\n[tool.jaxmem]\nexclude = ["gen"]\n')
    (root / "env").mkdir(exist_ok=True)
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    analysis = analyse_document(root / name, MISSED)
    assert analysis.findings == [] and reason in analysis.skipped
    assert analyse_document(root / "train.py", MISSED).skipped is None

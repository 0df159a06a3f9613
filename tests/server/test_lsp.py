"""End to end: the real ``jaxmem server`` process, spoken to over stdio."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .lsp_client import BIN, LspClient, apply_edits, utf16_column

REPO = Path(__file__).resolve().parents[2]

# A missed donation (JXM001 at the decorator) and, after non-ASCII and
# astral characters on its line, a read after donation (JXM101 at `x`).
TRAIN = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    LABEL = "naïve 😀"


    @jax.jit
    def step(state, batch):
        return state + batch.sum()


    def train(batches):
        state = jnp.zeros(3)
        for batch in batches:
            state = step(state, batch)
        return state


    def g(x):
        return x * 2


    f = jax.jit(g, donate_argnums=0)


    def misuse():
        x = jnp.ones(3)
        y = f(x); print("é😀", x)
        return y
    """)
READ_LINE = 'y = f(x); print("é😀", x)'


def make_project(root: Path) -> Path:
    """A project at ``root``: a pyproject.toml and TRAIN as train.py."""
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "project")


@pytest.fixture
def client(project):
    client = LspClient(project)
    yield client
    client.kill()


def check_json(root: Path, *args) -> list[dict]:
    """``jaxmem check --format json`` run from ``root``: the findings."""
    completed = subprocess.run([str(BIN / "jaxmem"), "check", "--format", "json", *args], cwd=root,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode in (0, 1), completed.stderr
    return json.loads(completed.stdout)["findings"]


def fixed_by_jaxmem_fix(root: Path, relative: str, tmp_path: Path, *args) -> str:
    """What ``jaxmem-fix FILE`` writes, run on a copy of the project."""
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".jaxmem_cache"))
    completed = subprocess.run([str(BIN / "jaxmem-fix"), *args, relative], cwd=copy,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode in (0, 1), completed.stderr
    return (copy / relative).read_text(encoding="utf-8")


def lsp_range(text: str, finding: dict) -> dict:
    """The LSP range of a ``jaxmem check`` JSON finding (1-based line and column)."""
    lines = text.splitlines()

    def position(line, col):
        return {"line": line - 1, "character": utf16_column(lines[line - 1], col - 1)}

    return {"start": position(finding["line"], finding["col"]), "end": position(finding["end_line"], finding["end_col"])}


def by_code(diagnostics: list[dict], code: str) -> list[dict]:
    return [d for d in diagnostics if d["code"] == code]


def test_open_publishes_the_check_findings_and_the_quick_fix_is_jaxmem_fix(project, client, tmp_path):
    response = client.initialize(project)
    capabilities = response["result"]["capabilities"]
    assert capabilities["textDocumentSync"]["openClose"] is True
    assert capabilities["textDocumentSync"]["save"] is not False
    assert "quickfix" in capabilities["codeActionProvider"]["codeActionKinds"]

    uri = client.open(project / "train.py")
    diagnostics = client.diagnostics(uri)

    expected = check_json(project, "train.py")
    assert sorted((d["code"], json.dumps(d["range"], sort_keys=True), d["message"]) for d in diagnostics) == sorted(
        (f["code"], json.dumps(lsp_range(TRAIN, f), sort_keys=True), f["message"]) for f in expected)
    (missed,) = by_code(diagnostics, "JXM001")
    assert missed["source"] == "jaxmem" and missed["severity"] == 2  # Warning
    assert missed["range"]["start"] == {"line": TRAIN.splitlines().index("@jax.jit"), "character": 0}
    assert missed["data"] == {"confidence": "high", "fixable": True}
    (read,) = by_code(diagnostics, "JXM101")
    line = TRAIN.splitlines().index("    " + READ_LINE)
    # `x` follows 26 characters, 27 UTF-16 code units (the emoji takes two).
    assert TRAIN.splitlines()[line][26] == "x"
    assert read["range"] == {"start": {"line": line, "character": 27}, "end": {"line": line, "character": 28}}
    assert read["severity"] == 1  # Error

    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": missed["range"],
        "context": {"diagnostics": [missed]},
    })["result"]
    (quick_fix,) = [a for a in actions if a["kind"] == "quickfix"]
    assert quick_fix["title"] == "jaxmem: donate `state` in `step`"
    assert quick_fix["diagnostics"] == [missed]
    (change,) = quick_fix["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uri, "version": 1}
    assert all(edit["range"]["start"]["line"] == edit["range"]["end"]["line"] for edit in change["edits"])
    fixed = apply_edits(TRAIN, change["edits"])
    assert fixed == fixed_by_jaxmem_fix(project, "train.py", tmp_path)
    assert fixed != TRAIN

    assert client.close() == 0

    # The fixed step really donates.
    (project / "train.py").write_text(fixed, encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", (
        "import jax.numpy as jnp, train\n"
        "state = jnp.zeros(3)\n"
        "new = train.step(state, jnp.ones(2))\n"
        "assert state.is_deleted() and not new.is_deleted(), 'not donated'\n")],
        cwd=project, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


def test_unsaved_text_replaces_the_file(project, client):
    client.initialize(project)
    uri = client.open(project / "train.py")
    assert by_code(client.diagnostics(uri, version=1), "JXM001")

    fixed = TRAIN.replace("@jax.jit\n", "@jax.jit(donate_argnums=0)\n").split("\n\ndef g(x)")[0] + "\n"
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]})
    assert client.diagnostics(uri, version=2) == []

    # An incremental change that brings the bug back: only the decorator line.
    line = fixed.splitlines().index("@jax.jit(donate_argnums=0)")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{
        "range": {"start": {"line": line, "character": 8}, "end": {"line": line, "character": 26}},
        "text": ""}]})
    (missed,) = client.diagnostics(uri, version=3)
    assert missed["code"] == "JXM001"
    assert (project / "train.py").read_text(encoding="utf-8") == TRAIN  # nothing written

    # A code action asked for right after a change waits for that text's check.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "text": "# training\n"}]})
    moved = {"start": {"line": missed["range"]["start"]["line"] + 1, "character": 0},
             "end": {"line": missed["range"]["end"]["line"] + 1, "character": 0}}
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": moved, "context": {"diagnostics": []}})["result"]
    (change,) = actions[0]["edit"]["documentChanges"]
    assert change["textDocument"]["version"] == 4
    assert [d["code"] for d in client.diagnostics(uri, version=4)] == ["JXM001"]

    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []
    assert client.close() == 0


def test_without_check_on_change_unsaved_text_waits_for_the_save(project, client):
    client.initialize(project, {"checkOnChange": False})
    uri = client.open(project / "train.py")
    assert by_code(client.diagnostics(uri, version=1), "JXM001")
    fixed = TRAIN.replace("@jax.jit\n", "@jax.jit(donate_argnums=0)\n").split("\n\ndef g(x)")[0] + "\n"
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]})
    client.listen(3 * 0.4 + 1)
    assert not [n for n in client.notifications if n["method"] == "textDocument/publishDiagnostics"]
    (project / "train.py").write_text(fixed, encoding="utf-8")
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri, version=2) == []
    assert client.close() == 0


def test_columns_follow_the_negotiated_position_encoding(project, client):
    response = client.initialize(project, capabilities={"general": {"positionEncodings": ["utf-8", "utf-16"]}})
    assert response["result"]["capabilities"]["positionEncoding"] == "utf-8"
    uri = client.open(project / "train.py")
    (read,) = by_code(client.diagnostics(uri), "JXM101")
    line = TRAIN.splitlines()[read["range"]["start"]["line"]]
    assert read["range"]["start"]["character"] == len(line[:26].encode("utf-8")) == 30
    assert client.close() == 0


def test_a_file_that_does_not_parse_is_jxm900(project, client):
    client.initialize(project)
    broken = project / "broken.py"
    broken.write_text("import jax\n\ndef f(:\n    return 1\n")
    uri = client.open(broken)
    (diagnostic,) = client.diagnostics(uri)
    assert diagnostic["code"] == "JXM900" and diagnostic["severity"] == 1
    assert diagnostic["range"]["start"]["line"] == 2
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diagnostic["range"], "context": {"diagnostics": [diagnostic]}})
    assert actions["result"] is None
    assert client.close() == 0


LIB = textwrap.dedent("""\
    import jax


    @jax.jit
    def step(state, batch):
        return state + batch
    """)
CALLER = textwrap.dedent("""\
    import jax.numpy as jnp
    from lib import step


    def train(batches):
        state = jnp.zeros(3)
        for batch in batches:
            state = step(state, batch)
        return state
    """)
UNSAFE_CALLER = textwrap.dedent("""\
    import jax.numpy as jnp
    from lib import step


    def evaluate(batch):
        state = jnp.zeros(3)
        new = step(state, batch)
        return new, state
    """)


def lib_project(tmp_path: Path, **files: str) -> Path:
    """A project holding LIB as lib.py and ``files`` (name without ``.py`` -> text)."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "lib.py").write_text(LIB)
    for name, text in files.items():
        (root / f"{name}.py").write_text(text)
    return root


def test_the_whole_project_decides_and_a_save_rechecks_the_open_files(tmp_path):
    root = lib_project(tmp_path, train=CALLER)
    client = LspClient(root)
    try:
        client.initialize(root)
        uri = client.open(root / "lib.py")
        (missed,) = client.diagnostics(uri)
        # The call sites are in train.py, which is not open: as `jaxmem check lib.py` says.
        (expected,) = check_json(root, "lib.py")
        assert (missed["code"], missed["message"]) == (expected["code"], expected["message"])
        assert missed["data"]["confidence"] == "high"
        # The call sites it rests on, as related information.
        call = CALLER.splitlines().index("        state = step(state, batch)")
        assert {"uri": (root / "train.py").as_uri(),
                "range": {"start": {"line": call, "character": 0}, "end": {"line": call, "character": 0}}} in [
            related["location"] for related in missed["relatedInformation"]]

        # A new caller that reads `state` after the call is saved in another file.
        evaluate = root / "evaluate.py"
        evaluate.write_text(UNSAFE_CALLER)
        other = client.open(evaluate)
        client.diagnostics(other)
        client.notify("textDocument/didSave", {"textDocument": {"uri": other}})
        assert client.diagnostics(uri) == []
        assert check_json(root, "lib.py") == []
        assert client.close() == 0
    finally:
        client.kill()


def test_a_caller_shows_what_its_calls_find_in_a_file_that_is_not_open(tmp_path):
    root = lib_project(tmp_path, train=CALLER)
    lib = (root / "lib.py").as_uri()
    client = LspClient(root)
    try:
        client.initialize(root)
        caller = client.open(root / "train.py")
        assert client.diagnostics(caller) == []
        (missed,) = client.diagnostics(lib)  # lib.py is not open: shown there all the same
        (expected,) = check_json(root, "lib.py")
        assert missed["code"] == "JXM001" and missed["data"]["confidence"] == "high"
        call = CALLER.splitlines().index("        state = step(state, batch)") + 1
        assert missed["message"] == f"{expected['message']} (called from train.py, line {call})"
        assert missed["range"] == lsp_range(LIB, expected)

        # Unsaved: the caller now reads `state` after the call, so the advice in lib.py is gone.
        unsafe = CALLER.replace("        return state", "        return state, batches")
        unsafe = unsafe.replace("state = step(state, batch)", "new = step(state, batch)")
        client.notify("textDocument/didChange", {"textDocument": {"uri": caller, "version": 2},
                                                 "contentChanges": [{"text": unsafe}]})
        assert client.diagnostics(lib) == []
        client.notify("textDocument/didChange", {"textDocument": {"uri": caller, "version": 3},
                                                 "contentChanges": [{"text": CALLER}]})
        assert [d["code"] for d in client.diagnostics(lib)] == ["JXM001"]

        # Opened, lib.py shows its own check; closing the caller clears what it showed.
        own = client.open(root / "lib.py")
        assert [d["message"] for d in client.diagnostics(own)] == [expected["message"]]
        client.notify("textDocument/didClose", {"textDocument": {"uri": own}})
        assert client.diagnostics(lib) == []  # closed: cleared ...
        assert [d["code"] for d in client.diagnostics(lib)] == ["JXM001"]  # ... and the caller's view is back
        client.notify("textDocument/didClose", {"textDocument": {"uri": caller}})
        assert client.diagnostics(lib) == []
        assert client.close() == 0
    finally:
        client.kill()


def test_a_notebook_shows_what_its_cells_find_in_the_project_files_they_call(tmp_path):
    root = lib_project(tmp_path)
    client = LspClient(root)
    try:
        client.initialize(root)
        client.open_notebook(root / "train.ipynb", [
            ("markdown", "# Training"),
            ("code", "import jax.numpy as jnp\nfrom lib import step"),
            ("code", "state = jnp.zeros(3)\nfor batch in [jnp.ones(3)] * 3:\n    state = step(state, batch)"),
        ])
        (missed,) = client.diagnostics((root / "lib.py").as_uri())
        assert missed["code"] == "JXM001" and missed["data"]["confidence"] == "high"
        assert missed["message"].endswith("(called from train.ipynb, cell 3, line 3)"), missed["message"]
        assert client.close() == 0
    finally:
        client.kill()


def test_config_and_unsafe_fixes(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n\n[tool.jaxmem]\nignore = ["JXM1"]\n')
    shutil.copy(REPO / "examples" / "train.py", root / "train.py")
    text = (root / "train.py").read_text(encoding="utf-8")
    expected = check_json(root, "train.py")
    assert {f["code"] for f in expected} == {"JXM001"}
    assert {f["confidence"] for f in expected} == {"high", "medium"}

    def actions_for(options):
        client = LspClient(root)
        try:
            client.initialize(root, options)
            uri = client.open(root / "train.py")
            diagnostics = client.diagnostics(uri)
            assert sorted(d["message"] for d in diagnostics) == sorted(f["message"] for f in expected)
            whole = {"start": {"line": 0, "character": 0}, "end": {"line": len(text.splitlines()), "character": 0}}
            result = client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": diagnostics},
            })["result"] or []
            assert client.close() == 0
            return result
        finally:
            client.kill()

    safe = actions_for(None)
    assert [a["kind"] for a in safe] == ["quickfix"]
    assert "unsafe" not in safe[0]["title"]
    assert apply_edits(text, safe[0]["edit"]["documentChanges"][0]["edits"]) == fixed_by_jaxmem_fix(
        root, "train.py", tmp_path / "safe")

    unsafe = actions_for({"unsafeFixes": True})
    titles = [a["title"] for a in unsafe if a["kind"] == "quickfix"]
    assert len(titles) == 2 and sum("(unsafe: medium confidence)" in t for t in titles) == 1
    (fix_all,) = [a for a in unsafe if a["kind"] == "source.fixAll.jaxmem"]
    assert apply_edits(text, fix_all["edit"]["documentChanges"][0]["edits"]) == fixed_by_jaxmem_fix(
        root, "train.py", tmp_path / "unsafe", "--unsafe-fixes")


def test_exit_without_shutdown_is_an_error(project):
    client = LspClient(project)
    try:
        client.initialize(project)
        client.notify("exit", None)
        assert client.process.wait(timeout=60) == 1
    finally:
        client.kill()


def test_a_bad_config_is_logged_and_the_server_keeps_serving(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.jaxmem]\nmin-confidence = "sure"\n')
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    client = LspClient(root)
    try:
        client.initialize(root, {"unsafeFixes": "yes"})
        warning = client.wait_for("window/logMessage", lambda p: "unsafeFixes" in p["message"])
        assert warning["type"] == 2 and "true or false" in warning["message"]
        client.open(root / "train.py")
        error = client.wait_for("window/logMessage", lambda p: p["type"] == 1)
        assert "pyproject.toml" in error["message"] and "min-confidence" in error["message"]
        assert client.close() == 0
    finally:
        client.kill()


def test_the_cli_imports_pygls_only_for_the_server_and_says_when_it_is_missing(tmp_path):
    lazy = subprocess.run([sys.executable, "-c", (
        "import sys, jaxmem.cli\n"
        "jaxmem.cli.build_parser()\n"
        "assert not {'pygls', 'lsprotocol'} & set(sys.modules), 'imported too early'\n")],
        capture_output=True, text=True, timeout=120)
    assert lazy.returncode == 0, lazy.stderr
    missing = subprocess.run([sys.executable, "-c", (
        "import sys\n"
        "sys.modules['pygls'] = None  # as if it were not installed\n"
        "from jaxmem.cli import main\n"
        "sys.exit(main(['server']))\n")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert missing.returncode == 2
    assert "pip install 'jaxmem[server]'" in missing.stderr and "pygls" in missing.stderr


NOTEBOOK_CAPABILITIES = {
    "workspace": {"workspaceEdit": {"documentChanges": True}},
    "textDocument": {"publishDiagnostics": {"versionSupport": True}},
    "notebookDocument": {"synchronization": {}},
}
NOTEBOOK_CELLS = [
    ("markdown", "# Training"),
    ("code", "import jax\nimport jax.numpy as jnp\n"),
    ("code", "@jax.jit\ndef step(state, x):\n    return state * 0.9 + x\n"),
    ("code", "state = jnp.ones(3)\nfor i in range(3):\n    state = step(state, 1.0)"),
]


def test_a_notebooks_cells_get_the_check_findings_and_the_fix_of_jaxmem_fix(project, tmp_path):
    """An editor's notebook (cells as separate documents, notebook sync): diagnostics on the
    cells as `jaxmem check train.ipynb` reports them, the quick fix as `jaxmem-fix` writes it."""
    from jaxmem.notebooks import read_notebook

    path = project / "train.ipynb"
    path.write_text(json.dumps({
        "cells": [{"cell_type": kind, "metadata": {}, "source": text,
                   **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                  for kind, text in NOTEBOOK_CELLS],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n", encoding="utf-8")
    client = LspClient(project)
    try:
        response = client.initialize(project, capabilities=NOTEBOOK_CAPABILITIES)
        assert response["result"]["capabilities"]["notebookDocumentSync"]["notebookSelector"] == [
            {"cells": [{"language": "python"}], "notebook": "*"}]
        imports, step, loop = client.open_notebook(path, NOTEBOOK_CELLS)[1:]
        assert client.diagnostics(imports) == [] and client.diagnostics(loop) == []
        (missed,) = client.diagnostics(step)
        (expected,) = check_json(project, "train.ipynb")
        assert expected["cell"] == 3  # counted among all cells, markdown too, in both
        assert (missed["code"], missed["message"]) == ("JXM001", expected["message"])
        assert missed["range"]["start"] == {"line": 0, "character": 0}
        assert {"uri": loop, "range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 0}}} in [
            related["location"] for related in missed["relatedInformation"]]

        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": step}, "range": missed["range"], "context": {"diagnostics": [missed]},
        })["result"]
        (quick_fix,) = [a for a in actions if a["kind"] == "quickfix"]
        texts = {uri: text for uri, (_, text) in zip([None, imports, step, loop], NOTEBOOK_CELLS)}
        for change in quick_fix["edit"]["documentChanges"]:
            assert change["textDocument"]["version"] == 1
            texts[change["textDocument"]["uri"]] = apply_edits(texts[change["textDocument"]["uri"]], change["edits"])
        fixed_notebook = tmp_path / "copy" / "train.ipynb"
        fixed_by_jaxmem_fix(project, "train.ipynb", tmp_path)
        fixed = read_notebook(str(fixed_notebook), fixed_notebook.read_bytes())
        assert [texts[uri] for uri in (imports, step, loop)] == ["".join(c.lines) for c in fixed.cells]
        assert texts[step] != NOTEBOOK_CELLS[2][1]

        # The fixed cells really donate.
        namespace: dict = {}
        exec(texts[imports] + texts[step] + "old = jnp.ones(3)\nnew = step(old, 1.0)\n", namespace)
        assert namespace["old"].is_deleted() and not namespace["new"].is_deleted()

        # An edit of the loop cell that reads the state afterwards takes the proposal back.
        client.notify("notebookDocument/didChange", {
            "notebookDocument": {"uri": path.as_uri(), "version": 2},
            "change": {"cells": {"textContent": [{
                "document": {"uri": loop, "version": 2},
                "changes": [{"text": NOTEBOOK_CELLS[3][1].replace("state = step", "new = step") + "\nprint(state)\n"}],
            }]}},
        })
        assert client.diagnostics(step, version=1) == []

        client.notify("notebookDocument/didClose", {
            "notebookDocument": {"uri": path.as_uri()},
            "cellTextDocuments": [{"uri": uri} for uri in (imports, step, loop)],
        })
        assert client.diagnostics(step) == []
        assert client.close() == 0
    finally:
        client.kill()


def test_a_path_with_spaces_and_non_ascii_is_checked(tmp_path):
    """The client quotes the uri (``my%20project``); the workspace keys documents unquoted."""
    root = make_project(tmp_path / "my project é")
    client = LspClient(root)
    try:
        client.initialize(root)
        uri = client.open(root / "train.py")
        assert "%20" in uri
        diagnostics = client.diagnostics(uri)
        assert {d["code"] for d in diagnostics} == {"JXM001", "JXM101"}
        (missed,) = by_code(diagnostics, "JXM001")
        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": missed["range"], "context": {"diagnostics": [missed]},
        })["result"]
        assert [a["title"] for a in actions if a["kind"] == "quickfix"] == ["jaxmem: donate `state` in `step`"]
        assert client.close() == 0
    finally:
        client.kill()

"""Jupyter notebooks: checked, fixed and run like ``.py`` files (``jaxmem.notebooks``).

The notebooks are written by the tests as JSON, in the layouts Jupyter
(indent 1, sorted keys) and Colab (indent 2, its own key order) write.
"""

from __future__ import annotations

import json

import pytest
from .conftest import run_tool, write
from .sarif_shape import problems

from jaxmem.notebooks import MAGIC_CALL, magic_lines, read_notebook

IMPORTS = "%matplotlib inline\nimport jax\nimport jax.numpy as jnp"
STEP = "@jax.jit\ndef train_step(state, batch):\n    return state + batch\n"
LOOP = ("!echo training\nstate = jnp.zeros(3)\nfor i in range(3):\n"
        "    state = train_step(state, jnp.ones(3))\nprint(state)")


def notebook(*sources, list_source=True, magic_output=True) -> dict:
    """A notebook: a markdown cell, then one code cell per source, with outputs."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Training\n", "A small loop."]}]
    for count, source in enumerate(sources, start=1):
        cells.append({
            "cell_type": "code",
            "execution_count": count,
            "metadata": {"id": f"cell-{count}", "collapsed": False},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": [f"out {count} é\n"]}]
            if magic_output else [],
            "source": source.splitlines(keepends=True) if list_source else source,
        })
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python", "version": "3.11.0"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def jupyter_json(document) -> str:
    """What Jupyter writes: indent 1, sorted keys, non-ASCII kept, final newline."""
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def colab_json(document) -> str:
    """What Colab writes: indent 2, its own key order, no final newline."""
    reordered = {"nbformat": document["nbformat"], "nbformat_minor": document["nbformat_minor"],
                 "metadata": document["metadata"], "cells": document["cells"]}
    return json.dumps(reordered, indent=2, ensure_ascii=False)


def fix(*args, cwd):
    return run_tool("jaxmem-fix", "--no-cache", *args, cwd=cwd)


def run_cells(document) -> dict:
    """Execute the code cells (magic lines left out) in one namespace, with real JAX."""
    namespace: dict = {}
    for cell in document["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        lines = source.splitlines(keepends=True)
        code = "".join(line for i, line in enumerate(lines) if i not in magic_lines(lines))
        exec(compile(code, "<cell>", "exec"), namespace)
    return namespace


# -- reading ------------------------------------------------------------------


@pytest.mark.parametrize("line, replaced", [
    ("%matplotlib inline\n", f"{MAGIC_CALL}(matplotlib, inline)\n"),
    ("!pip install -q jax\n", f"{MAGIC_CALL}(pip, install, q, jax)\n"),
    ("files = !ls {folder}\n", f"files = {MAGIC_CALL}(ls, folder)\n"),
    ("    %time print(state)\n", f"    {MAGIC_CALL}(time, print, state)\n"),
    ("train_step?\n", f"{MAGIC_CALL}(train_step)\n"),
    ("??train_step\n", f"{MAGIC_CALL}(train_step)\n"),
])
def test_a_magic_line_becomes_a_call_reading_the_names_on_it(line, replaced):
    assert magic_lines([line]) == {0: (line, replaced)}


@pytest.mark.parametrize("lines", [
    ["x = (a\n", "     % b)\n"],                       # modulo on a continuation line
    ["s = '''\n", "!not a shell escape\n", "'''\n"],  # inside a string
    ["y = a \\\n", "    % b\n"],                         # backslash continuation
    ["if x != y:\n", "    pass\n"],
    ["# %time in a comment\n"],
])
def test_python_that_looks_like_magic_is_left_alone(lines):
    assert magic_lines(lines) == {}


def test_cell_magics_keep_python_bodies_and_blank_the_others():
    timed = magic_lines(["%%time\n", "x = f(x)\n"])
    assert list(timed) == [0]
    bash = magic_lines(["%%bash\n", "echo $HOME\n", "ls"])
    assert bash == {0: ("%%bash\n", f"{MAGIC_CALL}(bash)\n"), 1: ("echo $HOME\n", "\n"), 2: ("ls", "")}


def test_cells_are_numbered_among_all_cells_and_joined_line_for_line():
    nb = read_notebook("t.ipynb", jupyter_json(notebook(IMPORTS, STEP, LOOP)).encode())
    assert nb.text.splitlines()[0] == f"{MAGIC_CALL}(matplotlib, inline)"
    assert nb.text.count("\n") == 3 + 3 + 5
    assert nb.locate(1) == (2, 1)      # the markdown cell is cell 1
    assert nb.locate(4) == (3, 1)
    assert nb.locate(7) == (4, 1)
    assert nb.cell_line(4, 1) == "!echo training"


# -- check --------------------------------------------------------------------


def test_missed_donation_in_a_notebook_is_reported_with_cell_and_line(tmp_path, jaxmem):
    write(tmp_path, "train.ipynb", jupyter_json(notebook(IMPORTS, STEP, LOOP)))
    result = jaxmem("check", "--no-cache", ".")
    assert result.returncode == 1, result.stderr
    line = result.stdout.splitlines()[0]
    assert line.startswith("train.ipynb:cell 3:1:1: JXM001 `train_step` does not donate `state`")
    assert "(high confidence)" in line

    finding = json.loads(jaxmem("check", "--no-cache", "--format", "json", "train.ipynb").stdout)["findings"][0]
    assert (finding["cell"], finding["line"], finding["col"]) == (3, 1, 1)
    assert finding["definition"] == {"path": "train.ipynb", "line": 1, "cell": 3}
    assert {(e["cell"], e["line"]) for e in finding["evidence"]} == {(4, 4)}

    sarif = json.loads(jaxmem("check", "--no-cache", "--format", "sarif", "train.ipynb").stdout)
    assert problems(sarif) == []
    result = sarif["runs"][0]["results"][0]
    assert result["properties"]["cell"] == 3
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


def test_show_source_prints_the_cells_own_line(tmp_path, jaxmem):
    write(tmp_path, "train.ipynb", jupyter_json(notebook(IMPORTS, STEP, LOOP)))
    lines = jaxmem("check", "--no-cache", "--show-source", "-q", "train.ipynb").stdout.splitlines()
    assert lines[1:] == ["    @jax.jit", "    ^^^^^^^^"]


def test_a_read_inside_a_magic_counts(tmp_path, jaxmem):
    donating = "from functools import partial\n" + STEP.replace("@jax.jit", "@partial(jax.jit, donate_argnums=0)")
    write(tmp_path, "read.ipynb", jupyter_json(notebook(
        IMPORTS, donating, "state = jnp.zeros(3)\nnew = train_step(state, jnp.ones(3))\n%time print(state)")))
    result = jaxmem("check", "--no-cache", "read.ipynb")
    assert result.stdout.startswith("read.ipynb:cell 4:3:"), result.stdout
    assert "JXM101" in result.stdout


def test_every_line_a_message_names_is_counted_in_cells(tmp_path, jaxmem):
    """"donated ... at line N" names the call's cell and line, not a line of the joined code."""
    donating = "from functools import partial\n" + STEP.replace("@jax.jit", "@partial(jax.jit, donate_argnums=0)")
    write(tmp_path, "read.ipynb", jupyter_json(notebook(
        IMPORTS, donating, "state = jnp.zeros(3)\nnew = train_step(state, jnp.ones(3))\nprint(state)")))
    line = jaxmem("check", "--no-cache", "read.ipynb").stdout.splitlines()[0]
    assert line.startswith("read.ipynb:cell 4:3:7: JXM101"), line
    assert "donated to `train_step` at cell 4, line 2 " in line, line


def test_a_read_inside_a_magic_keeps_a_donation_from_being_proposed(tmp_path, jaxmem):
    loop = "state = jnp.zeros(3)\nfor i in range(3):\n    new = train_step(state, jnp.ones(3))\n    %time print(state)\n    state = new"
    write(tmp_path, "keep.ipynb", jupyter_json(notebook(IMPORTS, STEP, loop)))
    plain = loop.replace("    %time print(state)\n", "")
    write(tmp_path, "plain.ipynb", jupyter_json(notebook(IMPORTS, STEP, plain)))
    assert "JXM001" not in jaxmem("check", "--no-cache", "keep.ipynb").stdout
    assert "JXM001" in jaxmem("check", "--no-cache", "plain.ipynb").stdout


@pytest.mark.parametrize("content, expected", [
    ('{"cells": [', "train.ipynb:1:12: JXM900 notebook is not valid JSON: Expecting value (line 1, column 12)"),
    ('{"nbformat": 3, "worksheets": []}', "train.ipynb:1:1: JXM900 not a Jupyter notebook (nbformat 4): no \"cells\" "
     "list; nbformat 3 notebooks are not read; convert it with `jupyter nbconvert --to notebook --nbformat 4`"),
    (jupyter_json(notebook(IMPORTS, "def f(:\n    pass")), "train.ipynb:cell 3:1:7: JXM900 could not parse"),
])
def test_a_notebook_that_does_not_parse_is_a_jxm900_naming_the_file_and_cell(tmp_path, jaxmem, content, expected):
    write(tmp_path, "train.ipynb", content)
    result = jaxmem("check", "--no-cache", ".")
    assert result.returncode == 1
    assert result.stdout.startswith(expected), result.stdout


def test_notebooks_are_discovered_by_default_and_excluded_by_glob(tmp_path, jaxmem):
    write(tmp_path, "nb/train.ipynb", jupyter_json(notebook(IMPORTS, STEP, LOOP)))
    assert "JXM001" in jaxmem("check", "--no-cache", ".").stdout
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nextend-exclude = ["*.ipynb"]\n')
    result = jaxmem("check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\ninclude = ["*.py"]\n')
    assert jaxmem("check", "--no-cache", ".").returncode == 0


def test_a_non_python_notebook_has_nothing_to_check(tmp_path, jaxmem):
    document = notebook("x <- 1")
    document["metadata"] = {"kernelspec": {"language": "R", "name": "ir"}, "language_info": {"name": "R"}}
    write(tmp_path, "r.ipynb", jupyter_json(document))
    assert jaxmem("check", "--no-cache", "r.ipynb").returncode == 0


# -- fix ----------------------------------------------------------------------


@pytest.mark.parametrize("layout", [jupyter_json, colab_json])
@pytest.mark.parametrize("list_source", [True, False])
def test_fix_changes_only_the_edited_cells_in_the_notebooks_own_layout(tmp_path, layout, list_source):
    document = notebook(IMPORTS, STEP, LOOP, list_source=list_source)
    original = layout(document)
    path = write(tmp_path, "train.ipynb", original)
    result = fix("train.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.ipynb:cell 3:1: train_step: donate `state`" in result.stdout

    fixed_text = path.read_text(encoding="utf-8")
    fixed = json.loads(fixed_text)
    # The layout: re-serialising the fixed document as the original was gives the file.
    assert layout(fixed) == fixed_text
    before, after = document["cells"], fixed["cells"]
    assert len(before) == len(after)
    for old, new in zip(before, after):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
        assert type(old["source"]) is type(new["source"])
    sources = ["".join(c["source"]) if list_source else c["source"] for c in after]
    assert sources[1].startswith("%matplotlib inline\n")  # the magic kept, verbatim
    assert "from functools import partial" in sources[1]
    assert sources[2] == STEP.replace("@jax.jit", "@partial(jax.jit, donate_argnums=0)")
    assert after[3] == before[3] and after[0] == before[0]
    assert fixed["metadata"] == document["metadata"]

    # Fixed once: nothing left to do, the file stays as it is.
    again = fix("train.ipynb", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert path.read_text(encoding="utf-8") == fixed_text


def test_the_fixed_notebook_runs_and_donates(tmp_path):
    path = write(tmp_path, "train.ipynb", jupyter_json(notebook(IMPORTS, STEP, LOOP)))
    assert fix("train.ipynb", cwd=tmp_path).returncode == 1
    namespace = run_cells(json.loads(path.read_text()))
    assert namespace["state"].tolist() == [3.0, 3.0, 3.0]
    import jax.numpy as jnp

    state = jnp.zeros(3)
    namespace["train_step"](state, jnp.ones(3))
    assert state.is_deleted()


def test_fix_diff_shows_each_changed_cell_and_writes_nothing(tmp_path):
    original = jupyter_json(notebook(IMPORTS, STEP, LOOP))
    path = write(tmp_path, "train.ipynb", original)
    result = fix("--diff", "train.ipynb", cwd=tmp_path)
    assert result.returncode == 1
    assert "--- a/train.ipynb:cell 3\n+++ b/train.ipynb:cell 3\n" in result.stdout
    assert "-@jax.jit\n+@partial(jax.jit, donate_argnums=0)\n" in result.stdout
    assert "--- a/train.ipynb:cell 4" not in result.stdout
    assert path.read_text() == original
    check = fix("--check", "train.ipynb", cwd=tmp_path)
    assert check.returncode == 1 and path.read_text() == original


def test_fix_refuses_a_layout_it_cannot_reproduce(tmp_path):
    odd = jupyter_json(notebook(IMPORTS, STEP, LOOP)).replace('"nbformat": 4', '"nbformat":   4')
    path = write(tmp_path, "train.ipynb", odd)
    result = fix("train.ipynb", cwd=tmp_path)
    assert result.returncode == 1
    assert "train.ipynb: its JSON layout is not one json.dumps writes" in result.stderr
    assert path.read_text() == odd


def test_the_fixed_notebooks_imports_pass_ruff_import_sorting(tmp_path):
    ruff = pytest.importorskip("ruff.__main__").find_ruff_bin()
    path = write(tmp_path, "train.ipynb", jupyter_json(notebook(IMPORTS, STEP, LOOP)))

    def sorting():
        import subprocess

        return subprocess.run([ruff, "check", "--isolated", "--select", "I", str(path)],
                              capture_output=True, text=True, check=False)

    assert sorting().returncode == 0
    assert fix("train.ipynb", cwd=tmp_path).returncode == 1
    assert "from functools import partial" in path.read_text()
    result = sorting()
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("cells, fixed_cell", [
    (("%matplotlib inline", "import jax\nimport jax.numpy as jnp"), 2),   # the import joins the imports' cell
    (("import os", "import jax\nimport jax.numpy as jnp"), 1),           # the stdlib section's cell
])
def test_a_new_import_goes_to_the_cell_of_its_section(tmp_path, cells, fixed_cell):
    path = write(tmp_path, "train.ipynb", jupyter_json(notebook(*cells, STEP, LOOP)))
    assert fix("train.ipynb", cwd=tmp_path).returncode == 1
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert [i for i, s in enumerate(sources) if "from functools import partial" in s] == [fixed_cell]
    assert sources[1].startswith(cells[0])


def test_cached_runs_report_the_same_cells(tmp_path, jaxmem):
    write(tmp_path, "pyproject.toml", "[project]\nname = 'demo'\n")
    write(tmp_path, "train.ipynb", jupyter_json(notebook(IMPORTS, STEP, LOOP)))
    first = jaxmem("check", "--format", "json", ".")
    assert (tmp_path / ".jaxmem_cache").is_dir()
    second = jaxmem("check", "--format", "json", ".")
    assert first.stdout == second.stdout
    assert json.loads(second.stdout)["findings"][0]["cell"] == 3


# -- writing back, without the CLI ---------------------------------------------


def test_write_back_keeps_magics_and_refuses_edits_it_cannot_place():
    from jaxmem.notebooks import NotebookError

    data = jupyter_json(notebook(IMPORTS, STEP, LOOP)).encode()
    nb = read_notebook("t.ipynb", data)
    assert nb.updated(nb.text) is data
    edited = nb.updated(nb.text.replace("return state + batch", "return batch + state"))
    cells = json.loads(edited)["cells"]
    assert "".join(cells[1]["source"]) == IMPORTS and "".join(cells[3]["source"]) == LOOP
    assert "".join(cells[2]["source"]) == STEP.replace("state + batch", "batch + state")
    with pytest.raises(NotebookError, match="t.ipynb:cell 2:1: an edit would change a line holding IPython magic"):
        nb.updated(nb.text.replace(f"{MAGIC_CALL}(matplotlib, inline)", "x = 1"))
    with pytest.raises(NotebookError, match="an edit would span two cells"):
        nb.updated(nb.text.replace("jnp\n@jax.jit\n", "jnp; jit = jax.jit\n"))


def test_write_back_keeps_a_bom_and_crlf_json():
    text = jupyter_json(notebook(IMPORTS, STEP, LOOP)).replace("\n", "\r\n")
    data = b"\xef\xbb\xbf" + text.encode()
    nb = read_notebook("t.ipynb", data)
    edited = nb.updated(nb.text.replace("state + batch", "batch + state"))
    assert edited.startswith(b"\xef\xbb\xbf{\r\n") and b"\n" not in edited.replace(b"\r\n", b"")
    assert edited.replace(b"batch + state", b"state + batch") == data


def test_cells_given_as_text_map_and_split_like_a_file():
    from jaxmem.notebooks import from_cells

    nb = from_cells("t.ipynb", [IMPORTS, STEP, LOOP])
    assert nb.locate(4) == (2, 1)  # no markdown cell here: the step is cell 2
    changed = nb.cell_sources(nb.text.replace("@jax.jit", "@partial(jax.jit, donate_argnums=0)"))
    assert changed == [(2, STEP, STEP.replace("@jax.jit", "@partial(jax.jit, donate_argnums=0)"))]

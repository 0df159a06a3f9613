"""``%load_ext jaxmem`` and ``%jaxmem`` in a real IPython shell running real JAX on the CPU."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython", reason="the IPython extension is tested with ipython (the test extras)")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from traitlets.config import Config  # noqa: E402

STEP = "@jax.jit\ndef step(state, x):\n    return state * 0.9 + x\n"
LOOP = "for i in range(3):\n    state = step(state, 1.0)\n"


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """A fresh IPython shell, its history in memory, run outside any project."""
    monkeypatch.chdir(tmp_path)
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance(config=config)
    yield shell
    shell.run_cell("%unload_ext jaxmem")
    InteractiveShell.clear_instance()


def run(shell, *cells):
    """Run each cell as a notebook would (into the history); the last cell's result."""
    result = None
    for cell in cells:
        result = shell.run_cell(cell, store_history=True)
    return result


def training_session(shell):
    run(shell, "%load_ext jaxmem", "import jax, jax.numpy as jnp", STEP, "state = jnp.ones((4, 4))", LOOP)


def test_it_reports_a_missed_donation_by_execution_count(shell, capsys):
    training_session(shell)
    capsys.readouterr()
    run(shell, "%jaxmem")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("In [3], line 1:1: JXM001 `step` does not donate `state`, which is dead after "
                               "every call"), lines
    assert lines[0].endswith("(high confidence)")
    assert lines[1] == ("jaxmem: 1 finding(s) in the 6 cell(s) run so far; 1 fixable: `%jaxmem --diff` shows "
                        "the edits, `%jaxmem --fix` makes them.")


def test_the_fixed_cell_comes_as_the_next_input_and_donates_when_run(shell, capsys):
    training_session(shell)
    run(shell, "%jaxmem --fix")
    assert "the fixed In [3] is in the next input" in capsys.readouterr().out
    fixed = shell.rl_next_input
    assert fixed == STEP.rstrip("\n").replace("@jax.jit", "@jax.jit(donate_argnums=0)")
    run(shell, fixed, "old = state\n" + LOOP)
    assert shell.user_ns["old"].is_deleted()  # the fixed step really took the state's buffers
    assert not shell.user_ns["state"].is_deleted()
    capsys.readouterr()
    run(shell, "%jaxmem")
    assert capsys.readouterr().out == ("jaxmem: no findings in the 9 cell(s) run so far (1 more on definitions "
                                       "a later cell replaced).\n")


def test_diff_shows_each_cell_edit_and_changes_nothing(shell, capsys):
    training_session(shell)
    capsys.readouterr()
    run(shell, "%jaxmem --diff")
    assert capsys.readouterr().out == (
        "--- In [3]\n+++ In [3] (fixed)\n@@ -1,3 +1,3 @@\n-@jax.jit\n+@jax.jit(donate_argnums=0)\n"
        " def step(state, x):\n     return state * 0.9 + x\n")
    assert getattr(shell, "rl_next_input", None) is None


def test_on_mode_names_a_read_of_a_donated_array_before_the_cell_raises(shell, capsys):
    run(shell, "%load_ext jaxmem", "%jaxmem on", "import jax, jax.numpy as jnp")
    assert "checking each cell before it runs from now on" in capsys.readouterr().out
    ran = []

    def said_before(info):
        ran.append(capsys.readouterr().out)

    shell.events.register("pre_run_cell", said_before)
    result = run(shell, "g = jax.jit(lambda a: a + 1, donate_argnums=0)\nb = jnp.ones(3)\nc = g(b)\nprint(b)")
    shell.events.unregister("pre_run_cell", said_before)
    assert "Array has been deleted" in str(result.error_in_exec)  # the bug is real
    # said before the cell ran (jaxmem's callback comes first)
    assert "In [4], line 4:7: JXM101 `b` is read here after it was donated to `g` at In [4], line 3" in ran[0]
    capsys.readouterr()  # the cell's traceback
    run(shell, "d = 1")
    assert capsys.readouterr().out == ""  # said once, not before every cell
    run(shell, "def broken(:\n    pass")  # does not compile: not checked, nothing said
    assert "jaxmem" not in capsys.readouterr().out
    run(shell, "%jaxmem off", "e = b")
    assert capsys.readouterr().out == "jaxmem: no longer checking each cell.\n"


def test_a_cell_that_did_not_compile_and_magics_do_not_hide_the_rest(shell, capsys):
    run(shell, "%load_ext jaxmem", "import jax, jax.numpy as jnp", "def broken(:\n    pass", STEP,
        "%time state = jnp.ones((4, 4))", "%%time\n" + LOOP)
    capsys.readouterr()
    run(shell, "%jaxmem")
    assert capsys.readouterr().out.startswith("In [4], line 1:1: JXM001 `step` does not donate `state`")


@pytest.mark.parametrize("line, expected", [
    ("%jaxmem --bogus", "unrecognized arguments: --bogus\nusage: %jaxmem"),
    ("%jaxmem --min-confidence extreme", "jaxmem: error: %jaxmem: --min-confidence: 'extreme' is not a confidence"),
    ("%jaxmem '", "%jaxmem: No closing quotation; see %jaxmem --help"),
    ("%jaxmem --help", "usage: %jaxmem"),
])
def test_bad_options_say_what_is_wrong_without_a_traceback(shell, capsys, line, expected):
    run(shell, "%load_ext jaxmem")
    result = run(shell, line)
    assert result.success
    assert capsys.readouterr().out.startswith(expected)


def test_a_bug_in_on_mode_is_said_once_and_stops_it(shell, capsys, monkeypatch):
    import jaxmem.ipython

    run(shell, "%load_ext jaxmem", "%jaxmem on")

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(jaxmem.ipython, "check_session", broken)
    capsys.readouterr()
    assert run(shell, "x = 1").success  # the user's cell is not disturbed
    assert capsys.readouterr().out.startswith("jaxmem: internal error (KeyError: 'boom'); stopped checking each")
    run(shell, "y = 2")
    assert capsys.readouterr().out == ""


# -- %jaxmem confirm: the session's own run settles what the analysis cannot prove ----------

LOGGERS = {
    "forgets": "def log(x):\n    pass\n",  # only looks: the donation is safe
    "keeps": "kept = []\ndef log(x):\n    kept.append(x)\n",  # a list holds every state
    "remembers": "last = None\ndef log(x):\n    global last\n    last = x\n",  # a global the next cell reads
}


def logged_session(shell, tmp_path, behaviour):
    """A session whose `step` is proposed at medium confidence only: the state goes to a
    logger jaxmem cannot see into (a module outside any project)."""
    module = f"logger_that_{behaviour}"  # one name per behaviour: sys.modules outlives the shell
    (tmp_path / f"{module}.py").write_text(LOGGERS[behaviour])
    loop = f"for i in range(3):\n    {module}.log(state)\n    state = step(state, 1.0)\n"
    run(shell, "%load_ext jaxmem", f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport jax, jax.numpy as jnp\n"
        f"import {module}", STEP, "state = jnp.ones((4, 4))", loop)
    return loop


def test_confirm_applies_a_medium_proposal_the_run_confirmed_and_it_really_donates(shell, tmp_path, capsys):
    loop = logged_session(shell, tmp_path, "forgets")
    capsys.readouterr()
    run(shell, "%jaxmem")
    out = capsys.readouterr().out
    assert "(medium confidence: it was passed to `logger_that_forgets.log(state)`" in out
    assert "1 more at lower confidence: `%jaxmem confirm on`, then running the cells again, settles them" in out
    run(shell, "%jaxmem --diff")
    assert capsys.readouterr().out.startswith("jaxmem: nothing to fix; 1 proposal(s) below high confidence")
    run(shell, "%jaxmem confirm on", STEP, loop)  # In [9] defines step again, In [10] trains: watched
    capsys.readouterr()
    run(shell, "%jaxmem confirm")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("In [9], line 1: step: donate `state` (medium confidence): CONFIRMED: 3 call(s) "
                               "observed, 3 made with the donation, all clean; an output reuses 1 of 1 leaves (64 B")
    assert "jaxmem confirm (watching): 1 confirmed, 0 refuted, 0 not observed." in lines
    run(shell, "%jaxmem confirm off", "%jaxmem --fix")
    assert "the fixed In [9] is in the next input" in capsys.readouterr().out
    fixed = shell.rl_next_input
    assert fixed == STEP.rstrip("\n").replace("@jax.jit", "@jax.jit(donate_argnums=0)")
    run(shell, fixed, "old = state\n" + loop)
    assert shell.user_ns["old"].is_deleted()  # the applied fix really donates, outside any watch
    assert not shell.user_ns["state"].is_deleted()
    import jax

    assert not hasattr(jax.jit, "__jaxmem_original__")  # the watch is over: jax.jit is jax's own again


def test_on_and_confirm_on_check_each_cell_once_and_both_see_it(shell, tmp_path, capsys, monkeypatch):
    import jaxmem.ipython

    checks = []
    real = jaxmem.ipython.check_session

    def counted(sources, settings, **options):
        checks.append(settings.min_confidence.value)
        return real(sources, settings, **options)

    monkeypatch.setattr(jaxmem.ipython, "check_session", counted)
    module = "logger_that_forgets_too"  # see logged_session
    (tmp_path / f"{module}.py").write_text(LOGGERS["forgets"])
    run(shell, "%load_ext jaxmem", "%jaxmem on --min-confidence medium", "%jaxmem confirm on")
    capsys.readouterr()
    checks.clear()
    cells = [f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport jax, jax.numpy as jnp\nimport {module}",
             STEP, "state = jnp.ones((4, 4))",
             f"for i in range(3):\n    {module}.log(state)\n    state = step(state, 1.0)\n"]
    run(shell, *cells)
    assert checks == ["low"] * len(cells)  # one check a cell for both watches, at any confidence
    said = capsys.readouterr().out
    assert "JXM001 `step` does not donate `state`" in said and "(medium confidence" in said  # on's part of it
    run(shell, "%jaxmem confirm")
    assert "step: donate `state` (medium confidence): CONFIRMED" in capsys.readouterr().out  # confirm's part


def test_confirm_refutes_a_state_that_a_list_also_holds_and_never_applies_it(shell, tmp_path, capsys):
    loop = logged_session(shell, tmp_path, "keeps")
    run(shell, "%jaxmem confirm on", STEP)
    capsys.readouterr()
    result = run(shell, loop)
    assert result.success  # the watch did not donate: the program runs as written
    assert not any(x.is_deleted() for x in shell.user_ns["logger_that_keeps"].kept)
    said = capsys.readouterr().out
    assert said.startswith("jaxmem confirm: In [7], line 1: step: not donating `state` any more: `state` is also "
                           "held by a list (the global `kept` of module logger_that_keeps)"), said
    run(shell, "%jaxmem --diff --unsafe-fixes", "%jaxmem")
    out = capsys.readouterr().out
    assert out.startswith("jaxmem: nothing to fix.\n"), out  # refuted: not even --unsafe-fixes applies it
    assert "[refuted by this session's run]" in out
    assert "1 refuted by this session's run (`%jaxmem confirm` says why)." in out


def test_confirm_names_the_cell_that_read_a_donated_state(shell, tmp_path, capsys):
    loop = logged_session(shell, tmp_path, "remembers")
    run(shell, "%jaxmem confirm on", STEP, loop)
    capsys.readouterr()
    result = run(shell, "float(logger_that_remembers.last.sum())")  # the state of the last call: donated
    assert "Array has been deleted" in str(result.error_in_exec)
    said = capsys.readouterr().out.splitlines()[-1]
    assert said == ("jaxmem confirm: In [7], line 1: step: not donating `state` any more: `state` was read at "
                    "In [9], line 1 in <module>() after the call at In [8], line 3 donated it; the error above "
                    "comes from this watch's donation, not from your code: run the cells that make it again (the "
                    "watch no longer donates it)")
    run(shell, "state = jnp.ones((4, 4))", loop, "print(round(float(logger_that_remembers.last.sum()), 2))")
    assert capsys.readouterr().out == "43.36\n"  # run again: no longer donated, the program reads its state
    run(shell, "%jaxmem confirm")
    assert "    read-after: `state` was read at In [9], line 1 in <module>()" in capsys.readouterr().out


def test_confirm_says_how_to_start_and_rejects_a_switch_without_it(shell, capsys):
    run(shell, "%load_ext jaxmem", "%jaxmem confirm", "%jaxmem on off")
    assert capsys.readouterr().out == (
        "jaxmem confirm: nothing watched yet: `%jaxmem confirm on`, then run the cells that define and call your "
        "jitted functions.\n%jaxmem: `off` follows only `confirm`; see %jaxmem --help\n")


# -- project files the session calls ----------------------------------------------------------

def test_a_project_function_the_session_calls_is_reported_fixed_on_disk_and_donates_once_reloaded(
        shell, tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("")
    module = tmp_path / "project_train.py"
    module.write_text("import jax\n\n\n" + STEP)
    run(shell, "%load_ext jaxmem", f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport jax.numpy as jnp\n"
        "import project_train\nfrom project_train import step", "state = jnp.ones((4, 4))\n" + LOOP)
    capsys.readouterr()
    run(shell, "%jaxmem")
    assert capsys.readouterr().out == (
        "project_train.py:4:1: JXM001 `step` does not donate `state`, which is dead after every call and rebound "
        "from the result: add donate_argnums=(0,) to reuse its memory (high confidence) (called from In [3], "
        "line 3)\njaxmem: 1 finding(s) in the 4 cell(s) run so far and the project files they call; 1 project "
        "file(s) to fix: `%jaxmem --diff` shows the edits, `%jaxmem --fix` writes them.\n")
    run(shell, "%jaxmem --diff")
    assert "-@jax.jit\n+@jax.jit(donate_argnums=0)\n" in capsys.readouterr().out
    assert module.read_text() == "import jax\n\n\n" + STEP  # --diff writes nothing
    run(shell, "%jaxmem --fix")
    assert capsys.readouterr().out.startswith("jaxmem: added 1 donation(s) to project_train.py; the session still "
                                              "runs the old definitions: reload the module")
    assert module.read_text() == "import jax\n\n\n" + STEP.replace("@jax.jit", "@jax.jit(donate_argnums=0)")
    run(shell, "import importlib\nimportlib.reload(project_train)\nfrom project_train import step",
        "old = state\n" + LOOP)
    assert shell.user_ns["old"].is_deleted()  # the fixed file, reloaded, really donates
    capsys.readouterr()
    run(shell, "%jaxmem")
    assert capsys.readouterr().out == "jaxmem: no findings in the 9 cell(s) run so far.\n"


def test_a_project_file_edited_since_the_check_is_left_alone(shell, tmp_path, capsys, monkeypatch):
    import jaxmem.ipython

    (tmp_path / "pyproject.toml").write_text("")
    module = tmp_path / "project_train_edited.py"
    module.write_text("import jax\n\n\n" + STEP)
    run(shell, "%load_ext jaxmem", f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport jax.numpy as jnp\n"
        "from project_train_edited import step", "state = jnp.ones((4, 4))\n" + LOOP)
    check_session = jaxmem.ipython.check_session

    def edited_while_checking(*args, **kwargs):  # an editor saves between the check and the write
        check = check_session(*args, **kwargs)
        module.write_text(module.read_text() + "# edited\n")
        return check

    monkeypatch.setattr(jaxmem.ipython, "check_session", edited_while_checking)
    capsys.readouterr()
    run(shell, "%jaxmem --fix")
    assert capsys.readouterr().out == ("jaxmem: cannot fix: project_train_edited.py: changed since the check; run "
                                       "%jaxmem again\n")
    assert module.read_text().endswith("    return state * 0.9 + x\n# edited\n")


def test_confirm_settles_a_project_function_once_its_module_is_reloaded(shell, tmp_path, tmp_path_factory, capsys):
    (tmp_path / "pyproject.toml").write_text("")
    module = tmp_path / "project_train_logged.py"
    module.write_text("import jax\n\n\n" + STEP)
    elsewhere = tmp_path_factory.mktemp("outside_the_project")  # a logger jaxmem cannot read
    (elsewhere / "outside_logger.py").write_text(LOGGERS["forgets"])
    loop = "for i in range(3):\n    outside_logger.log(state)\n    state = step(state, 1.0)\n"
    run(shell, "%load_ext jaxmem", f"import sys\nsys.path[:0] = [{str(tmp_path)!r}, {str(elsewhere)!r}]\n"
        "import jax.numpy as jnp\nimport outside_logger\nimport project_train_logged\n"
        "from project_train_logged import step", "state = jnp.ones((4, 4))\n" + loop)
    capsys.readouterr()
    run(shell, "%jaxmem")
    out = capsys.readouterr().out
    assert out.startswith("project_train_logged.py:4:1: JXM001 `step` does not donate `state`") and \
        "(medium confidence: it was passed to `outside_logger.log(state)`" in out, out
    assert out.endswith("1 more at lower confidence: `%jaxmem confirm on`, then running the cells again, settles "
                        "them on this session's run.\n")
    run(shell, "%jaxmem confirm on", "import importlib\nimportlib.reload(project_train_logged)\n"
        "from project_train_logged import step", loop)
    capsys.readouterr()
    run(shell, "%jaxmem confirm")
    assert capsys.readouterr().out.startswith(
        "project_train_logged.py:4: step: donate `state` (medium confidence): CONFIRMED: 3 call(s) observed")
    run(shell, "%jaxmem confirm off", "%jaxmem --fix")
    assert "jaxmem: added 1 donation(s) to project_train_logged.py" in capsys.readouterr().out
    assert module.read_text() == "import jax\n\n\n" + STEP.replace("@jax.jit", "@jax.jit(donate_argnums=0)")


def test_confirm_without_jax_says_what_to_install(shell, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_jax(name, *args, **kwargs):
        if name == "jax" or name.startswith("jax."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    run(shell, "%load_ext jaxmem")
    capsys.readouterr()
    monkeypatch.setattr(builtins, "__import__", no_jax)
    run(shell, "%jaxmem confirm on")
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert capsys.readouterr().out.startswith("jaxmem confirm: needs jax in this kernel (No module named 'jax")
    run(shell, "%jaxmem confirm")
    assert capsys.readouterr().out.startswith("jaxmem confirm: nothing watched yet")

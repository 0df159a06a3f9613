"""A module (or a notebook, cell after cell) that defines ``train_step`` twice and
calls each right after its definition: a module-level call reaches only the one
definition whose binding reaches it, so each definition is judged by its own
calls.  The default ``jaxmem-fix`` donates the state of both, and the fixed
program prints the same with its old arrays deleted (jax 0.10.2).  Where code
jaxmem does not follow may rebind the name (``global`` in a function), or two
bindings may reach a call, every call still counts for every definition."""

import sys

import pytest
from fix_runs import as_notebook, crashes_when_forced, fix, fix_and_rerun, notebook_code, run

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")

ALL = Settings(min_confidence=Confidence.LOW)

PROGRAM = """
import jax
import jax.numpy as jnp

DELETED = []


@jax.jit
def train_step(state, batch):
    return jax.tree.map(lambda v: v - 0.1 * batch.mean(), state)


state = {"w": jnp.ones((4, 4))}
for _ in range(3):
    old = state["w"]
    state = train_step(state, jnp.ones(4))
    DELETED.append(old.is_deleted())


@jax.jit
def train_step(state, batch, scale):
    return jax.tree.map(lambda v: v * scale - batch.mean(), state)


for _ in range(3):
    old = state["w"]
    state = train_step(state, jnp.ones(4), 0.5)
    DELETED.append(old.is_deleted())
print(float(state["w"].sum()))
"""


def _proposed(source: str, path: str = "m.py") -> list[tuple[int, str, str]]:
    """``(definition line, parameter, confidence)`` of each JXM001 on ``source``."""
    facts = facts_for_file(path, source, ALL, project_hints({path: source}))
    (result,) = report([facts], ALL)
    return sorted((f.span.line, f.parameter_name, f.confidence.value) for f in result.findings if f.code == "JXM001")


def test_each_redefinition_is_judged_by_its_own_calls_and_the_fixed_program_donates(tmp_path):
    assert _proposed(PROGRAM) == [(8, "state", "high"), (20, "state", "high")]
    path = fix_and_rerun(tmp_path, PROGRAM)
    assert path.read_text().count("donate_argnums=0") == 2
    namespace = {"__name__": "fixed"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    assert namespace["DELETED"] == [True] * 6
    exec(compile(PROGRAM, "original", "exec"), original := {"__name__": "original"})
    assert original["DELETED"] == [False] * 6


def test_a_notebook_that_redefines_its_step_in_a_later_cell_is_fixed_cell_by_cell(tmp_path):
    notebook = as_notebook(PROGRAM)
    path, result = fix(tmp_path, notebook, name="train.ipynb")
    assert result.returncode == 1, result.stdout + result.stderr
    code = notebook_code(path)
    assert code.count("donate_argnums=0") == 2
    namespace = {"__name__": "notebook"}
    exec(compile(code, "notebook", "exec"), namespace)
    assert namespace["DELETED"] == [True] * 6


def test_a_global_rebinding_in_a_function_keeps_every_call_for_every_definition(tmp_path):
    source = PROGRAM.replace('DELETED = []\n', 'DELETED = []\n\n\ndef reset():\n    global train_step\n'
                             '    train_step = None\n')
    assert run(sys.executable, "-c", source, cwd=tmp_path).returncode == 0
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    assert [call.binding for call in facts.calls if call.callee == ("train_step",)] == [None, None]
    # The second call does not fit the first definition: it is not proposed.
    assert [line for line, _, _ in _proposed(source)] == [25]


def test_a_call_two_bindings_may_reach_keeps_every_definition(tmp_path):
    source = PROGRAM.replace("\n\nfor _ in range(3):\n    old = state[\"w\"]\n    state = train_step(state, jnp.ones(4), 0.5)",
                             "\n\nif len(DELETED) > 99:\n    train_step = jax.jit(lambda state, batch, scale: state)\n"
                             "for _ in range(3):\n    old = state[\"w\"]\n    state = train_step(state, jnp.ones(4), 0.5)")
    assert source != PROGRAM
    assert run(sys.executable, "-c", source, cwd=tmp_path).returncode == 0
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    assert [call.binding for call in facts.calls if call.callee == ("train_step",)] == [(8, 10), None]
    # The second call reaches every definition and does not fit the first: only the others are proposed.
    assert 8 not in [line for line, _, _ in _proposed(source)]


LAZY = """
import jax
import jax.numpy as jnp


@jax.jit
def train_step(state, batch):
    return state + batch


states = [jnp.ones(4)]
pending = (train_step(s, 1.0) for s in states)


@jax.jit
def train_step(state, batch):
    return state * batch


done = list(pending)
print(float(states[0].sum()))
state = jnp.ones(4)
for _ in range(3):
    state = train_step(state, 2.0)
print(float(state.sum()))
"""


def test_a_call_in_a_generator_runs_when_consumed_so_it_counts_for_every_definition(tmp_path):
    facts = facts_for_file("m.py", LAZY, ALL, project_hints({"m.py": LAZY}))
    assert [call.binding for call in facts.calls if call.callee == ("train_step",)] == [None, (15, 17)]
    assert (15, "state", "high") not in _proposed(LAZY)
    path, result = fix(tmp_path, LAZY)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == LAZY
    # The generator calls the second definition: donating there deletes states[0], read after.
    crashes_when_forced(tmp_path, "import functools\n" + LAZY,
                        "@jax.jit\ndef train_step(state, batch):\n    return state * batch",
                        "@functools.partial(jax.jit, donate_argnums=0)\ndef train_step(state, batch):\n"
                        "    return state * batch")


# flax's optimization cookbook: a later cell defines ``train_step`` again without a jit (L-BFGS
# needs the loss function) and calls it with another model and optimizer
PLAIN_AGAIN = PROGRAM[:PROGRAM.index("\n\n@jax.jit\ndef train_step(state, batch, scale)")] + """


def train_step(state, batch):
    return jax.tree.map(lambda v: v - batch.mean(), state)


kept = {"w": jnp.ones((4, 4))}
other = train_step(kept, jnp.ones(4))
print(float(kept["w"].sum()), float(other["w"].sum()), float(state["w"].sum()))
"""


def test_a_call_of_a_plain_def_of_the_same_name_counts_for_no_jit(tmp_path):
    facts = facts_for_file("m.py", PLAIN_AGAIN, ALL, project_hints({"m.py": PLAIN_AGAIN}))
    assert [call.binding for call in facts.calls if call.callee == ("train_step",)] == [(8, 10), (0, 0)]
    # ``kept``, read after the plain def's call, no longer keeps the jitted step at medium
    assert _proposed(PLAIN_AGAIN) == [(8, "state", "high")]
    path = fix_and_rerun(tmp_path, PLAIN_AGAIN)
    assert "donate_argnums=0" in path.read_text()
    namespace = {"__name__": "fixed"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    assert namespace["DELETED"] == [True] * 3


def test_a_call_a_plain_def_or_a_jit_may_reach_counts_for_the_jit(tmp_path):
    source = PLAIN_AGAIN.replace("\n\ndef train_step(state, batch):\n    return jax.tree.map(lambda v: v - batch.mean(), state)",
                                 "\n\nif len(DELETED) > 99:\n    def train_step(state, batch):\n"
                                 "        return jax.tree.map(lambda v: v - batch.mean(), state)")
    assert source != PLAIN_AGAIN
    assert run(sys.executable, "-c", source, cwd=tmp_path).returncode == 0
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    assert [call.binding for call in facts.calls if call.callee == ("train_step",)] == [(8, 10), None]
    # the jit may run on ``kept``, read after: not high
    assert (8, "state", "high") not in _proposed(source)
    crashes_when_forced(tmp_path, "import functools\n" + source.replace("> 99", "< 0"),
                        "@jax.jit\ndef train_step(state, batch):",
                        "@functools.partial(jax.jit, donate_argnums=0)\ndef train_step(state, batch):")

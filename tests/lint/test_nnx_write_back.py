"""nnx's functional API: a read of the split Module after ``nnx.update`` writes back the
step's whole state reads new arrays only (``lint/values/nnx_write_back.py``).

The facts the rule rests on are checked on flax itself; each variant the rule must not
accept stays medium, and one of them is run to show its crash is real."""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

nnx = pytest.importorskip("flax.nnx")

ALL = Settings(min_confidence=Confidence.LOW)

PROGRAM = '''
import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 4, rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)

    def __call__(self, x):
        return self.bn(self.linear(x))


@jax.jit
def train_step(graphdef, state, x):
    model = nnx.merge(graphdef, state)
    model.linear.kernel[...] = model.linear.kernel[...] * 0.5
    y = model(x)
    STATE
    return y.mean(0), state  # a (4,) output: a donated batch statistic fits it


def main():
    model = Model(nnx.Rngs(0))
    graphdef, state = SPLIT
    x = jnp.ones((8, 2))
    for _ in range(STEPS):
        loss, state = train_step(graphdef, state, x)
    READ_BEFORE
    nnx.update(model, UPDATED)
    model.eval()
    print("eval", round(float(model(x).sum()), 3))


if __name__ == "__main__":
    main()
'''

WHOLE = {"STATE": "state = nnx.state(model)", "SPLIT": "nnx.split(model)", "READ_BEFORE": "pass",
         "UPDATED": "state", "STEPS": "3"}


def _program(**changes) -> str:
    text = PROGRAM
    for slot, code in {**WHOLE, **changes}.items():
        text = text.replace(slot, code)
    return textwrap.dedent(text)


def _confidence(source: str) -> str | None:
    hints = project_hints({"m.py": source})
    (result,) = report([facts_for_file("m.py", source, ALL, hints)], ALL)
    found = [f.confidence.value for f in result.findings if f.code == "JXM001" and f.parameter_name == "state"]
    return found[0] if found else None


def test_flax_facts_the_rule_rests_on():
    # nnx.merge takes only a complete state; nnx.state with no filter returns every Variable;
    # nnx.update writes each Variable of the state into the Module (flax 0.12.8)
    model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0)))
    graphdef, state = nnx.split(model)
    with pytest.raises(ValueError, match="number of leaves"):
        nnx.merge(graphdef, nnx.state(model, nnx.Param))
    merged = nnx.merge(graphdef, state)
    whole = nnx.state(merged)
    assert jax.tree_util.tree_structure(whole) == jax.tree_util.tree_structure(state)
    new = jax.tree.map(lambda a: a + 1, whole)
    old = {id(leaf) for leaf in jax.tree.leaves(state)}
    nnx.update(model, new)
    assert not old & {id(leaf) for leaf in jax.tree.leaves(nnx.state(model))}


def test_the_whole_state_written_back_makes_reads_after_the_update_safe():
    assert _confidence(_program()) == "high"


@pytest.mark.parametrize("changes", [
    pytest.param({"STATE": "state = nnx.state(model, nnx.Param)"}, id="step-returns-a-filtered-state"),
    pytest.param({"SPLIT": "nnx.split(model, nnx.Param, ...)[:2]"}, id="split-with-a-filter"),
    pytest.param({"UPDATED": "nnx.state(model)"}, id="update-with-another-state"),
    pytest.param({"READ_BEFORE": "print(model.linear.kernel[...].sum())"}, id="read-before-the-update"),
    pytest.param({"STATE": "state = nnx.state(model)\n    if x.shape[0] > 4:\n        return y.mean(0), x"},
                 id="a-return-without-the-state"),
    pytest.param({"STATE": "del y\n    state = nnx.state(model)\n    y = x"}, id="a-del-in-the-body"),
])
def test_what_the_rule_does_not_accept_stays_medium(changes):
    assert _confidence(_program(**changes)) == "medium"


def _run_donated(tmp_path, source: str) -> subprocess.CompletedProcess:
    path = tmp_path / "train.py"
    path.write_text(source.replace("@jax.jit\n", "@jax.jit(donate_argnums=1)\n"))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)


def test_the_fixed_whole_state_program_runs_and_the_filtered_one_crashes(tmp_path):
    plain = subprocess.run([sys.executable, "-c", _program()], capture_output=True, text=True, timeout=300)
    donated = _run_donated(tmp_path, _program())
    assert donated.returncode == 0 and donated.stdout == plain.stdout != "", donated.stderr
    # one step (a second would fail in nnx.merge, donated or not) returning the batch statistics
    # only: the parameters the step read were donated and one of them went to an output, but
    # nnx.update writes back only the statistics, and the evaluation reads a deleted array
    filtered = _program(STATE="state = nnx.state(model, nnx.BatchStat)", STEPS="1")
    assert subprocess.run([sys.executable, "-c", filtered], capture_output=True, timeout=300).returncode == 0
    crashed = _run_donated(tmp_path, filtered)
    assert crashed.returncode != 0 and "Buffer has been deleted or donated" in crashed.stderr, crashed.stderr[-2000:]


def test_a_step_defined_in_the_training_function_counts_too():
    # flax's own benchmark (benchmarks/nnx_mlpmixer_training.py) defines its step in main()
    source = textwrap.dedent('''
        import jax
        from flax import nnx

        def main(model, batches):
            graphdef, state = nnx.split(model)

            @jax.jit
            def train_step(graphdef, state, x):
                model = nnx.merge(graphdef, state)
                loss = model(x).mean()
                return loss, nnx.state(model)

            for x in batches:
                loss, state = train_step(graphdef, state, x)
            nnx.update(model, state)
            return model
    ''')
    # `model` is the caller's (a parameter): medium for that, not for the reads after the update
    hints = project_hints({"m.py": source})
    (result,) = report([facts_for_file("m.py", source, ALL, hints)], ALL)
    (finding,) = [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "state"]
    assert "read again" not in finding.message, finding.message
    owned = source.replace("def main(model, batches):",
                           "def main(batches):\n    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))")
    assert _confidence(owned) == "high"


@pytest.mark.parametrize("changes", [
    # flax's nnx_basics: the state of a split in the step
    pytest.param({"STATE": "_, state = nnx.split(model)"}, id="split-in-the-step"),
])
def test_other_spellings_of_the_whole_state(changes):
    assert _confidence(_program(**changes)) == "high"


def test_a_step_returning_the_whole_split_rebinds_both_parts():
    # flax's jax_and_nnx_transforms guide: ``return nnx.split(model)``,
    # ``graphdef, state = train_step(graphdef, state, x)``
    source = _program().replace("    STATE_UNUSED", "")
    source = source.replace("    state = nnx.state(model)\n    return y.mean(0), state  # a (4,) output: a donated "
                            "batch statistic fits it", "    return nnx.split(model)")
    source = source.replace("loss, state = train_step(graphdef, state, x)", "graphdef, state = train_step(graphdef, state, x)")
    assert "return nnx.split(model)" in source and "graphdef, state = train_step" in source
    assert _confidence(source) == "high"
    # the graphdef taken from another output is not the split's
    swapped = source.replace("graphdef, state = train_step(graphdef, state, x)", "state, graphdef = train_step(graphdef, state, x)")
    assert _confidence(swapped) != "high"


def test_the_step_a_notebook_defined_last_is_the_one_checked():
    # a notebook defines its step again in a later cell: the def that reaches the call counts
    program = _program().replace("def main():", "def unused():\n    pass\n\n\ndef main():")
    top = program.index("@jax.jit")
    body = program[top:program.index("def unused():")]
    filtered = body.replace("state = nnx.state(model)", "state = nnx.state(model, nnx.Param)")
    script = "\n".join(line[4:] if line.startswith("    ") else line
                       for line in program[program.index("def main():"):].splitlines()[1:])
    script = script.split('if __name__')[0]
    header = program[:top]
    redefined_whole = header + filtered + body + script
    redefined_filtered = header + body + filtered + script
    assert _confidence(redefined_whole) == "high"
    assert _confidence(redefined_filtered) == "medium"


@pytest.mark.parametrize("statement", [
    "model.bn = None",  # the statistics leave the graph: nnx.state no longer returns them
    "model.linear.kernel = model.linear.kernel[...] * 2",  # a Variable replaced by an array
    "delattr(model, 'bn')",
    "model.linear.kernel[0] = 1.0",
])
def test_a_step_that_may_change_the_graph_stays_medium(statement):
    source = _program().replace("    y = model(x)\n", f"    y = model(x)\n    {statement}\n")
    assert statement in source
    assert _confidence(source) == "medium"


def test_setting_a_variables_value_keeps_the_graph():
    source = _program().replace("    y = model(x)\n", "    y = model(x)\n    model.linear.bias.value = y.mean(0)\n")
    assert _confidence(source) == "high"



def test_the_nnx_module_is_no_holder_of_what_nnx_update_is_given():
    # flax's performance guide, at module level: ``nnx.update((model,), state)`` looks like
    # a container's ``update``, and the step, a function that reads ``nnx``, may run later;
    # the module ``nnx`` holds no array
    source = textwrap.dedent('''
        import jax
        import jax.numpy as jnp
        from flax import nnx

        model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        graphdef, state = nnx.split((model,))

        @jax.jit
        def train_step(graphdef, state, x):
            (model,) = nnx.merge(graphdef, state)
            model.kernel[...] = model.kernel[...] * 0.5
            return model(x).mean(), nnx.state((model,))

        for _ in range(3):
            loss, state = train_step(graphdef, state, jnp.ones((8, 2)))

        nnx.update((model,), state)
    ''')
    assert _confidence(source) == "high"

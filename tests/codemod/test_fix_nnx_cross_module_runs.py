"""An ``nnx.jit`` step defined in one module and called from another, the layout
most nnx projects have (flax 0.12.8, optax 0.2.8).

``model_lib.py`` defines the Module and the train step; ``train.py`` imports
them, makes the model and its optimizer and runs the loop.  The call in
``train.py`` reaches an ``nnx.jit`` definition of the project (the join checks
it, as for a step of the same file), so the model and the optimizer are
proved to own their arrays and the default ``jaxmem-fix`` donates both in
``model_lib.py``: the fixed project trains the same and the arrays each
object was made with are deleted (recorded by a runner the analysis never
sees).  The same holds when ``train.py`` gets both objects from a factory
function of ``model_lib.py`` (``model, optimizer = create(0)``): the join reads
what that function returns from its module's facts.

A project function that is not an ``nnx.jit`` step may take the arrays out
of the model (``first_kernel(model)`` returns a Variable's very array): passing
the model to one keeps the proposal at medium, the default fix leaves
the model alone (the optimizer, which holds moments of its own, is still
donated), and the donation it would have written for the model really crashes;
so do the objects of a factory that keeps one of the model's arrays.
"""

from pathlib import Path

import pytest

from fix_runs import findings_of, left_alone_then_crashes, rerun_recorded_after_fix, run, run_strict, tool

pytest.importorskip("flax")
pytest.importorskip("optax")

MODEL_LIB = """\
import jax.numpy as jnp
import optax
from flax import nnx

KEPT = []


class Model(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x):
        return self.lin(x)


@nnx.jit
def train_step(model, optimizer, batch):
    loss, grads = nnx.value_and_grad(lambda m: (m(batch) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def eval_step(model, batch):
    return (model(batch) ** 2).mean()


def first_kernel(model):
    return model.lin.kernel[...]


def create(seed, lr=1e-2):
    model = Model(nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
    return model, optimizer


def create_keeping(seed):
    model = Model(nnx.Rngs(seed))
    KEPT.append(model.lin.kernel[...])
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    return model, optimizer
"""

MADE_HERE = """model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)"""

# how train.py names the step (imported by name, or through its module) and makes the objects
# (itself, or by the factory of model_lib.py)
IMPORTS = {
    "from-import": ("from model_lib import Model, eval_step, train_step\n", "train_step", MADE_HERE),
    "module-import": ("import model_lib\nfrom model_lib import Model\n", "model_lib.train_step", MADE_HERE),
    "factory": ("from model_lib import create, eval_step, train_step\n", "train_step", "model, optimizer = create(0)"),
    "factory-of-module": ("import model_lib\n", "model_lib.train_step", "model, optimizer = model_lib.create(0)"),
}

TRAIN = """\
import jax.numpy as jnp
import optax
from flax import nnx

{imports}

def main():
    {make}{before}
    for step in range(3):
        loss = {step}(model, optimizer, jnp.arange(8.0).reshape(2, 4) * step)
        print("loss", round(float(loss), 4), round(float({eval}(model, jnp.ones((2, 4)))), 4)){after}


main()
"""

CLASSES = {"model": "Linear", "optimizer": "Optimizer"}  # what the runner records


def _project(folder: Path, form: str, before: str = "", after: str = "") -> None:
    imports, step, make = IMPORTS[form]
    (folder / "pyproject.toml").write_text("")
    (folder / "model_lib.py").write_text(MODEL_LIB)
    (folder / "train.py").write_text(TRAIN.format(imports=imports, step=step, make=make, before=before, after=after,
                                                  eval=step.replace("train_step", "eval_step")))


@pytest.mark.parametrize("form", sorted(IMPORTS))
def test_a_step_imported_from_another_module_is_donated_and_trains_the_same(tmp_path, form):
    _project(tmp_path, form)
    found = findings_of(tmp_path, "train_step")
    assert {name: confidence for name, (confidence, _) in found.items()} == \
        {"model": "high", "optimizer": "high"}, found
    # a partial run of the defining module reads its callers too (pre-commit's staged file)
    assert findings_of(tmp_path, "train_step", "model_lib.py") == found

    # the eval step only reads the model: nnx.jit returns it (a copy per call), so it is donated too
    rerun_recorded_after_fix(tmp_path, CLASSES, ".", tmp_path / "model_lib.py",
                             "@partial(nnx.jit, donate_argnums=(0, 1))\ndef train_step",
                             "@partial(nnx.jit, donate_argnums=0)\ndef eval_step")


def test_a_model_passed_to_a_project_function_that_is_no_step_is_left_alone(tmp_path):
    # ``first_kernel`` returns one of the model's arrays, read after the training
    _project(tmp_path, "from-import",
             before="\n    kernel = first_kernel(model)",
             after='\n    print("kernel", round(float(kernel.sum()), 4))')
    train = tmp_path / "train.py"
    train.write_text(train.read_text().replace("import Model, eval_step, train_step", "import Model, eval_step, first_kernel, train_step"))
    found = findings_of(tmp_path, "train_step")
    assert found["model"][0] == "medium", found
    assert "`model` is passed to a call at train.py:11 that is not an nnx.jit call" in found["model"][1], found
    original = run_strict(tmp_path, "train.py")
    assert original.returncode == 0, original.stderr

    # the optimizer holds moments of its own and is still donated; the model is not
    done = run(tool("jaxmem-fix"), "--no-cache", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    defining = tmp_path / "model_lib.py"
    assert "@partial(nnx.jit, donate_argnums=1)\ndef train_step" in defining.read_text(), defining.read_text()
    fixed = run_strict(tmp_path, "train.py")
    assert fixed.returncode == 0 and fixed.stdout == original.stdout, fixed.stderr

    # what a high proposal for the model would have written really crashes
    defining.write_text(defining.read_text().replace("donate_argnums=1)", "donate_argnums=(0, 1))"))
    crashed = run_strict(tmp_path, "train.py")
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr, crashed.stderr


def test_objects_from_a_factory_that_keeps_an_array_are_left_alone(tmp_path):
    # ``create_keeping`` puts one of the model's arrays in a list of its module, read after the training
    _project(tmp_path, "factory-of-module", after='\n    print("kept", round(float(model_lib.KEPT[0].sum()), 4))')
    train = tmp_path / "train.py"
    train.write_text(train.read_text().replace("model_lib.create(0)", "model_lib.create_keeping(0)"))
    found = findings_of(tmp_path, "train_step")
    assert {name: confidence for name, (confidence, _) in found.items()} == \
        {"model": "medium", "optimizer": "medium"}, found
    # the message says why the other module's function is no factory jaxmem proves
    assert "`model` is made by `model_lib.create_keeping`, which jaxmem does not take for a factory of new nnx " \
           "objects: `model` is used as `model.lin.kernel[...]`" in found["model"][1], found["model"][1]
    assert run_strict(tmp_path, "train.py").returncode == 0
    left_alone_then_crashes(tmp_path, "train.py", tmp_path / "model_lib.py", "@nnx.jit\ndef train_step",
                            "@nnx.jit(donate_argnums=(0,))\ndef train_step")

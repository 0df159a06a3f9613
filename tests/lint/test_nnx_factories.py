"""nnx objects made by a factory function, of the same file or another module
(``lint/values/nnx_ownership.nnx_factory``): which factories count.  What the
proved ones and three that share an array do when run is in
``tests/codemod/test_fix_nnx_factory_runs.py`` and
``test_fix_nnx_cross_module_runs.py``; these pin each rule."""

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

MODEL_LIB = """
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)


@nnx.jit
def step(model, optimizer):
    optimizer.update(model, nnx.grad(lambda m: m.lin.kernel[...].sum())(model))
"""

HEAD = """
import functools

import jax.numpy as jnp
import optax
""" + MODEL_LIB + "\n"

PAIR = """
def create(seed, lr=0.1):
    model = MLP(nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.sgd(lr), wrt=nnx.Param)
    return model, optimizer
"""

LOOP = """
def main():
    model, optimizer = {call}
    for _ in range(3):
        step(model, optimizer)
"""


# one object bound by the call (or made right there), its optimizer made beside it
ONE = """
def main():
    model = {call}
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    for _ in range(3):
        step(model, optimizer)
"""


def _findings(factory: str, call: str = "create(0)", loop: str = LOOP) -> dict[str, tuple[str, str]]:
    """``{parameter: (confidence, message)}`` of JXM001 on ``step``."""
    source = HEAD + factory + "\n" + loop.format(call=call)
    facts = facts_for_file("m.py", source, ALL, project_hints({"m.py": source}))
    (result,) = report([facts], ALL)
    return {f.parameter_name: (f.confidence.value, f.message) for f in result.findings if f.code == "JXM001"}


def _confidences(factory: str, call: str = "create(0)", loop: str = LOOP) -> dict[str, str]:
    return {name: confidence for name, (confidence, _) in _findings(factory, call, loop).items()}


def test_a_factory_of_new_objects_proves_both():
    assert _confidences(PAIR) == {"model": "high", "optimizer": "high"}


def test_a_factory_may_call_another_and_keyword_arguments_hold_no_array():
    inner = PAIR.replace("def create(", "def _make(")
    outer = inner + "\n\ndef create(seed, lr=0.1):\n    model, optimizer = _make(seed, lr=lr)\n    return model, optimizer\n"
    assert _confidences(outer, "create(seed=0, lr=0.01)") == {"model": "high", "optimizer": "high"}


@pytest.mark.parametrize("factory,call", [
    # decorated: the decorator may return something else
    ("@functools.lru_cache\n" + PAIR, "create(0)"),
    # a second return, a generator
    (PAIR.replace("    model = ", "    if seed < 0:\n        return None, None\n    model = "), "create(0)"),
    (PAIR.replace("return model, optimizer", "yield model, optimizer"), "create(0)"),
    # one object returned twice; a view of the model beside it
    (PAIR.replace("return model, optimizer", "return model, model"), "create(0)"),
    (PAIR.replace("return model, optimizer", "return model, nnx.view(model)"), "create(0)"),
    # the factory runs the step itself, or hands the model to a call jaxmem cannot follow
    (PAIR.replace("    return", "    step(model, optimizer)\n    return"), "create(0)"),
    (PAIR.replace("    return", "    print(jnp.sum(model.lin.kernel[...]))\n    return"), "create(0)"),
    # the model is built from an array: an argument, a default, a module-level value
    (PAIR, "create(jnp.zeros(()))"),
    (PAIR.replace("lr=0.1", "lr=jnp.ones(())"), "create(0)"),
    # unpacked into a different number of names; starred
    (PAIR.replace("return model, optimizer", "return model, optimizer, None"), "create(0)"),
    (PAIR, "create(*[0])"),
    # the name is bound again at module level: a call may not reach the def
    (PAIR + "\ncreate = None\n", "create(0)"),
])
def test_factories_that_prove_nothing_leave_the_model_at_medium(factory, call):
    found = _confidences(factory, call)
    assert found.get("model") == "medium", found


INITIALIZER = """
INIT = nnx.initializers.lecun_normal()
TABLE = jnp.ones((2, 2))
"""


@pytest.mark.parametrize("factory,call", [
    # the factory returns the object its call makes; its defaults are an initializer and a dtype
    (INITIALIZER + """
def create_model(seed, init=INIT, dtype=jnp.float32, act=nnx.relu):
    return nnx.Sequential(nnx.Linear(2, 2, kernel_init=init, param_dtype=dtype, rngs=nnx.Rngs(seed)), act)
""", "create_model(0)"),
    (INITIALIZER + "\ndef create_model(seed):\n    return MLP(nnx.Rngs(seed))\n", "create_model(0)"),
    # made right there: flax's containers of layers and Variables made in the same call
    ("", "nnx.Sequential(MLP(nnx.Rngs(0)), nnx.Linear(2, 2, rngs=nnx.Rngs(1)), jax.nn.gelu)"),
    ("", "nnx.Sequential(*[MLP(nnx.Rngs(0))])"),
    ("", "nnx.Sequential(MLP(nnx.Rngs(0)), nnx.Dict(w=nnx.Param(jnp.zeros((2,)))))"),
    ("", "nnx.List([MLP(nnx.Rngs(0)), nnx.Linear(2, 2, rngs=nnx.Rngs(1))])"),
])
def test_objects_a_factory_returns_or_a_container_call_makes_are_proved(factory, call):
    found = _confidences("import jax\n" + factory, call, ONE)
    if "*[" in call:
        assert found["model"] == "medium", found  # a starred argument: not taken apart
        return
    assert found == {"model": "high", "optimizer": "high"}, found


HOLDER = """
class Holder(nnx.Module):
    def __init__(self, inner):
        self.inner = inner
        self.again = inner
"""


@pytest.mark.parametrize("factory,call,reason", [
    (INITIALIZER + "\ndef create_model(seed, w=TABLE):\n    return MLP(nnx.Rngs(seed))\n", "create_model(0)",
     "`create_model`, which jaxmem does not take for a factory of new nnx objects: its default `TABLE` may hold "
     "an array"),
    ("\n@functools.cache\ndef create_model(seed):\n    return MLP(nnx.Rngs(seed))\n", "create_model(0)",
     "`create_model`, which jaxmem does not take for a factory of new nnx objects: it is decorated"),
    ("\ndef create_model(seed):\n    model = MLP(nnx.Rngs(seed))\n    KEPT.append(model.lin.kernel[...])\n"
     "    return model\n", "create_model(0)", "does not take for a factory of new nnx objects: `model` is used as"),
    ("\ndef create_model(seed):\n    return MLP(nnx.Rngs(seed)) if seed else None\n", "create_model(0)",
     "its `return` gives something other than a name, distinct names or a class call"),
    # a layer or an array another name holds, handed to a container
    ("\nLAYER = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\n", "nnx.Sequential(LAYER)", "may hold arrays from elsewhere"),
    ("\nTABLE = jnp.ones((2,))\n", "nnx.Dict(w=nnx.Param(jnp.asarray(TABLE)))", "may hold arrays from elsewhere"),
    # a class of the project: it may keep what it is given twice (checked for array-free arguments only)
    (HOLDER, "Holder(MLP(nnx.Rngs(0)))", "may hold arrays from elsewhere"),
])
def test_what_is_not_proved_says_why(factory, call, reason):
    confidence, message = _findings(factory, call, ONE)["model"]
    assert confidence == "medium" and reason in message, message


FACTORIES = """
import optax
from flax import nnx

from model_lib import MLP

""" + PAIR

TRAIN = """
from factories import create
from model_lib import step

""" + LOOP.format(call="create(0)")


def _project_confidences(files: dict[str, str], where: str = "model_lib.py") -> dict[str, str]:
    """``{parameter: confidence}`` of JXM001 on the ``step`` of file ``where``, over the whole project ``files``."""
    hints = project_hints(files)
    results = report([facts_for_file(path, text, ALL, hints) for path, text in files.items()], ALL)
    return {f.parameter_name: f.confidence.value for result in results for f in result.findings
            if f.code == "JXM001" and f.function == "step" and f.path == where}


def test_a_factory_in_a_third_module_whose_class_is_in_another_is_read_whole():
    # train.py reads create() of factories.py, which makes model_lib.MLP objects: the pre-filter
    # keeps that class for the join, as an analysis of every file whole would
    files = {"model_lib.py": MODEL_LIB, "factories.py": FACTORIES, "train.py": TRAIN}
    assert _project_confidences(files) == {"model": "high", "optimizer": "high"}


def test_a_factory_name_two_sibling_modules_define_differently_proves_nothing():
    # examples/a/factories.py keeps an array, examples/b's does not; examples/c/train.py has no
    # factories.py beside it: Python may import either, so neither is taken
    keeping = FACTORIES.replace("    optimizer =", "    KEPT.append(model.lin.kernel[...])\n    optimizer =")
    files = {"examples/a/model_lib.py": MODEL_LIB, "examples/a/factories.py": keeping,
             "examples/b/model_lib.py": MODEL_LIB, "examples/b/factories.py": FACTORIES,
             "examples/c/train.py": TRAIN, "examples/c/model_lib.py": MODEL_LIB}
    assert _project_confidences(files, "examples/c/model_lib.py")["model"] == "medium"
    # beside examples/b/train.py, factories.py is examples/b's own; beside a's, a's
    del files["examples/c/train.py"], files["examples/c/model_lib.py"]
    files["examples/b/train.py"] = TRAIN
    files["examples/a/train.py"] = TRAIN
    assert _project_confidences(files, "examples/b/model_lib.py")["model"] == "high"
    assert _project_confidences(files, "examples/a/model_lib.py")["model"] == "medium"

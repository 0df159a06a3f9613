"""Patterns where donating the state crashes: the default ``jaxmem-fix`` must
leave them runnable (issue 14).

Each program runs as written; with the donation forced onto the step it
really crashes (so the pattern is real); after the default ``jaxmem-fix``
it still runs.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("flax")
pytest.importorskip("optax")

STEP_MARK = "@jax.jit  # the step\n"
DONATING = "@functools.partial(jax.jit, donate_argnums=0)  # the step\n"

EMA_STATE = """
    import functools

    import jax
    import jax.numpy as jnp
    import optax
    from flax import struct
    from flax.training import train_state


    class EmaState(train_state.TrainState):
        ema_params: dict = struct.field(default=None)
"""

EMA_STEP = """
    @jax.jit  # the step
    def train_step(state, batch):
        grads = jax.tree_util.tree_map(lambda p: p * batch.mean(), state.params)
        state = state.apply_gradients(grads=grads)
        ema = jax.tree_util.tree_map(lambda e, p: 0.9 * e + 0.1 * p, state.ema_params, state.params)
        return state.replace(ema_params=ema)


    def main():
        params = {"w": jnp.ones((4, 4)), "b": jnp.zeros((4,))}
        state = make_state(params, optax.sgd(0.1))
        for _ in range(3):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(state.params["w"].sum()))


    main()
"""

# The step, and a run that gets its state from ``initial_state(n)``, called twice with
# the same ``n`` (the second call of a cached helper returns what the first one did).
RUN_TWICE = """

    @jax.jit  # the step
    def train_step(state, batch):
        return state * 0.5 + batch.mean()


    def run(n):
        state = initial_state(n)
        for _ in range(3):
            state = train_step(state, jnp.ones((2, n)))
        return float(state.sum())


    def main():
        print(run(4), run(4))


    main()
    """

# A state made by ``prepare(p)`` (its body ``return HELPS``); ``p`` is read after the steps.
HELPER_MADE = """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def train_step(state, batch):
        return jax.tree_util.tree_map(lambda x: x * 0.5 + batch.mean(), state)


    def prepare(p):
        return HELPS


    def main():
        p = jnp.ones((4, 4))
        state = prepare(p)
        for _ in range(3):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(jax.tree_util.tree_leaves(state)[0].sum()), float(p.sum()))


    main()
    """

# A state made from ``w`` by MAKE; ``w`` is read after the steps.
NAMES_BACK = """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def train_step(state, batch):
        return jax.tree_util.tree_map(lambda x: x * 0.5 + batch.mean(), state)


    def main():
        w = jnp.ones((4, 4))
        MAKE
        for _ in range(3):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(state[0].sum()), float(w.sum()))


    main()
    """

# A pytree class whose ``__init__`` stores its parameters twice (an EMA copy that starts as
# the parameters): every instance holds each parameter buffer twice.
CLASS_TWICE = """
    import jax


    @jax.tree_util.register_pytree_node_class
    class State:
        def __init__(self, params):
            self.params = params
            self.ema = params

        def tree_flatten(self):
            return (self.params, self.ema), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            obj = object.__new__(cls)
            obj.params, obj.ema = children
            return obj
    """

# The step and a run whose state is MAKE (with ``State`` or ``build`` imported by IMPORT).
CLASS_TWICE_RUN = """
    import functools

    import jax
    import jax.numpy as jnp

    IMPORT


    @jax.jit  # the step
    def train_step(state, batch):
        return jax.tree_util.tree_map(lambda x: x * 0.5 + batch.mean(), state)


    def main():
        state = MAKE
        for _ in range(3):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(state.params["w"].sum()))


    main()
    """


def _class_twice_run(imports: str, make: str = 'State({"w": jnp.ones((4, 4))})') -> str:
    return CLASS_TWICE_RUN.replace("IMPORT", imports).replace("MAKE", make)


CLOSURE_RUN = """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def step(state):
        return jax.tree.map(lambda x: x + 1, state)


    MAKE
        for _ in range(3):
            state = step(state)
        print(float(state["w"].sum()), report())


    run()
    """

# A class whose method keeps the value it is given (indented as CLOSURE_RUN's MAKE).
LOGGER = """
    class Logger:
        def __init__(self):
            self.seen = []

        def log(self, value):
            self.seen.append(value)

"""

# The same class in a module of its own, whose ``log`` returns how many it holds.
LOGGER_MODULE = """
class Logger:
    def __init__(self):
        self.seen = []

    def log(self, value):
        self.seen.append(value)
        return len(self.seen)
"""

FILL = """
import jax.numpy as jnp


def fill(cfg):
    cfg["w"] = jnp.ones(4)
"""

FILLED_RUN = """
    import functools

    import jax
    import jax.numpy as jnp

    MAKER


    @jax.jit  # the step
    def step(state):
        return jax.tree.map(lambda x: x + 1, state)


    config = {"scale": 2.0}
    state = make_state(config)
    for _ in range(3):
        state = step(state)
    print(float(state["w"].sum()), float(config["w"].sum()))
    """

TABLE_MODULE = """
    import functools

    import jax
    import jax.numpy as jnp
    from flax import nnx


    class Table(nnx.Module):
        def __init__(self, rngs):
            self.w = nnx.Param(jax.random.uniform(rngs.params(), (4,)))

        def __call__(self, x):
            return self.w[...]  # the Variable's own array


    @jax.jit  # the step
    def train_step(params, x):
        return jax.tree.map(lambda w: w - 0.1 * x.sum(), params)
"""

PROGRAMS = {
    # An nnx Module called before the functional API returns its own array: the result shares
    # it with the split state (high, and crashed, before), read after the training ...
    "module-call-read-after": {"train.py": TABLE_MODULE + """

    model = Table(nnx.Rngs(0))
    y = model(jnp.ones(4))
    graphdef, params = nnx.split(model, nnx.Param)
    for _ in range(3):
        params = train_step(params, jnp.ones(4))
    print(round(float(y.sum()), 4))
    """},
    # ... or passed in the same call ("Attempt to use a buffer that was previously donated in
    # the same call")
    "module-call-passed-beside": {"train.py": TABLE_MODULE + """

    model = Table(nnx.Rngs(0))
    y = model(jnp.ones(4))
    graphdef, params = nnx.split(model, nnx.Param)
    params = train_step(params, y)
    print(round(float(params["w"][...].sum()), 4))
    """},
    # The EMA copy built by a helper: every parameter buffer is held twice.
    "ema-helper": {"train.py": EMA_STATE + """

    def make_state(params, tx):
        return EmaState.create(apply_fn=None, params=params, ema_params=params, tx=tx)

    """ + EMA_STEP},
    # The same helper in another module, through a local variable.
    "ema-helper-other-module": {
        "states.py": EMA_STATE + """

    def make_state(params, tx):
        state = EmaState.create(apply_fn=None, params=params, ema_params=params, tx=tx)
        return state
    """,
        "train.py": """
    import functools

    import jax
    import jax.numpy as jnp
    import optax

    from states import make_state

    """ + EMA_STEP},
    # A closure reads the array the state is made of whenever it is called, after the training:
    # returned by the helper beside the state, a lambda or nested def of the scope, or one
    # capturing the array a helper puts in the state.
    "closure-returned-beside-the-state": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def make():
        w = jnp.ones(4)

        def report():
            return float(w.sum())

        return report, {"w": w, "b": jnp.zeros(4)}


    def run():
        report, state = make()""")},
    "lambda-over-the-states-array": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        report = lambda: float(w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "nested-def-over-the-states-array": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)

        def report():
            return float(w.sum())

        state = {"w": w, "b": jnp.zeros(4)}""")},
    "generator-over-the-states-array": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        scaled = (w * i for i in range(3))
        report = lambda: [float(v.sum()) for v in scaled]  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # The array the state is made of, kept by something read after the training: a partial
    # a helper returns beside the state, a local list (the state made here or by a helper).
    "partial-returned-beside-the-state": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def total(w):
        return float(w.sum())


    def make():
        w = jnp.ones(4)
        return functools.partial(total, w), {"w": w, "b": jnp.zeros(4)}


    def run():
        report, state = make()""")},
    "appended-to-a-list-read-after": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        history = []
        history.append(w)
        report = lambda: float(history[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "appended-to-a-list-then-made-by-a-helper": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def make_state(w):
        return {"w": w, "b": jnp.zeros(4)}


    def run():
        w = jnp.ones(4)
        history = []
        history.append(w)
        report = lambda: float(history[0].sum())  # noqa: E731
        state = make_state(w)""")},
    # An object whose method keeps the array it is given (``logger.log(w)`` appends it), read
    # after the training: the method is called for its effect, so it may keep its argument.
    "kept-by-a-method-of-an-object-read-after": {"train.py": CLOSURE_RUN.replace("MAKE", LOGGER + """
    def run():
        w = jnp.ones(4)
        logger = Logger()
        logger.log(w)
        report = lambda: float(logger.seen[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-method-then-made-by-a-helper": {"train.py": CLOSURE_RUN.replace("MAKE", LOGGER + """
    def make_state(w):
        return {"w": w, "b": jnp.zeros(4)}


    def run():
        w = jnp.ones(4)
        logger = Logger()
        logger.log(w)
        report = lambda: float(logger.seen[0].sum())  # noqa: E731
        state = make_state(w)""")},
    # A method that keeps what it is given and returns something else, its result used.
    "kept-by-a-method-whose-result-is-used": {"train.py": CLOSURE_RUN.replace("MAKE", LOGGER + """
    def run():
        w = jnp.ones(4)
        logger = Logger()
        if logger.log(w) is None:
            print("logged")
        report = lambda: float(logger.seen[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-method-whose-result-is-used-then-made-by-a-helper": {
        "train.py": CLOSURE_RUN.replace("MAKE", LOGGER + """
    def make_state(w):
        return {"w": w, "b": jnp.zeros(4)}


    def run():
        w = jnp.ones(4)
        logger = Logger()
        logged = logger.log(w)
        report = lambda: float(logger.seen[0].sum())  # noqa: E731
        state = make_state(w)""")},
    # A function called for its effect that keeps the array it is given in a module's list.
    "kept-by-a-function-of-this-file": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)


    def run():
        w = jnp.ones(4)
        register(w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-function-of-another-file-then-made-by-a-helper": {
        "registry.py": "SEEN = []\n\n\ndef register(value):\n    SEEN.append(value)\n",
        "train.py": CLOSURE_RUN.replace("MAKE", """
    from registry import SEEN, register


    def make_state(w):
        return {"w": w, "b": jnp.zeros(4)}


    def run():
        w = jnp.ones(4)
        register(w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = make_state(w)""")},
    # A method whose result is used, of a class another file defines, that keeps its argument:
    # the class imported by name (its file is analysed), or made by a factory of a third file
    # (the class's file mentions no jit and is never parsed: its text says what may keep).
    "kept-by-a-method-of-another-files-class-whose-result-is-used": {
        "logs.py": LOGGER_MODULE,
        "train.py": CLOSURE_RUN.replace("MAKE", """
    from logs import Logger


    def run():
        w = jnp.ones(4)
        logger = Logger()
        if logger.log(w) is None:
            print("not logged")
        report = lambda: float(logger.seen[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-method-of-a-class-that-a-factory-of-a-third-file-makes": {
        "logs.py": LOGGER_MODULE,
        "factory.py": "from logs import Logger\n\n\ndef make_logger():\n    return Logger()\n",
        "train.py": CLOSURE_RUN.replace("MAKE", """
    from factory import make_logger


    def run():
        w = jnp.ones(4)
        logger = make_logger()
        if logger.log(w) is None:
            print("not logged")
        report = lambda: float(logger.seen[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # A function whose result is used, that keeps its argument (here, or in another file).
    "kept-by-a-function-of-this-file-whose-result-is-used": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)
        return len(SEEN)


    def run():
        w = jnp.ones(4)
        if register(w) == 0:
            print("not registered")
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-function-of-another-file-whose-result-is-used": {
        "registry.py": "SEEN = []\n\n\ndef register(value):\n    SEEN.append(value)\n    return len(SEEN)\n",
        "train.py": CLOSURE_RUN.replace("MAKE", """
    from registry import SEEN, register


    def run():
        w = jnp.ones(4)
        if register(w) == 0:
            print("not registered")
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # A function of another file called through its module, its result thrown away or used.
    "kept-by-a-function-of-another-module-called-through-it": {
        "registry.py": "SEEN = []\n\n\ndef register(value):\n    SEEN.append(value)\n",
        "train.py": CLOSURE_RUN.replace("MAKE", """
    import registry


    def run():
        w = jnp.ones(4)
        registry.register(w)
        report = lambda: float(registry.SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-function-of-another-module-whose-result-is-used-then-made-by-a-helper": {
        "registry.py": "SEEN = []\n\n\ndef register(value):\n    SEEN.append(value)\n    return len(SEEN)\n",
        "train.py": CLOSURE_RUN.replace("MAKE", """
    import registry


    def make_state(w):
        return {"w": w, "b": jnp.zeros(4)}


    def run():
        w = jnp.ones(4)
        if registry.register(w) == 0:
            print("not registered")
        report = lambda: float(registry.SEEN[0].sum())  # noqa: E731
        state = make_state(w)""")},
    # A method of an object no name holds, and library functions that put an item into a container.
    "kept-by-a-method-of-an-object-no-name-holds": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    def run():
        w = jnp.ones(4)
        box = Box()
        vars(box).update(w=w)
        report = lambda: float(box.w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-a-list-an-item-of-a-dict-holds": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import collections


    def run():
        w = jnp.ones(4)
        history = collections.defaultdict(list)
        name = "w"
        history[f"train_{name}"].append(w)
        report = lambda: float(history["train_w"][0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # A function that keeps its argument, handed with the array to a library call that calls it.
    "kept-by-a-function-handed-to-partial": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)


    def run():
        w = jnp.ones(4)
        functools.partial(register, w)()
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-function-handed-to-a-thread": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import threading

    SEEN = []


    def register(value):
        SEEN.append(value)


    def run():
        w = jnp.ones(4)
        worker = threading.Thread(target=register, args=(w,))
        worker.start()
        worker.join()
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-function-handed-to-map": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)


    def run():
        w = jnp.ones(4)
        list(map(register, [w]))
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-sort-key": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)
        return 0


    def run():
        w = jnp.ones(4)
        sorted([w], key=register)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-another-modules-function-handed-to-map": {
        "registry.py": "SEEN = []\n\n\ndef register(value):\n    SEEN.append(value)\n",
        "train.py": CLOSURE_RUN.replace("MAKE", """
    import registry


    def run():
        w = jnp.ones(4)
        list(map(registry.register, [w]))
        report = lambda: float(registry.SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # A closure reads another name for the array (or for a container holding it), after the training.
    "closure-over-another-name-for-the-array": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        kept = w.T
        report = lambda: float(kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "closure-over-a-list-extended-in-place": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        kept = []
        kept += [w]
        report = lambda: float(kept[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "closure-over-a-name-swapped-in": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        a, b = w, jnp.zeros(4)
        b, a = a, b
        report = lambda: float(b.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # The loop variable holds the last element after the loop.
    "loop-variable-read-after-the-loop": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def step(state):
        return jax.tree.map(lambda x: x + 1, state)


    def run():
        w = jnp.ones(4)
        for last in [jnp.zeros(4), w]:
            pass
        state = {"w": w, "b": jnp.zeros(4)}
        for _ in range(3):
            state = step(state)
        print(float(state["w"].sum()), float(last.sum()))


    run()
    """},
    # A def of the scope returns a part of the state, before the training; its result is read after.
    "a-part-a-local-def-returned": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def step(state):
        return jax.tree.map(lambda x: x + 1, state)


    def run():
        state = {"w": jnp.ones(4), "b": jnp.zeros(4)}

        def current():
            return state["w"]

        first = current()
        for _ in range(3):
            state = step(state)
        print(float(state["w"].sum()), float(first.sum()))


    run()
    """},
    "bound-by-an-assignment-expression-in-a-comprehension": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        [(last := v) for v in [jnp.zeros(4), w]]
        report = lambda: float(last.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # Kept through another name for a part of the array: a loop variable, a comprehension's.
    "kept-by-a-loop-variable-appended": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        kept = []
        for v in [w]:
            kept.append(v)
        report = lambda: float(kept[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-loop-variable-set-as-an-attribute": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import types


    def run():
        w = jnp.ones(4)
        box = types.SimpleNamespace()
        for name, value in {"w": w}.items():
            setattr(box, name, value)
        report = lambda: float(box.w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-comprehension-that-appends": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        kept = []
        [kept.append(v) for v in [w]]
        report = lambda: float(kept[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # A function or lambda that keeps its argument, handed to jax with the array.
    "kept-by-a-function-handed-to-tree-map": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)


    def run():
        w = jnp.ones(4)
        jax.tree.map(register, {"w": w})
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-function-handed-to-a-debug-callback": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)


    def run():
        w = jnp.ones(4)
        jax.debug.callback(register, w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-lambda-handed-to-tree-map": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        kept = []
        jax.tree.map(lambda x: kept.append(x), {"w": w})
        report = lambda: float(kept[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # A comprehension that puts one array in every entry, as it is or through a view.
    "one-array-in-every-entry-of-a-comprehension": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        base = jnp.ones(4)
        state = {k: jnp.asarray(base) for k in ["w", "b"]}
        report = lambda: 0.0  # noqa: E731""")},
    # A container that holds a value and a part or a view of it: the same buffer twice.
    "a-value-and-its-part-in-one-container": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        params = {"w": jnp.ones(4)}
        state = {"all": params, "w": params["w"]}
        report = lambda: 0.0  # noqa: E731""")},
    "a-value-and-an-identity-tree-map-of-it-in-one-container": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def same(x):
        return x


    def run():
        params = {"w": jnp.ones(4)}
        state = {"a": jax.tree.map(same, params), "w": params["w"]}
        report = lambda: 0.0  # noqa: E731""")},
    "kept-by-a-class-body": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)

        class Holder:
            value = w

        report = lambda: float(Holder.value.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-an-exception-caught-here": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def run():
        w = jnp.ones(4)
        try:
            raise ValueError(w)
        except ValueError as error:
            caught = error
        report = lambda: float(caught.args[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-an-exception-a-helper-raises": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def check(value, limit):
        if value.size < limit:
            raise ValueError(value)


    def run():
        w = jnp.ones(4)
        try:
            check(w, 8)
        except ValueError as error:
            caught = error
        report = lambda: float(caught.args[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-an-exception-a-helpers-helper-raises": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def fail(value):
        raise ValueError(value)


    def check(value):
        fail(value)


    def run():
        w = jnp.ones(4)
        try:
            check(w)
        except ValueError as error:
            caught = error
        report = lambda: float(caught.args[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # A helper keeps nothing itself but calls a function that does.
    "kept-by-a-helper-that-calls-a-registering-function": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)


    def remember(value):
        register(value)


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-that-calls-another-modules-function": {
        "registry.py": "SEEN = []\n\n\ndef register(value):\n    SEEN.append(value)\n",
        "train.py": CLOSURE_RUN.replace("MAKE", """
    import registry


    def remember(value):
        registry.register(value)


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(registry.SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-function-handed-to-map-that-calls-a-registering-function": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)


    def remember(value):
        register(value)
        return value


    def run():
        w = jnp.ones(4)
        list(map(remember, [w]))
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-that-tree-maps-a-registering-lambda": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)


    def remember(tree):
        jax.tree.map(lambda x: register(x), tree)


    def run():
        w = jnp.ones(4)
        remember({"w": w})
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    # A method keeps its argument somewhere other than in its object, or the object is held elsewhere.
    "kept-by-a-method-that-appends-to-a-module-list": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    class Tracker:
        def track(self, value):
            SEEN.append(value)


    def run():
        w = jnp.ones(4)
        tracker = Tracker()
        tracker.track(w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-method-that-calls-a-registering-function": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def register(value):
        SEEN.append(value)
        return True


    class Tracker:
        def track(self, value):
            return register(value)


    def run():
        w = jnp.ones(4)
        tracker = Tracker()
        if tracker.track(w):
            print("tracked")
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-method-on-another-argument": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    class Tracker:
        def track(self, box, value):
            box.kept = value


    def run():
        w = jnp.ones(4)
        tracker = Tracker()
        box = Box()
        tracker.track(box, w)
        report = lambda: float(box.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-a-module-level-object-through-a-local-name": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Tracker:
        def __init__(self):
            self.seen = []

        def track(self, value):
            self.seen.append(value)


    TRACKER = Tracker()


    def run():
        w = jnp.ones(4)
        tracker = TRACKER
        tracker.track(w)
        report = lambda: float(TRACKER.seen[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-a-function-returns": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Tracker:
        def __init__(self):
            self.seen = []

        def track(self, value):
            self.seen.append(value)


    TRACKER = Tracker()


    def current_tracker():
        return TRACKER


    def run():
        w = jnp.ones(4)
        tracker = current_tracker()
        tracker.track(w)
        report = lambda: float(TRACKER.seen[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-a-module-list-an-object-holds": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    class Tracker:
        def __init__(self):
            self.seen = SEEN

        def track(self, value):
            self.seen.append(value)


    def run():
        w = jnp.ones(4)
        tracker = Tracker()
        tracker.track(w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-an-object-was-given": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    class Tracker:
        def __init__(self):
            self.box = None

        def attach(self, box):
            self.box = box

        def track(self, value):
            self.box.kept = value


    def run():
        w = jnp.ones(4)
        box = Box()
        tracker = Tracker()
        tracker.attach(box)
        tracker.track(w)
        report = lambda: float(box.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-that-appends-to-another-name-for-a-module-list": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def remember(value):
        seen = SEEN
        seen.append(value)


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-that-appends-to-another-name-for-its-argument": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def remember(value, into):
        seen = into
        seen.append(value)


    def run():
        w = jnp.ones(4)
        kept = []
        remember(w, kept)
        report = lambda: float(kept[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-whose-inner-def-appends-to-a-module-list": {"train.py": CLOSURE_RUN.replace("MAKE", """
    SEEN = []


    def remember(value):
        def keep():
            SEEN.append(value)

        keep()


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-filling-a-list-a-defaultdict-hands-out": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import collections

    SEEN = []


    def remember(value):
        groups = collections.defaultdict(lambda: SEEN)
        groups["w"].append(value)


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(SEEN[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-storing-through-a-tuple-target": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    BOX = Box()


    def remember(value):
        BOX.kept, count = value, 1


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(BOX.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-looping-into-an-attribute": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    BOX = Box()


    def remember(value):
        for BOX.kept in [value]:
            pass


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(BOX.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-entering-a-context-as-an-attribute": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import contextlib


    class Box:
        pass


    BOX = Box()


    def remember(value):
        with contextlib.nullcontext(value) as BOX.kept:
            pass


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(BOX.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helpers-comprehension-into-an-attribute": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    BOX = Box()


    def remember(value):
        return len([0 for BOX.kept in [value]])


    def run():
        w = jnp.ones(4)
        remember(w)
        report = lambda: float(BOX.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-helper-calling-a-method-that-stores-its-object": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w

        def register(self):
            KEPT.append(self)


    def remember(holder):
        holder.register()


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        remember(holder)
        report = lambda: float(KEPT[0].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-loop-into-an-attribute": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    BOX = Box()


    def run():
        w = jnp.ones(4)
        for BOX.kept in [w]:
            pass
        report = lambda: float(BOX.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-context-entered-as-an-attribute": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import contextlib


    class Box:
        pass


    BOX = Box()


    def run():
        w = jnp.ones(4)
        with contextlib.nullcontext(w) as BOX.kept:
            pass
        report = lambda: float(BOX.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-a-comprehension-into-an-attribute": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    BOX = Box()


    def run():
        w = jnp.ones(4)
        _ = [0 for BOX.kept in [w]]
        report = lambda: float(BOX.kept.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-an-object-that-stores-itself": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w

        def register(self):
            KEPT.append(self)


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        holder.register()
        report = lambda: float(KEPT[0].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-appended-to-a-module-list": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        KEPT.append(holder)
        report = lambda: float(KEPT[0].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-handed-to-a-keeping-helper": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w


    def remember(holder):
        KEPT.append(holder)


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        remember(holder)
        report = lambda: float(KEPT[0].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-a-dataclass-stored-on-a-module-object": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import dataclasses


    class Box:
        pass


    BOX = Box()


    @dataclasses.dataclass
    class Holder:
        w: object


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        BOX.holder = holder
        report = lambda: float(BOX.holder.w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-a-namespace-appended-to-a-module-list": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import types

    KEPT = []


    def run():
        w = jnp.ones(4)
        holder = types.SimpleNamespace(w=w)
        KEPT.append(holder)
        report = lambda: float(KEPT[0].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-made-in-the-call-that-appends-it": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w


    def run():
        w = jnp.ones(4)
        KEPT.append(Holder(w))
        report = lambda: float(KEPT[0].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-made-where-it-is-stored": {"train.py": CLOSURE_RUN.replace("MAKE", """
    class Box:
        pass


    BOX = Box()


    class Holder:
        def __init__(self, w):
            self.w = w


    def run():
        w = jnp.ones(4)
        BOX.holder = Holder(w)
        report = lambda: float(BOX.holder.w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-made-in-the-call-of-a-keeping-helper": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w


    def remember(holder):
        KEPT.append(holder)


    def run():
        w = jnp.ones(4)
        remember(Holder(w))
        report = lambda: float(KEPT[0].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-appended-through-another-name": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        same = holder
        KEPT.append(same)
        report = lambda: float(KEPT[0].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-in-a-dict-appended-to-a-module-list": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        box = {"holder": holder}
        KEPT.append(box)
        report = lambda: float(KEPT[0]["holder"].w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-object-wrapped-again-and-appended": {"train.py": CLOSURE_RUN.replace("MAKE", """
    KEPT = []


    class Holder:
        def __init__(self, w):
            self.w = w


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        holder = Holder(holder)
        KEPT.append(holder)
        report = lambda: float(KEPT[0].w.w.sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-a-partial-of-an-object-stored-on-a-module-object": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import functools


    class Box:
        pass


    BOX = Box()


    class Holder:
        def __init__(self, w):
            self.w = w


    def total(holder):
        return float(holder.w.sum())


    def run():
        w = jnp.ones(4)
        holder = Holder(w)
        BOX.total = functools.partial(total, holder)
        report = lambda: BOX.total()  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-an-iterator-chain": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import itertools


    def run():
        w = jnp.ones(4)
        kept = list(itertools.chain([w], []))
        report = lambda: float(kept[0].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-an-exit-handler": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import atexit
    import os
    import sys


    def show(value):
        try:
            print(float(value.sum()))
        except Exception as error:  # an exit handler's error does not change the exit status
            print(error, file=sys.stderr)
            os._exit(1)


    def run():
        w = jnp.ones(4)
        atexit.register(show, w)
        report = lambda: 0.0  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-by-an-exit-stack-until-the-block-ends": {"train.py": """
    import contextlib
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def step(state):
        return jax.tree.map(lambda x: x + 1, state)


    def show(value):
        print(float(value.sum()))


    def run():
        w = jnp.ones(4)
        with contextlib.ExitStack() as stack:
            stack.callback(show, w)
            state = {"w": w, "b": jnp.zeros(4)}
            for _ in range(3):
                state = step(state)
            print(float(state["w"].sum()))


    run()
    """},
    "kept-in-a-heap": {"train.py": CLOSURE_RUN.replace("MAKE", """
    import heapq


    def run():
        w = jnp.ones(4)
        heap = []
        heapq.heappush(heap, (1.0, 0, w))
        report = lambda: float(heap[0][2].sum())  # noqa: E731
        state = {"w": w, "b": jnp.zeros(4)}""")},
    "kept-in-a-sorted-list-then-made-by-a-helper": {"train.py": CLOSURE_RUN.replace("MAKE", """
    from bisect import insort


    def make_state(w):
        return {"w": w, "b": jnp.zeros(4)}


    def run():
        w = jnp.ones(4)
        ranked = []
        insort(ranked, (1.0, 0, w))
        report = lambda: float(ranked[0][2].sum())  # noqa: E731
        state = make_state(w)""")},
    "nested-def-over-an-array-a-helper-puts-in-the-state": {"train.py": CLOSURE_RUN.replace("MAKE", """
    def make_state(w):
        return {"w": w, "b": jnp.zeros(4)}


    def run():
        w = jnp.ones(4)

        def report():
            return float(w.sum())

        state = make_state(w)""")},
    # A config filled with an array by a function of another file that a maker calls for its
    # effect (``fill(cfg)``), the maker here or in a third file; the state holds that array.
    "filled-through-a-helper-here": {"helpers.py": FILL, "train.py": FILLED_RUN.replace("MAKER", """
    from helpers import fill


    def make_state(cfg):
        fill(cfg)
        return {"w": cfg["w"], "b": jnp.zeros(4)}""")},
    "filled-through-a-helper-of-a-third-file": {
        "helpers.py": FILL,
        "states.py": """
    import jax.numpy as jnp

    from helpers import fill


    def make_state(cfg):
        fill(cfg)
        return {"w": cfg["w"], "b": jnp.zeros(4)}
    """,
        "train.py": FILLED_RUN.replace("MAKER", "from states import make_state")},
    # A class of another module whose __init__ stores its parameters twice, made here,
    # through a helper here, through a helper of a third module, and through a package's re-export.
    "class-twice-other-module": {"states.py": CLASS_TWICE, "train.py": _class_twice_run("from states import State")},
    "class-twice-helper-here": {"states.py": CLASS_TWICE, "train.py": _class_twice_run(
        "from states import State\n\n\n    def build(params):\n        return State(params)",
        'build({"w": jnp.ones((4, 4))})')},
    "class-twice-helper-other-module": {
        "states.py": CLASS_TWICE,
        "helpers.py": "from states import State\n\n\ndef build(params):\n    state = State(params)\n    return state\n",
        "train.py": _class_twice_run("from helpers import build", 'build({"w": jnp.ones((4, 4))})')},
    "class-twice-reexported": {"models/states.py": CLASS_TWICE, "models/__init__.py": "from .states import State\n",
                               "train.py": _class_twice_run("from models import State")},
    # optax's lookahead recipe: the same tree as fast and slow parameters.
    "lookahead": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp
    import optax

    tx = optax.lookahead(optax.sgd(0.1), sync_period=2, slow_step_size=0.5)


    @jax.jit  # the step
    def train_step(params, opt_state, batch):
        grads = jax.tree_util.tree_map(lambda p: p * batch.mean(), params.fast)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state


    def main():
        params = {"w": jnp.ones((4, 4))}
        opt_state = tx.init(params)
        params = optax.LookaheadParams.init_synced(params)
        for _ in range(3):
            params, opt_state = train_step(params, opt_state, jnp.ones((2, 4)))
        print(float(params.slow["w"].sum()))


    main()
    """},
    # An optimizer init jaxmem cannot see may keep the parameters: the state then holds them twice.
    "unseen-init-keeps-params": {"train.py": """
    import functools
    import typing

    import jax
    import jax.numpy as jnp


    class TrainingState(typing.NamedTuple):
        params: dict
        opt_state: dict


    def make_optimizer():
        return (lambda p: {"slow": p}), None


    @jax.jit  # the step
    def update(state, batch):
        return jax.tree_util.tree_map(lambda s: s + batch.mean(), state)


    def main():
        opt_init, _ = make_optimizer()
        initial_params = {"w": jnp.ones((4, 4))}
        initial_opt_state = opt_init(initial_params)
        state = TrainingState(params=initial_params, opt_state=initial_opt_state)
        for _ in range(3):
            state = update(state, jnp.ones((2, 4)))
        print(float(state.params["w"].sum()))


    main()
    """},
    # ``+=`` extends a list in place: ``state`` is still ``base``, whose arrays the step deletes.
    "extended-in-place": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def train_step(state, batch):
        return jax.tree_util.tree_map(lambda x: x + batch.mean(), state)


    def main():
        base = [jnp.ones((4, 4))]
        state = base
        state += [jnp.zeros((4,))]
        state = train_step(state, jnp.ones((2, 4)))
        print(float(state[0].sum()), float(base[0].sum()))


    main()
    """},
    # The same with a parameter: ``+=`` does not rebind it, so the caller's list reaches the step.
    "parameter-extended-in-place": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def train_step(state, batch):
        return jax.tree_util.tree_map(lambda x: x + batch.mean(), state)


    def run(state):
        state += [jnp.zeros((4,))]
        return train_step(state, jnp.ones((2, 4)))


    def main():
        mine = [jnp.ones((4, 4))]
        state = run(mine)
        print(float(state[0].sum()), float(mine[0].sum()))


    main()
    """},
    # A helper's jax call that changes nothing hands back its argument itself:
    # ``jnp.reshape(p, p.shape) is p`` (also ``jnp.float32`` of float32, ``lax.stop_gradient``).
    "helper-returning-a-reshape": {"train.py": HELPER_MADE.replace("HELPS", "jnp.reshape(p, p.shape)")},
    # ``jnp.array(p, copy=False) is p``: no copy when none is needed.
    "helper-returning-an-uncopied-array": {"train.py": HELPER_MADE.replace("HELPS", "jnp.array(p, copy=False)")},
    # A helper joins lists: ``p + []`` is a new list of the same arrays.
    "helper-joining-lists": {"train.py": HELPER_MADE.replace("jnp.ones((4, 4))", "[jnp.ones((4, 4))]")
                             .replace("HELPS", "p + []").replace("float(p.sum())", "float(p[0].sum())")},
    # Two names back: ``ps = [w]`` then ``state = ps``; ``w`` is read after the step.
    "held-two-names-back": {"train.py": NAMES_BACK.replace("MAKE", "ps = [w]\n        state = ps")},
    # The same through ``ps + []``, a new list of the same arrays.
    "held-through-a-joined-list": {"train.py": NAMES_BACK.replace("MAKE", "ps = [w]\n        state = ps + []")},
    # Two names bound to one array (``fast, slow = w, w``): the step deletes both.
    "held-by-a-sibling-name": {"train.py": NAMES_BACK.replace("MAKE", "fast, slow = w, w\n        state = [fast]")
                               .replace("float(w.sum())", "float(slow.sum())")},
    # ``kept = ps`` beside ``state = ps``: ``kept`` is read after the step.
    "held-by-another-name-of-its-source": {
        "train.py": NAMES_BACK.replace("MAKE", "ps = [w]\n        kept = ps\n        state = ps")
        .replace("float(w.sum())", "float(kept[0].sum())")},
    # A generator made before the step holds the old leaves until it is consumed.
    "generator": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def train_step(state, batch):
        return jax.tree_util.tree_map(lambda x: x + batch.mean(), state)


    def main():
        state = {"w": jnp.ones((4, 4)), "b": jnp.zeros((4,))}
        sums = (float(x.sum()) for x in jax.tree.leaves(state))
        state = train_step(state, jnp.ones((2, 4)))
        print(list(sums), float(state["w"].sum()))


    main()
    """},
    # A memoised helper hands every caller the same arrays: donating one deletes the
    # cached value, and the next call with the same arguments returns a deleted array.
    "lru-cached-helper": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    @functools.lru_cache(maxsize=None)
    def initial_state(n):
        return jnp.ones((n, n))
""" + RUN_TWICE},
    # The same, one helper away: the helper's result is the cached one.
    "helper-of-lru-cached-helper": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    @functools.lru_cache(maxsize=None)
    def cached_ones(n):
        return jnp.ones((n, n))


    def initial_state(n):
        return cached_ones(n)
""" + RUN_TWICE},
    # A helper returns what another helper returns: a module-level array.
    "helper-of-global-returning-helper": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp

    TABLE = jnp.ones((4, 4))


    def table():
        return TABLE


    def initial_state():
        return table()


    @jax.jit  # the step
    def train_step(state, batch):
        return state * 0.5 + batch.mean()


    def main():
        state = initial_state()
        for _ in range(3):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(state.sum()), float(TABLE.sum()))


    main()
    """},
    # A helper returns an array a module-level object still holds.
    "module-level-holder": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    class Holder:
        def __init__(self):
            self.w = jnp.ones((4, 4))

        def get(self):
            return self.w


    HOLDER = Holder()


    def load():
        return HOLDER.get()


    @jax.jit  # the step
    def train_step(state, batch):
        return state * 0.5 + batch.mean()


    def main():
        state = load()
        for _ in range(3):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(state.sum()), float(HOLDER.w.sum()))


    main()
    """},
    # Library calls that hand back the state's very arrays, kept in names read after the step.
    "views-kept-across-the-step": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def train_step(state, batch):
        return jax.tree_util.tree_map(lambda x: x * 0.5 + batch.mean(), state)


    def main():
        state = {"w": jnp.ones((4, 4)), "b": jnp.zeros((4,))}
        leaves = jax.tree.leaves(state)
        same = jax.tree.map(lambda x: x, state)
        mapped = jax.vmap(lambda x: x)(state["w"])
        for _ in range(2):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(leaves[0].sum()), float(same["b"].sum()), float(mapped.sum()))


    main()
    """},
    # A helper puts the state into a local list it returns: the list outlives the call.
    "helper-returns-its-own-list": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp


    def snapshot(state):
        kept = []
        kept.append(state)
        return kept


    @jax.jit  # the step
    def train_step(state, batch):
        return jax.tree_util.tree_map(lambda x: x * 0.5 + batch.mean(), state)


    def main():
        state = {"w": jnp.ones((4, 4))}
        history = snapshot(state)
        for _ in range(2):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(history[0]["w"].sum()))


    main()
    """},
    # The same through a module-level cache in another module.
    "module-level-cache-other-module": {
        "weights.py": """
    import jax.numpy as jnp

    CACHE = {"w": jnp.ones((4, 4))}


    def load():
        return CACHE["w"]
    """,
        "train.py": """
    import functools

    import jax
    import jax.numpy as jnp

    import weights


    @jax.jit  # the step
    def train_step(state, batch):
        return state * 0.5 + batch.mean()


    def main():
        state = weights.load()
        for _ in range(3):
            state = train_step(state, jnp.ones((2, 4)))
        print(float(state.sum()), float(weights.CACHE["w"].sum()))


    main()
    """},
    # nnx.split of a model and an optimizer whose transform keeps the parameters in its state.
    "nnx-optimizer-keeps-params": {"train.py": """
    import functools

    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx


    def keep_params():
        return optax.GradientTransformation(lambda p: {"p": p}, lambda u, s, p=None: (u, s))


    def main():
        model = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.chain(optax.sgd(1e-2), keep_params()), wrt=nnx.Param)
        graphdef, state = nnx.split((model, optimizer))

        @jax.jit  # the step
        def train_step(state, batch):
            model, optimizer = nnx.merge(graphdef, state)
            grads = nnx.grad(lambda m: jnp.mean(m(batch) ** 2))(model)
            optimizer.update(model, grads)
            return nnx.state((model, optimizer))

        for _ in range(3):
            state = train_step(state, jnp.ones((8, 4)))
        model, optimizer = nnx.merge(graphdef, state)
        print(round(float(model.kernel[...].sum()), 4))


    main()
    """},
    # brax's positional pipeline: ``pipeline.init(sys, sys.init_q, ...)`` of another module
    # returns ``q`` as it is, and ``sys`` is passed again; an ``init`` method name is not
    # flax's ``model.init(rng, x)``.
    # The state caches the params array itself (optax's SAM keeps params in its state), and the step
    # receives both: jax rejects donating a buffer that another argument of the same call holds.
    "state-holds-another-argument": {"train.py": """
    import functools
    from typing import NamedTuple

    import jax
    import jax.numpy as jnp


    class State(NamedTuple):
        count: jax.Array
        cache: jax.Array


    @jax.jit  # the step
    def step(state, params):
        new = params - 0.1 * state.cache
        return State(state.count + 1, new), new


    def main():
        params = jnp.ones((256,))
        state = State(jnp.zeros((), jnp.int32), params)
        for _ in range(3):
            state, params = step(state, params)
        print(float(params.sum()))


    main()
    """},
    "init-of-another-module": {
        "pipeline.py": """
    import jax.numpy as jnp


    def init(sys, q, qd):
        return {"q": q, "x": q * 2 + qd}
    """,
        "train.py": """
    import functools

    import jax
    import jax.numpy as jnp

    import pipeline


    @jax.jit  # the step
    def step(state, sys, act):
        return {"q": state["q"] * 0.99, "x": state["x"] + sys["dt"] * act}


    def main():
        sys = {"dt": 0.01, "init_q": jnp.ones((4,))}
        state = pipeline.init(sys, sys["init_q"], jnp.zeros((4,)))
        for _ in range(3):
            state = step(state, sys, jnp.ones((4,)))
        print(round(float(state["x"].sum()), 4), float(sys["init_q"].sum()))


    main()
    """},
}


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))
    return folder / "train.py"


def _run(program: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, program.name], cwd=program.parent, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_default_fix_does_not_make_the_program_crash(name, tmp_path):
    program = _write(tmp_path, PROGRAMS[name])
    original = _run(program)
    assert original.returncode == 0, original.stderr

    source = program.read_text()
    assert STEP_MARK in source
    program.write_text(source.replace(STEP_MARK, DONATING))
    forced = _run(program)
    assert forced.returncode != 0, "donating the state should crash this program"
    assert any(crash in forced.stderr for crash in (
        "donate the same buffer twice", "has been deleted", "in the same call")), forced.stderr

    program.write_text(source)
    fix = Path(sys.executable).parent / "jaxmem-fix"
    done = subprocess.run([str(fix), "--no-cache", "."], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    fixed = _run(program)
    assert fixed.returncode == 0, program.read_text() + fixed.stderr
    assert fixed.stdout == original.stdout
    assert "donate_argnums=0" not in program.read_text() and "donate_argnums=(0" not in program.read_text()

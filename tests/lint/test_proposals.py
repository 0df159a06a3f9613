"""When is a donation proposed (JXM001/JXM002), at which confidence, and
when is it refused?  Includes calls across files of one run."""

import textwrap

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)


def _run(files: dict[str, str]):
    texts = {path: textwrap.dedent(text) for path, text in files.items()}
    hints = project_hints(texts)
    facts = [facts_for_file(path, text, ALL, hints) for path, text in texts.items()]
    return {r.path: r for r in report(facts, ALL)}


def _proposals(source: str):
    (result,) = _run({"m.py": source}).values()
    return {(f.parameter_name, f.code, f.confidence.value) for f in result.findings if f.code in ("JXM001", "JXM002")}


STEP = """
import jax

@jax.jit
def step(state, batch):
    return state + batch
"""

CASES = [
    pytest.param(
        "def train(batches, init):\n    state = init * 1.0\n    for b in batches:\n        state = step(state, b)\n",
        {("state", "JXM001", "high"), ("batch", "JXM002", "low")}, id="local-rebound-high"),
    # ``init * 1`` may repeat a list: a new list of the caller's own arrays
    pytest.param(
        "def train(batches, init):\n    state = init * 1\n    for b in batches:\n        state = step(state, b)\n",
        {("state", "JXM001", "medium"), ("batch", "JXM002", "low")}, id="repeat-may-hold-the-parameter"),
    pytest.param(
        "def train(state, b):\n    state = step(state, b)\n    return state\n",
        {("state", "JXM001", "medium"), ("batch", "JXM002", "low")}, id="parameter-is-medium"),
    pytest.param(
        "def train(state, b):\n    new = step(state, b)\n    print('x')\n    state = new\n    return state\n",
        {("state", "JXM001", "medium"), ("batch", "JXM002", "low")}, id="write-back-later"),
    pytest.param(
        "def train(init, batches):\n    state = init\n    for b in batches:\n        state = step(state, b)\n"
        "    return state\n",
        {("state", "JXM001", "medium"), ("batch", "JXM002", "low")}, id="local-copied-from-parameter-is-medium"),
    pytest.param(
        "def train(batches):\n    init = make()\n    state = init\n    for b in batches:\n        state = step(state, b)\n"
        "    return state, init\n",
        {("batch", "JXM002", "low")}, id="source-of-copy-read-later"),
    pytest.param(
        "def train(state, b):\n    new = step(state, b)\n    return new, state\n",
        {("batch", "JXM002", "low")}, id="read-later-never-proposed"),
    pytest.param(
        "def train(args):\n    s = args[0]\n    s = step(*args)\n    return s\n",
        set(), id="star-args-unresolved"),
    pytest.param(
        "def train(state, b):\n    log(state)\n    state = step(state, b)\n    return state\n",
        {("state", "JXM001", "medium"), ("batch", "JXM002", "low")}, id="passed-to-unknown-function-medium"),
    pytest.param(
        "def train(state, b):\n    print(state)\n    state = step(state, b)\n    return state\n",
        {("state", "JXM001", "medium"), ("batch", "JXM002", "low")}, id="builtin-call-keeps-nothing"),
    pytest.param(
        "@jax.jit\ndef outer(state, b):\n    state = step(state, b)\n    return state\n",
        set(), id="traced-call-ignored"),
    pytest.param(
        "runner = make_runner(step)\ndef train(b):\n    state = init()\n    state = step(state, b)\n    return state\n",
        {("state", "JXM001", "medium"), ("batch", "JXM002", "low")}, id="passed-around-medium"),
    pytest.param(
        "def train(b):\n    state = jax.numpy.zeros(3)\n    state = step(state, b + 1)\n    return state\n",
        {("state", "JXM001", "high"), ("batch", "JXM002", "low")}, id="temporary-argument"),
    pytest.param(
        "def train(b):\n    state = jax.numpy.zeros(3)\n    state = step(state=state, batch=b)\n    return state\n",
        {("state", "JXM001", "high"), ("batch", "JXM002", "low")}, id="keyword-arguments"),
]


@pytest.mark.parametrize("body,expected", CASES)
def test_proposals(body, expected):
    assert _proposals(STEP + body) == expected


def test_call_sites_that_disagree_are_refused_with_a_reason():
    (result,) = _run({"m.py": STEP + "def a(s, b):\n    s = step(s, b)\n    return s\n"
                      "def c(s, b):\n    out = step(s, b)\n    return out, s\n"}).values()
    assert not [f for f in result.findings if f.code == "JXM001"]
    (refusal,) = [r for r in result.refusals if r.parameter == "state"]
    assert "disagree" in refusal.reason and "line" in refusal.reason


def test_unknown_donation_spec_says_so():
    source = """
    import jax
    from functools import partial

    @partial(jax.jit, donate_argnums=() if EVAL else (0,))
    def step(state, batch):
        return state

    def train(b):
        state = init()
        state = step(state, b)
    """
    (result,) = _run({"m.py": source}).values()
    assert result.findings == []
    assert "not a constant" in result.refusals[0].reason


def test_calls_across_files_resolve_to_the_definition():
    files = {
        "pkg/train_lib.py": """
            import jax

            @jax.jit
            def train_step(state, batch):
                return state + batch
        """,
        "pkg/main.py": """
            from pkg.train_lib import train_step
            import pkg.train_lib as lib

            def main(batches):
                state = init()
                for batch in batches:
                    state = train_step(state, batch)
                    state = lib.train_step(state, batch)
        """,
    }
    results = _run(files)
    (finding,) = [f for f in results["pkg/train_lib.py"].findings if f.code == "JXM001"]
    assert finding.parameter_name == "state" and finding.span.line == 4
    assert {e.path for e in finding.evidence} == {"pkg/main.py"}
    assert len(finding.evidence) == 2
    assert results["pkg/main.py"].findings == []


def test_use_after_donation_across_files():
    files = {
        "lib.py": "import jax\nupdate = jax.jit(lambda p, g: p - g, donate_argnums=0)\n",
        "main.py": "from lib import update\ndef f(p, g):\n    q = update(p, g)\n    return p + q\n",
    }
    results = _run(files)
    assert [(f.code, f.span.line) for f in results["main.py"].findings] == [("JXM101", 4)]


def test_nnx_module_stays_usable_after_donation():
    source = """
    from flax import nnx

    @nnx.jit(donate_argnums=0)
    def train_step(model, batch):
        return model(batch)

    def train(model, batches):
        for batch in batches:
            loss = train_step(model, batch)
        return model
    """
    (result,) = _run({"m.py": source}).values()
    assert [f.code for f in result.findings if f.code.startswith("JXM1")] == []


@pytest.mark.parametrize("name, public", [
    ("steps.py", True),
    # a test module pytest collects is no API: nothing outside the project calls its step
    ("test_steps.py", False), ("steps_test.py", False)])
def test_public_definition_in_a_package_is_medium(tmp_path, name, public):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    source = STEP + "def train(b):\n    state = jax.numpy.zeros(3)\n    state = step(state, b)\n"
    path = pkg / name
    path.write_text(source)
    result = report([facts_for_file(str(path), source, ALL)], ALL)[0]
    (finding,) = [f for f in result.findings if f.code == "JXM001"]
    assert (finding.confidence is Confidence.MEDIUM) is public
    assert any("is public" in e.message for e in finding.evidence) is public


def test_a_factory_in_another_file_gives_the_pmapped_step_its_signature():
    files = {
        "pkg/steps.py": """
            def get_train_step(model, lr):
                def train_step(state, batch):
                    return state - lr * batch
                return train_step
        """,
        "pkg/main.py": """
            import jax
            import jax.numpy as jnp
            from pkg.steps import get_train_step

            def main(model, batches):
                train_step = get_train_step(model, 0.1)
                p_train_step = jax.pmap(train_step, axis_name="batch")
                state = jnp.zeros(3)
                for batch in batches:
                    state = p_train_step(state, batch)
                return state
        """,
    }
    findings = _run(files)["pkg/main.py"].findings
    assert {(f.code, f.parameter_name, f.confidence.value) for f in findings} == {
        ("JXM001", "state", "high"), ("JXM002", "batch", "low")}


def test_values_that_may_share_buffers_are_never_high():
    cases = {
        "split-model-read-later": """
            def train(model, batches):
                graphdef, state = nnx.split(model)
                for b in batches:
                    state = step(state, b)
                return model
        """,
        "shared-subtree": """
            def init(p):
                z = jnp.zeros_like(p)
                return (z, z)
            def train(batches):
                state = init(jnp.ones(3))
                for b in batches:
                    state = step(state, b)
        """,
        "loop-variable-from-a-list": """
            def train(states, b):
                for state in states:
                    state = step(state, b)
        """,
        "attribute-owned": """
            class T:
                def fit(self, b):
                    self.key = step(self.key, b)
        """,
        "made-from-a-parameter": """
            def train(params, batches):
                state = TrainState.create(params=params)
                for b in batches:
                    state = step(state, b)
        """,
    }
    header = STEP + "import jax.numpy as jnp\nfrom flax import nnx\nfrom flax.training.train_state import TrainState\n"
    for name, body in cases.items():
        confidences = {c for p, code, c in _proposals(header + textwrap.dedent(body)) if code == "JXM001"}
        assert "high" not in confidences, name


def test_a_method_result_may_be_its_objects_own_arrays():
    body = """
        class Trainer:
            def fit(self, batches):
                state = self.get_state()
                for b in batches:
                    state = step(state, b)
                return state

        def replaced(old, batches):
            state = old.replace(step=0)
            for b in batches:
                state = step(state, b)
            return state
    """
    confidences = {c for p, code, c in _proposals(STEP + textwrap.dedent(body)) if code == "JXM001"}
    assert confidences == {"medium"}


def test_optimizer_state_may_hold_the_params_it_was_made_from():
    body = """
        def train(opt, initial_params, batches):
            params = initial_params
            state = opt.init(params)
            for b in batches:
                params, state = step2(params, state)
            return initial_params
    """
    step2 = "\n@jax.jit\ndef step2(p, s):\n    return p - 1, jax.tree_util.tree_map(lambda x: x * 0.9, s)\n"
    proposals = _proposals(STEP + step2 + textwrap.dedent(body))
    assert ("s", "JXM001", "high") not in proposals and ("p", "JXM001", "high") not in proposals
    linen = """
        def train(model, rng, x, batches):
            params = model.init(rng, x)
            for b in batches:
                params = step(params, b)
            return rng, x
    """
    assert ("state", "JXM001", "high") in _proposals(STEP + textwrap.dedent(linen))


def test_nnx_modules_updated_in_place_are_proposed_without_rebinding():
    source = """
    from flax import nnx

    @nnx.jit
    def train_step(model, optimizer, batch):
        grads = nnx.grad(lambda m: m(batch).mean())(model)
        optimizer.update(model, grads)
        return 0.0

    def train(batches):
        model = Model(nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, tx)
        for batch in batches:
            alias = model
            loss = train_step(model, optimizer, batch)
            print(alias, model)
        return model
    """
    (result,) = _run({"m.py": source}).values()
    found = {(f.code, f.parameter_name, f.confidence.value) for f in result.findings}
    assert ("JXM001", "optimizer", "medium") in found  # nnx objects may share Variables: not proved
    # optimizer.update(model, grads) updates the model too (flax 0.12.8): proposed with it;
    # `alias` is the same Module, which nnx writes back.
    assert ("JXM001", "model", "medium") in found
    assert not any(code == "JXM001" and name == "batch" for code, name, _ in found)
    assert not any(code == "JXM101" for code, _, _ in found)


def test_an_nnx_object_a_step_only_reads_is_proposed_when_made_by_an_nnx_class():
    header = """
    import flax.struct
    import jax.numpy as jnp
    from flax import nnx

    class Base(nnx.Module):
        pass

    class Model(Base):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)

    @flax.struct.dataclass
    class Params:
        w: jnp.ndarray = None

    @nnx.jit
    def eval_step(model, x):
        return jnp.mean(model(x))

    def evaluate(batches):
        model = MAKE
        return [eval_step(model, x) for x in batches]
    """
    expected = {
        "Model(nnx.Rngs(0))": "high",  # derives from nnx through a class of the file
        "nnx.Linear(2, 2, rngs=nnx.Rngs(0))": "high",
        "Params()": None,  # a pytree: a donating nnx.jit deletes it as jax.jit does
        "nnx.Rngs(0)": None,  # keys of a few bytes, no Module
        "Unknown(1)": None,  # a class jaxmem cannot see
    }
    for make, confidence in expected.items():
        (result,) = _run({"m.py": header.replace("MAKE", make)}).values()
        found = [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "model"]
        assert [f.confidence.value for f in found] == ([confidence] if confidence else []), (make, found)
        if found:
            assert "an nnx object" in found[0].message


def test_positions_are_proposed_without_a_visible_signature_at_medium():
    source = """
    import jax

    def make_runner(client_step):
        jit_step = jax.jit(client_step)

        def run(init, batches):
            state = init * 1
            for batch in batches:
                state, out = jit_step(state, batch)
            return state
        return run
    """
    (result,) = _run({"m.py": source}).values()
    (finding,) = [f for f in result.findings if f.code == "JXM001"]
    assert (finding.parameter_index, finding.parameter_name, finding.confidence) == (0, None, Confidence.MEDIUM)
    assert finding.fix.index == 0 and finding.fix.name is None


def test_values_made_from_shared_or_caller_owned_parts_are_not_high():
    cases = {
        "one-attribute-five-times": """
            class Runner:
                def run(self, batches):
                    meta = Meta(a=self.dummy, b=self.dummy)
                    for b in batches:
                        meta = step(meta, b)
                    return meta
        """,
        "split-from-self-one-call-back": """
            class Model:
                def shard(self, batches):
                    gdef, gstate = nnx.split(self)
                    mock = ShardState(graphdef=gdef, graphstate=gstate)
                    for b in batches:
                        mock = step(mock, b)
                    return mock
        """,
    }
    header = STEP + "from flax import nnx\n"
    for name, body in cases.items():
        confidences = {c for p, code, c in _proposals(header + textwrap.dedent(body)) if code == "JXM001"}
        assert "high" not in confidences, name


OPTAX_UNPACKED = """
import jax
import jax.numpy as jnp
import optax

{binding}

@jax.jit
def update(params, opt_state, batch):
    updates, opt_state = opt_update(batch, opt_state)
    return optax.apply_updates(params, updates), opt_state

def train(batches):
    params = {{"w": jnp.ones((4, 4))}}
    opt_state = opt_init(params)
    for b in batches:
        params, opt_state = update(params, opt_state, b)
    return params
"""


@pytest.mark.parametrize("binding, expected", [
    # optax.adam's init makes new buffers; its update keeps opt_state's structure
    ("opt_init, opt_update = optax.adam(1e-3)", {"params": "high", "opt_state": "high"}),
    # lookahead's state holds the parameters: nothing proves opt_state its own
    ("opt_init, opt_update = optax.lookahead(optax.adam(1e-3), 2, 0.5)", {"params": "medium", "opt_state": "medium"}),
    # bound twice: which transform opt_init is is not known
    ("opt_init, opt_update = optax.adam(1e-3)\nopt_init = make_init()", {"params": "medium", "opt_state": "medium"}),
])
def test_unpacked_optax_transform(binding, expected):
    (result,) = _run({"m.py": OPTAX_UNPACKED.format(binding=binding)}).values()
    found = {f.parameter_name: f.confidence.value for f in result.findings if f.code == "JXM001"}
    assert found == expected


def test_jitted_optax_update_has_a_known_signature_and_outputs():
    source = """
    import jax
    import optax

    def train(params, grads_list):
        tx = optax.adam(1e-3)
        state = tx.init(params)
        update_fn = jax.jit(tx.update)
        for grads in grads_list:
            updates, state = update_fn(grads, state, params)
        return updates
    """
    (result,) = _run({"m.py": source}).values()
    found = {(f.parameter_name, f.code, f.confidence.value) for f in result.findings if f.code in ("JXM001", "JXM002")}
    # state by name (the signature is optax's), high: rebound, its own, an output takes it
    assert ("state", "JXM001", "high") in found
    assert not any(name == "params" and code == "JXM001" for name, code, _ in found)


@pytest.mark.parametrize("decorator, expected", [
    ("", "high"),  # a plain helper making new arrays
    ("@functools.partial(jax.jit, static_argnums=0)", "high"),  # a jit: new buffers per call
    ("@functools.lru_cache(maxsize=None)", "medium"),  # the cache keeps and hands out the same arrays
    ("@functools.cache", "medium"),
    ("@some_registry.register", "medium"),  # a decorator jaxmem does not know may do the same
])
def test_a_decorated_helper_result_is_not_its_callers_own(decorator, expected):
    source = f"""
import functools

import jax
import jax.numpy as jnp

{decorator}
def initial(n):
    return jnp.ones((n, n))

@jax.jit
def step(state):
    return state * 2

def run(n):
    state = initial(n)
    state = step(state)
    return state
"""
    (result,) = _run({"m.py": source}).values()
    assert {f.confidence.value for f in result.findings if f.code == "JXM001"} == {expected}


def test_a_use_of_a_local_jit_counts_in_its_own_function_only():
    source = textwrap.dedent("""
        import jax
        import jax.numpy as jnp


        def main():
            @jax.jit
            def train(state, x):
                return state + x

            fns = [train]
            s = jnp.ones(3)
            s = train(s, 1.0)
            return fns, s


        def other():
            @jax.jit
            def train(state, x):
                return state + x

            s = jnp.ones(3)
            s = train(s, 1.0)
            return s
    """)
    (result,) = _run({"m.py": source}).values()
    (handed_on,) = [f for f in result.findings if f.code == "JXM001" and f.span.line == 7]
    (kept,) = [f for f in result.findings if f.code == "JXM001" and f.span.line == 18]
    assert handed_on.confidence is Confidence.MEDIUM and "`train` is used here other than called" in handed_on.message
    assert kept.confidence is Confidence.HIGH


TRAIN = """
import jax
import jax.numpy as jnp

@jax.jit
def _train_step(state, batch):
    return state + batch

def train(batches):
    state = jnp.zeros(3)
    for b in batches:
        state = _train_step(state, b)
    return state
"""


def test_a_module_beside_the_file_that_hands_a_name_on_is_the_one_it_means():
    # examples/b/ hands its own ``train._train_step`` on; examples/a/'s step is not concerned
    files = {"examples/a/train.py": TRAIN, "examples/b/train.py": TRAIN,
             "examples/b/train_test.py": "import train\n\nSTEPS = [train._train_step]\n"}
    confidence = {path: {f.confidence for f in r.findings if f.code == "JXM001"} for path, r in _run(files).items()}
    assert confidence["examples/a/train.py"] == {Confidence.HIGH}
    assert confidence["examples/b/train.py"] == {Confidence.MEDIUM}
    files["examples/c/train_test.py"] = files.pop("examples/b/train_test.py")  # no train.py beside it: either one
    confidence = {path: {f.confidence for f in r.findings if f.code == "JXM001"} for path, r in _run(files).items()}
    assert confidence["examples/a/train.py"] == confidence["examples/b/train.py"] == {Confidence.MEDIUM}


TRACED_STEP = """
    import jax
    import jax.numpy as jnp


    @jax.jit
    def train_step(state, x):
        return state + x


    def main(batches):
        state = jnp.ones(3)
        print({tracer})
        for x in batches:
            state = train_step(state, x)
        return float(state.sum())
"""


@pytest.mark.parametrize("tracer, high", [
    ("jax.make_jaxpr(train_step)(state, 1.0)", True),
    ("jax.eval_shape(train_step, state, 1.0)", True),
    # the function, not the step, is traced: the lambda is a mention of the step
    ("jax.eval_shape(lambda s: train_step(s, 1.0), state)", False),
    ("jax.make_jaxpr(train_step, static_argnums=())(state, 1.0)", True),
    ("[train_step]", False),
])
def test_a_step_only_traced_besides_its_calls_is_still_called_only_where_seen(tracer, high):
    (result,) = _run({"m.py": TRACED_STEP.format(tracer=tracer)}).values()
    (finding,) = [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "state"]
    assert (finding.confidence is Confidence.HIGH) is high, finding.message
    assert high or "other than called" in finding.message


def test_a_step_traced_in_another_file_or_through_self_is_not_handed_on():
    train = textwrap.dedent(TRACED_STEP.format(tracer="0"))
    other = """
        import jax
        import haiku as hk
        import train


        def summary(state):
            return hk.experimental.tabulate(train.train_step)(state, 1.0)


        class Trainer:
            def __init__(self):
                self.step = jax.jit(lambda s, x: s + x)

            def run(self, state, batches):
                print(jax.make_jaxpr(self.step)(state, 1.0))
                for x in batches:
                    state = self.step(state, x)
                return state
    """
    results = _run({"train.py": train, "other.py": other})
    (in_train,) = [f for f in results["train.py"].findings if f.code == "JXM001" and f.parameter_name == "state"]
    assert in_train.confidence is Confidence.HIGH, in_train.message
    handed = _run({"train.py": train, "other.py": other.replace(
        "hk.experimental.tabulate(train.train_step)(state, 1.0)", "[train.train_step]")})
    (medium,) = [f for f in handed["train.py"].findings if f.code == "JXM001" and f.parameter_name == "state"]
    assert medium.confidence is Confidence.MEDIUM and "other than calling it" in medium.message
    traced_self = [f for f in results["other.py"].findings if f.code == "JXM001"]
    assert traced_self and "other than called" not in " ".join(f.message for f in traced_self)


# A module, an nnx.jit step that updates the model and optimizer in place.
NNX_STEP = """
    import jax
    import optax
    from flax import nnx


    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            return self.lin(x)


    @nnx.jit
    def train_step(model, optimizer, x):
        grads = nnx.grad(lambda m: m(x).mean())(model)
        optimizer.update(model, grads)
"""

NOTEBOOK = NNX_STEP + """

    def rebuild(graphdef, state):
        {rebuild}
        return model


    model = MLP(nnx.Rngs(1))
    {between}
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    for _ in range(3):
        train_step(model, optimizer, x)
    {after}
"""


@pytest.mark.parametrize("rebuild, between, after, high", [
    # the first model's arrays, held and read: another object
    ("model = nnx.merge(graphdef, state)", "old = nnx.state(model)", "print(old)\nmodel = nnx.merge(g, s)", True),
    # ``model`` is the function's own local there
    ("model = nnx.merge(graphdef, state)", "pass", "model = nnx.merge(g, s)", True),
    # ... unless the function declares it global: it may rebind the notebook's model
    ("global model\n        model = nnx.merge(graphdef, state)", "pass", "pass", False),
    # a binding inside an ``if``: which object a statement sees is not known
    ("pass", "pass", "if x is None:\n        model = nnx.merge(g, s)", False),
    # the next assignment's value reads the trained object
    ("pass", "pass", "model = nnx.merge(*nnx.split(model))", False),
    # a def may run at any time: its reads count for every object
    ("return jax.tree.leaves(nnx.state(model))", "pass", "model = nnx.merge(g, s)", False),
])
def test_an_nnx_object_a_notebook_rebinds_is_judged_by_its_own_statements(rebuild, between, after, high):
    source = textwrap.dedent(NOTEBOOK).format(rebuild=rebuild, between=between, after=after)
    (result,) = _run({"m.py": source}).values()
    found = [f for f in result.findings if f.code == "JXM001" and f.parameter_name == "model"]
    assert found or not high  # a global rebound in a def: not proposed at all
    assert all((f.confidence is Confidence.HIGH) is high for f in found), [f.message for f in found]


GLOBAL_OBJECTS = NNX_STEP + """

    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


    def train(batches):
        {body}
"""


@pytest.mark.parametrize("path, body, high", [
    ("m.ipynb", "for x in batches:\n            train_step(model, optimizer, x)", True),
    # another file may import a module's model and hold its arrays while it calls train()
    ("m.py", "for x in batches:\n            train_step(model, optimizer, x)", False),
    # a nested function's free name may be its enclosing function's
    ("m.ipynb", "def inner(x):\n            train_step(model, optimizer, x)\n        for x in batches:\n"
                "            inner(x)", False),
    # the function rebinds the notebook's model
    ("m.ipynb", "global model\n        model = MLP(nnx.Rngs(1))\n        train_step(model, optimizer, batches[0])",
     False),
])
def test_nnx_objects_a_notebooks_function_reads_as_globals_are_the_notebooks(path, body, high):
    source = textwrap.dedent(GLOBAL_OBJECTS).format(body=body)
    (result,) = _run({path: source}).values()
    found = [f for f in result.findings if f.code == "JXM001" and f.parameter_name in ("model", "optimizer")]
    assert found or not high
    assert any(f.confidence is Confidence.HIGH for f in found) is high, [f.message for f in found]


@pytest.mark.parametrize("reach", [
    "exec(open('helper.py').read())",  # may bind or read any name of the notebook
    "print(globals()['model'])",
    "__jaxmem_magic__(run, i, helper, py)",  # ``%run -i helper.py`` in a notebook cell
])
def test_code_that_reaches_the_namespace_unnamed_keeps_nnx_objects_medium(reach):
    body = "for x in batches:\n            train_step(model, optimizer, x)"
    source = textwrap.dedent(GLOBAL_OBJECTS).format(body=body)
    assert _high_nnx_objects(source) and not _high_nnx_objects(source + reach + "\n")
    module_level = textwrap.dedent(NOTEBOOK).format(rebuild="pass", between="pass", after="model = nnx.merge(g, s)")
    assert _high_nnx_objects(module_level) and not _high_nnx_objects(module_level + reach + "\n")


def _high_nnx_objects(source: str) -> set:
    (result,) = _run({"m.ipynb": source}).values()
    return {f.parameter_name for f in result.findings if f.code == "JXM001" and f.confidence is Confidence.HIGH}


TREE_UTIL = """
    import jax
    import jax.numpy as jnp


    @jax.jit
    def tree_add(left, right):
        return jax.tree_util.tree_map(jnp.add, left, right)


    _tree_add_eq = jax.jit(tree_add)


    def tree_sum(pytrees):
        total = None
        for pytree in pytrees:
            if total is None:
                total = jax.tree_util.tree_map(jnp.array, pytree)
            else:
                total = _tree_add_eq(total, pytree)
        return total
"""


@pytest.mark.parametrize("use, high", [
    ("print(jax.tree_util.tree_leaves(tree_util.tree_sum([{'a': 1.0}])))", True),  # ``jax.tree_util``: jax's
    ("FUNCTIONS = vars(tree_util)", False),  # the project module itself, by name
    ("print(getattr(tree_util, NAME)([{'a': 1.0}]))", False),
])
def test_an_attribute_named_like_a_project_module_does_not_hand_the_module_on(use, high):
    # fedjax: ``from fedjax.core import tree_util`` beside ``jax.tree_util.tree_map(...)``
    files = {"pkg/tree_util.py": TREE_UTIL,
             "pkg/user.py": f"import jax\nfrom pkg import tree_util\n\nNAME = 'tree_sum'\nnorm = jax.jit(abs)\n{use}\n"}
    (left,) = [f for f in _run(files)["pkg/tree_util.py"].findings if f.parameter_name == "left"]
    assert (left.confidence == Confidence.HIGH) is high, left.message


ACCUMULATOR = """
    import jax

    @jax.jit
    def weigh(tree, weight):
        return tree * weight

    @jax.jit
    def add(total, tree):
        return total + tree

    def mean(pairs):
        total = None
        for tree, weight in pairs:
            weighted = {weighted}
            if total is None:
                total = weighted
            else:
                total = add(total, weighted)
        return total
"""


@pytest.mark.parametrize("weighted, high", [
    ("weigh(tree, weight)", True),  # new buffers in each iteration: the copy holds an older value
    ("tree", False),  # the caller's tree: not own
    ("weigh(tree, weight) if weight else tree", False),  # not always new buffers
])
def test_a_copy_of_an_older_fresh_value_does_not_share_with_the_current_one(weighted, high):
    (total,) = [f for f in _run({"m.py": ACCUMULATOR.format(weighted=weighted)})["m.py"].findings
                if f.parameter_name == "total" and f.code == "JXM001"]
    assert (total.confidence == Confidence.HIGH) is high, total.message


MODEL_AND_OPTIMIZER = """
    import jax.numpy as jnp
    import optax
    from flax import nnx


    @nnx.jit
    def train_step(model, optimizer, x):
        grads = nnx.grad(lambda m: jnp.mean(m(x)))(model)
        optimizer.update(grads)


    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    train_model = nnx.view(model, deterministic=False)
    optimizer = nnx.ModelAndOptimizer(model, {tx})
    {before}
    for x in jnp.ones((3, 2, 2)):
        train_step(train_model, optimizer, x)
    {after}
"""


@pytest.mark.parametrize("tx, before, after, high", [
    ("optax.adam(1e-3)", "", "print(model(jnp.ones(2)))", True),  # a result taken once nothing donates any more
    ("make_tx()", "", "", False),  # a transform jaxmem does not know: its state may hold the model's arrays
    ("optax.adam(1e-3)", "kernel = model.kernel[...]", "print(kernel)", False),  # an array kept outside the Variables
    ("optax.adam(1e-3)", "y = model(jnp.ones(2))", "train_step(train_model, optimizer, y)\nprint(y)", False),
    ("optax.adam(1e-3)", "", "for x in jnp.ones((2, 2)):\n    print(model(x))", False),  # called in a loop
])
def test_model_and_optimizer_owns_its_arrays_when_its_model_does(tx, before, after, high):
    source = MODEL_AND_OPTIMIZER.format(tx=tx, before=before, after=after.replace("\n", "\n    "))
    (optimizer,) = [f for f in _run({"m.py": source})["m.py"].findings if f.parameter_name == "optimizer"]
    assert (optimizer.confidence == Confidence.HIGH) is high, optimizer.message

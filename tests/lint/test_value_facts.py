"""Facts about values and calls decide confidence (issue 14): what library
calls do with their arguments, values that hold no arrays, and summaries of
project functions across files.  VALID: proposed at high confidence;
INVALID: kept at medium (or not proposed), with the reason."""

import textwrap

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)

STEP = """
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state

@jax.jit
def step(state, batch):
    return jax.tree_util.tree_map(lambda s: s + batch.mean(), state)
"""


def _run(files: dict[str, str]):
    texts = {path: textwrap.dedent(text) for path, text in files.items()}
    hints = project_hints(texts)
    facts = [facts_for_file(path, text, ALL, hints) for path, text in texts.items()]
    return {r.path: r for r in report(facts, ALL)}


def _state_finding(files: dict[str, str], path: str = "m.py"):
    found = [f for f in _run(files)[path].findings if f.code == "JXM001" and f.parameter_name == "state"]
    return found[0] if found else None


def _body(text: str) -> dict[str, str]:
    return {"m.py": STEP + textwrap.dedent(text)}


HIGH = [
    # a comprehension whose every element is made anew: each entry is its own new array
    pytest.param("""
        shapes = {"w": (4,), "b": (4,)}
        state = {k: jnp.zeros(s) + 1.0 for k, s in shapes.items()}
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, id="dict-comprehension-of-new-arrays"),
    # a tree map of a helper of this file that returns new arrays, or what it is given as it is
    pytest.param("""
        def cast(x):
            return x.astype(jnp.float32)

        params = {"w": jnp.ones(4), "b": jnp.zeros(4)}
        state = jax.tree.map(cast, params)
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, id="tree-map-of-a-helper-returning-its-argument"),
    # flax's lm1b example: a helper that returns its argument handed to jax.vmap, with the
    # state's structure in in_axes: vmap wraps the helper, nothing runs it on the state
    pytest.param("""
        def predict(params, x):
            return params, x

        state = {"w": jnp.ones(4)}
        pred = jax.jit(jax.vmap(predict, in_axes=(jax.tree_util.tree_map(lambda x: None, state), 0)))
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, id="a-keeping-helper-wrapped-by-vmap-beside-the-state"),
    pytest.param("""
        state = [jnp.zeros(4) * i for i in range(3)]
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, id="list-comprehension-of-arithmetic-on-its-own-names"),
    # flax's nnx_toy_examples/03_train_state.py: the filters of nnx.split are not held
    # (before, ``nnx`` of ``nnx.Param`` counted as a value read again after the training)
    pytest.param("""
        from flax import nnx

        class Count(nnx.Variable):
            pass

        class TrainState(train_state.TrainState):
            counts: nnx.State

        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        graphdef, params, counts = nnx.split(model, nnx.Param, Count)
        state = TrainState.create(apply_fn=None, params=params, tx=optax.sgd(0.1), counts=counts)
        del params, counts
        for b in range(3):
            state = step(state, b)
        model = nnx.merge(graphdef, state.params, state.counts)
        print(model.kernel[...])
        """, id="module-level-state-of-a-split-by-filters"),
    pytest.param("""
        def train(batches):
            params = {"w": jnp.ones(3)}
            state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-3))
            for b in batches:
                state = step(state, b)
            return state
        """, id="train-state-create-of-own-params"),
    pytest.param("""
        def train(batches, config):
            params = {"w": jnp.ones(3)}
            tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(config.lr))
            state = tx.init(params)
            for b in batches:
                state = step(state, b)
            return state, params
        """, id="standard-optax-init-is-new-memory"),
    pytest.param("""
        def train(batches):
            state = {"w": jnp.ones(3)}
            tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
            opt_state = tx.init(state)  # reads state, keeps nothing
            for b in batches:
                state = step(state, b)
            return state, opt_state
        """, id="standard-optax-init-keeps-nothing-of-its-argument"),
    pytest.param("""
        def train(batches):
            n = len(jax.devices())
            params = {"w": jnp.ones(3)}
            state = State(params, n, "name")  # a class: holds what it is given
            for b in batches:
                state = step(state, b)
            print(n)
            return state
        """, id="array-free-inputs-read-later-share-nothing"),
    pytest.param("""
        def helper(params, config):
            return train_state.TrainState.create(apply_fn=None, params=params, tx=optax.sgd(config.lr))

        def train(batches, config):
            params = {"w": jnp.ones(3)}
            state = helper(params, config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="helper-returns-params-not-config"),
]

HIGH += [
    pytest.param("""
        import ml_collections
        from absl import flags

        FLAGS = flags.FLAGS
        tx = optax.adamw(1e-3)

        def train(batches, config: ml_collections.ConfigDict, workdir: str):
            params = {"w": jnp.ones(3)}
            state = State(params, config, workdir, FLAGS.steps, jax.local_devices())
            opt_state = tx.init(params)
            for b in batches:
                state = step(state, b)
                opt_state = step(opt_state, b)
            print(config.lr, workdir, FLAGS.steps)
            return state, opt_state
        """, id="configs-flags-paths-devices-and-a-module-level-optimizer"),
    pytest.param("""
        import ml_collections

        def train(batches, config: ml_collections.ConfigDict):
            config.lr = 0.1  # a literal stored into it: still no array
            names = ["w"]
            names.append("b")
            params = {"w": jnp.ones(3)}
            state = State(params, config, names)
            for b in batches:
                state = step(state, b)
            print(config, names)
            return state
        """, id="configs-and-lists-given-only-literals"),
    pytest.param("""
        import os
        import ml_collections

        def train(batches, config: ml_collections.ConfigDict, workdir: str):
            vocab_path = config.vocab_path  # flax's lm1b: a default filled in from what it held
            if vocab_path is None:
                vocab_path = os.path.join(workdir, "sentencepiece_model")
                config.vocab_path = vocab_path
            state = State({"w": jnp.ones(3)}, config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="a-config-given-back-what-it-held-or-a-path"),
    pytest.param("""
        import logging
        import ml_collections

        def describe(cfg):
            print(cfg.lr)
            cfg.name = "run"  # a literal: still no array

        def train(batches):
            config = ml_collections.ConfigDict()
            config.lr = 0.1
            describe(config)
            logging.info("config %s", config)
            names = []
            names.append("w")
            state = State({"w": jnp.ones(3)}, config, names, len(names))
            for b in batches:
                state = step(state, b)
            return state, config, names
        """, id="configs-given-to-calls-that-store-no-array"),
]

# A value array-free by its origin that later gets an array stored into it: what the state is
# made from holds that array, read after the donating call (flax nnx's crash of session 36).
GAINS_AN_ARRAY = [
    pytest.param("""
        import ml_collections

        def train(batches, config: ml_collections.ConfigDict):
            config.w = jnp.ones(3)
            state = State(config.w)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="a-parameter-config-given-an-array-attribute"),
    pytest.param("""
        import ml_collections

        def train(batches):
            config = ml_collections.ConfigDict()
            config["w"] = jnp.ones(3)
            state = State(config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="a-local-config-given-an-array-item"),
    pytest.param("""
        def train(batches):
            parts = []
            parts.append(jnp.ones(3))
            state = State(parts)
            for b in batches:
                state = step(state, b)
            return state, parts
        """, id="a-local-list-given-an-array"),
    pytest.param("""
        import ml_collections

        CONFIG = ml_collections.ConfigDict()

        def setup():
            CONFIG.w = jnp.ones(3)

        def train(batches):
            state = State(CONFIG)
            for b in batches:
                state = step(state, b)
            return state, CONFIG
        """, id="a-module-level-config-given-an-array-in-a-function"),
    pytest.param("""
        import ml_collections

        def train(batches, config: ml_collections.ConfigDict):
            w = config.w
            if w is None:
                w = jnp.ones(3)
                config.w = w
            state = State({"w": jnp.ones(3)}, config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="a-config-given-back-what-it-held-or-an-array"),
]

# ... or given an array by a call: a def of the same file that stores into its parameter (read,
# a few calls deep), ``setattr``, or a call this file cannot read made for its effect.
GAINS_AN_ARRAY += [
    pytest.param("""
        import ml_collections

        def populate(cfg):
            cfg.w = jnp.ones(3)

        def train(batches):
            config = ml_collections.ConfigDict()
            populate(config)
            state = State(config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="a-config-filled-by-a-def-of-the-file"),
    pytest.param("""
        def add_weights(layers, n):
            layers.extend(jnp.ones(3) for _ in range(n))

        def build(layers):
            add_weights(layers, 2)

        def train(batches):
            layers = []
            build(layers)
            state = State(layers)
            for b in batches:
                state = step(state, b)
            return state, layers
        """, id="a-list-filled-two-calls-down"),
    pytest.param("""
        from project.setup import populate

        def train(batches):
            options = {}
            populate(options)
            state = State(options)
            for b in batches:
                state = step(state, b)
            return state, options
        """, id="a-dict-filled-by-another-files-function"),
    pytest.param("""
        def train(batches, loader):
            options = {"lr": 0.1}
            loader.fill(options)
            state = State(options)
            for b in batches:
                state = step(state, b)
            return state, options
        """, id="a-dict-filled-by-a-method"),
    pytest.param("""
        def train(batches, loader):
            options = {"lr": 0.1}
            _ = loader.fill(options)
            state = State(options)
            for b in batches:
                state = step(state, b)
            return state, options
        """, id="a-dict-filled-by-a-method-whose-result-is-thrown-away"),
    pytest.param("""
        import ml_collections

        def train(batches):
            config = ml_collections.ConfigDict()
            setattr(config, "w", jnp.ones(3))
            state = State(config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="a-config-given-an-array-by-setattr"),
    pytest.param("""
        import ml_collections
        from project import setup

        def train(batches):
            config = ml_collections.ConfigDict({"model": {"width": 3}})
            setup.add_tables(config.model)
            state = State(config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="a-part-of-a-config-filled-by-another-files-function"),
    pytest.param("""
        import dataclasses
        import ml_collections

        @dataclasses.dataclass
        class Filler:
            cfg: object

            def __post_init__(self):
                self.cfg.w = jnp.ones(3)

        def train(batches):
            config = ml_collections.ConfigDict()
            Filler(config)
            state = State(config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, id="a-config-filled-by-a-dataclass-post-init"),
    pytest.param("""
        import ml_collections

        CONFIG = ml_collections.ConfigDict()

        def populate(cfg):
            cfg["w"] = jnp.ones(3)

        def setup():
            populate(CONFIG)

        def train(batches):
            state = State(CONFIG)
            for b in batches:
                state = step(state, b)
            return state, CONFIG
        """, id="a-module-level-config-filled-by-a-def"),
]


@pytest.mark.parametrize("body", GAINS_AN_ARRAY)
def test_a_value_given_an_array_after_it_is_made_is_not_array_free(body):
    finding = _state_finding(_body(body))
    assert finding is not None and finding.confidence is not Confidence.HIGH, finding and finding.message

MEDIUM = [
    # a comprehension whose elements are an outer value, a view of one, or the iterable's own
    pytest.param("""
        TABLE = {"w": jnp.ones(4)}

        def lookup(x):
            return TABLE["w"]

        state = jax.tree.map(lookup, {"w": jnp.ones(4)})
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, "jax.tree.map(lookup", id="tree-map-of-a-helper-returning-a-module-value"),
    pytest.param("""
        SEEN = []

        def keep(x):
            y = x * 1
            SEEN.append(y)
            return y

        state = jax.tree.map(keep, {"w": jnp.ones(4)})
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, "jax.tree.map(keep", id="tree-map-of-a-helper-that-keeps-what-it-returns"),
    pytest.param("""
        params = {"w": jnp.ones(4)}
        state = {"all": params, "w": params["w"]}
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, "twice", id="a-value-and-its-part-in-one-container"),
    pytest.param("""
        base = jnp.ones(4)
        state = {k: base for k in ["w", "b"]}
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, "{k: base for k in", id="dict-comprehension-of-one-array"),
    pytest.param("""
        base = jnp.ones(4)
        state = {k: jnp.asarray(base) for k in ["w", "b"]}
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, "{k: jnp.asarray(base) for k in", id="dict-comprehension-of-views-of-one-array"),
    pytest.param("""
        leaves = [jnp.ones(4), jnp.zeros(4)]
        state = [v for v in leaves]
        for b in range(3):
            state = step(state, jnp.ones(4))
        """, "[v for v in leaves]", id="list-comprehension-of-another-lists-arrays"),
    pytest.param("""
        def train(batches):
            params = {"w": jnp.ones(3)}
            state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-3))
            for b in batches:
                state = step(state, b)
            return state, params
        """, "`params`, read again", id="create-input-read-later"),
    pytest.param("""
        def train(batches, holder):
            params = holder.params
            state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-3))
            for b in batches:
                state = step(state, b)
            return state
        """, "`holder", id="create-of-someone-elses-params"),
    pytest.param("""
        def train(batches):
            params = {"w": jnp.ones(3)}
            state = optax.LookaheadParams.init_synced(params)
            for b in batches:
                state = step(state, b)
            return state
        """, "holds the same arrays twice", id="lookahead-init-synced"),
    pytest.param("""
        def train(batches, tx):
            params = {"w": jnp.ones(3)}
            state = tx.init(params)
            for b in batches:
                state = step(state, b)
            return state
        """, "may return arrays its object still holds", id="unknown-optimizer-init"),
    pytest.param("""
        def train(batches, tx):
            state = {"w": jnp.ones(3)}
            opt_state = tx.init(state)  # an optimizer jaxmem cannot see may keep state
            for b in batches:
                state = step(state, b)
            return state, opt_state
        """, "which may keep it", id="unseen-optimizer-init-may-keep-its-argument"),
    pytest.param("""
        def helper(params, tx):
            state = train_state.TrainState.create(apply_fn=None, params=params, ema=params, tx=tx)
            return state

        def train(batches):
            state = helper({"w": jnp.ones(3)}, optax.sgd(0.1))
            for b in batches:
                state = step(state, b)
            return state
        """, "returns `params` in two places", id="helper-holds-one-value-twice"),
    pytest.param("""
        def inner(params):
            return {"fast": params, "slow": params}

        def helper(params):
            return inner(params)

        def train(batches):
            state = helper({"w": jnp.ones(3)})
            for b in batches:
                state = step(state, b)
            return state
        """, "in two places", id="helper-calling-a-helper-that-returns-twice"),
    pytest.param("""
        def helper(params, config):
            return train_state.TrainState.create(apply_fn=None, params=params, tx=optax.sgd(config.lr))

        def train(batches, config):
            params = {"w": jnp.ones(3)}
            state = helper(params, config)
            for b in batches:
                state = step(state, b)
            return state, params
        """, "`params`, read again", id="helper-returns-params-read-later"),
]


HIGH += [
    pytest.param("""
        def split_leaves(params):
            return {"a": params["w"], "b": params["b"]}

        def train(batches):
            state = split_leaves({"w": jnp.ones(3), "b": jnp.zeros(3)})
            for b in batches:
                state = step(state, b)
            return state
        """, id="helper-returning-two-different-leaves"),
    pytest.param("""
        from flax import nnx

        def train(batches):
            params = {"w": jnp.ones(3)}
            state = nnx.state(params, nnx.Param)
            for b in batches:
                state = step(state, b)
            return state
        """, id="library-classes-and-module-functions-are-not-values"),
]

HIGH += [
    pytest.param("""
        import haiku as hk

        def train(batches, f, rng):
            params_init, loss_fn = hk.without_apply_rng(hk.transform(f))
            state = params_init(rng, batches[0])
            for b in batches:
                state = step(state, b)
            return state, rng
        """, id="haiku-transform-init-is-new-memory"),
    pytest.param("""
        def train(batches, model, key):
            state = train_state.TrainState.create(
                apply_fn=model.apply, params=model.init(key, batches[0])["params"], tx=optax.sgd(0.1))
            for b in batches:
                state = step(state, b)
            return state
        """, id="part-of-a-new-value-is-new"),
]

HIGH += [
    pytest.param("""
        from flax import nnx

        class Count(nnx.Variable):
            pass

        def train(batches):
            model = Model()
            graphdef, params, counts = nnx.split(model, nnx.Param, Count)
            state = train_state.TrainState.create(apply_fn=None, graphdef=graphdef, params=params,
                                                  tx=optax.sgd(0.1), counts=counts)
            for b in batches:
                state = step(state, b)
            return state
        """, id="disjoint-parts-of-nnx-split"),
    pytest.param("""
        def train(batches, model, key):
            variables = model.init(key, batches[0])
            params, stats = variables["params"], variables["batch_stats"]
            state = train_state.TrainState.create(apply_fn=None, params=params, batch_stats=stats, tx=optax.sgd(0.1))
            for b in batches:
                state = step(state, b)
            return state
        """, id="different-keys-of-one-dict"),
]

MEDIUM += [
    pytest.param("""
        def train(batches, opt_init):
            params = {"w": jnp.ones(3)}
            opt_state = opt_init(params)
            state = (params, opt_state)
            state = train_state.TrainState.create(apply_fn=None, params=params, tx=None, opt=opt_state)
            for b in batches:
                state = step(state, b)
            return state
        """, "may hold `params` twice", id="unseen-init-may-keep-params"),
    pytest.param("""
        def train(batches):
            params = {"w": jnp.ones(3)}
            state = dict(params=params, tx=params)
            for b in batches:
                state = step(state, b)
            return state
        """, "`params` twice", id="tx-keyword-is-static-only-for-create"),
    pytest.param("""
        def leaves(params):
            yield params

        def train(batches, params):
            state = next(leaves(params))
            for b in batches:
                state = step(state, b)
            return state
        """, "caller may still hold", id="generator-helper-holds-its-arguments"),

    pytest.param("""
        def train(batches, config):
            params = {"w": jnp.ones(3)}
            state = make(params, config)
            for b in batches:
                state = step(state, b)
            return state, config
        """, "`config`, which the caller may still hold", id="unannotated-parameter-is-not-array-free"),
    pytest.param("""
        tx = optax.adamw(1e-3)

        def reset():
            global tx
            tx = optax.lookahead(optax.sgd(0.1), 2, 0.5)

        def train(batches):
            params = {"w": jnp.ones(3)}
            state = tx.init(params)
            for b in batches:
                state = step(state, b)
            return state
        """, "may return arrays its object still holds", id="global-optimizer-rebound-elsewhere"),
]


# Facts added for training loops as brax and flax write them.
HIGH += [
    pytest.param("""
        from typing import Optional

        def make_state(key, network, obs_size: int, path: Optional[str] = None):
            key_policy, key_q = jax.random.split(key)
            params = network.init(key_policy)
            return train_state.TrainState.create(apply_fn=None, params=params, tx=optax.sgd(obs_size))

        def train(batches, network, key, max_devices: Optional[int] = None):
            obs_size = min(jax.local_device_count(), max_devices or 1)
            state = make_state(key, network, obs_size)
            for b in batches:
                state = step(state, b)
            return state, obs_size, network
        """, id="helper-init-from-a-prng-key-and-annotated-ints"),
    pytest.param("""
        def train(batches):
            state = {"w": jnp.ones(3)}
            state = train_state.TrainState.create(apply_fn=None, params=state, tx=optax.sgd(0.1))
            state = state.replace(step=state.step + 1)
            for b in batches:
                state = step(state, b)
            return state
        """, id="replace-on-its-own-result"),
    pytest.param("""
        def train(batches):
            state = {"w": jnp.ones(3)}
            for b in batches:
                state = step(state, b)
            state = jax.tree.map(lambda x: x, unrelated())
            return state
        """, id="a-write-after-the-call-does-not-reach-it"),
    pytest.param("""
        def unreplicate(tree):
            return jax.tree_util.tree_map(lambda x: x[0], tree)

        def train(batches, evaluate):
            state = {"w": jnp.ones(3)}
            for b in batches:
                evaluate(unreplicate(state))
                state = step(state, b)
            return state
        """, id="a-lambda-of-its-own-parameters-keeps-nothing"),
    pytest.param("""
        from flax import nnx

        def train(batches):
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
            graphdef, state = nnx.split((model, optimizer))
            for b in batches:
                state = step(state, b)
            model, optimizer = nnx.merge(graphdef, state)
            return model, graphdef
        """, id="nnx-split-of-model-and-standard-optimizer"),
    pytest.param("""
        def init(rng, batch):
            return {"w": jnp.ones(3) * batch.mean()}

        def train(batches, rng, dataset):
            batch = next(dataset)
            state = jax.pmap(init)(rng, batch)
            for b in batches:
                state = step(state, b)
            return state, dataset
        """, id="pmap-called-where-it-is-made-is-new-memory"),
]

MEDIUM += [
    pytest.param("""
        CACHE = {"w": jnp.ones(3)}

        def load():
            return CACHE["w"]

        def train(batches):
            state = load()
            for b in batches:
                state = step(state, b)
            return state
        """, "a module-level value still holds", id="helper-returns-a-module-level-array"),
    pytest.param("""
        from flax import nnx

        def train(batches, model, tx):
            optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
            graphdef, state = nnx.split((model, optimizer))
            for b in batches:
                state = step(state, b)
            return graphdef
        """, "twice", id="nnx-split-of-model-and-unknown-optimizer"),
    pytest.param("""
        def train(batches, opt):
            state = opt.init({"w": jnp.ones(3)})
            state = jax.tree.map(lambda v: v, state)
            for b in batches:
                state = step(state, b)
            return state
        """, "may share buffers with `opt`", id="a-write-reading-the-name-keeps-the-earlier-origins"),
]


# A dtype passed to a helper holds no array (optax's _schedule_test: _setup_parabola(jnp.float32)).
HIGH += [
    pytest.param("""
        def setup(dtype):
            return jnp.array([-1.0, 10.0, 1.0], dtype=dtype)

        def train(batches):
            state = setup(jnp.float32)
            for b in batches:
                state = step(state, b)
            return state
        """, id="helper-given-a-dtype"),
]

# flax's synchronous checkpoint saver keeps nothing; given a background worker it may.
HIGH += [
    pytest.param("""
        from flax.training import checkpoints

        def train(batches, workdir):
            params = {"w": jnp.ones(3)}
            state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-3))
            for i, b in enumerate(batches):
                state = step(state, b)
                checkpoints.save_checkpoint_multiprocess(workdir, state, i, keep=3)
            return state
        """, id="synchronous-checkpoint-save"),
]
MEDIUM += [
    pytest.param("""
        from flax.training import checkpoints

        def train(batches, workdir, checkpointer):
            params = {"w": jnp.ones(3)}
            state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-3))
            for i, b in enumerate(batches):
                state = step(state, b)
                checkpoints.save_checkpoint(workdir, state, i, orbax_checkpointer=checkpointer)
            return state
        """, "which may keep it", id="checkpoint-save-in-the-background"),
    pytest.param("""
        from flax.training import checkpoints

        def train(batches, workdir, **options):
            params = {"w": jnp.ones(3)}
            state = train_state.TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-3))
            for i, b in enumerate(batches):
                state = step(state, b)
                checkpoints.save_checkpoint(workdir, state, i, **options)
            return state
        """, "which may keep it", id="checkpoint-save-with-unknown-keywords"),
]

# A file helper's result holds only the arguments bound to the parameters its
# summary returns (brax's running_statistics.init_state calling _zeros_like).
HELPERS = """
        def fresh(nest, scale=1.0):
            return jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype), nest)

        def same(nest, scale=1.0):
            return nest

        def pick(a, b):
            return b

        def gather(**parts):
            return parts
"""
HIGH += [
    pytest.param(HELPERS + """
        def train(batches, sample):
            state = {"m": fresh(sample), "s": pick(sample, jnp.ones(3))}
            for b in batches:
                state = step(state, b)
            return state, sample
        """, id="helper-result-holds-no-argument"),
    pytest.param(HELPERS + """
        def train(batches, sample):
            state = {"m": fresh(nest=sample, scale=2.0), "s": pick(b=jnp.ones(3), a=sample)}
            for b in batches:
                state = step(state, b)
            return state, sample
        """, id="helper-called-with-keywords"),
    pytest.param(HELPERS + """
        def init(nest, scale):
            return {"m": fresh(nest, scale), "s": pick(nest, scale)}

        def train(batches, sample):
            state = init(sample, jnp.ones(3))
            for b in batches:
                state = step(state, b)
            return state, sample
        """, id="helper-of-a-helper-holds-no-argument"),
]
MEDIUM += [
    pytest.param(HELPERS + """
        def train(batches, sample):
            state = {"m": fresh(sample), "s": same(sample)}
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helper-returning-its-argument"),
    pytest.param(HELPERS + """
        def train(batches, sample):
            state = {"s": pick(jnp.ones(3), sample)}
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helper-returning-the-argument-it-binds"),
    pytest.param(HELPERS + """
        def train(batches, sample, fresh):
            state = {"m": fresh(sample)}
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helper-name-shadowed-by-a-parameter"),
    pytest.param(HELPERS + """
        def train(batches, sample):
            fresh = same
            state = {"m": fresh(sample)}
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helper-name-rebound-locally"),
    pytest.param(HELPERS + """
        def train(batches, sample, args):
            state = {"m": pick(*args, sample)}
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helper-called-with-star-arguments"),
    pytest.param(HELPERS + """
        def init(nest):
            return {"m": fresh(nest), "s": same(nest)}

        def train(batches, sample):
            state = init(sample)
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helper-of-a-helper-returning-its-argument"),
    pytest.param(HELPERS + """
        def init(nest, fresh):
            return {"m": fresh(nest)}

        def train(batches, sample):
            state = init(sample, same)
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helper-name-shadowed-inside-a-helper"),
    pytest.param(HELPERS + """
        def first(nest, again):
            return second(nest, again) if again else nest

        def second(nest, again):
            return first(nest, again)

        def train(batches, sample):
            state = {"m": first(fresh(sample), False), "s": second(sample, True)}
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helpers-calling-each-other"),
    pytest.param(HELPERS + """
        def train(batches, sample):
            state = gather(m=fresh(sample), s=sample)
            for b in batches:
                state = step(state, b)
            return state, sample
        """, "`sample`", id="helper-returning-its-keyword-arguments"),
]


@pytest.mark.parametrize("body", HIGH)
def test_proved_at_high_confidence(body):
    finding = _state_finding(_body(body))
    assert finding is not None and finding.confidence is Confidence.HIGH, finding and finding.message


@pytest.mark.parametrize("body,reason", MEDIUM)
def test_kept_at_medium_with_the_reason(body, reason):
    finding = _state_finding(_body(body))
    assert finding is not None and finding.confidence is Confidence.MEDIUM, finding and finding.message
    assert reason in finding.message


def test_summary_of_a_helper_in_another_file_is_used_at_the_call_site():
    helper = """
        from flax.training import train_state

        def make_state(params, tx):
            state = train_state.TrainState.create(apply_fn=None, params=params, ema=params, tx=tx)
            return state

        def make_plain(params, tx):
            return train_state.TrainState.create(apply_fn=None, params=params, tx=tx)
    """
    main = STEP + textwrap.dedent("""
        from pkg.states import {name}

        def train(batches):
            params = {{"w": jnp.ones(3)}}
            state = {name}(params, optax.sgd(0.1))
            for b in batches:
                state = step(state, b)
            return state{tail}
    """)
    twice = _state_finding({"pkg/states.py": helper, "pkg/m.py": main.format(name="make_state", tail="")}, "pkg/m.py")
    assert twice.confidence is Confidence.MEDIUM and "in two places" in twice.message
    plain = _state_finding({"pkg/states.py": helper, "pkg/m.py": main.format(name="make_plain", tail="")}, "pkg/m.py")
    assert plain.confidence is Confidence.HIGH, plain.message
    read = _state_finding({"pkg/states.py": helper, "pkg/m.py": main.format(name="make_plain", tail=", params")},
                          "pkg/m.py")
    assert read.confidence is Confidence.MEDIUM and "`params`, read again" in read.message


def _refusal(files, name):
    (result,) = _run(files).values()
    return [r.reason for r in result.refusals if r.parameter == name]


def test_prng_keys_through_a_helper_or_replicate_are_not_proposed():
    source = STEP.replace("def step(state, batch)", "def step(state, rng, batch)").replace(
        "return jax", "rng, sub = helper(rng)\n    return rng, jax") + textwrap.dedent("""
        from flax import jax_utils

        def train(batches):
            state = {"w": jnp.ones(3)}
            rng = jax_utils.replicate(jax.random.PRNGKey(0))
            for b in batches:
                rng, state = step(state, rng, b)
            return state
    """)
    (reason,) = _refusal({"m.py": source}, "rng")
    assert "is a PRNG key" in reason


def test_python_scalar_metrics_are_not_proposed():
    source = STEP + textwrap.dedent("""
        def train(batches):
            metrics = {"loss": 0.0, "count": 0}
            for b in batches:
                metrics = step(metrics, b)
            return metrics
    """)
    (reason,) = _refusal({"m.py": source}, "state")
    assert "starts as Python values" in reason and "not worth donating" in reason


def test_a_state_that_starts_as_none_then_holds_arrays_is_still_proposed():
    source = STEP + textwrap.dedent("""
        def train(batches):
            total = None
            for b in batches:
                total = step(total, b) if total is not None else jnp.zeros(3)
            return total
    """)
    assert not _refusal({"m.py": source}, "state")
    assert _state_finding({"m.py": source}) is not None


def test_a_state_carried_through_a_jax_loop_reaches_the_output():
    source = textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def multi_step(state, batch):
            state = jax.lax.fori_loop(0, 4, lambda i, s: jax.tree.map(lambda x: x + batch.mean(), s), state)
            return jax.lax.pmean(state, "i") if False else state

        def train(batches):
            state = {"w": jnp.ones(3)}
            for b in batches:
                state = multi_step(state, b)
            return state
    """)
    finding = _state_finding({"m.py": source})
    assert finding is not None and finding.confidence is Confidence.HIGH, finding and finding.message


@pytest.mark.parametrize("body,confidence", [
    ("    print(float(state['w'].sum()))\n    return {'n': 1}\n", Confidence.HIGH),
    ("    return state['w']\n", Confidence.MEDIUM),
    ("    HISTORY.append(state)\n", Confidence.MEDIUM),
    ("    return summarize(state)\n", Confidence.MEDIUM),
])
def test_passing_the_state_to_another_files_function_uses_its_summary(body, confidence):
    helper = "HISTORY = []\n\ndef evaluate(state, batch):\n" + body
    main = STEP + textwrap.dedent("""
        from pkg.evals import evaluate

        def train(batches):
            state = {"w": jnp.ones(3)}
            for b in batches:
                metrics = evaluate(state, b)
                state = step(state, b)
            return state
    """)
    finding = _state_finding({"pkg/evals.py": helper, "pkg/m.py": main}, "pkg/m.py")
    assert finding is not None and finding.confidence is confidence, finding.message
    if confidence is Confidence.MEDIUM:
        assert "which may keep it" in finding.message


PIPELINE = """
import jax.numpy as jnp

def init(n):
    return {"x": jnp.zeros((n,))}

def step(state, act, unused=None):
    return {"x": state["x"] + act}
"""


@pytest.mark.parametrize("jit,expected", [
    ("jax.jit(pipeline.step)", {"state": Confidence.HIGH}),
    ("jax.jit(pipeline.step, donate_argnames=('state',))", {}),  # donated by name: nothing to add
    ("jax.jit(step)", {"state": Confidence.HIGH}),  # from pipeline import step
])
def test_a_jit_of_another_modules_function_gets_its_signature_and_outputs(jit, expected):
    main = f"""
        import jax
        import jax.numpy as jnp
        import pipeline
        from pipeline import step

        def train(n):
            state = pipeline.init(n)
            j = {jit}
            for _ in range(n):
                state = j(state, jnp.ones((n,)))
            return state
        """
    found = _run({"pipeline.py": PIPELINE, "m.py": main})["m.py"].findings
    proposed = {f.parameter_name: f.confidence for f in found if f.code == "JXM001"}
    assert proposed == expected, [f.message for f in found]


def test_an_init_of_another_module_that_returns_its_argument_is_not_new_memory():
    pipeline = PIPELINE.replace('return {"x": jnp.zeros((n,))}', 'return {"x": n}')
    main = """
        import jax
        import jax.numpy as jnp
        import pipeline

        def train(sys):
            state = pipeline.init(sys["x0"])
            j = jax.jit(pipeline.step)
            for _ in range(3):
                state = j(state, jnp.ones((3,)))
            return state, sys
        """
    found = _run({"pipeline.py": pipeline, "m.py": main})["m.py"].findings
    (finding,) = [f for f in found if f.code == "JXM001" and f.parameter_name == "state"]
    assert finding.confidence == Confidence.MEDIUM and "may share buffers with `sys[\"x0\"]`" in finding.message


def test_same_named_modules_that_disagree_give_no_signature():
    other = PIPELINE.replace("def step(state, act, unused=None):", "def step(act, state):")
    main = """
        import jax
        import jax.numpy as jnp
        import pipeline

        def train(n):
            state = jnp.zeros((n,))
            j = jax.jit(pipeline.step)
            state = j(state, jnp.ones((n,)))
            return state
        """
    found = _run({"a/pipeline.py": PIPELINE, "b/pipeline.py": other, "c/m.py": main})["c/m.py"].findings
    proposed = [f for f in found if f.code == "JXM001"]
    assert proposed and all(f.parameter_name is None and f.confidence != Confidence.HIGH for f in proposed)
    assert all("body of `j` is not visible" in f.message for f in proposed)


def test_a_parameter_every_caller_passes_a_prng_key_is_not_proposed():
    # brax's apg/train.py: training_epoch_with_timing(training_state, env_state, key) calls
    # the jitted training_epoch with its key; train() passes it jax.random.split(...)'s half.
    source = STEP.replace("def step(state, batch)", "def step(state, batch, key)").replace(
        "return jax", "return key, jax") + textwrap.dedent("""
        def train(batches, seed):
            key = jax.random.PRNGKey(seed)
            state = {"w": jnp.ones(3)}

            def epoch(state, batch, key):
                key, state = step(state, batch, key)
                return state, key

            for b in batches:
                key, sub = jax.random.split(key)
                state, _ = epoch(state, b, sub)
            return state
    """)
    (reason,) = _refusal({"m.py": source}, "key")
    assert "every call of `epoch`" in reason and "PRNG key" in reason
    assert not [f for f in _run({"m.py": source})["m.py"].findings if f.parameter_name == "key"]


@pytest.mark.parametrize("made,confidence", [
    ("fresh(sample)", Confidence.HIGH),
    ("same(sample)", Confidence.MEDIUM),
    ("pick(sample, jnp.ones(3))", Confidence.HIGH),
    ("pick(jnp.ones(3), sample)", Confidence.MEDIUM),
    ("gather(m=fresh(sample))", Confidence.HIGH),
    ("gather(s=sample)", Confidence.MEDIUM),
])
def test_module_level_code_passes_a_helpers_result_beside_its_argument(made, confidence):
    # A notebook or script: the state and its maker's argument go to the same call.
    source = STEP + textwrap.dedent(HELPERS) + textwrap.dedent(f"""
        sample = jnp.ones(3)
        state = {{"m": {made}}}
        for _ in range(3):
            state = step(state, sample)
        print(sample)
    """)
    finding = _state_finding({"m.py": source})
    assert finding is not None and finding.confidence is confidence, finding and finding.message
    rebound = source.replace("\nsample = jnp.ones(3)", "\nfresh = same\npick = same\nsample = jnp.ones(3)")
    assert _state_finding({"m.py": rebound}).confidence is Confidence.MEDIUM


def test_a_model_made_from_a_config_a_call_fills_names_the_call():
    source = textwrap.dedent("""
        import jax.numpy as jnp
        import ml_collections
        import optax
        from flax import nnx

        def populate(cfg):
            cfg.w = jnp.ones(4)

        class Model(nnx.Module):
            def __init__(self, config, rngs):
                self.lin = nnx.Linear(4, 4, rngs=rngs)
                self.w = nnx.Param(config.w)

        @nnx.jit
        def train_step(model, optimizer, x):
            optimizer.update(model, nnx.grad(lambda m: (m.lin(x) * m.w).sum())(model))

        def main():
            config = ml_collections.ConfigDict()
            populate(config)
            model = Model(config, rngs=nnx.Rngs(0))
            optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
            for _ in range(2):
                train_step(model, optimizer, jnp.ones(4))
            print(config.w)
        """)
    (result,) = _run({"m.py": source}).values()
    found = {f.parameter_name: f for f in result.findings if f.code == "JXM001"}
    assert found["model"].confidence is Confidence.MEDIUM
    assert "`config`: `populate(config)` (line 21) may store into it" in found["model"].message, found["model"].message
    assert found["optimizer"].confidence is Confidence.HIGH  # sgd's state is empty: new memory


def test_a_config_another_files_function_fills_and_its_result_holds_is_not_high():
    """``state = make_state(config)`` of another file whose body stores an array into its
    parameter (``cfg.w = jnp.ones(3)``) and returns it in the state: ``config`` is read after
    the training, so donating the state would delete ``config.w`` (high, and crashed, before)."""
    helper = """
        import jax.numpy as jnp

        def make_state(cfg):
            cfg.w = jnp.ones(3)
            return {"w": cfg.w, "b": jnp.zeros(3)}

        def make_plain(cfg):
            return {"w": jnp.ones(3) * cfg.scale}
        """
    main = STEP + textwrap.dedent("""
        import ml_collections
        from pkg.states import {name}

        def train(batches):
            config = ml_collections.ConfigDict({{"scale": 2.0}})
            state = {name}(config)
            for b in batches:
                state = step(state, b)
            return state, config.{read}
        """)
    filled = _state_finding({"pkg/states.py": helper, "pkg/m.py": main.format(name="make_state", read="w")},
                            "pkg/m.py")
    assert filled is not None and filled.confidence is Confidence.MEDIUM, filled and filled.message
    assert "`make_state` may store an array into its `cfg`" in filled.message, filled.message
    # one that only reads its config: still high
    plain = _state_finding({"pkg/states.py": helper, "pkg/m.py": main.format(name="make_plain", read="scale")},
                           "pkg/m.py")
    assert plain is not None and plain.confidence is Confidence.HIGH, plain and plain.message
    # the config not read after the training: nothing reads what was stored, still high
    unread = _state_finding({"pkg/states.py": helper,
                             "pkg/m.py": main.format(name="make_state", read="w").replace(", config.w", "")},
                            "pkg/m.py")
    assert unread is not None and unread.confidence is Confidence.HIGH, unread and unread.message

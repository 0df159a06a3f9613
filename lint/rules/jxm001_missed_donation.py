"""JXM001 missed-donation."""

from jaxmem.findings import Confidence, Severity
from jaxmem.lint.rules.base import Example, Rule

RULE = Rule(
    code="JXM001",
    name="missed-donation",
    severity=Severity.WARNING,
    summary="argument dead after every call and rebound from the result, but not donated",
    fixable=True,
    doc='''
    ## What it does
    Finds parameters of a jitted function that could be donated: at every
    call site the argument is a value that is never read again, and the
    call's result (or a value taken from it) is assigned back to it, as in
    `state = train_step(state, batch)`.

    ## Why is this bad?
    Without donation XLA must keep the old buffers alive while it writes
    the new ones, so an update holds two copies of the state at its peak.
    For a model trained with Adam that is parameters plus two moments, paid
    twice. Donating lets XLA write the result into the input's memory.

    ## Example
    ```python
    @jax.jit
    def train_step(state, batch):
        ...
    state = train_step(state, batch)
    ```

    ## Use instead
    ```python
    @partial(jax.jit, donate_argnums=0)
    def train_step(state, batch):
        ...
    ```

    ## Known problems
    Shapes are not visible statically. A parameter is proposed only when the
    jitted body builds an output from it by shape- and dtype-preserving
    operations (arithmetic, `tree_map`, `optax.apply_updates`, `.replace`,
    `.apply_gradients`); one that is reduced, reshaped or concatenated away,
    a Python scalar, a PRNG key or host NumPy data is not proposed at all
    (`jaxmem check --show-skipped` lists it with the reason, as does
    `--format json` under `skipped`). Where the body is not visible (an
    optimizer's `update_fn`, a factory's result) or reaches its outputs only
    through unknown calls, a loop proves it instead: when every call passes
    a local that the call's own result rebinds and that comes back to it
    around the loop (`updates, state = step(grads, state, params)`), from
    the second iteration the donated value is an output of the same
    computation, so an output has its shapes and dtypes (the call's own
    result must reach it directly: one that comes back through another
    call, `state = epoch(state); state = reset(state, key)`, proves nothing).

    equinox's `eqx.filter_jit` has no per-argument donation: the advice is
    `donate="all"` or `donate="all-except-first"`, given only when every
    parameter the mode covers may be donated; otherwise the message names
    the parameter that must survive and there is no automatic fix.

    ## Fix safety
    `jaxmem-fix` applies high-confidence findings only. High means proved:
    at every call site in the run the argument is a local value of the
    calling scope, rebound by the call, with no alias, escape or later read
    on any path; its buffers are its own (made by a jitted call, an array
    constructor, arithmetic, a standard optax `init` (also of a wrapper such
    as `MultiSteps` or `inject_hyperparams` around standard transforms, given
    no array), or a project function
    (in any file) whose body returns no value twice and none of the
    arguments still held after the call; not a loop variable taken from a
    container, not a value a library call made from something still read,
    not `LookaheadParams.init_synced`, which holds one tree twice, nor the
    result of a function jaxmem does not know, which may, nor an instance of
    a project class (in any file) whose `__init__` stores one value in two
    attributes; values
    that hold no arrays, such as configs, flags, paths and devices, never
    count as sharing, unless the program may store a non-literal into them:
    directly, through a function of the same file, `setattr`, a call it
    cannot read made as a statement of its own, `populate(config)`, or a
    function or class of another file whose result is used and whose body
    stores into that parameter, `state = make_state(config)`);
    and the body has an output built from it (or the loop above proves
    one has its shapes). An nnx Module, Optimizer or
    Metric that an `nnx.jit` step updates in place is high when it was made
    with new arrays and nothing takes an array out of it (only nnx.jit calls,
    also through `nnx.cached_partial(step, model)`, a step imported from
    another module of the project included,
    `train()`/`eval()`/`update()`/`reset()`, views that do the same, such
    as `nnx.state(model, nnx.Param)` under a name bound to nothing else, a
    round trip `state = nnx.state(model)`, `state = jax.device_put(state,
    sharding)`, `nnx.update(model, state)`), also
    when a function of the same file made it and handed it out by its final
    `return` (`model, optimizer = create(0)`) and took no array out of it,
    its arguments holding none. So is
    one the step only reads (an eval step's `model`) when it is made by an nnx
    class or a project class deriving from one: nnx.jit returns every array
    of an nnx object and writes them back, a copy of the whole model per call
    unless it is donated (flax 0.12.8). A pytree that is no nnx object is
    deleted by a donating `nnx.jit` as by `jax.jit`. A Module an unfiltered
    `nnx.split` made the donated state from may be read again after
    `nnx.update(model, state)` when the step returns `nnx.state(...)` of all
    it merged from that state, unfiltered: the update writes back every
    donated array (flax's functional API). No value
    that may hold the state's very arrays (`x[:]`, `d.copy()`,
    `list(d.values())`, another name for it) is read after the call. Anything
    less is medium (the message says why) and applied only with
    `--unsafe-fixes`. `jaxmem
    verify` confirms the aliasing on the backend.
    ''',
    invalid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            def zeros_like(tree):
                return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), tree)

            def init_stats(sample):
                return {"mean": zeros_like(sample), "count": jnp.zeros(())}

            @jax.jit  # JXM001
            def update(stats, batch):
                count = stats["count"] + 1
                return {"mean": stats["mean"] + (batch - stats["mean"]) / count, "count": count}

            sample = jnp.ones(4)
            stats = init_stats(sample)
            for _ in range(3):
                stats = update(stats, sample)
            print(stats["mean"], sample)  # the helper made new arrays: sample is not shared
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            fixed="""
            from functools import partial

            import jax
            import jax.numpy as jnp

            def zeros_like(tree):
                return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), tree)

            def init_stats(sample):
                return {"mean": zeros_like(sample), "count": jnp.zeros(())}

            @partial(jax.jit, donate_argnums=0)  # JXM001
            def update(stats, batch):
                count = stats["count"] + 1
                return {"mean": stats["mean"] + (batch - stats["mean"]) / count, "count": count}

            sample = jnp.ones(4)
            stats = init_stats(sample)
            for _ in range(3):
                stats = update(stats, sample)
            print(stats["mean"], sample)  # the helper made new arrays: sample is not shared
            """,
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            def sgd(params, grads, lr):
                return jax.tree.map(lambda p, g: p - lr * g, params, grads)

            @jax.jit  # JXM001
            def update(params, grads):
                return sgd(params, grads, 0.1)

            params = {"w": jnp.ones(3)}
            params = update(params, {"w": jnp.ones(3)})
            print(params["w"])
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            note="the file's own `sgd` returns `params` updated, as if written inline",
            fixed="""
            from functools import partial

            import jax
            import jax.numpy as jnp

            def sgd(params, grads, lr):
                return jax.tree.map(lambda p, g: p - lr * g, params, grads)

            @partial(jax.jit, donate_argnums=0)  # JXM001
            def update(params, grads):
                return sgd(params, grads, 0.1)

            params = {"w": jnp.ones(3)}
            params = update(params, {"w": jnp.ones(3)})
            print(params["w"])
            """,
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit  # JXM001
            def step(state, batch):
                return state + batch.sum()

            def train(batches):
                state = jnp.zeros(4)
                for batch in batches:
                    state = step(state, batch)
                return state

            print(train([jnp.ones(2), jnp.ones(2)]))
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            fixed="""
            from functools import partial

            import jax
            import jax.numpy as jnp

            @partial(jax.jit, donate_argnums=0)  # JXM001
            def step(state, batch):
                return state + batch.sum()

            def train(batches):
                state = jnp.zeros(4)
                for batch in batches:
                    state = step(state, batch)
                return state

            print(train([jnp.ones(2), jnp.ones(2)]))
            """,
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit  # JXM001
            def attend(q, cache):
                return q * 2.0, cache.at[0].set(q[0])

            def decode(steps):
                q = jnp.ones(4)
                cache = jnp.zeros(4)
                for _ in range(steps):
                    args = (q, cache)
                    out, cache = attend(*args)
                return out, cache

            print(decode(3))
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            note="a call that spreads a local tuple literal passes its elements (kernel tests' habit)",
            fixed="""
            from functools import partial

            import jax
            import jax.numpy as jnp

            @partial(jax.jit, donate_argnums=1)  # JXM001
            def attend(q, cache):
                return q * 2.0, cache.at[0].set(q[0])

            def decode(steps):
                q = jnp.ones(4)
                cache = jnp.zeros(4)
                for _ in range(steps):
                    args = (q, cache)
                    out, cache = attend(*args)
                return out, cache

            print(decode(3))
            """,
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit  # JXM001
            def update(weights_and_slots, batch):
                weights, slots = weights_and_slots
                return (weights - batch, slots + batch), batch.sum()

            def train(steps):
                w = jnp.ones(4)
                s = jnp.zeros(4)
                for _ in range(steps):
                    (w, s), loss = update((w, s), jnp.ones(4))
                return w, s

            print(train(3))
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            note="a pytree written out in the call is judged element by element",
            fixed="""
            from functools import partial

            import jax
            import jax.numpy as jnp

            @partial(jax.jit, donate_argnums=0)  # JXM001
            def update(weights_and_slots, batch):
                weights, slots = weights_and_slots
                return (weights - batch, slots + batch), batch.sum()

            def train(steps):
                w = jnp.ones(4)
                s = jnp.zeros(4)
                for _ in range(steps):
                    (w, s), loss = update((w, s), jnp.ones(4))
                return w, s

            print(train(3))
            """,
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            def make_optimizer(rate):
                def update_fn(grads, state):
                    m = jax.tree.map(lambda a, g: rate * a + g, state["m"], grads)
                    return m, {"m": m}

                return update_fn

            step = jax.jit(make_optimizer(0.9))  # JXM001

            def train(steps):
                grads = {"w": jnp.full((4, 4), 0.5)}
                state = {"m": {"w": jnp.zeros((4, 4))}}
                for _ in range(steps):
                    updates, state = step(grads, state)
                return float(updates["w"].sum())

            print(train(3))
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            note="the body is not visible; the loop brings the call's own result back as the state",
            fixed="""
            import jax
            import jax.numpy as jnp

            def make_optimizer(rate):
                def update_fn(grads, state):
                    m = jax.tree.map(lambda a, g: rate * a + g, state["m"], grads)
                    return m, {"m": m}

                return update_fn

            step = jax.jit(make_optimizer(0.9), donate_argnums=1)  # JXM001

            def train(steps):
                grads = {"w": jnp.full((4, 4), 0.5)}
                state = {"m": {"w": jnp.zeros((4, 4))}}
                for _ in range(steps):
                    updates, state = step(grads, state)
                return float(updates["w"].sum())

            print(train(3))
            """,
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            def update(params, opt_state, grads):
                return params - 0.1 * grads, opt_state + 1

            update_fn = jax.jit(update)  # JXM001

            params, opt_state = jnp.ones(8), jnp.zeros(8)
            for i in range(3):
                params, opt_state = update_fn(params, opt_state, jnp.ones(8))
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            fixed="""
            import jax
            import jax.numpy as jnp

            def update(params, opt_state, grads):
                return params - 0.1 * grads, opt_state + 1

            update_fn = jax.jit(update, donate_argnums=(0, 1))  # JXM001

            params, opt_state = jnp.ones(8), jnp.zeros(8)
            for i in range(3):
                params, opt_state = update_fn(params, opt_state, jnp.ones(8))
            """,
        ),
        Example(
            """
            import equinox as eqx
            import jax.numpy as jnp

            @eqx.filter_jit  # JXM001
            def step(batch, params):
                return params - 0.1 * batch

            def train(batch):
                params = jnp.ones(3)
                for _ in range(3):
                    params = step(batch, params)
                return params, batch
            """,
            confidence=Confidence.HIGH,
            note="equinox donates by mode: `batch`, read later, travels first, so \"all-except-first\" is safe",
            fixed="""
            import equinox as eqx
            import jax.numpy as jnp

            @eqx.filter_jit(donate="all-except-first")  # JXM001
            def step(batch, params):
                return params - 0.1 * batch

            def train(batch):
                params = jnp.ones(3)
                for _ in range(3):
                    params = step(batch, params)
                return params, batch
            """,
        ),
        Example(
            """
            from functools import partial
            import jax

            class Trainer:
                def __init__(self, state):
                    self.state = state
                    self._step = jax.jit(self.step)  # JXM001

                def step(self, state, batch):
                    return state + batch

                def fit(self, batches):
                    for batch in batches:
                        self.state = self._step(self.state, batch)
            """,
            confidence=Confidence.MEDIUM,
            note="an attribute is owned outside the method: medium confidence",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            def adam_init(params):
                zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
                return {"mu": zeros, "nu": zeros}

            @jax.jit  # JXM001
            def update(opt_state, grads):
                return jax.tree_util.tree_map(lambda m: 0.9 * m + grads, opt_state)

            opt_state = adam_init(jnp.ones(4))
            for _ in range(3):
                opt_state = update(opt_state, jnp.ones(4))
            """,
            confidence=Confidence.MEDIUM,
            note="`mu` and `nu` are one buffer: donating fails with 'Attempt to donate the same buffer twice'",
        ),
        Example(
            """
            import jax
            from flax import nnx

            @jax.jit  # JXM001
            def step(state, batch):
                return jax.tree_util.tree_map(lambda p: p - 0.1 * batch, state)

            def train(model, batches):
                graphdef, state = nnx.split(model)
                for batch in batches:
                    state = step(state, batch)
                return model  # still shares its arrays with the first `state`
            """,
            confidence=Confidence.MEDIUM,
            note="`nnx.split(model)` shares leaves with `model`, which is still used",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            @jax.jit  # JXM001
            def step(graphdef, state, x):
                model = nnx.merge(graphdef, state)
                model.kernel[...] = model.kernel[...] - 0.1 * x.sum()
                return nnx.state(model)

            model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
            graphdef, state = nnx.split(model)
            for _ in range(3):
                state = step(graphdef, state, jnp.ones(2))
            nnx.update(model, state)
            print(model(jnp.ones((1, 2))).round(3))  # the arrays nnx.update wrote back
            """,
            runnable=True,
            confidence=Confidence.HIGH,
            note="the step returns the whole state it merged, so nnx.update writes back every donated array "
                 "and the read after it reads new ones (flax's performance guide)",
            fixed="""
            from functools import partial

            import jax
            import jax.numpy as jnp
            from flax import nnx

            @partial(jax.jit, donate_argnums=1)  # JXM001
            def step(graphdef, state, x):
                model = nnx.merge(graphdef, state)
                model.kernel[...] = model.kernel[...] - 0.1 * x.sum()
                return nnx.state(model)

            model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
            graphdef, state = nnx.split(model)
            for _ in range(3):
                state = step(graphdef, state, jnp.ones(2))
            nnx.update(model, state)
            print(model(jnp.ones((1, 2))).round(3))  # the arrays nnx.update wrote back
            """,
        ),
        Example(
            """
            import jax

            @jax.jit  # JXM001
            def step(state, batch):
                return state + batch

            def train(states, batch):
                for state in states:
                    state = step(state, batch)
                return states
            """,
            confidence=Confidence.MEDIUM,
            note="a loop variable is still held by the list it came from",
        ),
        Example(
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(4, 4, rngs=rngs)

                def __call__(self, x):
                    return self.lin(x)

            @nnx.jit  # JXM001
            def train_step(model, optimizer, batch):
                grads = nnx.grad(lambda m: (m(batch) ** 2).mean())(model)
                optimizer.update(model, grads)

            def main(batches):
                model = Model(nnx.Rngs(0))
                optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
                for batch in batches:
                    train_step(model, optimizer, batch)
                return model
            """,
            confidence=Confidence.HIGH,
            note="nnx writes both back; made with new arrays and only handed to nnx.jit: nothing else holds them "
                 "(run in tests/codemod/test_fix_nnx_owned_runs.py)",
        ),
        Example(
            """
            import jax.numpy as jnp
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(4, 4, rngs=rngs)

                def __call__(self, x):
                    return self.lin(x)

            @nnx.jit  # JXM001
            def eval_step(model, batch):
                return jnp.mean(model(batch))

            def main(batches):
                model = Model(nnx.Rngs(0))
                model.eval()
                return [eval_step(model, batch) for batch in batches]
            """,
            confidence=Confidence.HIGH,
            note="an eval step: nnx.jit returns the Module's arrays and writes them back, a copy per call unless "
                 "donated (run in tests/codemod/test_fix_nnx_eval_step_runs.py)",
        ),
        Example(
            """
            import optax
            from flax import nnx

            @nnx.jit  # JXM001
            def train_step(model, optimizer, batch):
                grads = nnx.grad(lambda m: (m(batch) ** 2).mean())(model)
                optimizer.update(model, grads)

            def main(batches):
                model = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
                optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
                step = nnx.cached_partial(train_step, model, optimizer)
                for batch in batches:
                    step(batch)
                return model
            """,
            confidence=Confidence.HIGH,
            note="each call of the cached partial is a call of train_step with the bound objects first (flax's "
                 "performance guide; run in tests/codemod/test_fix_nnx_cached_partial_runs.py)",
        ),
        Example(
            """
            import optax
            from flax import nnx

            @nnx.jit  # JXM001
            def train_step(model, optimizer, batch):
                grads = nnx.grad(lambda m: (m(batch) ** 2).mean())(model)
                optimizer.update(model, grads)

            def create(seed, lr=1e-3):
                model = nnx.Linear(4, 4, rngs=nnx.Rngs(seed))
                optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
                return model, optimizer

            def main(batches):
                model, optimizer = create(0)
                for batch in batches:
                    train_step(model, optimizer, batch)
                return model
            """,
            confidence=Confidence.HIGH,
            note="a factory of the same file: what it returns is what its constructors made, for arguments that "
                 "hold no array (run in tests/codemod/test_fix_nnx_factory_runs.py)",
        ),
        Example(
            """
            import optax
            from flax import nnx

            INIT = nnx.initializers.lecun_normal()

            @nnx.jit  # JXM001
            def train_step(model, optimizer, batch):
                grads = nnx.grad(lambda m: (m(batch) ** 2).mean())(model)
                optimizer.update(model, grads)

            def create_model(seed, init=INIT):
                return nnx.Sequential(nnx.Linear(4, 4, kernel_init=init, rngs=nnx.Rngs(seed)), nnx.relu)

            def main(batches):
                model = create_model(0)
                optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
                for batch in batches:
                    train_step(model, optimizer, batch)
                return model
            """,
            confidence=Confidence.HIGH,
            note="a factory may return the object its call makes; its default is an initializer, which holds no "
                 "array, and flax's containers may take layers made in the same call (run in "
                 "tests/codemod/test_fix_nnx_factory_runs.py)",
        ),
        Example(
            """
            import jax.numpy as jnp
            from flax import nnx

            TABLE = jnp.ones((4, 4))

            @nnx.jit  # JXM001
            def train_step(model, batch):
                model.kernel[...] -= 0.1 * nnx.grad(lambda m: (m(batch) ** 2).mean())(model).kernel[...]

            def create_model(seed, kernel=TABLE):
                model = nnx.Linear(4, 4, rngs=nnx.Rngs(seed))
                model.kernel = nnx.Param(kernel)
                return model

            def main(batches):
                model = create_model(0)
                for batch in batches:
                    train_step(model, batch)
                return TABLE
            """,
            confidence=Confidence.MEDIUM,
            note="every model this factory makes holds the array of its default, which the program reads later: "
                 "the message says so (`its default `TABLE` may hold an array`)",
        ),
        Example(
            """
            import jax
            import optax

            schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 100, 10_000)
            tx = optax.MultiSteps(optax.inject_hyperparams(optax.adamw)(learning_rate=schedule), every_k_schedule=4)

            @jax.jit  # JXM001
            def step(params, opt_state, grads):
                updates, opt_state = tx.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), opt_state

            def train(params, grads_list):
                params = jax.tree.map(lambda p: p * 1.0, params)
                opt_state = tx.init(params)
                for grads in grads_list:
                    params, opt_state = step(params, opt_state, grads)
                return params
            """,
            confidence=Confidence.HIGH,
            note="wrappers around a standard transform, hyperparameters an optax schedule: init makes new buffers "
                 "only (optax 0.2.8; run in tests/codemod/test_fix_standard_optimizers_runs.py)",
        ),
        Example(
            """
            import jax
            import optax

            tx = optax.inject_hyperparams(optax.adamw)(learning_rate=lambda count: 1e-3)

            @jax.jit  # JXM001
            def step(params, opt_state, grads):
                updates, opt_state = tx.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), opt_state

            def train(params, grads_list):
                params = jax.tree.map(lambda p: p * 1.0, params)
                opt_state = tx.init(params)
                for grads in grads_list:
                    params, opt_state = step(params, opt_state, grads)
                return params
            """,
            confidence=Confidence.MEDIUM,
            note="inject_hyperparams keeps a function's result as it is, an array too: the state is not proved new",
        ),
        Example(
            """
            import flashbax as fbx
            import jax

            buffer = fbx.make_flat_buffer(max_length=1024, min_length=64, sample_batch_size=32)
            add = jax.jit(buffer.add)  # JXM001

            def collect(transitions, first):
                state = buffer.init(first)
                for transition in transitions:
                    state = add(state, transition)
                return state
            """,
            confidence=Confidence.HIGH,
            note="a flashbax buffer's init makes new arrays and its add returns the state's structure "
                 "(checked on flashbax 0.1.3; run in tests/codemod/test_fix_flashbax_runs.py)",
        ),
        Example(
            """
            import jax
            import mujoco
            from mujoco import mjx

            jit_step = jax.jit(mjx.step)  # JXM001

            def simulate(xml, steps):
                mj_model = mujoco.MjModel.from_xml_string(xml)
                mjx_model = mjx.put_model(mj_model)
                mjx_data = mjx.put_data(mj_model, mujoco.MjData(mj_model))
                for _ in range(steps):
                    mjx_data = jit_step(mjx_model, mjx_data)
                return mjx_data
            """,
            confidence=Confidence.HIGH,
            note="mjx.put_data makes new device buffers and mjx.step returns a Data of its input's structure "
                 "(checked on mujoco-mjx 3.17.0; run in tests/codemod/test_fix_mjx_runs.py)",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit  # JXM001
            def f(state):
                return {"w": state["w"] * 0.5}

            def main():
                state = {"w": jnp.ones(4)}
                for i in range(3):
                    state = f(state)
                    print(f"step {i}: {float(state['w'].sum())}")
            """,
            confidence=Confidence.HIGH,
            note="an f-string's prefix does not mention a jitted `f`, only the code between its braces does "
                 "(run in tests/codemod/test_fix_fstrings_and_shared_attributes_runs.py)",
        ),
        Example(
            """
            import jax
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self, rngs):
                    self.embed = nnx.Linear(4, 4, rngs=rngs)
                    self.head = self.embed  # weight tying: one Module in two places

            @jax.jit  # JXM001
            def step(model):
                return model

            model = Tied(nnx.Rngs(0))
            model = step(model)
            """,
            confidence=Confidence.MEDIUM,
            note="jax.jit flattens an nnx object as a pytree, once per place: donating `model` fails with "
                 "'Attempt to donate the same buffer twice' (flax 0.12.8); nnx.jit sees the tied Module once "
                 "(a Parent whose right is its left is run in "
                 "tests/codemod/test_fix_fstrings_and_shared_attributes_runs.py)",
        ),
    ),
    valid=(
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def step(state, batch):
                return jax.tree_util.tree_map(lambda v: v + batch, state)

            def train(batches):
                state = {"w": jnp.zeros(4) * 1}
                first = state.copy()  # a dict's copy holds the very same arrays
                for batch in batches:
                    state = step(state, batch)
                return first["w"]
            """,
            note="`first` holds `state`'s arrays and is read after the calls "
                 "(run in tests/codemod/test_fix_alias_runs.py)",
        ),
        Example(
            """
            import jax

            @jax.jit
            def step(state, batch):
                return state + batch

            def train(state, batch):
                new_state = step(state, batch)
                print(state)  # still read: not dead
                return new_state
            """
        ),
        Example(
            """
            import jax
            from functools import partial

            @partial(jax.jit, donate_argnums=(0,))
            def step(state, batch):
                return state + batch

            def train(state, batches):
                for batch in batches:
                    state = step(state, batch)
                return state
            """,
            note="already donated",
        ),
        Example(
            """
            import jax

            @jax.jit
            def step(state, batch):
                return state + batch

            def run(state, batch):
                state = step(state, batch)
                return state

            def other(state, batch):
                out = step(state, batch)
                return out, state  # this call site reads state later
            """,
            note="call sites disagree: no proposal",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp
            import numpy as np

            @jax.jit
            def normalize(batch):
                return batch / 255.0

            def load(data):
                batch = np.stack(data)
                batch = normalize(batch)
                return batch
            """,
            note="`batch` is host NumPy data: jit copies it and never deletes it",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def sample(key, x):
                key, sub = jax.random.split(key)
                return key, x + jax.random.normal(sub, x.shape)

            def run(key):
                x = jnp.zeros(3)
                for _ in range(3):
                    key, y = sample(key, x)
                return key, x
            """,
            note="`key` is a PRNG key (a few bytes); `x` is read after every call",
        ),
        Example(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def grow(frames, frame):
                return jnp.concatenate([frames, frame[None]])

            def record(n):
                frames = jnp.zeros((0, 4))
                for _ in range(n):
                    frames = grow(frames, jnp.ones(4))
                return frames
            """,
            note="the body concatenates `frames` into a larger array: no output can take its buffer",
        ),
    ),
)

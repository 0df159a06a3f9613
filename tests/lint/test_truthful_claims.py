"""Every claim true: JXM101/JXM105 only where a deleted buffer is really read, "may" where
JAX only warns, and JXM002 saying what it does not know.  Each program also runs
under real JAX (CPU), so the claim is checked against what JAX does."""

from __future__ import annotations

import textwrap
import warnings

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, report
from jaxmem.settings import Settings

jax = pytest.importorskip("jax")

ALL = Settings(min_confidence=Confidence.LOW)

HEADER = """\
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np


@partial(jax.jit, donate_argnums=0)
def step(x, y):
    return x + y


@partial(jax.jit, donate_argnums=0)
def total(x, y):
    return (x + y).sum()  # no output has x's shape: JAX cannot reuse, only warns

"""


def _findings(source: str, code: str | None = None):
    found = report([facts_for_file("prog.py", source, ALL)], ALL)[0].findings
    return [f for f in found if code is None or f.code == code]


# How jax 0.10.2 refuses to read a deleted array: the Python check raises RuntimeError "Array has
# been deleted"; a jitted op already compiled for those shapes (the C++ fast path) raises
# ValueError "Buffer has been deleted or donated". Which one depends on what ran before.
def raises_deleted_read():
    return pytest.raises((RuntimeError, ValueError), match="Array has been deleted|Buffer has been deleted or donated")


def _donating(source: str) -> str:
    """``source`` with its ``@jax.jit`` step donating its first argument."""
    source = source.replace("@jax.jit\n", "@partial(jax.jit, donate_argnums=0)\n")
    if "from functools import partial" not in source:
        source = source.replace("import jax\n", "from functools import partial\n\nimport jax\n", 1)
    return source


def _medium_and_deleted_when_forced(source: str, *said: str) -> None:
    """``source``'s one JXM001 is medium, its message says one of ``said``, and donating the
    state deletes an array the program reads after the loop."""
    (finding,) = _findings(source, "JXM001")
    assert finding.confidence is Confidence.MEDIUM
    assert any(phrase in finding.message for phrase in said), finding.message
    with raises_deleted_read():
        _run(_donating(source))


def _run(source: str, call: str = "main()"):
    namespace: dict = {"__name__": "prog"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, "prog.py", "exec"), namespace)
        return eval(call, namespace)


def _program(read: str) -> str:
    return HEADER + textwrap.dedent(
        f"""
        def main():
            x = jnp.ones(3)
            out = step(x, 1.0)
            seen = {read}
            return out, seen
        """
    )


METADATA_READS = [
    "x.shape", "x.shape[0]", "f'{x.shape}'", "x.dtype.itemsize", "len(x)", "(x.ndim, x.size, x.sharding)",
    "jnp.shape(x)", "np.shape(x)", "np.ndim(x)", "jnp.size(x)", "jnp.result_type(x)", "jax.typeof(x)",
    "jax.tree.map(lambda a: a.shape, x)", "jax.tree_util.tree_map(lambda a: (a.shape, a.dtype), x)",
    "x.is_deleted()", "x.delete()",
]


@pytest.mark.parametrize("read", METADATA_READS)
def test_metadata_read_after_donation_is_not_reported_and_does_not_raise(read):
    source = _program(read)
    assert _findings(source, "JXM101") == []
    _run(source)  # really fine on the deleted array


@pytest.mark.parametrize("read", ["x.sum()", "x + 1", "str(x)", "jax.tree.map(lambda a: a + 1, x)"])
def test_value_read_after_donation_is_reported_and_raises(read):
    source = _program(read)
    (finding,) = _findings(source, "JXM101")
    assert 'this raises "Array has been deleted"' in finding.message
    assert finding.confidence is Confidence.HIGH
    with raises_deleted_read():
        _run(source)


def test_unusable_donation_only_may_raise():
    source = HEADER + textwrap.dedent(
        """
        def main():
            x = jnp.ones(3)
            out = total(x, 1.0)
            return out, x.sum()
        """
    )
    (finding,) = _findings(source, "JXM101")
    assert 'may raise "Array has been deleted"' in finding.message
    assert "Some donated buffers were not usable" in finding.message
    assert finding.confidence is Confidence.MEDIUM
    _run(source)  # JAX warned and kept the buffer: the read works


def test_host_batch_converted_in_the_loop_is_not_reported_and_runs():
    source = HEADER + textwrap.dedent(
        """
        def update(state, batch):
            return state + batch["x"].sum()


        fit = jax.jit(update, donate_argnums=(0, 1))


        def main():
            state = jnp.zeros(3)
            for batch in [{"x": 1.0}, {"x": 2.0}]:
                batch = jax.tree.map(np.asarray, batch)
                state = fit(state, batch)
                print(batch["x"].sum())  # host NumPy: jit copies it, never deletes it
            return state
        """
    )
    assert _findings(source, "JXM101") == []
    _run(source)


def test_jxm105_wording_follows_usefulness():
    loop = textwrap.dedent(
        """
        def main():
            x = jnp.ones(3)
            for _ in range(2):
                out = {fn}(x, 1.0)
            return out
        """
    )
    (sure,) = _findings(HEADER + loop.format(fn="step"), "JXM105")
    assert "the next iteration passes a deleted array" in sure.message
    with pytest.raises(ValueError, match="Buffer has been deleted or donated"):
        _run(HEADER + loop.format(fn="step"))
    (unsure,) = _findings(HEADER + loop.format(fn="total"), "JXM105")
    assert "may pass a deleted array" in unsure.message and unsure.confidence is Confidence.MEDIUM
    _run(HEADER + loop.format(fn="total"))


def test_jxm002_says_the_caller_may_hold_the_value():
    source = textwrap.dedent(
        """
        import jax
        import jax.numpy as jnp


        @jax.jit
        def step(state, batch):
            return state + batch


        def helper(state, batch):
            out = step(state, batch)
            return out


        def train(batch):
            state = jnp.ones(3)
            out = helper(state, batch)
            return out, state.sum()  # the caller reads it after the helper returns
        """
    )
    (finding,) = [f for f in _findings(source, "JXM002") if f.parameter_name == "state"]
    assert "not read again after any call of `step`, but the caller of the enclosing function may still hold it" \
        in finding.message
    assert "not used after any call" not in finding.message
    _run(source, "train(jnp.ones(3))")  # undonated, the caller's read works


def test_jxm002_says_the_container_holds_the_loop_variable():
    source = textwrap.dedent(
        """
        import jax


        @jax.jit
        def step(state, batch):
            return state + batch


        def run(batch):
            states = [batch * 1, batch * 2]
            for state in states:
                out = step(state, batch)
            return out, [s.sum() for s in states]  # iterated again
        """
    )
    (finding,) = [f for f in _findings(source, "JXM002") if f.parameter_name == "state"]
    assert "a loop variable taken from `states`, which still holds it" in finding.message


NNX_STEP = """\
import jax.numpy as jnp
import optax
from flax import nnx


@nnx.jit
def train_step(model, optimizer, batch):
    grads = nnx.grad(lambda m: (m(batch) ** 2).mean())(model)
    {update}
    return 0.0


def main(model):
    optimizer = {optimizer}
    for _ in range(3):
        train_step(model, optimizer, jnp.ones((2, 4)))
        print(model.lin.kernel[...].sum())
"""


def test_nnx_model_and_optimizer_are_proposed_together():
    source = NNX_STEP.format(update="optimizer.update(model, grads)",
                             optimizer="nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)")
    found = {f.parameter_name: f for f in _findings(source, "JXM001")}
    assert set(found) == {"model", "optimizer"}
    assert all(f.fix is not None for f in found.values())
    # the caller's model may be held elsewhere; the optimizer of a standard transform is new moments
    assert found["model"].confidence is Confidence.MEDIUM and found["optimizer"].confidence is Confidence.HIGH


def test_nnx_model_not_proposed_says_why():
    source = NNX_STEP.format(update="optimizer.update(grads)",
                             optimizer="nnx.ModelAndOptimizer(model, optax.adam(1e-3), wrt=nnx.Param)")
    assert [f.parameter_name for f in _findings(source, "JXM001")] == ["optimizer"]
    (refusal,) = [r for r in report([facts_for_file("prog.py", source, ALL)], ALL)[0].refusals
                  if r.parameter == "model"]
    assert "does not visibly update `model` (" in refusal.reason and "read after the call at prog.py:16" in refusal.reason



def test_an_array_read_after_an_nnx_jit_call_is_not_called_a_possible_module():
    source = """\
import jax.numpy as jnp
from flax import nnx


@nnx.jit
def step(model, batch):
    return model(batch)


def main(model, other):
    batch = jnp.ones((2, 4))
    for _ in range(3):
        step(model, batch)
        step(model, other)
    print(batch.sum(), other.sum())
"""
    refusals = report([facts_for_file("prog.py", source, ALL)], ALL)[0].refusals
    (refusal,) = [r for r in refusals if r.parameter == "batch"]
    # `other` may be a Module (nnx would write it back): jaxmem says it cannot tell; for the
    # array alone the reason would have been "read after the call", which needs no refusal
    assert "is read after the call" in refusal.reason and "fine only for an nnx Module" in refusal.reason
    only_array = source.replace("        step(model, other)\n", "").replace(", other.sum()", "")
    refusals = report([facts_for_file("prog.py", only_array, ALL)], ALL)[0].refusals
    assert not [r for r in refusals if r.parameter == "batch"], refusals

def test_a_graphdef_is_refused_as_a_structure_not_as_a_python_scalar():
    # flax's performance guide: ``jax_train_step(graphdef, state, x, y)`` after ``nnx.split``
    source = """\
import jax
from flax import nnx


@jax.jit
def jax_train_step(graphdef, state, x):
    model = nnx.merge(graphdef, state)
    return nnx.state(model)


def main(model, x):
    graphdef, state = nnx.split(model)
    for _ in range(3):
        state = jax_train_step(graphdef, state, x)
"""
    refusals = report([facts_for_file("prog.py", source, ALL)], ALL)[0].refusals
    (refusal,) = [r for r in refusals if r.parameter == "graphdef"]
    assert "by its name a structure" in refusal.reason and "Python scalar" not in refusal.reason


OPTAX_SAM_LIKE = """\
import jax
import jax.numpy as jnp


class Opt:
    def init(self, params):
        return {"cache": params, "count": jnp.zeros(())}  # optax.contrib.sam keeps params too


@jax.jit
def step(params, state):
    return params * 0.9, {"cache": state["cache"] + params, "count": state["count"] + 1}


def main():
    opt = Opt()
    params = jnp.ones(3)
    state = opt.init(params)
    state = jax.tree.map(lambda v: v, state)  # the same leaves: still the init's
    for _ in range(3):
        params, state = step(params, state)
    return state
"""


def test_a_rebinding_through_a_derived_value_keeps_the_first_values_doubts():
    (finding,) = [f for f in _findings(OPTAX_SAM_LIKE, "JXM001") if f.parameter_name == "state"]
    assert finding.confidence is Confidence.MEDIUM and "opt.init(params)" in finding.message
    donated = OPTAX_SAM_LIKE.replace("@jax.jit\n", "@partial(jax.jit, donate_argnums=1)\n")
    with pytest.raises(Exception, match="Attempt to donate a buffer which is also used by the same call"):
        _run("from functools import partial\n" + donated)


RESET_LIKE = """\
from functools import partial

import jax
import jax.numpy as jnp


def make_state(keys):
    return {"obs": jax.vmap(lambda k: jax.random.normal(k, (3,)))(keys)}


@partial(jax.jit, keep_unused=True)
def reset(state_donated, keys):
    return make_state(keys)


def main():
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    state = make_state(keys)
    for _ in range(2):
        state = reset(state, keys)
    return state
"""


def _reset_finding(source):
    found = [f for f in _findings(source, "JXM001") if f.parameter_name == "state_donated"]
    return found[0] if found else None


def test_a_rebound_state_the_body_never_reads_is_proposed_at_medium_with_keep_unused_and_really_reused():
    # brax's ppo ``reset_fn_donated_env_state`` (jax.jit(..., keep_unused=True)): the output
    # is a new state of the same structure, which takes the donated buffers.  Called once, nothing
    # proves that an output has the state's shapes (in a loop the call's own result does:
    # tests/codemod/test_fix_loop_carried_runs.py)
    loop = "    for _ in range(2):\n        state = reset(state, keys)"
    once = RESET_LIKE.replace(loop, "    state = reset(state, keys)")
    finding = _reset_finding(once)
    assert finding is not None and finding.confidence is Confidence.MEDIUM
    assert any("never reads `state_donated`" in e.message for e in finding.evidence)
    assert _reset_deletes_its_state(RESET_LIKE.replace("keep_unused=True)", "keep_unused=True, donate_argnums=0)"))


def test_without_keep_unused_jit_drops_the_unread_argument_and_it_is_not_proposed():
    source = RESET_LIKE.replace("@partial(jax.jit, keep_unused=True)", "@jax.jit")
    assert _reset_finding(source) is None
    (refusal,) = [r for r in report([facts_for_file("prog.py", source, ALL)], ALL)[0].refusals
                  if r.parameter == "state_donated"]
    assert "drops it" in refusal.reason
    # jit dropped it: the donation does nothing
    assert not _reset_deletes_its_state(source.replace("@jax.jit", "@partial(jax.jit, donate_argnums=0)"))


def _reset_deletes_its_state(donating_source: str) -> bool:
    namespace: dict = {"__name__": "prog"}
    exec(compile(donating_source, "prog.py", "exec"), namespace)
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    state = namespace["make_state"](keys)
    namespace["reset"](state, keys)
    return state["obs"].is_deleted()


SGD_LOOP = """\
import jax
import jax.numpy as jnp
import optax

tx = optax.sgd({args})


@jax.jit
def step(params, opt_state, batch):
    grads = jax.tree.map(lambda p: p * batch.mean(), params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


def main():
    params = {{"w": jnp.ones(3)}}
    opt_state = tx.init(params)
    for _ in range(3):
        params, opt_state = step(params, opt_state, jnp.ones(2))
    return opt_state
"""


@pytest.mark.parametrize("args,proposed", [("0.02", False), ("0.02, momentum=0.9", True)])
def test_an_optimizer_state_with_no_array_is_not_proposed(args, proposed):
    # flax_basics.ipynb: optax.sgd(0.02) has only empty states; with momentum it has a trace
    source = SGD_LOOP.format(args=args)
    names = {f.parameter_name for f in _findings(source, "JXM001")}
    assert ("opt_state" in names) is proposed
    state = _run(source)
    assert bool(jax.tree.leaves(state)) is proposed


SAME_NAME_ELSEWHERE = """\
import jax
import jax.numpy as jnp


def train(n):
    step = jax.jit(lambda s: s * 0.5)
    state = jnp.ones(3)
    for _ in range(n):
        state = step(state)
    return state


def configure(register):
    def step(x):
        return x

    register(step)  # another scope's own `step`
"""


def test_a_local_of_another_scope_with_the_same_name_is_not_the_jitted_one():
    # optax's combine_test: a test method's local `update_fn` was taken for the jitted
    # local of another method, and only with the shortcuts off (they blank that class)
    (finding,) = _findings(SAME_NAME_ELSEWHERE, "JXM001")
    assert not any("passed around" in e.message for e in finding.evidence)
    closure = SAME_NAME_ELSEWHERE.replace(
        "    return state\n", "\n    def inner():\n        return run(step)\n\n    return state, inner\n", 1)
    (finding,) = _findings(closure, "JXM001")
    assert any("passed around" in e.message for e in finding.evidence)


def test_an_indexed_update_preserves_the_array_not_the_value_written():
    import libcst as cst

    from jaxmem.lint.callables.imports import ImportTable
    from jaxmem.lint.values.usefulness import MAYBE, PRESERVED, output_reach

    module = cst.parse_module("import jax\n\ndef append(buffer, item, i):\n    return buffer.at[i].set(item)\n")
    reach = output_reach(module.body[1], ImportTable.from_module(module))
    assert reach["buffer"] == PRESERVED and reach["item"] == MAYBE
    buffer, item = jax.numpy.zeros((8, 3)), jax.numpy.ones((3,))
    out = jax.jit(lambda b, v: b.at[2].set(v))(buffer, item)
    assert out.shape == buffer.shape != item.shape  # only the buffer's shape comes out


@pytest.mark.parametrize("donated,read", [('b["k"]', "b['k']"), ("b['k']", 'b["""k"""]'), ("t[1]", "t[0x1]")])
def test_a_key_spelled_another_way_is_the_same_key(donated, read):
    source = HEADER + textwrap.dedent(
        f"""
        def main():
            b = {{"k": jnp.ones(3)}}
            t = [jnp.ones(3), jnp.ones(3)]
            out = step({donated}, 1.0)
            seen = {read}.sum()
            return out, seen
        """
    )
    (finding,) = _findings(source, "JXM101")
    assert finding.confidence is Confidence.HIGH
    with raises_deleted_read():
        _run(source)
    # and without the donation, the argument is not dead after the call: nothing to propose
    undonated = source.replace("@partial(jax.jit, donate_argnums=0)\ndef step", "@jax.jit\ndef step")
    assert [f for f in _findings(undonated) if f.code in ("JXM001", "JXM002")] == []


HELPER_AFTER_DONATION = """\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, donate_argnames=("queries", "kv_cache"))
def attend(queries, kv_cache, keys):
    return queries * 2, kv_cache + keys.sum()  # both outputs match: both inputs are deleted


def check(b, out):
{body}


def main(b):
    out = attend(queries=b["q"], kv_cache=b["kv_cache"], keys=b["k"])
    return check(b, out)
"""
RUN_HELPER = '(lambda b: (main(b), b))({"q": jnp.ones(3), "kv_cache": jnp.ones(4), "k": jnp.ones(2)})'

HELPER_READS = {
    # tpu-inference's stacked_rpa_kv_writeback_test: the helper reads some entries of the dict
    "reads-one-donated-key": ('    return float(b["kv_cache"].sum() + b["k"][0]) + float(out[0].sum())',
                              {'b["kv_cache"]'}),
    "reads-no-donated-key": ('    return float(b["k"].sum()) + float(out[1].sum())', set()),
    "reads-only-metadata-of-donated-keys": ('    return b["q"].shape[0] + b["kv_cache"].ndim + float(b["k"].sum())',
                                            set()),
    "reads-every-leaf": ("    return jax.tree.map(lambda a: a + 1, b)", {'b["q"]', 'b["kv_cache"]'}),
    "iterates": ("    return [float(v.sum()) for v in b.values()]", {'b["q"]', 'b["kv_cache"]'}),
}


@pytest.mark.parametrize("body,reported", list(HELPER_READS.values()), ids=list(HELPER_READS))
def test_a_helper_reading_some_entries_is_reported_for_the_donated_ones_it_reads(body, reported):
    source = HELPER_AFTER_DONATION.format(body=body)
    found = _findings(source, "JXM101")
    assert {f.message.split("`")[1] for f in found} == reported
    assert all('this raises "Array has been deleted"' in f.message for f in found)
    if reported:
        with raises_deleted_read():
            _run(source, RUN_HELPER)
    else:
        _, b = _run(source, RUN_HELPER)  # the helper never touches the deleted entries
        assert b["q"].is_deleted() and b["kv_cache"].is_deleted() and not b["k"].is_deleted()


SHARD_MAP_LOOP = """\
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as PS


@partial(jax.jit, donate_argnames=("cache",))
def attend(q, cache):
    return q + 1, cache * 2


mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
closed = jnp.ones(4)


{decorator}
def body(q):
    cache = jnp.ones(4)
    outs = []
    for _ in range(2):
        o, _ = attend(q, cache)
        o, _ = attend(o, closed)
        outs.append(o)
    return jnp.stack(outs)


def main():
    return body(jnp.ones(4)), closed
"""


def test_calls_in_a_shard_map_body_are_traced_and_donate_nothing():
    # tpu-inference's ragged_paged_attention_kernel_cp_test: a donating kernel called twice
    # in a loop inside a shard_map body, with the same cache (made in the body)
    staged = SHARD_MAP_LOOP.format(decorator='@partial(jax.shard_map, mesh=mesh, in_specs=PS(), out_specs=PS())')
    assert _findings(staged, "JXM105") == [] and _findings(staged, "JXM101") == []
    _, closed = _run(staged)  # eagerly too: the body is staged, nothing is donated
    assert not closed.is_deleted()
    eager = SHARD_MAP_LOOP.format(decorator="")
    assert {f.message.split("`")[1] for f in _findings(eager, "JXM105")} == {"cache", "closed"}
    with pytest.raises(ValueError, match="Buffer has been deleted or donated"):
        _run(eager)


def test_calls_in_a_function_handed_to_shard_map_are_traced_too():
    # jax.shard_map(body, mesh=...) is the decorator's other spelling (tpu-inference's
    # gpt_oss attention hands a nested wrapper to it)
    staged = SHARD_MAP_LOOP.format(decorator="").replace("def body(q):", "def _body(q):").replace(
        "\n\ndef main():", "\nbody = jax.shard_map(_body, mesh=mesh, in_specs=PS(), out_specs=PS())\n\n\ndef main():")
    assert _findings(staged, "JXM105") == [] and _findings(staged, "JXM101") == []
    _, closed = _run(staged)
    assert not closed.is_deleted()
    called_too = staged.replace("    return body(jnp.ones(4)), closed", "    _body(jnp.ones(4))\n    return closed, closed")
    assert {f.message.split("`")[1] for f in _findings(called_too, "JXM105")} == {"cache", "closed"}
    with pytest.raises(ValueError, match="Buffer has been deleted or donated"):
        _run(called_too)


COMPETING = """\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, donate_argnums=(0, 1))
def combine(x, y):
    return {body}


def main():
    x = jnp.ones(3)
    y = jnp.ones(3)
    out = combine(x, y)
    return out, y.sum()
"""


def test_two_donated_inputs_sharing_one_output_only_may_raise():
    # one output buffer goes to one donated input (x): y stays readable, JAX only warns
    source = COMPETING.format(body="x + y")
    (finding,) = _findings(source, "JXM101")
    assert 'may raise "Array has been deleted"' in finding.message and "also built from donated `x`" in finding.message
    assert finding.confidence is Confidence.MEDIUM
    _run(source)


@pytest.mark.parametrize("body", ["x * 2, y * 2", "{'a': x * 2, 'b': (y + 1,)}"])
def test_donated_inputs_with_outputs_of_their_own_raise(body):
    source = COMPETING.format(body=body)
    (finding,) = _findings(source, "JXM101")
    assert 'this raises "Array has been deleted"' in finding.message and finding.confidence is Confidence.HIGH
    with raises_deleted_read():
        _run(source)


@pytest.mark.parametrize("callee,verb", [("step", "raises"), ("total", "may raise")])
def test_jxm104_says_raises_only_where_an_output_can_take_the_buffer(callee, verb):
    source = HEADER + textwrap.dedent(
        f"""
        def main():
            x = jnp.ones(3)
            kept = []
            kept.append(x)
            out = {callee}(x, 1.0)
            return out, kept[0].sum()
        """
    )
    (finding,) = _findings(source, "JXM104")
    assert f"any later read {verb} " + '"Array has been deleted"' in finding.message, finding.message
    if verb == "raises":
        with raises_deleted_read():
            _run(source)
    else:
        _run(source)  # JAX only warns: the kept array stays readable


def test_named_jit_advice_is_spelled_as_haliax_takes_it_and_not_marked_fixable():
    source = textwrap.dedent(
        """
        import haliax as hax
        import jax.numpy as jnp

        @hax.named_jit
        def step(state, batch):
            return state + batch

        def train(batches):
            state = jnp.zeros(3)
            for b in batches:
                state = step(state, b)
            return state
        """
    )
    (finding,) = [f for f in _findings(source, "JXM001") if f.parameter_name == "state"]
    assert "add donate_args=(True, False) to reuse its memory" in finding.message
    assert finding.fix is None  # jaxmem-fix does not write donate_args: the finding must not say it does


# haliax's flags, read as haliax 1.3 reads them (checked by running haliax 1.4.dev453 on jax 0.10.2,
# which tests cannot install: haliax 1.3 does not import on jax 0.10.2, the dev build needs aqtp):
# donate_args=(True, False) deleted the first argument and reading it raised "Array has been
# deleted"; donate_args=True deleted both positional arguments and not one passed by keyword;
# donate_kwargs={"other": True} deleted only the keyword-passed `other`.
HALIAX_READS = """
import haliax as hax
import jax.numpy as jnp

@hax.named_jit({options})
def step(state, other):
    return state * 2, other + 1

def main():
    state, other = jnp.ones(8), jnp.ones(8)
    old_state, old_other = state, other
    state, other = step({call})
    print(old_state, old_other)
    return state, other
"""


@pytest.mark.parametrize(("options", "call", "read"), [
    ("donate_args=(True, False)", "state, other", {"state"}),
    ("donate_args=(True,)", "state, other", {"state"}),  # missing flags are False
    ("donate_args=True", "state, other", {"state", "other"}),
    ("donate_args=True", "state, other=other", {"state"}),  # donate_args never covers a keyword-passed one
    ('donate_kwargs={"other": True}', "state, other=other", {"other"}),
    ('donate_kwargs={"other": True}', "state, other", set()),
    ("donate_args=(False, False)", "state, other", set()),
])
def test_named_jit_donate_args_and_kwargs_are_read_as_haliax_applies_them(options, call, read):
    source = HALIAX_READS.format(options=options, call=call)
    reported = {f.message.split("`")[3] for f in _findings(source, "JXM101")}
    assert reported == read


def test_named_jit_advice_keeps_the_flags_already_given():
    source = textwrap.dedent(
        """
        import haliax as hax
        import jax.numpy as jnp

        @hax.named_jit(donate_args=(False, True))
        def step(state, buffer):
            return state * 2, buffer + 1

        def train():
            state, buffer = jnp.zeros(3), jnp.zeros(3)
            for _ in range(3):
                state, buffer = step(state, buffer)
            return state, buffer
        """
    )
    (finding,) = _findings(source, "JXM001")
    assert "add donate_args=(True, True) to reuse its memory" in finding.message and finding.fix is None


def test_named_jit_flags_that_are_not_constants_are_not_analysed():
    source = HALIAX_READS.format(options="donate_args=flags", call="state, other")
    assert _findings(source, "JXM101") == [] and _findings(source, "JXM001") == []


NOTEBOOK_REBINDS_TX = """\
import jax
import jax.numpy as jnp
import optax

tx = optax.{first}
params = {{"w": jnp.ones(3)}}
opt_state = tx.init(params)


@jax.jit
def step(tx, params, opt_state, batch):
    grads = jax.tree.map(lambda p: p * batch.mean(), params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state


tx = optax.{second}
opt_state = tx.init(params)
for _ in range(3):
    params, opt_state = step(tx, params, opt_state, jnp.ones(2))
leaves = len(jax.tree.leaves(opt_state))
"""


@pytest.mark.parametrize("first,second,proposed", [
    ("adam(1e-3)", "sgd(learning_rate=0.02)", False), ("sgd(0.02)", "adam(1e-3)", True)])
def test_only_the_optimizer_bound_where_init_runs_decides(first, second, proposed):
    # flax_basics.ipynb: an earlier cell binds tx = optax.adam(...), a later one tx = optax.sgd(0.02)
    source = NOTEBOOK_REBINDS_TX.format(first=first, second=second)
    names = {f.parameter_name for f in _findings(source, "JXM001")}
    assert ("opt_state" in names) is proposed
    namespace = {"__name__": "prog"}
    exec(compile(source.replace("@jax.jit", "@functools.partial(jax.jit, static_argnums=0)")
                 .replace("import jax\n", "import functools\nimport jax\n", 1), "prog.py", "exec"), namespace)
    assert (namespace["leaves"] > 0) is proposed  # sgd without momentum: no array to donate


@pytest.mark.parametrize("made", [
    "nnx.Param(1)", "nnx.Param(jnp.array(1.0))", "nnx.Param(jnp.float32(2))",
    "nnx.Param(jnp.asarray(3, dtype=jnp.int32))", "nnx.Dict(a=nnx.Param(jnp.array(1)), b=nnx.Param(2))",
])
def test_an_nnx_variable_of_a_python_number_is_not_worth_donating(made):
    # flax's graph_utils_test: ``v = nnx.Param(1)`` updated in place by an nnx.jit step (a scalar);
    # its transforms_test: ``nnx.Dict(a=nnx.Param(jnp.array(1)))``
    source = f"""\
import jax.numpy as jnp
from flax import nnx


@nnx.jit
def f(v):
    v[...] = jnp.ones(()) if isinstance(v, nnx.Param) else None


def main():
    v = {made}
    for _ in range(3):
        f(v)
    return v
"""
    assert [f for f in _findings(source, "JXM001")] == []
    (refusal,) = [r for r in report([facts_for_file("prog.py", source, ALL)], ALL)[0].refusals if r.parameter == "v"]
    assert "Variables made from a Python number" in refusal.reason


NNX_RNGS_STEP = """\
import jax
import jax.numpy as jnp
import optax
from flax import nnx


@nnx.jit{donate}
def train_step(model, optimizer, rngs, x):
    noise = jax.random.normal(rngs(), x.shape)
    loss, grads = nnx.value_and_grad(lambda m: (m(x + noise) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss


rngs = nnx.Rngs(0)
model = nnx.Linear(4, 4, rngs=rngs)
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
for _ in range(3):
    train_step(model, optimizer, rngs, jnp.ones((2, 4)))
total = float(model.kernel[...].sum()) + float(jax.random.normal(rngs(), ()))
"""


def test_an_nnx_rngs_passed_to_an_nnx_jit_step_is_not_worth_donating_and_donating_it_runs():
    # flax's benchmarks/nnx_mlpmixer_training.py donates ``rngs``: before, jaxmem said the step
    # "does not visibly update `rngs`", though ``rngs()`` advances its counter
    pytest.importorskip("flax")
    source = NNX_RNGS_STEP.format(donate="")
    assert {f.parameter_name for f in _findings(source, "JXM001")} == {"model", "optimizer"}
    (refusal,) = [r for r in report([facts_for_file("prog.py", source, ALL)], ALL)[0].refusals
                  if r.parameter == "rngs"]
    assert refusal.reason.startswith("not worth donating: every call passes an `nnx.Rngs`"), refusal.reason
    runs = {}
    for donate in ("", "(donate_argnums=(0, 1, 2))"):
        namespace = {"__name__": "prog"}
        exec(compile(NNX_RNGS_STEP.format(donate=donate), "prog.py", "exec"), namespace)
        runs[donate] = namespace["total"]  # reading rngs after the donating calls is fine: nnx writes it back
    assert runs[""] == runs["(donate_argnums=(0, 1, 2))"]


def test_an_nnx_variable_of_a_larger_array_made_in_place_is_proposed():
    source = """\
import jax.numpy as jnp
from flax import nnx


@nnx.jit
def f(v):
    v[...] += 1


def main():
    v = nnx.Param(jnp.zeros((1024,)))
    for _ in range(3):
        f(v)
    return v
"""
    (found,) = _findings(source, "JXM001")
    assert found.confidence.value == "high", found.message


NNX_DONATES_AN_ARRAY = """\
import jax.numpy as jnp
from flax import nnx


@nnx.jit(donate_argnums=(0, 1))
def step(model, x):
    return model(x) + x


def main():
    model = nnx.Linear(3, 3, rngs=nnx.Rngs(0))
    x = jnp.ones(3)
    y = step(model, x)
    return float(y.sum()), {read}
"""


@pytest.mark.parametrize("read, reported", [
    ("float(x.sum())", True),  # a plain array donated to nnx.jit is deleted, as by jax.jit
    ("float(model(jnp.ones(3)).sum())", False),  # the Module is written back: still usable
])
def test_nnx_jit_writes_modules_back_but_deletes_a_donated_array(read, reported):
    pytest.importorskip("flax")
    source = NNX_DONATES_AN_ARRAY.format(read=read)
    assert bool(_findings(source, "JXM101")) is reported
    if reported:
        with raises_deleted_read():
            _run(source)
    else:
        _run(source)



FILLED = """\
import jax
import jax.numpy as jnp


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.5, state)


def main():
    w = jnp.ones((4, 4))
    state = MADE
    FILL
    for _ in range(3):
        state = step(state)
    return jax.tree.leaves(state), w.sum()
"""

CONTAINERS = [("{}", 'state["x"] = VALUE'), ("[]", "state.append(VALUE)"), ("dict()", "state.update(x=VALUE)")]


@pytest.mark.parametrize("made,fill", CONTAINERS)
def test_a_container_filled_with_new_arrays_is_proposed(made, fill):
    # it was refused as "starts as Python values ... not worth donating" while it holds a 4x4 array
    source = FILLED.replace("MADE", made).replace("FILL", fill.replace("VALUE", "jnp.zeros((4, 4))"))
    (finding,) = _findings(source, "JXM001")
    assert finding.parameter_name == "state" and finding.confidence is Confidence.HIGH
    leaves, _ = _run(_donating(source))
    assert [leaf.shape for leaf in leaves] == [(4, 4)]


@pytest.mark.parametrize("made,fill", [*CONTAINERS, ("{}", "state[str(0)] = VALUE")])
def test_a_container_filled_with_an_array_read_later_is_not_high_and_donating_it_deletes_that_array(made, fill):
    # proposed at high confidence before: the forced donation deletes `w`, read after the loop
    source = FILLED.replace("MADE", made).replace("FILL", fill.replace("VALUE", "w"))
    _medium_and_deleted_when_forced(source, "`w` still holds its arrays", "is stored into it")


def test_a_container_of_python_values_is_still_not_worth_donating():
    source = FILLED.replace("MADE", '{"lr": 0.1}').replace("    FILL\n", "").replace(", w.sum()", "")
    assert _findings(source, "JXM001") == []


NUMBER_STORED = """\
from functools import partial

import jax
import jax.numpy as jnp


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.5, state)


def main():
    state = {"w": jnp.zeros((4, 4)), "n": 0.0}
    for i in range(3):
        state["n"] = i
        state = step(state)
    return state
"""


def test_a_python_number_stored_into_the_state_keeps_it_high():
    # optax's inject_hyperparams test: ``state.hyperparams["max_norm"] = i``, ``i`` from ``range``
    (finding,) = _findings(NUMBER_STORED, "JXM001")
    assert finding.parameter_name == "state" and finding.confidence is Confidence.HIGH
    state = _run(NUMBER_STORED.replace("@jax.jit\n", "@partial(jax.jit, donate_argnums=0)\n"))
    assert state["w"].shape == (4, 4) and float(state["n"]) == 1.0


COND_CLOSURE = """\
import jax
import jax.numpy as jnp


@jax.jit
def update(cache, x):
    def grow(_):
        return cache.at[0].set(x[0])

    def keep(_):
        return cache

    return jax.lax.cond(x[0] > 0, grow, {other}, operand=None)


def main():
    cache = jnp.zeros(4)
    cache = update(cache, jnp.ones(4))
    return cache
"""


@pytest.mark.parametrize("other", ["keep", "lambda _: cache * 2.0"], ids=["def", "lambda"])
def test_a_branch_closing_over_a_parameter_may_return_it(other):
    # tpu-inference's ragged_conv1d: lax.cond's branches close over the state (operand=None);
    # "no output is built from `cache`" would be false: the donated buffer is really reused
    source = COND_CLOSURE.format(other=other)
    (finding,) = [f for f in _findings(source) if f.code in ("JXM001", "JXM002") and "`cache`" in f.message]
    assert "only through calls jaxmem does not know" in finding.message, finding.message
    namespace: dict = {}
    exec(compile(source.replace("@jax.jit", "@partial(jax.jit, donate_argnums=0)").replace(
        "import jax\n", "from functools import partial\n\nimport jax\n", 1), "prog.py", "exec"), namespace)
    jnp = namespace["jnp"]
    cache = jnp.zeros(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Some donated buffers were not usable" would fail here
        namespace["update"](cache, jnp.ones(4))
    assert cache.is_deleted()


LOGGED = """\
import jax
import jax.numpy as jnp


class Logger:
    def __init__(self):
        self.seen = []

    def log(self, value):
        self.seen.append(value)


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.5, state)


def make_state(w):
    return {"w": w}


def main():
    logger = Logger()
    w = jnp.zeros(4)
    logger.log(w)
    w = jnp.ones(4)
    state = MADE
    for _ in range(3):
        state = step(state)
    return float(logger.seen[0].sum()), float(state["w"].sum())
"""


@pytest.mark.parametrize("made", ['{"w": w}', "make_state(w)"])
def test_a_method_given_an_earlier_value_of_the_array_keeps_nothing_of_the_state(made):
    # `logger.log(w)` may keep what it is given, but it was given the zeros `w` held before
    # it was rebound: the state holds the ones, which nothing else holds
    source = LOGGED.replace("MADE", made)
    (finding,) = _findings(source, "JXM001")
    assert finding.confidence is Confidence.HIGH, finding.message
    donating = _donating(source)
    assert _run(donating) == (0.0, 0.5)


@pytest.mark.parametrize("made", ['{"w": w}', "make_state(w)"])
def test_a_method_given_the_states_array_after_the_state_is_made_may_keep_it(made):
    source = LOGGED.replace("MADE", made).replace("    logger.log(w)\n", "").replace(
        "    for _ in", "    logger.log(w)\n    for _ in")
    _medium_and_deleted_when_forced(source, "`logger.log(w)` may keep", "`logger.log(w)` (line 27) may keep",
                                    "`logger` may hold")


def test_a_function_of_the_file_that_keeps_nothing_leaves_the_state_its_own():
    # `show(w)` is called for its effect, but its body only reads what it is given
    source = LOGGED.replace("MADE", '{"w": w}').replace(
        "def make_state(w):", "def show(value):\n    print(float(value.sum()))\n\n\ndef make_state(w):").replace(
        "    logger.log(w)\n", "").replace("    for _ in", "    show(w)\n    for _ in")
    (finding,) = _findings(source, "JXM001")
    assert finding.confidence is Confidence.HIGH, finding.message
    donating = _donating(source).replace(
        "float(logger.seen[0].sum())", "len(logger.seen)")
    assert _run(donating) == (0, 0.5)


KEPT_ELSEWHERE = """\
import jax
import jax.numpy as jnp
import optax


class Box:
    pass


BOX = Box()


def box():
    return BOX


@jax.jit
def step(state):
    return {"w": state["w"] * 2.0}


def main():
    w = jnp.ones(4)
    state = {"w": w}
    KEEP
    for _ in range(3):
        state = step(state)
    return float(state["w"].sum()), float(READ.sum())
"""


@pytest.mark.parametrize("keep, read", [
    # pytree utilities that hand back the state's very leaves (jax 0.10.2, optax 0.2.8)
    ("leaves, treedef = jax.tree.flatten(state)\n    kept = jax.tree.unflatten(treedef, leaves)", 'kept["w"]'),
    ("kept = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(state), jax.tree_util.tree_leaves(state))",
     'kept["w"]'),
    ("kept = jax.tree.reduce(max, state)", "kept"),  # one leaf: the leaf itself
    ("kept = jax.tree.reduce(lambda a, b: a + b, state)", "kept"),
    ("kept, _ = jax.tree_util.tree_flatten_with_path(state)", "kept[0][1]"),
    ('kept = optax.tree_utils.tree_get(state, "w")', "kept"),
    # stores into an object no name holds
    ('globals()["KEPT"] = state', 'KEPT["w"]'),
    ("box().w = w", "BOX.w"),
    ('vars(BOX)["w"] = w', "BOX.w"),
])
def test_a_value_kept_where_the_flow_had_no_name_for_it_is_not_high(keep, read):
    # each was proposed at high confidence before: donating the state deletes what the program
    # reads after the loop
    pytest.importorskip("optax")
    source = KEPT_ELSEWHERE.replace("KEEP", keep).replace("READ", read)
    assert all(f.confidence is not Confidence.HIGH for f in _findings(source, "JXM001"))
    with raises_deleted_read():
        _run(_donating(source))

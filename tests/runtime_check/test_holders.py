"""Who else holds a donated argument's arrays: named as the user would, on live objects."""

import sys

import jax
import jax.numpy as jnp

from jaxmem.runtime_check.confirm import confirming
from jaxmem.runtime_check.holders import outside_holders, own_nodes, repeated_leaves

is_array = lambda x: isinstance(x, jax.Array)


def _holders(value, name="params"):
    nodes, own = own_nodes(value, is_array)
    inner = [(node, name + path) for node, path in nodes if node is not value]
    inner += [(leaf, f"{name}{jax.tree_util.keystr(path)}")
              for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]]
    del nodes  # (node, path) pairs of this helper's own: holders of the tree in any other frame
    return outside_holders([(value, name)], inner, own, set())


def test_nothing_else_holds_a_fresh_tree():
    assert [h for h in _holders({"w": jnp.ones(2), "b": [jnp.zeros(2)]}) if h.refutes] == []
    # None and () are pytree nodes shared by the whole program, never holders' targets
    assert [h for h in _holders({"w": jnp.ones(2), "none": None, "empty": ()}) if h.refutes] == []


def test_a_list_holding_a_leaf_is_named_by_its_variable():
    params = {"w": jnp.ones(2)}
    history = [params["w"]]
    (holder,) = [h for h in _holders(params) if h.refutes]
    assert holder.held == "params['w']"
    assert "a list" in holder.holder and "`history`" in holder.holder
    del history


def test_a_closure_cell_and_a_default_argument_are_named_with_their_function():
    params = {"w": jnp.ones(2)}
    w = params["w"]

    def later():
        return w + 1

    def defaulted(x=params):
        return x

    texts = sorted(h.holder for h in _holders(params) if h.refutes)
    assert any("closure variable `w` of" in text and "later()" in text for text in texts), texts
    assert any("default argument value of" in text and "defaulted()" in text for text in texts), texts


def test_an_attribute_of_another_object_holds_an_inner_node():
    class Logger:
        pass

    params = {"layer": {"w": jnp.ones(2)}}
    logger = Logger()
    logger.last = params["layer"]
    (holder,) = [h for h in _holders(params) if h.refutes]
    assert holder.held == "params['layer']" and "the attribute `last` of a" in holder.holder
    assert "Logger object" in holder.holder


def test_the_roots_own_variable_is_not_a_holder_but_a_container_is():
    params = {"w": jnp.ones(2)}
    assert [h for h in _holders(params) if h.refutes] == []  # the local `params` is the caller's variable
    keep = [params]
    (holder,) = [h for h in _holders(params) if h.refutes]
    assert holder.held == "params" and "a list" in holder.holder
    del keep


def test_repeated_leaves_name_both_paths():
    kernel = jnp.ones(2)
    state = {"params": {"k": kernel}, "ema": {"k": kernel}}
    leaves = jax.tree_util.tree_leaves(state)
    names = lambda: [f"state{jax.tree_util.keystr(p)}" for p, _ in jax.tree_util.tree_flatten_with_path(state)[0]]
    first, second = repeated_leaves([("state", leaves, names)], [])  # both sides: neither can be donated alone
    assert {first.held, first.holder.split("`")[1]} == {"state['ema']['k']", "state['params']['k']"}
    assert (second.held, second.holder.split("`")[1]) == (first.holder.split("`")[1], first.held)
    (passed,) = repeated_leaves([("a", [kernel], ["a"])], [("b", [kernel], ["b"])])
    assert "passed undonated in the same call" in passed.holder


def test_confirming_in_process_refutes_a_closure_and_confirms_a_fresh_state():
    line = sys._getframe().f_lineno + 2
    make = lambda: (
        jax.jit(lambda tree, scale: jax.tree.map(lambda x: x * scale, tree)))
    proposals = [{"definition_path": __file__, "definition_line": line, "function": "<lambda>",
                  "parameter_name": "tree", "parameter_index": 0, "confidence": "medium"}]
    with confirming(proposals, set()) as confirmer:
        step = make()
        tree = {"w": jnp.ones(3)}
        for _ in range(2):
            tree = step(tree, 2.0)
        (watch,) = [w for ws in confirmer.watches.values() for w in ws]
        assert watch.donated_calls == 2 and not watch.refutations
        assert watch.reuse["reused_leaves"] == 1
        kept = tree["w"]
        reader = lambda: kept + 1
        step(tree, 2.0)  # the 3rd call: scanned (calls 1-3, then 10, 100, ...)
        assert watch.refutations[0]["kind"] == "held-elsewhere"
        assert "closure variable `kept`" in watch.refutations[0]["message"]
        assert not tree["w"].is_deleted()  # refuted before the call: not donated
        assert float(reader()[0]) == 5.0


def test_an_expected_holder_is_a_note_and_any_other_still_refutes():
    # nnx's functional API: the Module a State was split from holds its Variables (nnx_splits)
    class Module:
        pass

    params = {"layer": {"w": jnp.ones(2)}}
    source, other = Module(), Module()
    source.layer = params["layer"]
    other.layer = params["layer"]
    nodes, own = own_nodes(params, is_array)
    inner = [(node, "params" + path) for node, path in nodes if node is not params]
    expected = {id(params["layer"]): frozenset({id(source), id(vars(source))})}
    del nodes
    found = outside_holders([(params, "params")], inner, own, set(), expected)
    (note,) = [h for h in found if h.expected]
    assert not note.refutes and "attribute `layer`" in note.holder
    (refuting,) = [h for h in found if h.refutes]
    assert refuting.held == "params['layer']" and "attribute `layer`" in refuting.holder
    del source, other

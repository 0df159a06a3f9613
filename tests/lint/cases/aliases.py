# checks: JXM101, JXM104
# Aliases and escapes of a donated value; `update` donates its first argument.
import jax
import jax.numpy as jnp

update = jax.jit(lambda p, g: p - g, donate_argnums=0)
state = {}


def alias_read_after(params, grads):
    old = params
    params = update(params, grads)
    return old  # JXM101


def alias_taken_after_is_fine(params, grads):
    params = update(params, grads)
    old = params
    return old


def tuple_alias(params, grads):
    pair = (params, grads)
    params = update(params, grads)
    return pair  # JXM101


def stored_in_list(params, grads, history):
    history.append(params)
    params = update(params, grads)  # JXM104
    return params


def stored_in_attribute(params, grads, obj):
    obj.last = params
    params = update(params, grads)  # JXM104
    return params


def stored_in_dict(params, grads):
    state["params"] = params
    params = update(params, grads)  # JXM104
    return params


def captured_by_closure(params, grads):
    def report():
        return params

    new = update(params, grads)  # JXM104
    return report, new


def captured_but_rebound_by_the_call(params, grads):
    def report():
        return params  # reads the variable when it runs: the new value

    params = update(params, grads)
    return report


def yielded(params, grads):
    yield params
    params = update(params, grads)  # JXM104
    yield params


def part_of_pytree_pulled_out(state, grads):
    w = state["w"]
    state = update(state, grads)
    return w  # JXM101


def donating_a_copy_deletes_the_original(grads):
    params = make_params()
    p = params
    p = update(p, grads)
    print(params)  # JXM101
    return p


def make_params():
    return {}


def default_argument_keeps_the_old_value(batches):
    params = jnp.ones(3)
    def callback(p=params):
        return p.sum()
    for batch in batches:
        params = update(params, batch)  # JXM104
    return callback()


def generator_keeps_its_iterable(batches):
    params = jnp.ones(3)
    doubled = (p * 2 for p in [params])
    params = update(params, batches)  # JXM104
    return list(doubled)


def generator_keeps_what_its_iterable_call_returns(batches):
    params = {"w": jnp.ones(3)}
    sums = (float(x.sum()) for x in jax.tree.leaves(params))
    params = update(params, batches)  # JXM104
    return list(sums)


def generator_keeps_its_iterable_method_result(batches):
    params = {"w": jnp.ones(3)}
    sums = (float(x.sum()) for _, x in params.items())
    params = update(params, batches)  # JXM104
    return list(sums)


def list_comprehension_is_evaluated_at_once(batches):
    params = {"w": jnp.ones(3)}
    sums = [float(x.sum()) for x in jax.tree.leaves(params)]
    params = update(params, batches)
    return sums, params


def none_is_a_value_not_a_variable(trees):
    total = None
    for tree in trees:
        if total is None:
            total = jax.tree_util.tree_map(jnp.array, tree)
        else:
            total = update(total, tree)
    return total


def closure_runs_only_after_the_rebinding(grads):
    params = jnp.ones(3)
    loss = lambda: params.sum()
    new = update(params, grads)
    params = new
    return loss()


def closure_may_run_before_the_rebinding(grads):
    params = jnp.ones(3)
    loss = lambda: params.sum()
    new = update(params, grads)  # JXM104
    print(loss())
    params = new
    return params

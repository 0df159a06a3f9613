# checks: JXM101
# A container passed to a same-file helper reads only the entries the helper may read;
# `update` donates its first argument, always `b["q"]`.
import functools

import jax
import jax.numpy as jnp

update = jax.jit(lambda p, g: p - g, donate_argnums=0)


def reads_q(b):
    return b["q"].sum()


def reads_k(b):
    return b["k"].sum() + b["k"][0] + b["k"].T.sum()


def reads_q_single_quoted(b):
    return b['q'].sum()


def reads_nothing(b, label):
    return label


def reads_k_by_keyword(out, *, b=None):
    return out + b["k"]


def reads_whole(b):
    return jax.tree.map(lambda a: a + 1, b)


def iterates(b):
    return [v.sum() for v in b.values()]


def passes_on(b):
    return reads_q(b)


def returns_it(b):
    return b


def rebinds(b):
    b = {"q": b["k"]}
    return b["q"]


def writes_entry(b):
    b["q"] = jnp.zeros(3)
    return b["k"]


def reads_variable_key(b, key):
    return b[key]


def reads_in_closure(b):
    return lambda: b["k"]


def reads_in_generator_expression(b):
    return sum(b["k"][i] for i in range(2))


def unpacks(b):
    return dict(**b)


@jax.jit
def jitted_helper(b):
    return b["k"] * 2  # jit flattens every leaf of b


@functools.lru_cache
def cached_helper(b):
    return b["k"]


def generator_helper(b):
    yield b["k"]


def star_args(*parts):
    return parts[0]["k"]


def two_defs(b):
    return b["k"]


def two_defs(b):  # noqa: F811
    return b["q"]


def shadowed(b):
    return b["k"]


shadowed = reads_whole


def caller_reads_k(b, g):
    b["q"] = update(b["q"], g)
    return reads_k(b)


def reads_k_after(b, g):
    new = update(b["q"], g)
    return new, reads_k(b)


def reads_q_after(b, g):
    new = update(b["q"], g)
    return new, reads_q(b)  # JXM101


def reads_q_quoted_differently(b, g):
    new = update(b["q"], g)
    return new, reads_q_single_quoted(b)  # JXM101


def donated_single_quoted(b, g):
    new = update(b['q'], g)
    return new, reads_q(b)  # JXM101


def reads_nothing_after(b, g):
    new = update(b["q"], g)
    return new, reads_nothing(b, "label")


def keyword_argument(b, g):
    new = update(b["q"], g)
    return reads_k_by_keyword(new, b=b)


def whole_read(b, g):
    new = update(b["q"], g)
    return new, reads_whole(b)  # JXM101


def iterated(b, g):
    new = update(b["q"], g)
    return new, iterates(b)  # JXM101


def passed_on(b, g):
    new = update(b["q"], g)
    return new, passes_on(b)  # JXM101


def returned(b, g):
    new = update(b["q"], g)
    return new, returns_it(b)  # JXM101


def rebound_in_helper(b, g):
    new = update(b["q"], g)
    return new, rebinds(b)  # JXM101


def written_in_helper(b, g):
    new = update(b["q"], g)
    return new, writes_entry(b)  # JXM101


def variable_key(b, g):
    new = update(b["q"], g)
    return new, reads_variable_key(b, "k")  # JXM101


def closure(b, g):
    new = update(b["q"], g)
    return new, reads_in_closure(b)  # JXM101


def generator_expression(b, g):
    new = update(b["q"], g)
    return new, reads_in_generator_expression(b)  # JXM101


def expanded(b, g):
    new = update(b["q"], g)
    return new, unpacks(b)  # JXM101


def decorated_with_jit(b, g):
    new = update(b["q"], g)
    return new, jitted_helper(b)  # JXM101


def decorated(b, g):
    new = update(b["q"], g)
    return new, cached_helper(b)  # JXM101


def generator(b, g):
    new = update(b["q"], g)
    return new, generator_helper(b)  # JXM101


def into_star_args(b, g):
    new = update(b["q"], g)
    return new, star_args(b)  # JXM101


def defined_twice(b, g):
    new = update(b["q"], g)
    return new, two_defs(b)  # JXM101


def name_rebound(b, g):
    new = update(b["q"], g)
    return new, shadowed(b)  # JXM101


def star_call(b, g):
    new = update(b["q"], g)
    return new, reads_k(*[b])  # JXM101


def local_shadow(b, g):
    reads_k = reads_whole  # noqa: F841
    new = update(b["q"], g)
    return new, reads_k(b)  # JXM101


def inner_donated_then_helper(b, g):
    new = update(b["q"], g)
    return new, reads_k(b), b["q"]  # JXM101


def nested_helper_reads_k(b, g):
    def check(c):
        return c["k"]

    new = update(b["q"], g)
    return new, check(b)


def nested_helper_reads_q(b, g):
    def check(c):
        return c["q"]

    new = update(b["q"], g)
    return new, check(b)  # JXM101


def nested_helper_defined_twice(b, g, flag):
    def check(c):
        return c["k"]

    if flag:
        def check(c):  # noqa: F811
            return c["q"]

    new = update(b["q"], g)
    return new, check(b)  # JXM101


def nested_shadows_top_level(b, g):
    def reads_k(c):
        return c["q"]

    new = update(b["q"], g)
    return new, reads_k(b)  # JXM101


def nested_helper_in_inner_scope(b, g):
    def check(c):
        return c["k"]

    def inner():
        new = update(b["q"], g)
        return new, check(b)  # JXM101: `check` is not inner's own def

    return inner()


def reads_metadata_of_q(b):
    return b["q"].shape[0] + b["q"].ndim + b["k"].sum()


def metadata_only(b, g):
    new = update(b["q"], g)
    return new, reads_metadata_of_q(b)


def reads_q_metadata_and_value(b):
    return b["q"].shape, b["q"].sum()


def metadata_and_value(b, g):
    new = update(b["q"], g)
    return new, reads_q_metadata_and_value(b)  # JXM101


class TestStep:
    def test_method_reads_k(self, b, g):
        new = update(b["q"], g)
        return new, reads_k(b)

    def test_method_reads_q(self, b, g):
        new = update(b["q"], g)
        return new, reads_q(b)  # JXM101


def reads_k_rebound_elsewhere(b):
    return b["k"]


def rebinds_global():
    global reads_k_rebound_elsewhere
    reads_k_rebound_elsewhere = reads_whole


def global_rebinding(b, g):
    new = update(b["q"], g)
    return new, reads_k_rebound_elsewhere(b)  # JXM101

# checks: JXM101, JXM104, JXM105
# Liveness across every control-flow construct; `step` donates its first argument.
import jax

step = jax.jit(lambda x: x + 1, donate_argnums=0)


def branch_reads_later(x, flag):
    y = step(x)
    if flag:
        print(x)  # JXM101
    return y


def rebound_in_both_branches(x, flag):
    if flag:
        x = step(x)
    else:
        x = step(x)
    return x


def rebound_in_one_branch_only(x, flag):
    y = step(x)
    if flag:
        x = y
    return x  # JXM101


def while_loop_rebinds(x, n):
    while n > 0:
        x = step(x)
        n -= 1
    return x


def while_loop_not_rebound(x, n):
    while n > 0:
        y = step(x)  # JXM105
        n -= 1
    return y


def for_else_reads(x, items):
    for item in items:
        x = step(x)
        if item:
            break
    else:
        return x
    return x


def break_skips_rebind(x, items):
    for item in items:
        y = step(x)
        if item:
            break
        x = y
    return x  # JXM101


def continue_reads_next_iteration(x, items):
    for item in items:
        y = step(x)  # JXM105
        if item:
            continue
        x = y
    return x  # JXM101


def try_except_reads_in_handler(x):
    try:
        y = step(x)
        risky(y)
    except ValueError:
        print(x)  # JXM101
        raise
    return y


def try_finally_reads(x):
    try:
        x2 = step(x)
    finally:
        print(x)  # JXM101
    return x2


def with_block(x, lock):
    with lock:
        x = step(x)
    return x


def match_statement(x, command):
    match command:
        case "go":
            y = step(x)
        case _:
            y = x
    return x  # JXM101


def walrus_rebinds(x):
    if (x := step(x)) is not None:
        return x
    return x


def del_is_not_a_read(x):
    y = step(x)
    del x
    return y


def metadata_is_not_a_read(x):
    y = step(x)
    print(x.shape, x.dtype, x.ndim, x.size, x.sharding, x.is_deleted())
    return y


def comprehension_reads(x, items):
    y = step(x)
    return [x + i for i in items], y  # JXM101


def comprehension_shadowing_is_not_a_read(x, items):
    y = step(x)
    return [x for x in items], y


def return_in_loop(x, items):
    for item in items:
        x = step(x)
        if item:
            return x
    return x


async def async_for(x, stream):
    async for item in stream:
        x = step(x)
    return x


def risky(value):
    return value


counter_state = None


def global_is_owned_elsewhere():
    global counter_state
    new = step(counter_state)  # JXM104
    return new


def global_rebound_is_fine():
    global counter_state
    counter_state = step(counter_state)


def nonlocal_capture():
    value = 1

    def bump():
        nonlocal value
        value = step(value)  # rebinds the enclosing variable: fine

    def peek():
        nonlocal value
        return step(value)  # JXM104

    bump()
    return value, peek


def used_in_the_same_expression(x):
    return x + step(x)  # JXM101


def passed_again_to_an_outer_call(x):
    return combine(x, step(x))  # JXM101


def augmented_assignment(x):
    x += step(x)  # JXM101
    return x


def computed_before_the_call_is_fine(x):
    return x.sum(), x.shape, step(x)


def combine(a, b):
    return a, b

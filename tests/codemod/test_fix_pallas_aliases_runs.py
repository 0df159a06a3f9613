"""A Pallas kernel called with ``input_output_aliases`` writes an output into an
operand's buffer, and Pallas requires the two to match in shape and dtype; in a
jitted wrapper the output can take the donated operand's buffer (without the
donation XLA copies the operand first).  The alias is read only where every
operand up to it is one array for certain (a parameter annotated ``jax.Array``
the body never rebinds): the indices count flattened leaves.  Run in Pallas'
interpreter on the CPU (jax 0.10.2)."""

import pytest
from fix_runs import fix_and_rerun, load, report_of, step_confidences

jax = pytest.importorskip("jax")
pytest.importorskip("jax.experimental.pallas")

PROGRAM = """
import warnings

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

warnings.simplefilter("error")  # "Some donated buffers were not usable" fails the run


def _append(x_ref, cache_ref, out_ref, new_cache_ref):
    out_ref[...] = x_ref[...] * 2
    new_cache_ref[...] = cache_ref[...] + x_ref[...]


@jax.jit
def update(x: jax.Array, cache: jax.Array):
    kernel = jax.named_scope("append")(pl.pallas_call(
        _append,
        out_shape=[jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct(cache.shape, cache.dtype)],
        input_output_aliases={1: 1},
        interpret=True,
    ))
    out, new_cache = kernel(x, cache)
    return out, new_cache


def main():
    x, cache = jnp.ones((8, 128)), jnp.zeros((8, 128))
    out, cache = update(x, cache)
    print(float(out.sum()), float(cache.sum()))


if __name__ == "__main__":
    main()
"""


def test_an_aliased_cache_is_high_and_the_fix_runs_with_it_donated(tmp_path):
    assert step_confidences(PROGRAM, "update") == {"cache": "high"}
    path = fix_and_rerun(tmp_path, PROGRAM)
    assert "donate_argnums=(1,)" in path.read_text() or "donate_argnums=1" in path.read_text()
    cache = jax.numpy.zeros((8, 128))
    load(path)["update"](jax.numpy.ones((8, 128)), cache)
    assert cache.is_deleted()


def test_without_annotations_the_operands_may_be_pytrees_and_the_alias_is_not_read():
    program = PROGRAM.replace("def update(x: jax.Array, cache: jax.Array):", "def update(x, cache):")
    assert step_confidences(program, "update") == {"cache": "medium"}


def test_an_operand_rebound_in_the_body_is_not_known_to_be_one_array():
    program = PROGRAM.replace("    out, new_cache = kernel(x, cache)", "    x = (x, x)[0]\n    out, new_cache = kernel(x, cache)")
    assert step_confidences(program, "update") == {"cache": "medium"}


def test_an_uncalled_wrapper_gets_the_low_note():
    program = PROGRAM.replace("    out, cache = update(x, cache)\n", "    out = cache = x\n")
    notes = [f for f in report_of(program).findings if f.code == "JXM003"]
    assert [(f.parameter_name, f.confidence.value) for f in notes] == [("cache", "low")]


def test_pallas_requires_an_alias_to_keep_shape_and_dtype():
    from jax.experimental import pallas as pl

    def copy_head(x_ref, o_ref):
        o_ref[...] = x_ref[:4]

    call = pl.pallas_call(copy_head, out_shape=jax.ShapeDtypeStruct((4, 128), jax.numpy.float32),
                          input_output_aliases={0: 0}, interpret=True)
    with pytest.raises(ValueError, match="input_output_aliases"):
        call(jax.numpy.zeros((8, 128)))

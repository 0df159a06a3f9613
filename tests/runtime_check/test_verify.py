"""verify() on real CPU compilations: which donated leaves XLA reuses, and why not."""

import functools
import json

import jax
import jax.numpy as jnp
import pytest

from jaxmem.runtime_check import verify
from jaxmem.runtime_check.report import (
    DEBUG_NANS, ELEMENT_COUNT_ONLY, NO_MATCHING_OUTPUT, OUTPUTS_TAKEN, PRUNED_UNUSED, SHARDING_MISMATCH,
)


def scale(x):
    return x * 2


def leaf(report, path):
    return next(item for item in report.leaves if item.path == path)


def test_matching_output_is_aliased_and_saves_its_bytes():
    report = verify(scale, jnp.ones((16, 16)), donate_argnums=0)
    assert report.ok
    assert report.leaves[0].output == "result"
    assert report.with_donation.alias_bytes == 16 * 16 * 4
    assert report.without_donation.alias_bytes == 0
    assert report.predicted_saving == 16 * 16 * 4
    assert report.findings() == []


def test_abstract_inputs_give_the_same_verdict_as_concrete_ones():
    report = verify(scale, jax.ShapeDtypeStruct((16, 16), jnp.float32), donate_argnums=0)
    assert report.ok and report.predicted_saving == 1024


def test_dtype_mismatch_with_same_element_count_is_left_to_xla_and_not_reused():
    # bf16 in, f32 out: jax marks it a buffer donor without warning; XLA cannot reuse 8 bytes for 16.
    report = verify(lambda x: x.astype(jnp.float32), jnp.ones((4,), jnp.bfloat16), donate_argnums=0)
    only = report.leaves[0]
    assert not only.aliased and only.reason_code == ELEMENT_COUNT_ONLY
    assert "bfloat16" in only.reason and "result float32[4]" in only.reason
    assert report.predicted_saving == 0


def test_same_byte_size_reshape_is_reused_through_the_buffer_donor():
    report = verify(lambda x: x.reshape(8, 2), jnp.ones((4, 4)), donate_argnums=0)
    assert report.ok and report.with_donation.alias_bytes == 64


def test_shape_mismatch_names_the_missing_output():
    report = verify(lambda x: x.sum(axis=0), jnp.ones((4, 3)), donate_argnums=0)
    only = report.leaves[0]
    assert only.reason_code == NO_MATCHING_OUTPUT
    assert "shape (4, 3)" in only.reason and "float32" in only.reason


def update(params, batch):
    new = {"dense": {"kernel": params["dense"]["kernel"] - batch.mean(),
                     "bias": params["dense"]["bias"]},
           "count": params["count"] + 1}
    return new, params["stats"].astype(jnp.float32).sum()


def test_pytree_reports_each_leaf_by_path_and_only_the_unusable_ones_fail():
    params = {"dense": {"kernel": jnp.ones((8, 8)), "bias": jnp.ones((8,))},
              "count": jnp.zeros((), jnp.int32), "stats": jnp.ones((5,), jnp.bfloat16)}
    report = verify(update, params, jnp.ones((2, 8)), donate_argnums=0)
    assert [item.path for item in report.leaves] == [
        "params['count']", "params['dense']['bias']", "params['dense']['kernel']", "params['stats']"]
    assert leaf(report, "params['dense']['kernel']").output == "result[0]['dense']['kernel']"
    assert [item.path for item in report.unusable] == ["params['stats']"]
    assert report.predicted_saving == 8 * 8 * 4 + 8 * 4 + 4
    [finding] = report.findings()
    assert finding.code == "JXM201" and finding.parameter_name == "params" and finding.parameter_index == 0
    assert "params['stats']" in finding.message


def test_unused_argument_is_reported_as_pruned():
    report = verify(lambda x, unused: x + 1, jnp.ones(3), jnp.ones(3), donate_argnums=(0, 1))
    assert leaf(report, "unused").reason_code == PRUNED_UNUSED


def test_two_donors_for_one_output_leave_one_unused():
    report = verify(lambda a, b: a + b, jnp.ones(3), jnp.ones(3), donate_argnums=(0, 1))
    assert sorted(item.aliased for item in report.leaves) == [False, True]
    assert report.unusable[0].reason_code == OUTPUTS_TAKEN


def test_memory_kind_mismatch_is_named():
    device = jax.devices()[0]
    jitted = jax.jit(scale, donate_argnums=0, in_shardings=jax.sharding.SingleDeviceSharding(device),
                     out_shardings=jax.sharding.SingleDeviceSharding(device, memory_kind="pinned_host"))
    report = verify(jitted, jnp.ones(3))
    assert report.leaves[0].reason_code == SHARDING_MISMATCH
    assert "pinned_host" in report.leaves[0].reason


@functools.partial(jax.jit, static_argnums=1, donate_argnames="state")
def jitted_step(state, steps, batch):
    return state * steps + batch


def test_already_jitted_function_uses_its_declared_donation_and_static_args():
    report = verify(jitted_step, jnp.ones(4), 3, jnp.ones(4))
    assert report.donate_argnums == (0,) and report.ok
    assert [item.path for item in report.leaves] == ["state"]
    assert report.leaves[0].parameter_index == 0


def test_explicit_donation_overrides_the_declared_one_and_keeps_parameter_positions():
    report = verify(jitted_step, jnp.ones(4), 3, jnp.ones(4), donate_argnums=(0, 2))
    assert [(item.path, item.parameter_index) for item in report.leaves] == [("state", 0), ("batch", 2)]


def test_keyword_arguments_are_donated_by_name():
    report = verify(lambda state, batch: state + batch, jnp.ones(4), batch=jnp.ones(4), donate_argnames="batch")
    assert [item.path for item in report.leaves] == ["batch"] and report.ok


def test_pmap_function_is_verified_with_its_own_options():
    pmapped = jax.pmap(lambda x, y: (x * 2, y.sum()), axis_name="i", donate_argnums=(0, 1))
    report = verify(pmapped, jnp.ones((1, 4)), jnp.ones((1, 3)))
    assert leaf(report, "x").aliased
    assert leaf(report, "y").reason_code == NO_MATCHING_OUTPUT


def test_plain_function_under_an_explicit_pmap_wrapper():
    report = verify(scale, jnp.ones((1, 4)), donate_argnums=0,
                    wrapper=functools.partial(jax.pmap, axis_name="i"))
    assert report.ok and report.predicted_saving == 16


def test_debug_nans_turns_donation_off(no_debug_nans):
    jax.config.update("jax_debug_nans", True)  # noqa: JXM107 - the case under test
    report = verify(scale, jnp.ones(3), donate_argnums=0)
    assert report.leaves[0].reason_code == DEBUG_NANS
    assert any("jax_debug_nans" in note for note in report.notes)


def test_nothing_donated_is_a_usage_error():
    with pytest.raises(ValueError, match="donate_argnums"):
        verify(scale, jnp.ones(3))


def test_report_is_json_serialisable_and_renders_human_sizes():
    report = verify(scale, jnp.ones((512, 512)), donate_argnums=0)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["predicted_saving_bytes"] == 1 << 20 and data["ok"] is True
    text = report.render_text()
    assert "1.0 MiB" in text and "XLA temporaries" in text and "yes -> result" in text


def swap(a, b):
    return b + 1, a + 1


def test_temporaries_growth_is_explained_by_the_copies_donation_adds():
    report = verify(swap, jnp.ones((64, 64)), jnp.ones((64, 64)), donate_argnums=(0, 1))
    gap = report.saving_gap
    assert gap["temp_bytes_with"] > gap["temp_bytes_without"]
    copied = {copy["of"] for copy in gap["extra_copies"]}
    assert {"parameter `a`", "parameter `b`"} <= copied
    assert gap["extra_copy_bytes"] >= 2 * 64 * 64 * 4
    text = report.render_text()
    assert "XLA's temporaries grow from 0 B to" in text and "parameter `a` f32[64,64] (16.0 KiB)" in text
    assert json.loads(json.dumps(report.to_dict()))["saving_gap"]["reused_bytes"] == 2 * 64 * 64 * 4


def test_no_gap_section_when_temporaries_do_not_grow():
    assert verify(scale, jnp.ones((16, 16)), donate_argnums=0).saving_gap is None

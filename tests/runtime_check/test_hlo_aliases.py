"""Parsing the donation facts out of compiled HLO module headers."""

import pytest

from jaxmem.runtime_check.hlo_aliases import Alias, parse_module_donations

TUPLE_RESULT = (
    "HloModule jit_f, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias), "
    "{2}: (2, {}, may-alias) }, buffer_donor={ (1, {}) }, entry_computation_layout="
    "{(f32[4]{0}, bf16[4]{0}, f32[4,4]{1,0})->(f32[4]{0}, f32[4]{0}, f32[8,2]{1,0})}\n\nENTRY ..."
)


def test_aliases_and_donors_of_a_tuple_result():
    donations = parse_module_donations(TUPLE_RESULT)
    assert donations.module_name == "jit_f"
    assert donations.aliases == (Alias((0,), 0, (), "may-alias"), Alias((2,), 2, (), "may-alias"))
    assert donations.donors == ((1, ()),)
    assert donations.aliased_parameter(2).output_index == (2,)
    assert donations.aliased_parameter(1) is None
    assert donations.is_donor(1) and not donations.is_donor(0)


def test_single_array_result_has_an_empty_output_index():
    text = ("HloModule jit_g, input_output_alias={ {}: (0, {}, may-alias) }, "
            "entry_computation_layout={(f32[3]{0})->f32[3]{0}}")
    assert parse_module_donations(text).aliases == (Alias((), 0, (), "may-alias"),)


def test_tuple_args_alias_names_the_tuple_element():
    text = "HloModule m, input_output_alias={ {1}: (0, {5}, must-alias) }"
    alias = parse_module_donations(text).aliases[0]
    assert (alias.parameter, alias.parameter_index, alias.kind) == (0, (5,), "must-alias")


def test_module_without_donation_has_no_aliases():
    donations = parse_module_donations("HloModule jit_h, entry_computation_layout={(f32[3]{0})->f32[3]{0}}")
    assert donations.aliases == () and donations.donors == ()


def test_text_that_is_not_hlo_is_rejected():
    with pytest.raises(ValueError, match="HloModule"):
        parse_module_donations("module @jit_f {}")


def test_copies_and_entry_parameters_are_read_from_module_text():
    from jaxmem.runtime_check.hlo_copies import entry_parameter_names, extra_copies, parse_copies

    donated = """HloModule jit_swap, input_output_alias={ {0}: (1, {}, may-alias) }
ENTRY %main.1 (a.1: f32[4,4], /*index=1*/b.1: bf16[8]) -> (f32[4,4], bf16[8]) {
  %copy = f32[4,4]{1,0} copy(%a.1)
  ROOT %copy.1 = bf16[8]{0} copy(%fusion.2)
}"""
    plain = """HloModule jit_swap
ENTRY %main.1 (a.1: f32[4,4], b.1: bf16[8]) -> (f32[4,4], bf16[8]) {
  ROOT %copy.1 = bf16[8]{0} copy(%fusion.7)
}"""
    assert entry_parameter_names(donated) == ["a.1", "b.1"]
    assert [(c.operand, c.type_text, c.nbytes) for c in parse_copies(donated)] == [
        ("a.1", "f32[4,4]", 64), ("fusion.2", "bf16[8]", 16)]
    assert [c.operand for c in extra_copies(donated, plain)] == ["a.1"]

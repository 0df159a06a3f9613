"""jaxmem.yaml parsing (clear errors) and `jaxmem verify` on its entries."""

import json

import pytest

from jaxmem.runtime_check.config import ConfigError, ShapeSpec, parse_config, parse_shape


@pytest.mark.parametrize("text, expected", [
    ("f32[1024,1024]", ShapeSpec("float32", (1024, 1024))),
    ("bf16[]", ShapeSpec("bfloat16", ())),
    ("int32[ 8, 2 ]", ShapeSpec("int32", (8, 2))),
    ("bool[3]", ShapeSpec("bool", (3,))),
])
def test_shapes(text, expected):
    assert parse_shape(text) == expected


@pytest.mark.parametrize("text, message", [
    ("f32(3)", "write dtype[dims]"),
    ("q7[3]", "unknown dtype 'q7'"),
])
def test_bad_shapes(text, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_shape(text)


def test_entries_parse_shapes_inside_pytrees():
    [entry] = parse_config("""
verify:
  - function: pkg.mod:step
    args: ["f32[4,4]", {w: "bf16[2]"}, 3]
    donate_argnums: 0
    static_argnums: [2]
""", "jaxmem.yaml")
    assert entry.args == (ShapeSpec("float32", (4, 4)), {"w": ShapeSpec("bfloat16", (2,))}, 3)
    assert entry.donate_argnums == (0,) and entry.static_argnums == (2,)


@pytest.mark.parametrize("text, message", [
    ("verify: [", "jaxmem.yaml: invalid YAML at line"),
    ("functions: []", "jaxmem.yaml: expected a top-level 'verify:' list"),
    ("verify: []", "'verify:' must be a non-empty list"),
    ("verify: [{args: []}]", r"verify\[0\]: missing 'function: module:name'"),
    ("verify: [{function: step, args: []}]", r"verify\[0\].function: expected 'module:name'"),
    ("verify: [{function: m:f}]", r"verify\[0\] \(m:f\): give exactly one of 'example_args"),
    ("verify: [{function: m:f, args: ['f32[3]'], example_args: m:g}]", "give exactly one"),
    ("verify: [{function: m:f, args: ['float[3]']}]", r"verify\[0\] \(m:f\).args\[0\]: 'float\[3\]'"),
    ("verify: [{function: m:f, args: [], donate_argnums: x}]", "donate_argnums: expected an integer"),
    ("verify: [{function: m:f, args: [], donate: [0]}]", "unknown key.s. donate"),
])
def test_bad_entries_name_the_file_entry_and_fix(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(text, "jaxmem.yaml")


def test_verify_command_runs_config_entries(write_file, run_commands):
    write_file("model.py", """
        import jax
        import jax.numpy as jnp

        def update(params, grads):
            return {"w": params["w"] - grads["w"], "n": params["n"].astype(jnp.float32)}

        def example_args():
            params = {"w": jnp.ones((16, 16)), "n": jnp.ones((4,), jnp.bfloat16)}
            return params, {"w": jnp.ones((16, 16)), "n": jnp.ones((4,), jnp.bfloat16)}

        @jax.jit
        def scale(x, factor):
            return x * factor
    """)
    write_file("jaxmem.yaml", """
        verify:
          - function: model:update
            example_args: model:example_args
            donate_argnums: [0]
          - function: model:scale
            args: ["f32[128,128]", 2.0]
            static_argnums: [1]
            donate_argnums: [0]
          - function: model:missing
            args: ["f32[2]"]
            donate_argnums: 0
    """)
    done = run_commands("verify", "--format", "json")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    update, scale = data["reports"]
    assert [leaf["path"] for leaf in update["leaves"] if not leaf["aliased"]] == ["params['n']"]
    assert scale["ok"] and scale["predicted_saving_bytes"] == 128 * 128 * 4
    [problem] = data["problems"]
    assert problem["function"] == "model:missing" and "no attribute 'missing'" in problem["message"]
    text = run_commands("verify").stdout
    assert "64.0 KiB" in text and "JXM201 params['n']" in text and "FAILED" in text


def test_verify_without_targets_explains_what_to_do(run_commands):
    done = run_commands("verify")
    assert done.returncode == 2 and "jaxmem.yaml" in done.stderr and "jaxmem record" in done.stderr


def test_broken_config_exits_2_naming_the_file(write_file, run_commands):
    write_file("jaxmem.yaml", "verify: [{function: m:f}]\n")
    done = run_commands("verify")
    assert done.returncode == 2 and "jaxmem.yaml: verify[0] (m:f)" in done.stderr


def test_string_static_arguments_stay_strings():
    [entry] = parse_config("""
verify:
  - function: pkg.mod:step
    args: ["f32[4,4]", "relu"]
    kwargs: {mode: "train", x: "f32[2]"}
    static_argnums: [1]
    static_argnames: [mode]
""", "jaxmem.yaml")
    assert entry.args == (ShapeSpec("float32", (4, 4)), "relu")
    assert entry.kwargs == {"mode": "train", "x": ShapeSpec("float32", (2,))}

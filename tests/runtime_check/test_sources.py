"""What the static analysis proposes to record, verify and confirm."""


def test_record_and_verify_proposals_come_from_the_whole_project(tmp_path):
    """A jitted step defined in one file and called in another: proposed (high) only with the project."""
    from jaxmem.runtime_check.sources import proposed_donations

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "steps.py").write_text("import jax\n\n\n@jax.jit\ndef update(state, grad):\n"
                                       "    return state - 0.1 * grad\n")
    (tmp_path / "train.py").write_text(
        "import jax.numpy as jnp\n\nfrom steps import update\n\n\ndef train(steps):\n"
        "    state = jnp.ones((4,))\n    for _ in range(steps):\n"
        "        state = update(state, jnp.ones((4,)))\n    return state\n")
    proposals, note = proposed_donations(str(tmp_path / "steps.py"))
    assert note is None
    (proposal,) = proposals[4]
    assert (proposal.parameter_name, proposal.confidence) == ("state", "high")

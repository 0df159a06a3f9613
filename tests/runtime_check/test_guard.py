"""assert_donated and the donation_guard pytest fixture."""

import subprocess
import sys
import textwrap

import jax.numpy as jnp
import pytest

from jaxmem.runtime_check import DonationNotUsableError, assert_donated


def step(state, batch):
    return {"w": state["w"] - batch.mean(), "count": state["count"] + 1}


def test_passes_and_returns_the_report_when_every_leaf_is_reused():
    report = assert_donated(step, {"w": jnp.ones((4, 4)), "count": jnp.zeros((), jnp.int32)}, jnp.ones(3),
                            donate_argnums=0)
    assert report.ok


def test_a_dtype_change_fails_with_the_named_leaf():
    state = {"w": jnp.ones((4, 4), jnp.bfloat16), "count": jnp.zeros((), jnp.int32)}
    with pytest.raises(DonationNotUsableError) as caught:
        assert_donated(lambda s, b: {"w": s["w"].astype(jnp.float32), "count": s["count"] + 1},
                       state, jnp.ones(3), donate_argnums=0)
    assert "s['w']" in str(caught.value) and "bfloat16[4,4]" in str(caught.value)
    assert [leaf.path for leaf in caught.value.leaves] == ["s['w']"]


def test_allow_unused_accepts_named_leaves():
    state = {"w": jnp.ones((4, 4)), "scratch": jnp.ones(7)}
    report = assert_donated(lambda s: s["w"] * 2, state, donate_argnums=0, allow_unused=["s['scratch']"])
    assert [leaf.path for leaf in report.unusable] == ["s['scratch']"]


def test_pytest_fixture_fails_the_test_with_the_leaves(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent("""
        import jax.numpy as jnp

        def test_reused(donation_guard):
            donation_guard(lambda x: x + 1, jnp.ones(3), donate_argnums=0)

        def test_broken(donation_guard):
            donation_guard(lambda x: x.sum(), jnp.ones(3), donate_argnums=0)
    """))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:jaxmem",
         "-p", "jaxmem.runtime_check.pytest_plugin", "test_user.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert "x (float32[3], 12 B): no output has shape (3,)" in done.stdout
    failures = done.stdout.split("short test summary")[0]
    assert failures.count("no output has shape (3,)") == 1  # once, not once more as a chained error


def test_allow_unused_naming_no_donated_leaf_is_an_error():
    with pytest.raises(ValueError, match=r"allow_unused names \"s\['typo'\]\", which is not a donated leaf"):
        assert_donated(lambda s: s["w"] * 2, {"w": jnp.ones(3)}, donate_argnums=0, allow_unused=["s['typo']"])

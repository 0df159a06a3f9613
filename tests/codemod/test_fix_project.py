"""The project facts jaxmem-fix reads: jax's lower bound, the donation style."""

from __future__ import annotations

import pytest

from jaxmem.codemod.project import (
    donation_style_of,
    project_jax_lower_bound,
    requirement_lower_bound,
    spec_lower_bound,
)


@pytest.mark.parametrize(
    ("requirement", "bound"),
    [
        ("jax>=0.4.30", (0, 4, 30)),
        ("jax[cuda12] >= 0.8.1, <0.11", (0, 8, 1)),
        ("JAX==0.9.0", (0, 9, 0)),
        ("jax~=0.8", (0, 8)),
        ("jax>=0.4.30; python_version >= '3.10'", (0, 4, 30)),
        ("jax", None),
        ("jaxlib>=0.9.0", None),
        ("flax>=0.10", None),
    ],
)
def test_requirement_lower_bound(requirement, bound):
    assert requirement_lower_bound(requirement) == bound


def test_poetry_caret_and_bare_versions():
    assert spec_lower_bound("^0.8.1") == (0, 8, 1)
    assert spec_lower_bound("0.9.0") == (0, 9, 0)


def test_lowest_bound_over_pyproject_and_requirements(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["jax>=0.9.0"]\n'
        '[project.optional-dependencies]\ntpu = ["jax[tpu]>=0.8.2"]\n'
    )
    assert project_jax_lower_bound(tmp_path) == (0, 8, 2)
    (tmp_path / "requirements-dev.txt").write_text("# pinned for CI\njax==0.4.35\nnumpy\n")
    assert project_jax_lower_bound(tmp_path) == (0, 4, 35)


def test_poetry_dependencies(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry.dependencies]\npython = "^3.10"\njax = {version = "^0.8.1"}\n'
    )
    assert project_jax_lower_bound(tmp_path) == (0, 8, 1)


def test_no_requirement_or_broken_pyproject(tmp_path):
    assert project_jax_lower_bound(tmp_path) is None
    (tmp_path / "pyproject.toml").write_text("[project\n")
    assert project_jax_lower_bound(tmp_path) is None


def test_donation_style_of_counts_keywords():
    assert donation_style_of(["jax.jit(f, donate_argnames='x')", "jit(g, donate_argnames=('a',))"]) == "argnames"
    assert donation_style_of(["jax.jit(f, donate_argnums=0)"]) == "argnums"
    assert donation_style_of(["x = 1"]) is None

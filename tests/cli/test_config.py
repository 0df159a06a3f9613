"""``[tool.jaxmem]``: where it is found, what it may hold, how it fails."""

from __future__ import annotations

import pytest

from jaxmem.config import ConfigError, find_config, load_config, load_settings
from jaxmem.findings import Confidence
from jaxmem.settings import Settings

from .conftest import write

FULL = """\
[project]
name = "demo"

[tool.jaxmem]
select = ["JXM0", "JXM101"]
ignore = ["JXM002"]
exclude = ["third_party", "tests/fixtures/*"]
min-confidence = "high"
extra-wrappers = ["mylib.jit_utils.donating_jit"]
donation-style = "argnames"
jax-version = "0.4.30"
target-version = "3.12"
"""


def test_no_pyproject_gives_the_defaults(tmp_path):
    config = load_config([tmp_path])
    assert config.settings == Settings()
    assert config.path is None


def test_every_key_is_read(tmp_path):
    write(tmp_path, "pyproject.toml", FULL)
    settings = load_settings([tmp_path])
    assert settings == Settings(
        select=("JXM0", "JXM101"),
        ignore=("JXM002",),
        exclude=("third_party", "tests/fixtures/*"),
        min_confidence=Confidence.HIGH,
        extra_wrappers=("mylib.jit_utils.donating_jit",),
        donation_style="argnames",
        jax_version="0.4.30",
        target_version="3.12",
    )


def test_packages_with_a_library_name_are_the_projects_own(tmp_path):
    write(tmp_path, "pyproject.toml", "")
    write(tmp_path, "optax/__init__.py", "")
    write(tmp_path, "src/flax/__init__.py", "")
    write(tmp_path, "mylib/__init__.py", "")  # not a library name: the project's anyway
    write(tmp_path, "jax/notes.txt", "")  # not a package
    assert load_settings([tmp_path]).own_packages == ("flax", "optax")
    assert load_settings([tmp_path / "optax"]).own_packages == ("flax", "optax")  # from the project root


def test_target_version_must_be_one_libcst_parses(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.jaxmem]\ntarget-version = \"2.7\"\n")
    with pytest.raises(ConfigError, match="target-version.*not a Python version libcst parses"):
        load_settings([tmp_path])


def test_search_goes_upward_from_the_first_paths_folder(tmp_path):
    write(tmp_path, "pyproject.toml", FULL)
    source = write(tmp_path, "src/pkg/mod.py", "x = 1\n")
    config = load_config([source])
    assert config.path == tmp_path / "pyproject.toml"
    assert config.root == tmp_path.resolve()
    assert config.settings.min_confidence is Confidence.HIGH


def test_a_pyproject_without_the_table_is_passed_over(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nignore = ["JXM002"]\n')
    write(tmp_path, "sub/pyproject.toml", '[project]\nname = "sub"\n')
    assert find_config(tmp_path / "sub") == tmp_path / "pyproject.toml"
    assert load_settings([tmp_path / "sub"]).ignore == ("JXM002",)


def test_the_nearest_table_wins(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nignore = ["JXM002"]\n')
    write(tmp_path, "sub/pyproject.toml", '[tool.jaxmem]\nignore = ["JXM104"]\n')
    assert load_settings([tmp_path / "sub"]).ignore == ("JXM104",)


def test_search_starts_in_the_current_folder_without_paths(tmp_path, monkeypatch):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nmin-confidence = "low"\n')
    monkeypatch.chdir(tmp_path)
    assert load_settings().min_confidence is Confidence.LOW


def test_explicit_config_file_overrides_the_search(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nmin-confidence = "low"\n')
    dedicated = write(tmp_path, "ci/jaxmem.toml", 'min-confidence = "high"\n')
    config = load_config([tmp_path], dedicated)
    assert config.settings.min_confidence is Confidence.HIGH
    assert config.path == dedicated


def test_explicit_config_file_that_does_not_exist(tmp_path):
    with pytest.raises(ConfigError, match="nowhere.toml: config file not found"):
        load_config([tmp_path], tmp_path / "nowhere.toml")


def test_codes_are_normalised_to_upper_case(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nselect = ["jxm1"]\n')
    assert load_settings([tmp_path]).select == ("JXM1",)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('colour = "red"', r"unknown key 'colour' in \[tool.jaxmem\]; allowed keys: select, "),
        ('select = "JXM001"', r"select must be a list of strings"),
        ('ignore = [1]', r"ignore must be a list of strings"),
        ('select = ["E501"]', r"select: 'E501' is not a jaxmem rule code"),
        ('ignore = ["JXM1234"]', r"ignore: 'JXM1234' is not a jaxmem rule code"),
        ('min-confidence = "certain"', r"min-confidence: 'certain' is not a confidence; "
                                       r"use one of low, medium, high"),
        ('min-confidence = 2', r"min-confidence: 2 is not a confidence"),
        ('donation-style = "both"', r"donation-style: 'both' is not allowed; "
                                    r"use one of auto, argnums, argnames"),
        ('extra-wrappers = ["my lib.jit"]', r"extra-wrappers: 'my lib.jit' is not a dotted name"),
        ('jax-version = 0.4', r"jax-version: 0.4 is not a version"),
        ('exclude = "build"', r"exclude must be a list of strings"),
        ('extend-select = ["E1"]', r"extend-select: 'E1' is not a jaxmem rule code"),
        ('per-file-ignores = ["tests/*"]', r"per-file-ignores must be a table of glob = \[codes\]"),
        ('per-file-ignores = {"tests/*" = ["F401"]}', r"per-file-ignores.'tests/\*': 'F401' is not a jaxmem"),
    ],
)
def test_bad_values_name_the_file_the_key_and_what_is_allowed(tmp_path, body, expected):
    write(tmp_path, "pyproject.toml", f"[tool.jaxmem]\n{body}\n")
    with pytest.raises(ConfigError, match=expected) as raised:
        load_settings([tmp_path])
    assert str(raised.value).startswith(str(tmp_path / "pyproject.toml"))


def test_invalid_toml_names_the_file(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.jaxmem\nselect = \n")
    with pytest.raises(ConfigError, match=r"pyproject.toml: invalid TOML"):
        load_settings([tmp_path])


def test_table_must_be_a_table(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool]\njaxmem = "yes"\n')
    with pytest.raises(ConfigError, match=r"\[tool.jaxmem\] must be a table"):
        load_settings([tmp_path])


def test_fingerprint_follows_every_analysis_setting():
    base = Settings()
    variants = [
        Settings(select=("JXM1",)),
        Settings(ignore=("JXM002",)),
        Settings(min_confidence=Confidence.LOW),
        Settings(extra_wrappers=("a.b",)),
        Settings(donation_style="argnames"),
        Settings(jax_version="0.4.30"),
    ]
    fingerprints = {base.fingerprint(), *(v.fingerprint() for v in variants)}
    assert len(fingerprints) == len(variants) + 1
    assert Settings().fingerprint() == base.fingerprint()


def test_extend_keys_add_to_the_value_or_its_default(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem]\nselect = ["JXM0"]\nextend-select = ["JXM101"]\n'
          'extend-ignore = ["JXM002"]\nextend-exclude = ["*.ipynb"]\nextend-include = ["*.pyw"]\n')
    settings = load_settings([tmp_path])
    assert settings.select == ("JXM0", "JXM101")
    assert settings.ignore == ("JXM002",)
    assert settings.exclude == ("*.ipynb",)
    assert settings.include == (*Settings().include, "*.pyw")


def test_per_file_ignores_are_read_in_order(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.jaxmem.per-file-ignores]\n"tests/*" = ["jxm001"]\n'
          '"__init__.py" = ["JXM1", "JXM002"]\n')
    assert load_settings([tmp_path]).per_file_ignores == (
        ("tests/*", ("JXM001",)), ("__init__.py", ("JXM1", "JXM002")))


def test_per_file_ignores_silence_codes_in_matching_files_only(tmp_path):
    from .conftest import MISSED_DONATION, run_tool

    for name in ("tests/test_train.py", "src/train.py", "nested/tests/deep/train.py"):
        write(tmp_path, name, MISSED_DONATION)
    write(tmp_path, "pyproject.toml", '[tool.jaxmem.per-file-ignores]\n"tests" = ["JXM0"]\n"src/*" = ["JXM101"]\n')
    result = run_tool("jaxmem", "check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    import json

    assert [f["path"] for f in json.loads(result.stdout)["findings"]] == ["src/train.py"]


def test_per_file_ignores_match_folders_inside_the_project_only(tmp_path):
    from jaxmem.discovery import PerFileIgnores

    root = tmp_path / "tmp" / "project"
    ignores = PerFileIgnores((("tmp", ("JXM001",)), ("tests", ("JXM1",)), ("*_test.py", ("JXM002",))), root)
    assert ignores.codes(str(root / "src" / "train.py")) == ()
    assert ignores.codes(str(root / "tests" / "unit" / "train.py")) == ("JXM1",)
    assert ignores.codes(str(root / "src" / "loop_test.py")) == ("JXM002",)

"""The analysis parser: libcst's trees, built without per-node validation."""

from pathlib import Path

import libcst as cst
import pytest
from libcst._nodes.base import CSTNode

from jaxmem.lint.syntax import parsing
from jaxmem.lint.syntax.walk import children, descendants

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("examples/**/*.py"), *ROOT.glob("lint/**/*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_tree_as_libcst(path):
    text = path.read_text(encoding="utf-8")
    ours = parsing.parse_module(text)
    assert ours.deep_equals(cst.parse_module(text))
    assert ours.code == text


def test_validation_is_back_after_the_parse():
    parsing.parse_module("x = 1\n")
    assert CSTNode.__post_init__ is parsing._POST_INIT
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")  # an invalid node is still refused outside the parse


def test_validation_is_skipped_only_when_that_is_all_post_init_does():
    assert parsing._SKIPPABLE  # the pinned libcst: __post_init__ only validates

    def post_init_with_another_job(self):
        self._validate()
        self.extra = 1

    assert not parsing._only_validates(post_init_with_another_job)


def test_children_leave_out_only_formatting():
    module = cst.parse_module("f( a , b=[1, 2] )  # c\nif x:\n    y = (z)\n")
    kinds = {type(node) for node in descendants(module)}
    assert {cst.Call, cst.Arg, cst.Name, cst.List, cst.Integer, cst.If, cst.Assign} <= kinds
    assert not kinds & {cst.Comma, cst.LeftParen, cst.SimpleWhitespace, cst.Comment, cst.TrailingWhitespace}
    call = module.body[0].body[0].value
    assert [type(c) for c in children(call)] == [cst.Name, cst.Arg, cst.Arg]

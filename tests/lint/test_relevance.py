"""The textual pre-filter skips what cannot matter, and never what can."""

import pathlib
import re
import textwrap

import pytest

from jaxmem.lint.engine import analyze_source, facts_for_file, report
from jaxmem.lint.syntax.relevance import might_involve_jit, project_hints, relevant_text
from jaxmem.findings import Confidence
from jaxmem.settings import Settings

S = Settings()


def test_jit_in_a_docstring_or_comment_does_not_count():
    text = '"""Works under jax.jit."""\n# we jit elsewhere\nx = 1\n'
    assert not might_involve_jit(text, S)
    assert might_involve_jit("from jax import jit\n", S)


def test_a_file_calling_a_function_jitted_elsewhere_matters():
    lib = "import jax\n\n@jax.jit\ndef train_step(s, b):\n    return s\n"
    hints = project_hints({"lib.py": lib})
    assert "train_step" in hints
    assert might_involve_jit("from lib import train_step\ntrain_step(1, 2)\n", S, hints)
    assert might_involve_jit("import lib\nlib.train_step(1, 2)\n", S, hints)
    # the same name reached through a library is not the project's function
    assert not might_involve_jit("from numpy import train_step\n", S, hints)


def _blanked(text, hints=frozenset()):
    reduced = relevant_text(textwrap.dedent(text), S, hints).kept
    return [line for line in reduced.splitlines() if line.strip()]


def test_unrelated_functions_are_blanked_and_lines_kept():
    text = textwrap.dedent(
        """
        import jax

        def unrelated(x):
            return x + 1

        @jax.jit
        def step(s):
            return s

        def helper(s):
            return step(s)

        def uses_helper(s):
            return helper(s)
        """
    )
    reduced = relevant_text(text, S).kept
    assert reduced.count("\n") == text.count("\n")
    assert "unrelated" not in reduced
    assert "def helper" in reduced and "def uses_helper" in reduced  # a fixpoint over callers


def test_multi_line_decorator_stays_with_its_def():
    kept = _blanked(
        """
        import functools, jax

        def other():
            pass

        @functools.partial(
            jax.jit, donate_argnums=0
        )
        def step(s):
            return s
        """
    )
    assert kept == [
        "import functools, jax", "@functools.partial(", "    jax.jit, donate_argnums=0", ")", "def step(s):",
        "    return s",
    ]


def test_a_def_inside_a_docstring_is_not_a_boundary():
    text = 'import jax\n"""\nclass Example:\n"""\n@jax.jit\ndef f(x):\n    return x\n'
    reduced = relevant_text(text, S).kept
    assert reduced == text


def test_module_level_donation_sees_functions_that_read_the_global():
    source = """
    import jax

    def report():
        print(state)

    def unrelated():
        return 1

    step = jax.jit(lambda s: s + 1, donate_argnums=0)
    state = jax.numpy.ones(3)
    new_state = step(state)
    """
    findings = analyze_source(textwrap.dedent(source), "script.py").findings
    assert [f.code for f in findings if f.code.startswith("JXM1")] == ["JXM104"]
    rebound = analyze_source(textwrap.dedent(source).replace("new_state =", "state ="), "script.py").findings
    assert [f.code for f in rebound if f.code.startswith("JXM1")] == []


def test_syntax_error_in_a_blanked_function_is_still_reported():
    source = "import jax\n\ndef broken(x:\n    return x\n\n@jax.jit\ndef f(x):\n    return x\n"
    facts = facts_for_file("m.py", source, S)
    (finding,) = report([facts], S)[0].findings
    assert finding.code == "JXM900" and finding.span.line == 3


def test_a_function_jitted_inside_another_function_keeps_its_signature():
    source = """
    import jax
    import jax.numpy as jnp


    def train_step(state, batch):
        return state + batch


    def main():
        jit_train_step = jax.jit(train_step, donate_argnums=0)
        state = jnp.ones(3)
        new = jit_train_step(state, state)
        print(state)
    """
    findings = analyze_source(textwrap.dedent(source), "script.py").findings
    assert sorted((f.code, f.span.line) for f in findings) == [("JXM101", 14), ("JXM102", 13)]


def test_syntax_newer_than_the_host_python_is_not_a_parse_error():
    # PEP 695 and PEP 701 (Python 3.12): libcst reads them under any host Python.
    source = 'import jax\n\ntype Params = dict\n\nlabel = f"{"a" + f"{1}"}"\n\ndef unrelated():\n    return 1\n\n@jax.jit\ndef f(x):\n    return x\n'
    facts = facts_for_file("m.py", source, S)
    assert [f.code for f in report([facts], S)[0].findings if f.code == "JXM900"] == []
    skipped = facts_for_file("n.py", "type Params = dict\n", S)
    assert skipped.parse_error is None


def test_old_mac_line_endings_are_analysed_like_any_other():
    source = textwrap.dedent(
        """
        import jax
        import jax.numpy as jnp
        # a comment, then code on the following lines

        def unrelated():
            return 1

        @jax.jit
        def step(s):
            return s * 2

        def main():
            step_d = jax.jit(step, donate_argnums=0)
            x = jnp.ones(3)
            y = step_d(x)
            print(x)
        """
    )
    expected = [(f.code, f.span.line) for f in analyze_source(source, "m.py").findings]
    assert ("JXM101", 17) in expected
    for ending in ("\r", "\r\n"):
        found = [(f.code, f.span.line) for f in analyze_source(source.replace("\n", ending), "m.py").findings]
        assert found == expected, repr(ending)


def test_identifiers_equal_under_nfkc_are_one_name():
    # Python reads "ﬁeld" (with the U+FB01 ligature) as "field".
    source = textwrap.dedent(
        """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(s):
            return s * 2

        def main():
            field = jnp.ones(3)
            new = step(field)
            print(ﬁeld)
            return new
        """
    )
    findings = analyze_source(source, "m.py", Settings(min_confidence=Confidence.LOW)).findings
    assert [f.code for f in findings if f.code in ("JXM001", "JXM002")] == []


def test_hints_survive_split_decorators_and_backslash_imports():
    kern = "import functools, jax\n\n@functools.partial(\n    jax.jit,\n    static_argnames=['s'],\n)\ndef attn(q, s=1.0):\n    return q * s\n"
    hints = project_hints({"pkg/kern.py": kern})
    assert "attn" in hints
    user = "from pkg.kern import \\\n    attn\n\ndef run(q):\n    return attn(q)\n"
    assert might_involve_jit(user, S, hints)


def test_a_file_that_only_turns_on_debug_nans_is_not_skipped():
    assert might_involve_jit('import jax\njax.config.update("jax_debug_nans", True)\n', S)


def test_a_non_ascii_jitted_name_is_not_blanked_away():
    # ``étape`` was read as the word ``tape``, so main() looked unrelated and was blanked.
    source = textwrap.dedent(
        """
        import jax
        import jax.numpy as jnp

        def unrelated():
            return 1

        def update(s, b):
            return s + b

        étape = jax.jit(update)

        def main():
            s = jnp.zeros(3)
            for b in range(3):
                s = étape(s, b)
            return s
        """
    )
    found = [(f.code, f.span.line) for f in analyze_source(source, "m.py").findings]
    ascii_found = [(f.code, f.span.line) for f in analyze_source(source.replace("étape", "etape"), "m.py").findings]
    assert ("JXM001", 11) in found
    assert found == ascii_found


def test_a_function_another_file_calls_is_kept_with_what_it_uses_but_not_its_callers():
    util = textwrap.dedent(
        """
        import numpy as np

        def _scale():
            return 2

        def load_data(n):
            return np.ones(n) * _scale()

        def report():
            return load_data(3)

        def unrelated():
            return 1
        """
    )
    train = "import jax\nfrom pkg import util\n\nstep = jax.jit(lambda s: s)\ns = step(util.load_data(3))\n"
    hints = project_hints({"pkg/util.py": util, "pkg/train.py": train})
    assert might_involve_jit(util, S, hints)
    kept = relevant_text(util, S, hints).kept
    assert "def load_data" in kept and "def _scale" in kept
    assert "def report" not in kept and "def unrelated" not in kept
    # Only what an analysed file calls counts: a file that merely names it adds nothing.
    named = "import jax\nfrom pkg import util\n\nstep = jax.jit(lambda s: s)\nloader = util.load_data\n"
    assert not might_involve_jit(util, S, project_hints({"pkg/util.py": util, "pkg/train.py": named}))
    # Nor does a file that is skipped itself (no jit word, calls nothing jitted).
    plain = "from pkg import util\n\nutil.load_data(3)\n"
    assert not might_involve_jit(util, S, project_hints({"pkg/util.py": util, "pkg/plain.py": plain}))


def test_an_import_list_ends_at_its_line_or_its_closing_parenthesis():
    user = "from absl import flags, app\n\nfrom pkg.kern import (attn,  # the kernel\n    other)\nattn(1)\n"
    kern = "import jax\n\n@jax.jit\ndef attn(q):\n    return q\n"
    assert might_involve_jit(user, S, project_hints({"pkg/kern.py": kern}))


def test_a_file_calling_a_factory_of_jits_is_not_skipped():
    # every call of ``make`` makes its one jit node again: its callers decide the donation too
    steps = ("import jax\n\ndef make():\n    def step(s, x):\n        return s + x\n    return jax.jit(step)\n\n"
             "def nested():\n    @jax.jit\n    def inner(s):\n        return s\n    return inner\n\n"
             "def uses_jit(x):\n    y = jax.jit(abs)(x)\n    print(y)\n")
    hints = project_hints({"steps.py": steps})
    assert {"make", "nested"} <= hints and "uses_jit" not in hints
    assert might_involve_jit("import steps\n\ng = steps.make()\n", S, hints)


def test_names_and_their_mentions():
    from jaxmem.lint.syntax.relevance import name_mentions, private_names

    text = ("class T:\n    def __init__(self):\n        self.step: object = jax.jit(f)  # self.step(x)\n"
            "        self.other = self.step\n\n    def run(self, s):\n        return self.step(s) == self.step\n\n"
            "def g(x): ...\ng = jax.jit(g)\nlog('g', \"g(x)\")\nfns = [g]\nprint(g(1), obj.g)\n")
    assert {".step", ".other", ".jit", ".g"} <= private_names(text)
    # 4 mentions in code (the comment's aside, ``==`` a comparison), 1 of them binding (annotated)
    assert name_mentions(text, {".step"}) == ((".step", 4, 1),)
    # g: def, wrapped, list, call; not ``g = ...``, the strings, ``obj.g`` or the keyword
    assert name_mentions(text + "h(g=1)\n", {"g"}) == (("g", 4, 1),)
    # a getattr with a computed name may be any attribute; with a literal, that one
    assert name_mentions("getattr(self, f)(x)\n", {".step"}) == ((".step", 1, 0),)
    assert name_mentions("getattr(self, 'step')(x)\ngetattr(self, 'other')\n", {".step"}) == ((".step", 1, 0),)


@pytest.mark.parametrize("text, mentions", [
    ('f = jax.jit(g)\nprint(f"loss {x}", rb"f", F\'{y!r:>4}\')\nf(1)\n', 1),  # a prefix names nothing
    ('f = jax.jit(g)\nprint(f"{f}")\nf(1)\n', 2),  # the code between braces is code
    ('f = jax.jit(g)\nprint(f"{f=}", f"{ f = !r}")\nf(1)\n', 3),  # ``{f=}`` reads f
    ('f = jax.jit(g)\nprint(f"f {{f}} f(x)")\nf(1)\n', 1),  # the text around the fields is text
    ('f = jax.jit(g)\nprint(f"{d[\'f\']} f")\nf(1)\n', 1),  # a string in a field is text
    ('f = jax.jit(g)\nprint(f"{d[f\'{f}\']} f")\nf(1)\n', 4),  # a prefixed one may be code: all kept
    ('f = jax.jit(g)\nprint(f"{d[\'}\']} {f}")\nf(1)\n', 2),  # a brace in a field's string is text
    ('f = jax.jit(g)\nprint(f"{{f}")\nf(1)\n', 2),  # braces that do not balance: all of it kept
    ("f = jax.jit(g)\nx = 'a f' + f + 'b'\nf(1)\n", 2),  # two literals, not ``f' + f + '``
])
def test_string_prefixes_and_fstring_text_are_not_mentions(text, mentions):
    # A jitted ``f`` in a file of f-strings was "used other than called" (flax's pytree guide).
    from jaxmem.lint.syntax.relevance import name_mentions

    assert name_mentions(text, {"f"}) == (("f", mentions, 0),)


# name_mentions counts every name in one pass; each name's own patterns
# (mentions_by_pattern) are the definition it must agree with.
_MENTION_SOURCES = [
    "step: {step: 1} = 2\nstep = 3\nstep == 4\nf(step=5)\nx. step\nx .step = 1\nx.\\\n    step\n",
    "def  step(a): pass\nundef step\na.def step\n  def\tstep2(): pass\ndef step_(): step_ := 1\n",
    "self.step: int = 3\nself.step: int == 3\nstep: int\nstep : T = 1 == 2\n1step + step1 + ñame + ñame.ñame\n",
    "getattr(self, 'step')(x)\ngetattr(self, name)\ngetattr(getattr, \"step\")\ngetattr(a, b, 'step')\n",
    "x = '''step'''\n# step\ns = 'step' + f'{step}' + \"step\"\n",
    "f = jax.jit(g)\nprint(f\"{f(x)} f step {{step}}\", rf'{step=}', b'f', 'a f' + step + 'b')\nf(1)\n",
]


@pytest.mark.parametrize("source", _MENTION_SOURCES + [
    pathlib.Path(__file__).resolve().parents[2].joinpath(path).read_text()
    for path in ("examples/train.py", "lint/join/facts.py", "tests/codemod/test_fix_shared_jit_runs.py")])
def test_name_mentions_in_one_pass_agree_with_each_names_patterns(source):
    from jaxmem.lint.syntax import relevance

    words = sorted(set(re.findall(r"\w+", source)))
    names = words + ["." + w for w in words] + ["no_such_name", ".no_such_name"]
    with_strings = relevance.code_without_docs(relevance._lf(source))
    code = relevance.code_without_literals(with_strings)
    dynamic = len(relevance._DYNAMIC_GETATTR.findall(code))
    expected = tuple(relevance.mentions_by_pattern(code, with_strings, name, dynamic) for name in sorted(names))
    assert relevance.name_mentions(source, names) == expected
    assert any(mentions for _, mentions, _ in expected)  # not agreeing on nothing


@pytest.mark.parametrize("text, own", [
    ("class A:\n    def m(self):\n        return self.m() + cls.m()\n", True),
    ("class A:\n    def m(self):\n        pass\n\n    def n(self):\n        self.m()  # m again\n", False),
    ("class A:\n    def m(self):\n        pass\n\n\ndef run(a):\n    return a.m()\n", False),
    ("class A:\n    def m(self):\n        return myself.m()\n", False),
    ("def m():\n    pass\n\n\nclass A:\n    def run(self):\n        return self.m()\n", False),
])
def test_private_names_mark_methods_named_only_through_self_or_cls(text, own):
    # A file whose every mention of `m` is an indented def or self.m/cls.m names only its own
    # method (lint.join.traced_scopes); any other mention, a comment too, names it.
    from jaxmem.lint.syntax.relevance import OWN_METHOD, private_names

    names = private_names(text)
    assert ".m" in names
    assert (OWN_METHOD + ".m" in names) is own

"""The textual shortcuts (pre-filter, blanking) never change a finding.

Every source the test suite carries (rule examples, liveness eval files,
the example program) is analysed with the shortcuts on and off
(``JAXMEM_NO_SHORTCUTS=1``); the findings must be identical.  The
accuracy benchmark runs the same comparison on real projects.
"""

import pathlib

import pytest

from jaxmem.findings import Confidence
from jaxmem.lint.engine import facts_for_file, project_hints, report
from jaxmem.lint.rules import RULES
from jaxmem.settings import Settings

ALL = Settings(min_confidence=Confidence.LOW)
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _sources():
    for code, rule in RULES.items():
        for kind in ("valid", "invalid"):
            for i, example in enumerate(getattr(rule, kind)):
                yield pytest.param(example.code, id=f"{code}-{kind}-{i}")
    for path in sorted((ROOT / "tests" / "lint" / "cases").glob("*.py")) + [ROOT / "examples" / "train.py"]:
        yield pytest.param(path.read_text(), id=path.name)


def _findings(source: str) -> list[tuple]:
    hints = project_hints({"m.py": source})
    facts = facts_for_file("m.py", source, ALL, hints)
    return sorted((f.code, f.span.line, f.span.col, f.message, f.confidence.value)
                  for f in report([facts], ALL)[0].findings)


@pytest.mark.parametrize("source", list(_sources()))
def test_findings_are_the_same_without_shortcuts(source, monkeypatch):
    fast = _findings(source)
    monkeypatch.setenv("JAXMEM_NO_SHORTCUTS", "1")
    assert _findings(source) == fast


# Projects where one file's findings depend on what another file defines in a
# chunk that mentions no jitted name: the function's summary, or the function
# a factory returns.  (path -> text; the last check says which finding the
# other file's facts decide, so a case cannot pass by finding nothing.)
_STEP = "import jax\nimport jax.numpy as jnp\n{imports}\n\n\n@jax.jit\ndef step(s):\n    return s + 1\n\n\n"
_MAIN = "def main():\n    base = jnp.zeros(3)\n    s = {call}(base)\n    s = step(s)\n    print(base, s)\n"
_UTIL = (
    "import jax.numpy as jnp\n\n\ndef unrelated(x):\n    return x + 1\n\n\n"
    "def fresh(x):\n    return jnp.copy(x) * 2\n\n\ndef other():\n    return unrelated(2)\n"
)
_STAGED = (
    "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef step(key, state):\n"
    "    return state + jax.random.normal(key, state.shape)\n\n\n"
    "def one_step(state, rng_key):\n    state = step(rng_key, state)\n    return state, state.sum()\n\n\n"
    "def unrelated(x):\n    return x + 1\n\n\n"
    "def main():\n    state = jnp.zeros(3)\n    keys = jax.random.split(jax.random.PRNGKey(0), 10)\n"
    "    final, sums = jax.lax.scan(one_step, state, keys)\n    print(final, sums)\n"
)
_TRACED_METHOD = (
    "from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n\nclass Algo:\n"
    "    @staticmethod\n    @jax.jit\n    def update_actor(s, x):\n        return s * 0.5 + x\n\n"
    "    @classmethod\n    def update_both(cls, s, x):\n        s = cls.update_actor(s, x)\n        return s\n\n"
    "    @classmethod\n    @partial(jax.jit, static_argnames=['cls'])\n    def train(cls, s, xs):\n"
    "        def one_update(i, carry):\n            return cls.update_both(carry, xs[i])\n"
    "        return jax.lax.fori_loop(0, xs.shape[0], one_update, s)\n"
)
_OWN_METHOD = "class Other:\n    def update_both(self, s):\n        return s\n\n    def run(self, s):\n" \
              "        return self.update_both(s)\n"
_REDEFINED = """import jax
import jax.numpy as jnp


@jax.jit
def train_step(state, batch):
    return state - batch


def describe(value):
    return f"value: {value}"


state = jnp.ones(4)
for _ in range(3):
    state = train_step(state, jnp.ones(4))
print(describe(1))


@jax.jit
def train_step(state, batch, scale):
    return state * scale - batch


for _ in range(3):
    state = train_step(state, jnp.ones(4), 0.5)
"""

_PROJECTS = {
    # util.py is skipped (no jit word, calls nothing jitted); fresh() is reached as a module attribute.
    "module-attribute": {
        "pkg/util.py": _UTIL,
        "pkg/train.py": _STEP.format(imports="from pkg import util") + _MAIN.format(call="util.fresh"),
    },
    "import-as": {
        "pkg/util.py": _UTIL,
        "pkg/train.py": _STEP.format(imports="import pkg.util as util") + _MAIN.format(call="util.fresh"),
    },
    # util.py is analysed (it jits something), but fresh()'s chunk mentions nothing relevant.
    "blanked-chunk": {
        "pkg/util.py": _UTIL + "\n\nscaled = jax.jit(lambda x: x * 3)\n",
        "pkg/train.py": _STEP.format(imports="from pkg import util") + _MAIN.format(call="util.fresh"),
    },
    # A file with no jit word calls step(), imported in parentheses after another import.
    "parenthesised-import": {
        "pkg/kern.py": _STEP.format(imports=""),
        "pkg/run.py": (
            "import jax.numpy as jnp\nfrom os import path\n\nfrom pkg.kern import (\n    step,\n)\n\n\n"
            "def unrelated():\n    return path.sep\n\n\n"
            "def main():\n    s = jnp.zeros(3)\n    s = step(s)\n    return s\n"
        ),
    },
    # The jitted callable is what another module's factory returns: its parameters get their names there.
    "factory": {
        "pkg/lib.py": (
            "def unrelated():\n    return 1\n\n\n"
            "def make(fn):\n    def inner(params, state):\n        return fn(params), state\n    return inner\n\n\n"
            "def other():\n    return unrelated()\n"
        ),
        "pkg/use.py": (
            "import jax\nimport jax.numpy as jnp\nfrom pkg import lib\n\n\n"
            "def main():\n    made = lib.make(jnp.sin)\n    g = jax.jit(made)\n    p, s = jnp.ones(3), jnp.zeros(3)\n"
            "    p, s = g(p, s)\n    return p, s\n"
        ),
    },
    # A configured wrapper jits step(); the file calling it names no jit word.  Its call site, which reads
    # ``t`` after the call, must be seen (else a high-confidence proposal would crash it).
    "wrapper": {
        "pkg/steps.py": (
            "import jax.numpy as jnp\nfrom mylib import compile_step\n\n\n@compile_step\ndef step(s):\n"
            "    return s + 1\n\n\ndef main():\n    s = jnp.zeros(3)\n    s = step(s)\n    return s\n"
        ),
        "pkg/run.py": (
            "import jax.numpy as jnp\nfrom pkg.steps import step\n\n\n"
            "def main():\n    t = jnp.ones(3)\n    u = step(t)\n    print(t)\n    return u\n"
        ),
    },
    # A jitted function with a one-letter name: a file calling it (no jit word) must not be skipped.
    "short-name": {
        "pkg/steps.py": (
            "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(s):\n    return s + 1\n\n\n"
            "def main():\n    s = jnp.zeros(3)\n    s = f(s)\n    return s\n"
        ),
        "pkg/run.py": (
            "import jax.numpy as jnp\nfrom pkg.steps import f\n\n\n"
            "def main():\n    t = jnp.ones(3)\n    u = f(t)\n    print(t)\n    return u\n"
        ),
    },
    # A Module class in a file with no jit word: whether it is clean and derives from nnx decides
    # how an nnx.jit step that receives what it makes is proposed.
    "nnx-class": {
        "pkg/models.py": (
            "from flax import nnx\n\n\nclass MLP(nnx.Module):\n    def __init__(self, rngs):\n"
            "        self.lin = nnx.Linear(2, 2, rngs=rngs)\n\n    def __call__(self, x):\n"
            "        return self.lin(x)\n"
        ),
        "pkg/train.py": (
            "import jax.numpy as jnp\nfrom flax import nnx\nfrom pkg.models import MLP\n\n\n"
            "@nnx.jit\ndef step(model, x):\n    model.lin.kernel[...] += jnp.mean(model(x))\n\n\n"
            "def main(batches):\n    model = MLP(nnx.Rngs(0))\n    for x in batches:\n        step(model, x)\n"
        ),
    },
    # A jitted step called only in a function handed to jax.lax.scan (traced: nothing to donate),
    # beside a chunk the pre-filter blanks; called once eagerly too, it is proposed again.
    # A method called only in a jitted method's loop body (traced), beside a file the pre-filter
    # skips whose own class has a method of that name; then a skipped file that calls it eagerly.
    "traced-method": {"pkg/algo.py": _TRACED_METHOD, "pkg/other.py": _OWN_METHOD},
    "traced-method-called-elsewhere": {
        "pkg/algo.py": _TRACED_METHOD,
        "pkg/run.py": "def eager(algo, s, x):\n    s = algo.update_both(s, x)\n    return s\n",
    },
    "staged-body": {"pkg/run.py": _STAGED},
    # A module that binds ``train_step`` to two jits, each called right after it, with a
    # chunk the pre-filter blanks between them: each call reaches its own definition.
    "redefined-step": {"pkg/run.py": _REDEFINED},
    "staged-body-also-eager": {"pkg/run.py": _STAGED.replace("print(final", "print(one_step(state, keys[0]), final")},
}
_SETTINGS = {"wrapper": Settings(min_confidence=Confidence.LOW, extra_wrappers=("mylib.compile_step",))}

def _proposed_high(findings):
    return any(f[1] == "JXM001" and f[5] == "high" for f in findings)


_DECIDED = {
    "module-attribute": _proposed_high, "import-as": _proposed_high, "blanked-chunk": _proposed_high,
    "parenthesised-import": _proposed_high,
    "factory": lambda findings: any("`params`" in f[4] for f in findings),
    "wrapper": lambda findings: not _proposed_high(findings),
    "short-name": lambda findings: not _proposed_high(findings),
    "nnx-class": _proposed_high,
    "traced-method": lambda findings: not any(f[1] == "JXM001" and "update_actor" in f[4] for f in findings),
    "traced-method-called-elsewhere": lambda findings: any(f[1] == "JXM001" and "update_actor" in f[4]
                                                           for f in findings),
    "staged-body": lambda findings: not any(f[1] == "JXM001" for f in findings),
    "redefined-step": lambda findings: [(f[2], f[5]) for f in findings if f[1] == "JXM001"] == [(5, "high"),
                                                                                               (20, "high")],
    "staged-body-also-eager": lambda findings: any(f[1] == "JXM001" for f in findings),
}


def _project_findings(texts: dict[str, str], settings: Settings = ALL) -> list[tuple]:
    hints = project_hints(texts, settings)
    reports = report([facts_for_file(path, text, settings, hints) for path, text in texts.items()], settings)
    return sorted((r.path, f.code, f.span.line, f.span.col, f.message, f.confidence.value)
                  for r in reports for f in r.findings)


@pytest.mark.parametrize("name", sorted(_PROJECTS))
def test_findings_across_files_are_the_same_without_shortcuts(name, monkeypatch):
    settings = _SETTINGS.get(name, ALL)
    fast = _project_findings(_PROJECTS[name], settings)
    monkeypatch.setenv("JAXMEM_NO_SHORTCUTS", "1")
    assert _project_findings(_PROJECTS[name], settings) == fast
    assert _DECIDED[name](fast), fast


@pytest.mark.parametrize("name", ["module-attribute", "wrapper", "nnx-class", "traced-method",
                                  "traced-method-called-elsewhere", "redefined-step"])
@pytest.mark.parametrize("use_cache", [False, True], ids=["no-cache", "cache"])
def test_whole_runs_across_files_are_the_same_without_shortcuts(name, use_cache, tmp_path, monkeypatch):
    from jaxmem.api import check_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for path, text in _PROJECTS[name].items():
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.chdir(tmp_path)
    settings = _SETTINGS.get(name, ALL)

    def findings():
        return sorted((r.path, f.code, f.span.line, f.message, f.confidence.value)
                      for r in check_paths(["."], settings, use_cache=use_cache) for f in r.findings)

    fast = findings()
    assert findings() == fast  # warm, when cached
    monkeypatch.setenv("JAXMEM_NO_SHORTCUTS", "1")
    assert findings() == fast
    assert _DECIDED[name]([(p, c, line, 0, m, conf) for p, c, line, m, conf in fast]), fast

"""A method whose result is used may keep its argument in its object: which one is known
only once every file's classes are (lint.values.kept_if, lint.syntax.keeping_methods)."""

import os
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from jaxmem.api import check_paths
from jaxmem.findings import Confidence
from jaxmem.lint.syntax.keeping_methods import maybe_keeping_methods
from jaxmem.lint.values.kept_if import mark_kept_if, settled
from jaxmem.lint.values.provenance import keeps_arguments

LOGS = """\
class Logger:
    def __init__(self):
        self.seen = []

    def log(self, value):
        self.seen.append(value)
        return len(self.seen)
"""

# ``log`` of this one reads its argument and keeps nothing.
COUNTING_LOGS = """\
class Logger:
    seen = ()

    def log(self, value):
        print(value.shape)
        return 1
"""

TRAIN = """\
import functools

import jax
import jax.numpy as jnp


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x + 1, state)


def run(logger):
    w = jnp.ones(4)
    if logger.log(w) is None:
        print("not logged")
    state = {"w": w, "b": jnp.zeros(4)}
    for _ in range(3):
        state = step(state)
    return float(state["w"].sum()), [float(x.sum()) for x in logger.seen]
"""

# The logger reaches ``run`` as an argument: no file that ``train.py`` names defines its class.
MAIN = """\
from logs import Logger
from train import run

print(run(Logger()))
"""


def _project(tmp_path, logs=LOGS):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in (("logs.py", logs), ("train.py", TRAIN), ("main.py", MAIN)):
        (tmp_path / name).write_text(text)
    return tmp_path


def _step_finding(paths):
    (finding,) = [f for report in check_paths(paths, use_cache=False) for f in report.findings if f.code == "JXM001"]
    return finding


def _donating(source: str) -> str:
    return source.replace("@jax.jit\n", "@functools.partial(jax.jit, donate_argnums=0)\n")


def _python(folder, script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, script], cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})


def _assert_high_and_donation_runs(folder, train: str, expected: str) -> None:
    """``train.py`` (``train``) gets a high JXM001 from ``jaxmem check .``, and with the
    donation forced it runs and prints ``expected``."""
    (folder / "train.py").write_text(train)
    (finding,) = [f for report in check_paths(["."], use_cache=False) for f in report.findings]
    assert finding.confidence is Confidence.HIGH, finding.message
    (folder / "train.py").write_text(_donating(train))
    donated = _python(folder, "train.py")
    assert donated.returncode == 0, donated.stderr
    assert donated.stdout == expected


def _run_donating(folder) -> subprocess.CompletedProcess:
    (folder / "train.py").write_text(_donating(TRAIN))
    return _python(folder, "main.py")


@pytest.mark.parametrize("paths", [["."], ["train.py"]], ids=["the-project", "one-file"])
def test_a_method_of_a_class_no_analysed_file_defines_may_keep_the_state(tmp_path, monkeypatch, paths):
    # ``logs.py`` mentions no jit and is never parsed (or, checking train.py alone, not even
    # among the files analysed): its text still says that ``Logger.log`` may keep its argument
    monkeypatch.chdir(_project(tmp_path))
    finding = _step_finding(paths)
    assert finding.confidence is Confidence.MEDIUM
    assert "which `logger.log(w)` may keep" in finding.message
    forced = _run_donating(tmp_path)
    assert forced.returncode != 0 and "deleted" in forced.stderr, forced.stderr


@pytest.mark.parametrize("paths", [["."], ["train.py"]], ids=["the-project", "one-file"])
def test_a_method_of_that_name_that_keeps_nothing_leaves_the_state_its_own(tmp_path, monkeypatch, paths):
    monkeypatch.chdir(_project(tmp_path, COUNTING_LOGS))
    assert _step_finding(paths).confidence is Confidence.HIGH
    donated = _run_donating(tmp_path)
    assert donated.returncode == 0, donated.stderr
    assert donated.stdout == "(4,)\n(16.0, [])\n"


def test_a_warm_run_sees_the_method_start_keeping(tmp_path, monkeypatch):
    monkeypatch.chdir(_project(tmp_path, COUNTING_LOGS))
    results = []
    for logs in (COUNTING_LOGS, LOGS, COUNTING_LOGS):
        (tmp_path / "logs.py").write_text(logs)
        for paths in (["."], ["train.py"]):
            (finding,) = [f for report in check_paths(paths) for f in report.findings if f.code == "JXM001"]
            results.append(finding.confidence)
    assert results == [Confidence.HIGH] * 2 + [Confidence.MEDIUM] * 2 + [Confidence.HIGH] * 2


def test_a_marked_reason_holds_only_when_the_method_may_keep():
    reason = "`state` holds `w`, " + mark_kept_if("which `t.track(w)` may keep", "track")
    assert settled(reason, {"track"}.__contains__) == "`state` holds `w`, which `t.track(w)` may keep"
    assert settled(reason, {"log"}.__contains__) is None
    assert settled("`w`, read again at line 9", set().__contains__) == "`w`, read again at line 9"


# Methods and whether their body may keep an argument after they return (each as
# keeps_arguments decides, which the text must never miss).
METHODS = {
    "appends": ("def m(self, value):\n    self.seen.append(value)\n    return len(self.seen)\n", True),
    "stores": ("def m(self, value):\n    self.last = value\n", True),
    "stores-a-subscript": ("def m(self, value):\n    CACHE[value.shape] = value\n", True),
    "adds-into": ("def m(self, value):\n    self.total += value\n", True),
    "returns-it": ("def m(self, value):\n    return value\n", True),
    "returns-it-over-lines": ("def m(self, value):\n    return (\n        value\n    )\n", True),
    "yields": ("def m(self, value):\n    yield value\n", True),
    "closure": ("def m(self, value):\n    def inner():\n        return value\n    return inner\n", True),
    "global": ("def m(self, value):\n    global LAST\n    LAST = value\n", True),
    "long-header": ("def m(\n    self,\n    value,\n) -> None:\n    self.seen.append(value)\n", True),
    "string-at-column-0": ('def m(self, value):\n    x = """\nline\n"""\n    self.seen.append(value)\n', True),
    "reads": ("def m(self, value):\n    print(value.shape, sep='=')\n    return len(self.seen)\n", False),
    "counts": ("def m(self, value):\n    n = 0\n    if value == 3:\n        n += 1\n    return\n", False),
    "comment": ("def m(self, value):\n    # self.kept = value\n    return None\n", False),
    "raises-it": ("def m(self, value):\n    raise ValueError(value)\n", True),
    "raises-from-it": ("def m(self, value):\n    raise ValueError('bad') from value\n", True),
    "raises-a-message": ("def m(self, value):\n    raise ValueError(f'bad {value}', 'shape')\n", False),
    "re-raises": ("def m(self, value):\n    try:\n        pass\n    except E:\n        raise\n", False),
    "stores-through-a-tuple-target": ("def m(self, value):\n    BOX.kept, n = value, 0\n", True),
    "loops-into-an-attribute": ("def m(self, value):\n    for BOX.kept in [value]:\n        pass\n", True),
    "enters-a-context-as-an-attribute": ("def m(self, value):\n    with value as BOX.kept:\n        pass\n", True),
    "comprehension-into-an-item": ("def m(self, value):\n    return len([0 for CACHE[0] in [value]])\n", True),
    "loops-over-an-attribute": ("def m(self, value):\n    for x in self.items:\n        n = x\n", False),
}

# Bodies whose calls may keep the argument: ``keeps_arguments`` counts a call only as its
# ``call_keeps`` says (the file's facts ask whether the callee may keep it), the text
# counts any call of a function by its bare name, or of a method through ``self`` that may.
CALLING_METHODS = {
    "keywords": ("def m(self, value):\n    foo(a=1,\n        b=value)\n", True),
    "by-name": ("def m(self, value):\n    register(value)\n    return 1\n", True),
    "through-self": ("def _keep(self, value):\n    self.seen.append(value)\n\n"
                     "def m(self, value):\n    self._keep(value)\n    return 1\n", True),
    "exit-handler": ("def m(self, value):\n    atexit.register(print, value)\n", True),
    "a-builtin": ("def m(self, value):\n    n = len(value)\n    print(float(n))\n", False),
    "literals-only": ("def m(self, value):\n    warn('slow', 3)\n", False),
    "no-argument": ("def m(self, value):\n    flush()\n", False),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_the_text_names_every_method_that_may_keep_an_argument(name):
    body, keeps = METHODS[name]
    source = "class C:\n" + textwrap.indent(body, "    ")
    method = cst.parse_module(source).body[0].body.body[0]
    assert keeps_arguments(method) is keeps
    assert ("m" in maybe_keeping_methods(source)) is keeps


@pytest.mark.parametrize("name", list(CALLING_METHODS))
def test_the_text_names_a_method_whose_calls_may_keep_an_argument(name):
    body, keeps = CALLING_METHODS[name]
    source = "class C:\n" + textwrap.indent(body, "    ")
    method = cst.parse_module(source).body[0].body.body[-1]
    builtin = lambda call: isinstance(call.func, cst.Name) and call.func.value in ("len", "print", "float")  # noqa: E731
    assert keeps_arguments(method, call_keeps=lambda call: not builtin(call)) is keeps
    assert keeps_arguments(method, call_keeps=lambda call: False) is False
    assert ("m" in maybe_keeping_methods(source)) is keeps


PROJECT_CALL = """\
import functools
import heapq

import jax
import jax.numpy as jnp

import registry


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x + 1, state)


def main():
    w = jnp.ones(4)
    heap = []
    heapq.heappush(heap, (1.0, 0, w))  # the heap is not read again
    if registry.describe(w) > 0:
        print("described")
    state = {"w": w, "b": jnp.zeros(4)}
    for _ in range(3):
        state = step(state)
    print(float(state["w"].sum()), w.is_deleted())


main()
"""


def test_calls_that_keep_nothing_the_program_reads_leave_the_state_its_own(tmp_path, monkeypatch):
    # ``registry.describe`` (another module's function, called through the module) keeps
    # nothing, and the heap that holds ``w`` is never read again: donating is safe
    (tmp_path / "registry.py").write_text("def describe(value):\n    return float(value.sum())\n")
    monkeypatch.chdir(tmp_path)
    _assert_high_and_donation_runs(tmp_path, PROJECT_CALL, "described\n16.0 True\n")


def test_a_statement_call_of_another_files_function_that_keeps_nothing_leaves_the_state_its_own(
        tmp_path, monkeypatch):
    # ``registry.validate(w)`` is made for its effect; the join reads its summary (it stores
    # and returns nothing), as for a call whose result is used (brax's
    # ``pmap.assert_is_replicated(training_state)`` after the loop)
    (tmp_path / "registry.py").write_text(
        "def validate(value):\n    assert float(value.sum()) > 0, 'empty'\n\n\n"
        "def describe(value):\n    return float(value.sum())\n")
    monkeypatch.chdir(tmp_path)
    train = PROJECT_CALL.replace("    if registry.describe(w) > 0:\n        print(\"described\")\n",
                                 "    registry.validate(w)\n    print(\"described\")\n")
    assert "registry.validate(w)" in train
    _assert_high_and_donation_runs(tmp_path, train, "described\n16.0 True\n")


def test_a_statement_call_of_another_files_function_that_keeps_its_argument_is_doubted(tmp_path, monkeypatch):
    (tmp_path / "registry.py").write_text("SEEN = []\n\n\ndef validate(value):\n    SEEN.append(value)\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(PROJECT_CALL.replace(
        "    if registry.describe(w) > 0:\n        print(\"described\")\n", "    registry.validate(w)\n"))
    (finding,) = [f for report in check_paths(["."], use_cache=False) for f in report.findings]
    assert finding.confidence is Confidence.MEDIUM
    assert "which `registry.validate(w)` may keep" in finding.message, finding.message


LIBRARY_METHOD = """\
import functools

import jax
import jax.numpy as jnp
import optax


class Mean:
    def __init__(self):
        self.seen = []

    def update(self, value):
        self.seen.append(value)
        return self


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.5, state)


def main():
    params = {"w": jnp.ones(4)}
    tx = optax.sgd(0.1)
    opt_state = tx.init(params)
    updates, opt_state = tx.update(params, opt_state, params)
    state = {"params": params}
    for _ in range(3):
        state = step(state)
    mean = Mean().update(1.0)
    return float(state["params"]["w"].sum()), len(updates), params["w"].is_deleted(), len(mean.seen)
"""


def test_a_method_of_a_library_object_is_not_taken_for_a_project_method_of_that_name(tmp_path, monkeypatch):
    # ``Mean.update`` keeps its argument, but ``tx`` is bound only to an optax transform:
    # its ``update`` is optax's, whose result is what the call is for
    monkeypatch.chdir(tmp_path)
    _assert_high_and_donation_runs(tmp_path, LIBRARY_METHOD + "\n\nprint(main())\n", "(0.5, 1, True, 1)\n")


HANDED_FUNCTION = """\
import functools

import jax
import jax.numpy as jnp


def describe(value):
    return float(value.sum())


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.5, state)


def main():
    w = jnp.ones(4)
    total = sum(map(describe, [w]))
    ranked = sorted([w], key=describe)
    state = {"w": w}
    for _ in range(3):
        state = step(state)
    return float(state["w"].sum()), total, len(ranked), w.is_deleted()
"""


def test_a_function_handed_to_map_that_keeps_nothing_leaves_the_state_its_own(tmp_path, monkeypatch):
    # ``map`` and ``sorted`` run ``describe``, which keeps nothing: only what they return
    # holds ``w`` (``ranked``, never read again as an array)
    monkeypatch.chdir(tmp_path)
    _assert_high_and_donation_runs(tmp_path, HANDED_FUNCTION + "\n\nprint(main())\n", "(0.5, 4.0, 1, True)\n")


# A helper whose jitted inner function is only called (its results are new buffers), a
# class whose methods keep what they are given only in the instance, and a local instance
# of it that nothing else reaches: ``w`` is held by nothing once it is donated.
KEPT_ONLY_WHERE_NOTHING_READS = """\
import functools

import jax
import jax.numpy as jnp


class Tracker:
    def __init__(self):
        self.seen = []

    def track(self, value):
        self.seen.append(value)
        self._count(value)

    def _count(self, value):
        self.total = len(self.seen) + value.size


def describe(value, scale):
    @functools.partial(jax.jit)
    def scaled(x):
        return x * scale

    return float(scaled(value).sum()) + float(value[0])


def summarize(value):
    parts, names = [], []

    def half(x):
        return x * 0.5

    for row in [value]:
        parts.append(float(half(row).sum()))
        names.append("row")
    names = ",".join(names)
    total = sum(parts)
    return total


def check(value):
    if value.ndim != 1:
        raise ValueError(f"expected a vector, got shape {value.shape}")


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.5, state)


def main():
    w = jnp.ones(4)
    tracker = Tracker()
    tracker.track(w)
    check(w)
    total = describe(w, 2.0)
    halved = summarize(w)
    state = {"w": w}
    for _ in range(3):
        state = step(state)
    return float(state["w"].sum()), total, halved, w.is_deleted()


print(main())
"""


# A helper that hands the state to a jitted function of the file, which returns it: the
# call's outputs are new buffers (jax 0.10.2, even an output that is an input), so the
# helper keeps nothing of ``w`` (``decode_batch`` of flax's seq2seq example).
HELPER_CALLING_A_JIT = """\
import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit)
def evaluate(params, x):
    return params, params["w"] * x


def report(params, x):
    same, scaled = evaluate(params, x)
    return float(same["w"].sum()) + float(scaled.sum())


@jax.jit
def step(state):
    return jax.tree.map(lambda x: x * 0.5, state)


def main():
    w = jnp.ones(4)
    state = {"w": w}
    before = report(state, 2.0)
    for _ in range(3):
        state = step(state)
    return float(state["w"].sum()), before, w.is_deleted()


print(main())
"""


def test_a_helper_that_only_hands_the_state_to_a_jitted_function_leaves_it_its_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _assert_high_and_donation_runs(tmp_path, HELPER_CALLING_A_JIT, "(0.5, 12.0, True)\n")


def test_helpers_and_objects_that_keep_nothing_reachable_leave_the_state_its_own(tmp_path, monkeypatch):
    # ``Tracker`` keeps ``w`` only in ``tracker`` (made here, never read again); ``describe``
    # jits a closure it only calls; ``summarize`` fills lists it made and calls a def it
    # only calls; ``check`` raises a message, not ``w``
    monkeypatch.chdir(tmp_path)
    _assert_high_and_donation_runs(tmp_path, KEPT_ONLY_WHERE_NOTHING_READS, "(0.5, 9.0, 2.0, True)\n")

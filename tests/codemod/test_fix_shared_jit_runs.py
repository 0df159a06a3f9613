"""One jit node bound to several names (a factory called twice, ``f = make(); g = make()``):
one edit donates for every name, so a parameter is proposed only when the calls
through all of them allow it.  Each program really runs, before and after the fix."""

import sys
import textwrap

import pytest

from fix_runs import fix, fix_and_rerun, left_alone_then_crashes, run, tool

pytest.importorskip("jax")

MAKE = """
    import jax
    import jax.numpy as jnp


    def make():
        def step(state, x):
            return state + x
        return jax.jit(step)


    train = make()
"""

FACTORY = MAKE + """    evaluate = make()


    def main():
        state = jnp.ones(3)
        for _ in range(3):
            state = train(state, 1.0)
        other = jnp.ones(3)
        {second}
        print(float(state.sum()), float(other.sum()), float(result.sum()))


    main()
"""

READ_AFTER = "result = evaluate(other, 1.0)"
REBOUND = "other = evaluate(other, 1.0); result = other"


def _program(second: str) -> str:
    return textwrap.dedent(FACTORY).replace("{second}", second)


def test_a_read_after_a_call_through_the_other_name_keeps_the_shared_jit_undonated(tmp_path):
    program = _program(READ_AFTER)
    before = run(sys.executable, "-c", program, cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    forced = run(sys.executable, "-c", program.replace("jax.jit(step)", "jax.jit(step, donate_argnums=0)"), cwd=tmp_path)
    assert forced.returncode != 0 and "has been deleted" in forced.stderr  # the pattern is real: donating crashes it

    path, result = fix(tmp_path, program)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert path.read_text() == program
    shown = run(tool("jaxmem"), "check", "--no-cache", "--show-skipped", "train.py", cwd=tmp_path)
    assert "call sites disagree" in shown.stdout + shown.stderr


def test_every_name_rebinding_its_state_gets_the_donation_and_runs(tmp_path):
    path = fix_and_rerun(tmp_path, _program(REBOUND))
    assert "jax.jit(step, donate_argnums=0)" in path.read_text()


# A trainer that builds its jitted step in a method (``self.train_step = self._make_train_step()``)
# and a sampler whose property hands out the jitted function (``self.sample_fn(...)``).
METHOD_FACTORY_AND_PROPERTY = """
    import jax
    import jax.numpy as jnp


    class Trainer:
        def __init__(self):
            self.train_step = self._make_train_step()

        def _train_step(self, state, data):
            return jnp.sum(data), {"w": state["w"] - 0.1 * data.mean(), "b": state["b"] + 1.0}

        def _make_train_step(self):
            return jax.jit(self._train_step)

        def fit(self, batches):
            state = {"w": jnp.ones((4,)), "b": jnp.zeros((4,))}
            for batch in batches:
                loss, state = self.train_step(state, batch)
            return float(loss), float(state["w"].sum())


    class Sampler:
        def __init__(self, jit_compile=True):
            self.jit_compile = jit_compile
            self._compiled_sample_fn = jax.jit(self._sample_fn)

        @property
        def sample_fn(self):
            if self.jit_compile:
                return self._compiled_sample_fn
            return self._sample_fn

        def _sample_fn(self, params, state):
            return state * params

        def sample(self, params):
            state = jnp.ones((4,))
            state = self.sample_fn(params, state)
            {after}
            return float(state.sum())


    print(Trainer().fit([jnp.ones((2,)), jnp.ones((2,))]), Sampler().sample(2.0))
"""


def test_a_step_made_by_a_method_and_a_jit_behind_a_property_are_fixed_and_run(tmp_path):
    program = textwrap.dedent(METHOD_FACTORY_AND_PROPERTY).replace("{after}", "pass")
    path = fix_and_rerun(tmp_path, program)
    fixed = path.read_text()
    assert "jax.jit(self._train_step, donate_argnums=0)" in fixed
    # the property hands the jit on (`return self._compiled_sample_fn`): medium, so only --unsafe-fixes
    assert "jax.jit(self._sample_fn)" in fixed
    path, result = fix(tmp_path, program, "--unsafe-fixes")
    assert "jax.jit(self._sample_fn, donate_argnums=1)" in path.read_text()
    expected = run(sys.executable, "-c", program, cwd=tmp_path).stdout
    after = run(sys.executable, "train.py", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout == expected, after.stderr


def test_a_read_through_the_property_name_keeps_its_jit_undonated(tmp_path):
    program = textwrap.dedent(METHOD_FACTORY_AND_PROPERTY).replace(
        "state = self.sample_fn(params, state)\n        {after}",
        "old = state\n        state = self.sample_fn(params, state)\n        print(float(old.sum()))")
    assert run(sys.executable, "-c", program, cwd=tmp_path).returncode == 0
    path, result = fix(tmp_path, program)
    assert "jax.jit(self._sample_fn)" in path.read_text()
    assert run(sys.executable, "train.py", cwd=tmp_path).returncode == 0


FACTORY_MODULE = MAKE + """

    def run():
        state = jnp.ones(3)
        state = train(state, 1.0)
        return float(state.sum())
"""

OTHER_CALLER = """
    import jax.numpy as jnp

    import steps

    evaluate = steps.make()


    def main():
        batch = jnp.ones(3)
        result = evaluate(batch, 1.0)
        print(steps.run(), float(batch.sum()), float(result.sum()))


    main()
"""


def test_a_factory_another_file_calls_keeps_its_proposal_at_medium(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "steps.py").write_text(textwrap.dedent(FACTORY_MODULE))
    (tmp_path / "train.py").write_text(textwrap.dedent(OTHER_CALLER))
    result = run(tool("jaxmem-fix"), ".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert run(sys.executable, "train.py", cwd=tmp_path).returncode == 0
    assert "jax.jit(step)" in (tmp_path / "steps.py").read_text()  # left alone by the default fix
    shown = run(tool("jaxmem"), "check", "--no-cache", ".", cwd=tmp_path)
    assert "medium confidence: `train` is made by `make()`, which is also called" in shown.stdout
    forced = (tmp_path / "steps.py").read_text().replace("jax.jit(step)", "jax.jit(step, donate_argnums=0)")
    (tmp_path / "steps.py").write_text(forced)
    crashed = run(sys.executable, "train.py", cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr  # what the high fix did


# Calls the join cannot resolve: through a second attribute, or through an instance in another file.
HANDED_ON = {
    "alias.py": """
    import jax
    import jax.numpy as jnp


    class T:
        def __init__(self):
            self.train = jax.jit(self.step)
            self.evaluate = self.train

        def step(self, state, x):
            return state + x

        def run(self):
            s = jnp.ones(3)
            s = self.train(s, 1.0)
            t = jnp.ones(3)
            u = self.evaluate(t, 1.0)
            print(float(t.sum()), float(u.sum()), float(s.sum()))


    T().run()
    """,
    "getattr.py": """
    import jax
    import jax.numpy as jnp


    class T:
        def __init__(self):
            self.train = jax.jit(self.step)

        def step(self, state, x):
            return state + x

        def run(self, name="train"):
            s = jnp.ones(3)
            s = self.train(s, 1.0)
            t = jnp.ones(3)
            u = getattr(self, name)(t, 1.0)
            print(float(t.sum()), float(u.sum()), float(s.sum()))


    T().run()
    """,
    "instance.py": """
    import jax.numpy as jnp

    from lib import T

    t = T()
    print(t.run())
    x = jnp.ones(3)
    y = t.train(x, 1.0)
    print(float(x.sum()), float(y.sum()))
    """,
}

LIB = """
    import jax
    import jax.numpy as jnp


    class T:
        def __init__(self):
            self.train = jax.jit(self.step)

        def step(self, state, x):
            return state + x

        def run(self):
            s = jnp.ones(3)
            s = self.train(s, 1.0)
            return float(s.sum())
"""


@pytest.mark.parametrize("name", sorted(HANDED_ON))
def test_a_jitted_attribute_called_where_the_join_cannot_see_is_left_alone(name, tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "lib.py").write_text(textwrap.dedent(LIB))
    program = textwrap.dedent(HANDED_ON[name])
    assert run(sys.executable, "-c", program, cwd=tmp_path).returncode == 0
    path = tmp_path / name
    path.write_text(program)
    defining = tmp_path / "lib.py" if name == "instance.py" else path
    result = run(tool("jaxmem-fix"), ".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert "jax.jit(self.step)" in defining.read_text()
    shown = run(tool("jaxmem"), "check", "--no-cache", ".", cwd=tmp_path).stdout
    assert "medium confidence" in shown and "high confidence" not in shown
    defining.write_text(defining.read_text().replace("jax.jit(self.step)", "jax.jit(self.step, donate_argnums=0)"))
    crashed = run(sys.executable, name, cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr  # what a high fix would do


HANDED_ON_BY_VALUE = """
    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def train(state, x):
        return state + x


    {hand_on}


    def main():
        s = jnp.ones(3)
        s = train(s, 1.0)
        t = jnp.ones(3)
        u = {call}
        print(float(t.sum()), float(u.sum()), float(s.sum()))


    main()
"""

BY_VALUE = {
    "dict": ('fns = {"eval": train}', 'fns["eval"](t, 1.0)'),
    "list": ("fns = [train]", "fns[0](t, 1.0)"),
    "tuple-unpacking": ("g, h = train, 1", "g(t, 1.0)"),
    "lambda": ("g = lambda a, b: train(a, b)", "g(t, 1.0)"),
    "conditional": ("g = train if True else None", "g(t, 1.0)"),
}


@pytest.mark.parametrize("form", sorted(BY_VALUE))
def test_a_jit_handed_on_as_a_value_is_left_alone(form, tmp_path):
    hand_on, call = BY_VALUE[form]
    program = textwrap.dedent(HANDED_ON_BY_VALUE).replace("{hand_on}", hand_on).replace("{call}", call)
    assert run(sys.executable, "-c", program, cwd=tmp_path).returncode == 0
    forced = program.replace("@jax.jit  # the step", "@jax.jit(donate_argnums=0)")
    crashed = run(sys.executable, "-c", forced, cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr
    path, result = fix(tmp_path, program)
    assert result.returncode == 0 and path.read_text() == program, result.stdout + result.stderr
    shown = run(tool("jaxmem"), "check", "--no-cache", "train.py", cwd=tmp_path).stdout
    assert "`train` is used here other than called" in shown


STEPS_MODULE = """
    import jax
    import jax.numpy as jnp


    @jax.jit  # the step
    def train(state, x):
        return state + x


    def run():
        s = jnp.ones(3)
        s = train(s, 1.0)
        return float(s.sum())
"""

OTHER_FILE = {
    "attribute": "import lib\n\nfns = [lib.train]\n",
    "from-import": "from lib import train\n\nfns = [train]\n",
    "lambda": "from lib import train\n\nfns = [lambda s, x: train(s, x)]\n",
}


@pytest.mark.parametrize("form", sorted(OTHER_FILE))
def test_a_jit_another_file_hands_on_is_left_alone(form, tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "lib.py").write_text(textwrap.dedent(STEPS_MODULE))
    program = OTHER_FILE[form] + textwrap.dedent("""
        import jax.numpy as jnp
        import lib as steps

        x = jnp.ones(3)
        y = fns[0](x, 1.0)
        print(steps.run(), float(x.sum()), float(y.sum()))
    """)
    (tmp_path / "main.py").write_text(program)
    assert run(sys.executable, "main.py", cwd=tmp_path).returncode == 0
    result = run(tool("jaxmem-fix"), ".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    assert "@jax.jit  # the step" in (tmp_path / "lib.py").read_text()
    shown = run(tool("jaxmem"), "check", "--no-cache", ".", cwd=tmp_path).stdout
    assert "another file uses `train` other than calling it" in shown
    lib = tmp_path / "lib.py"
    lib.write_text(lib.read_text().replace("@jax.jit  # the step", "@jax.jit(donate_argnums=0)"))
    crashed = run(sys.executable, "main.py", cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr


# Other ways another file reaches ``lib.train``: a star import, ``getattr`` on the module, and a module (or a package's
# ``__init__.py``) that imports it and is imported in turn; each call there reads ``x`` after.
REACHED = {
    "star": {"main.py": "from lib import *\n"},
    "getattr": {"main.py": "import lib\n\ntrain = getattr(lib, 'tr' + 'ain')\n"},
    "relay": {"relay.py": "from lib import train\n", "main.py": "from relay import train\n"},
    "package": {"pkg/__init__.py": "from .lib import train\n", "main.py": "from pkg import train\n"},
    "package-star": {"pkg/__init__.py": "from .lib import *\n", "main.py": "from pkg import *\n"},
}


@pytest.mark.parametrize("form", sorted(REACHED))
def test_a_jit_another_file_reaches_through_an_import_is_left_alone(form, tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    lib = tmp_path / ("pkg/lib.py" if form.startswith("package") else "lib.py")
    lib.parent.mkdir(exist_ok=True)
    lib.write_text(textwrap.dedent(STEPS_MODULE))
    for name, head in REACHED[form].items():
        (tmp_path / name).write_text(head + (textwrap.dedent("""
            import jax.numpy as jnp

            x = jnp.ones(3)
            y = train(x, 1.0)
            print(float(x.sum()), float(y.sum()))
        """) if name == "main.py" else ""))
    assert run(sys.executable, "main.py", cwd=tmp_path).returncode == 0
    left_alone_then_crashes(tmp_path, "main.py", lib, "@jax.jit  # the step", "@jax.jit(donate_argnums=0)")


PACKAGE_CALLERS = {
    "rebinds": "x = jnp.ones(3)\nfor _ in range(2):\n    x = _train(x, 1.0)\nprint(float(x.sum()))\n",
    "reads": "x = jnp.ones(3)\ny = _train(x, 1.0)\nprint(float(x.sum()), float(y.sum()))\n",
}


@pytest.mark.parametrize("caller", sorted(PACKAGE_CALLERS))
def test_a_call_through_a_package_that_imports_a_private_jit_is_followed(caller, tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    steps = tmp_path / "pkg/_steps.py"
    steps.write_text(textwrap.dedent(STEPS_MODULE).replace("train", "_train"))
    (tmp_path / "pkg/__init__.py").write_text("from ._steps import _train\n")
    (tmp_path / "main.py").write_text("import jax.numpy as jnp\nfrom pkg import _train\n\n" + PACKAGE_CALLERS[caller])
    expected = run(sys.executable, "main.py", cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    result = run(tool("jaxmem-fix"), ".", cwd=tmp_path)
    if caller == "reads":
        left_alone_then_crashes(tmp_path, "main.py", steps, "@jax.jit  # the step", "@jax.jit(donate_argnums=0)")
        return
    assert result.returncode == 1, result.stdout + result.stderr  # changed: every call rebinds
    assert "@partial(jax.jit, donate_argnums=0)" in steps.read_text()
    after = run(sys.executable, "main.py", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout == expected.stdout, after.stderr


DICT_ENTRY = {
    "module": """
    import jax
    import jax.numpy as jnp


    def step(state, x):
        return state + x


    FNS = {"train": jax.jit(step)}


    def main():
        s = jnp.ones(3)
        s = FNS["train"](s, 1.0)
        f = FNS["train"]
        t = jnp.ones(3)
        u = f(t, 1.0)
        print(float(t.sum()), float(u.sum()), float(s.sum()))


    main()
    """,
    "attribute": """
    import jax
    import jax.numpy as jnp


    def step(state, x):
        return state + x


    class T:
        def __init__(self):
            self.fns = {"train": jax.jit(step)}

        def run(self):
            s = jnp.ones(3)
            s = self.fns["train"](s, 1.0)
            t = jnp.ones(3)
            u = [self.fns][0]["train"](t, 1.0)
            print(float(t.sum()), float(u.sum()), float(s.sum()))


    T().run()
    """,
}


@pytest.mark.parametrize("form", sorted(DICT_ENTRY))
def test_a_jit_in_a_dict_entry_handed_on_is_left_alone(form, tmp_path):
    program = textwrap.dedent(DICT_ENTRY[form])
    assert run(sys.executable, "-c", program, cwd=tmp_path).returncode == 0
    crashed = run(sys.executable, "-c", program.replace("jax.jit(step)", "jax.jit(step, donate_argnums=0)"),
                  cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr
    path, result = fix(tmp_path, program)
    assert result.returncode == 0 and path.read_text() == program, result.stdout + result.stderr
    assert "is used here other than called" in run(tool("jaxmem"), "check", "--no-cache", "train.py",
                                                   cwd=tmp_path).stdout


OUTER_DECORATOR = """
    import functools

    import jax
    import jax.numpy as jnp


    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            out = fn(*args)
            print("inputs", [float(a.sum()) for a in args])
            return out
        return wrapper


    @logged
    @jax.jit  # the step
    def train(state, x):
        return state + x


    def main():
        s = jnp.ones(3)
        s = train(s, jnp.ones(3))
        print(float(s.sum()))


    main()
"""


def test_a_decorator_applied_after_the_jit_keeps_it_undonated(tmp_path):
    program = textwrap.dedent(OUTER_DECORATOR)
    assert run(sys.executable, "-c", program, cwd=tmp_path).returncode == 0
    forced = program.replace("@jax.jit  # the step", "@functools.partial(jax.jit, donate_argnums=0)")
    crashed = run(sys.executable, "-c", forced, cwd=tmp_path)
    assert crashed.returncode != 0 and "has been deleted" in crashed.stderr  # the wrapper reads `state`
    path, result = fix(tmp_path, program)
    assert result.returncode == 0 and path.read_text() == program, result.stdout + result.stderr
    assert "`@logged` is applied after the jit" in run(tool("jaxmem"), "check", "--no-cache", "train.py",
                                                       cwd=tmp_path).stdout


# A project whose package has a library's name (jaxmem run on optax itself): its own
# modules' imports of one another are followed, not taken for calls into the library.
OWN_STEPS = """
    import jax
    import jax.numpy as jnp


    def _update(state, x):
        return state + x


    _update_jit = jax.jit(_update)


    def loop():
        state = jnp.ones(3)
        for _ in range(3):
            state = _update_jit(state, 1.0)
        return float(state.sum())
"""

OWN_USERS = {
    "reads": """
        import jax.numpy as jnp

        from optax.steps import _update_jit


        def use():
            x = jnp.ones(3)
            y = _update_jit(x, 1.0)
            return float(x.sum() + y.sum())
    """,
    "rebinds": """
        import jax.numpy as jnp

        from optax.steps import _update_jit


        def use():
            x = jnp.ones(3)
            x = _update_jit(x, 1.0)
            return float(x.sum())
    """,
}


def _own_package(tmp_path, user: str):
    (tmp_path / "pyproject.toml").write_text("")
    package = tmp_path / "optax"  # shadows the installed optax: the script's folder comes first
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "steps.py").write_text(textwrap.dedent(OWN_STEPS))
    (package / "other.py").write_text(textwrap.dedent(OWN_USERS[user]))
    (tmp_path / "main.py").write_text("from optax import other, steps\n\nprint(steps.loop(), other.use())\n")
    return package / "steps.py"


def test_a_private_jit_another_module_of_a_library_named_package_calls_is_left_alone(tmp_path):
    steps = _own_package(tmp_path, "reads")
    assert run(sys.executable, "main.py", cwd=tmp_path).returncode == 0
    left_alone_then_crashes(tmp_path, "main.py", steps, "jax.jit(_update)\n", "jax.jit(_update, donate_argnums=0)\n")


def test_a_private_jit_every_module_of_a_library_named_package_rebinds_is_fixed_and_runs(tmp_path):
    steps = _own_package(tmp_path, "rebinds")
    expected = run(sys.executable, "main.py", cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    result = run(tool("jaxmem-fix"), ".", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr  # changed
    assert "jax.jit(_update, donate_argnums=0)" in steps.read_text()
    after = run(sys.executable, "main.py", cwd=tmp_path)
    assert after.returncode == 0 and after.stdout == expected.stdout, after.stderr


NNX_HANDED_ON = """
    import jax.numpy as jnp
    from flax import nnx


    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(3))


    @nnx.jit
    def step(model, x):
        model.w[...] = model.w[...] + x
        return model.w[...].sum()


    def main():
        model = M()
        for _ in range(3):
            step(model, 1.0)
        other = M()
        before = other.w[...]
        fns = [step]
        fns[0](other, 1.0)
        print(float(model.w[...].sum()), float(before.sum()))


    main()
"""


def test_an_nnx_step_handed_on_is_left_alone(tmp_path):
    pytest.importorskip("flax")
    program = textwrap.dedent(NNX_HANDED_ON)
    assert run(sys.executable, "-c", program, cwd=tmp_path).returncode == 0
    path, result = fix(tmp_path, program)
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    shown = run(tool("jaxmem"), "check", "--no-cache", ".", cwd=tmp_path).stdout
    assert "medium confidence: `step` is used here other than called" in shown
    path.write_text(program.replace("@nnx.jit\n", "@nnx.jit(donate_argnums=0)\n"))
    crashed = run(sys.executable, "train.py", cwd=tmp_path)
    assert crashed.returncode != 0 and "deleted or donated" in crashed.stderr  # what the high fix did


def test_a_call_in_an_excluded_file_still_keeps_the_jit_undonated(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.jaxmem]\nexclude = ["tests"]\n')
    lib = tmp_path / "lib.py"
    lib.write_text(textwrap.dedent(STEPS_MODULE))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/check_lib.py").write_text(textwrap.dedent("""
        import sys

        import jax.numpy as jnp

        sys.path.insert(0, ".")
        from lib import train

        x = jnp.ones(3)
        y = train(x, 1.0)
        print(float(x.sum()), float(y.sum()))
    """))
    assert run(sys.executable, "tests/check_lib.py", cwd=tmp_path).returncode == 0
    result = run(tool("jaxmem-fix"), "lib.py", cwd=tmp_path)  # the file alone: the project is read too
    assert result.returncode == 0, result.stdout + result.stderr  # nothing changed
    left_alone_then_crashes(tmp_path, "tests/check_lib.py", lib, "@jax.jit  # the step", "@jax.jit(donate_argnums=0)")

"""Generated worst cases: does any part of the analysis grow faster than the code?

Each case is one generated file whose size is set by ``n``:

* ``elifs``: one function, an ``if``/``elif`` chain of ``n`` branches, each
  keeping an alias of the donated state and donating it;
* ``long_scope``: one function of ``2 n`` statements, donating and reading
  one state again and again;
* ``module_rebinds``: ``n`` module-level statements rebinding one global
  from a jitted call (every rebinding is a possible origin of every call's
  argument);
* ``many_args``: a jitted function of ``n`` parameters, called in a loop
  with ``n`` arguments;
* ``operator_chain``: ``a + b + ...`` of ``n`` operands as a call's argument;
* ``donated_calls``: ``n`` donating calls in one scope, each result read later.

Each file is checked in this process by ``jaxmem.api.check_paths`` (no
cache, no project context, one job: the pipeline ``jaxmem check --no-cache``
runs, without the interpreter's start-up), best of ``--repeat`` runs, at
each size of ``--sizes``; the table gives the CPU seconds of the process
(all its threads: steady on a loaded machine, where wall time stretches),
the wall seconds, and the growth ratio cpu(2n) / cpu(n): about 2 for
linear work, 4 for quadratic.

Usage::

    .venv/bin/python benchmarks/worst_cases.py                    # sizes 250 500 1000 2000
    .venv/bin/python benchmarks/worst_cases.py --sizes 500 1000 --case elifs
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HEADER = '''import jax
import jax.numpy as jnp
from functools import partial


@partial(jax.jit, donate_argnums=(0,))
def step(x, g):
    return x - g


@jax.jit
def update(x, g):
    return x + g


'''


def elifs(n: int) -> str:
    lines = ["def train(state, k, g):"]
    for i in range(n):
        lines += [f"    {'if' if i == 0 else 'elif'} k == {i}:",
                  "        previous = state",
                  "        state = step(state, g)"]
    lines.append("    return state, previous\n")
    return HEADER + "\n".join(lines)


def long_scope(n: int) -> str:
    lines = ["def train(state, g):"]
    for i in range(n):
        lines += ["    state = step(state, g)", f"    y{i} = update(state, g)"]
    lines.append("    return state\n")
    return HEADER + "\n".join(lines)


def module_rebinds(n: int) -> str:
    return HEADER + "state = jnp.zeros(3)\ng = jnp.ones(3)\n" + "state = update(state, g)\n" * n


def many_args(n: int) -> str:
    names = ", ".join(f"a{i}" for i in range(n))
    return HEADER + (f"@jax.jit\ndef big({names}):\n    return a0\n\n\n"
                     f"def train({names}):\n    for _ in range(3):\n        a0 = big({names})\n    return a0\n")


def operator_chain(n: int) -> str:
    chain = " + ".join("state" if i % 2 == 0 else "g" for i in range(n))
    return HEADER + f"def train(state, g):\n    state = update({chain}, g)\n    return state\n"


def donated_calls(n: int) -> str:
    lines = ["def train(g):"]
    lines += [f"    s{i} = update(jnp.zeros(3), g)" for i in range(n)]
    lines += [f"    s{i} = step(s{i}, g)" for i in range(n)]
    lines.append("    return " + " + ".join(f"s{i}" for i in range(min(n, 50))) + "\n")
    return HEADER + "\n".join(lines)


def method_rebinds(n: int) -> str:
    # each write reads the name it rebinds: host-data and provenance questions must not revisit them
    lines = ["def train(g):", "    x = np.ones(3)"]
    lines += ["    x = x.reshape(3) if g else x.astype(np.float32)" for _ in range(n)]
    lines += ["    state = step(jnp.asarray(x), g)", "    return state\n"]
    return HEADER.replace("import jax\n", "import jax\nimport numpy as np\n", 1) + "\n".join(lines)


CASES = {f.__name__: f for f in (elifs, long_scope, module_rebinds, many_args, operator_chain, donated_calls,
                                 method_rebinds)}


def time_check(text: str, folder: str, repeat: int) -> tuple[float, float, int]:
    """Best CPU and wall seconds of ``check_paths`` on ``text``, and its number of findings."""
    from jaxmem.api import check_paths
    from jaxmem.settings import Settings

    path = os.path.join(folder, "case.py")
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
    best_cpu = best_wall = float("inf")
    found = 0
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        reports = check_paths([path], Settings(), use_cache=False, whole_project=False)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
        found = sum(len(r.findings) for r in reports)
    return best_cpu, best_wall, found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="only these cases (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the best counts (default: 1)")
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes)
    time_check(HEADER, tempfile.gettempdir(), 1)  # imports and first-use costs out of the figures
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| case | n | lines | CPU s | wall s | findings | growth cpu(n)/cpu(previous n) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.case or CASES:
            previous = None
            for n in sizes:
                text = CASES[name](n)
                cpu, wall, found = time_check(text, folder, args.repeat)
                growth = f"{cpu / previous:.2f}" if previous else "-"
                print(f"| {name} | {n} | {text.count(chr(10))} | {cpu:.2f} | {wall:.2f} | {found} | {growth} |",
                      flush=True)
                previous = cpu
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

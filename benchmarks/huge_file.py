"""Check and fix one generated file of about 5 MB with tens of thousands of jitted functions.

Each unit is a jitted update and the loop that calls it, so every unit is
a JXM001 finding (high confidence) and a fix::

    @jax.jit
    def update_00001(state, grad):
        return state - 0.1 * grad


    def train_00001(grads):
        state = jnp.zeros(4)
        for grad in grads:
            state = update_00001(state, grad)
        return state

Usage: ``python benchmarks/huge_file.py [--megabytes 5] [--out DIR]``; it
writes ``DIR/huge.py`` (default: ``benchmarks/.cache/huge``), then times
``jaxmem check --no-cache`` and ``jaxmem-fix --no-cache`` on it, each in
its own process, and prints the wall time and peak memory (max RSS) of each.
Measured figures are in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HEADER = "import jax\nimport jax.numpy as jnp\n\n"
UNIT = '''

@jax.jit
def update_{n:05d}(state, grad):
    return state - 0.1 * grad


def train_{n:05d}(grads):
    state = jnp.zeros(4)
    for grad in grads:
        state = update_{n:05d}(state, grad)
    return state
'''


def generate(megabytes: float) -> tuple[str, int]:
    """The text of a file of about ``megabytes`` MB, and its number of jitted functions."""
    target = int(megabytes * 1_000_000)
    parts, size, count = [HEADER], len(HEADER), 0
    while size < target:
        unit = UNIT.format(n=count)
        parts.append(unit)
        size += len(unit)
        count += 1
    return "".join(parts), count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), ".cache", "huge"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    text, count = generate(args.megabytes)
    path = os.path.join(args.out, "huge.py")
    with open(os.path.join(args.out, "pyproject.toml"), "w") as handle:
        handle.write('[project]\nname = "huge"\n')
        if len(text) > 10 * 1024 * 1024:  # above the default max-file-size
            handle.write(f"\n[tool.jaxmem]\nmax-file-size = {len(text) + 1}\n")
    bin_dir = os.path.dirname(sys.executable)
    print(f"{path}: {len(text) / 1e6:.2f} MB, {count} jitted functions")
    for name, command in (("check", [os.path.join(bin_dir, "jaxmem"), "check", "--no-cache", "-q", "huge.py"]),
                          ("fix", [os.path.join(bin_dir, "jaxmem-fix"), "--no-cache", "-q", "huge.py"])):
        with open(path, "w") as handle:
            handle.write(text)
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=args.out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, wait_status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        status = os.waitstatus_to_exitcode(wait_status)
        peak = usage.ru_maxrss / 1024  # Linux: KiB
        print(f"{name}: exit {status}, {seconds:.1f} s, peak {peak:.0f} MiB")
    with open(path) as handle:
        fixed = handle.read()
    print(f"fix: {fixed.count('donate_argnums')} of {count} definitions donate")
    return 0


if __name__ == "__main__":
    sys.exit(main())

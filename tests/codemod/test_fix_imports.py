"""The import jaxmem-fix adds sits where isort puts it: ``ruff check --select I`` passes on the fixed file.

Each header is isort-clean before the fix (checked too, so a case cannot
pass by accident); the fix turns ``@jax.jit`` into ``@partial(jax.jit, ...)``
and must leave the imports sorted.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fix_cases import code

from jaxmem.codemod import add_donations
from jaxmem.findings import DonationFix

BODY = "\n\n" + code('''
    @jax.jit
    def update(state, grad):
        return state - 0.1 * grad
    ''')

HEADERS = {
    "third-party only": "import jax\nimport jax.numpy as jnp\n",
    "stdlib section": '"""Doc."""\n\nimport os\nimport sys\nfrom typing import Any\n\nimport jax\nimport jax.numpy as jnp\n',
    "after __future__": "from __future__ import annotations\n\nimport jax\nimport jax.numpy as jnp\n",
    "joins from functools": "from functools import reduce, wraps\n\nimport jax\nimport jax.numpy as jnp\n",
    "joins a parenthesised list": "import os\nfrom functools import (\n    reduce,\n    wraps,\n)\n\nimport jax\n",
    "comment and relative imports": "# Training.\nimport jax\nimport jax.numpy as jnp\n\nfrom . import data\n",
    "comment above the block": '"""Doc."""\n\n# third-party\nimport jax\n',
    "stdlib straight imports only": "import os\nimport sys\n\nimport jax\n",
    "classes before functions": "from functools import WRAPPER_ASSIGNMENTS, cached_property\n\nimport jax\n",
}


def ruff() -> list[str]:
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError:
        if shutil.which("ruff") is None:
            pytest.skip("needs ruff (pip install -e '.[test]')")
        return ["ruff"]
    return [find_ruff_bin()]


def unsorted(path: Path) -> str:
    """ruff's import-sorting complaints about ``path`` ('' when none)."""
    result = subprocess.run([*ruff(), "check", "--isolated", "--select", "I", "--output-format", "concise",
                             str(path)], capture_output=True, text=True, check=False)
    return "" if result.returncode == 0 else result.stdout + result.stderr


@pytest.mark.parametrize("header", list(HEADERS.values()), ids=list(HEADERS))
def test_fixed_file_passes_ruff_import_sorting(tmp_path, header):
    source = header + BODY
    before = tmp_path / "before.py"
    before.write_text(source)
    assert unsorted(before) == "", "the case itself is not isort-clean"
    line = source.splitlines().index("@jax.jit") + 1
    result = add_donations(source, [DonationFix(line, 0, "state")], jax_version="0.4.30")
    assert result.error is None and result.changed
    assert "@partial(jax.jit, donate_argnums=0)" in result.source
    after = tmp_path / "after.py"
    after.write_text(result.source)
    assert unsorted(after) == "", result.source
    assert result.source.count("partial") == 2  # one import (or name), one use


def test_a_name_joins_the_existing_from_import_in_order():
    source = "from functools import reduce, wraps\n\nimport jax\n" + BODY
    line = source.splitlines().index("@jax.jit") + 1
    result = add_donations(source, [DonationFix(line, 0, "state")], jax_version="0.4.30")
    assert result.source.startswith("from functools import partial, reduce, wraps\n\nimport jax\n")


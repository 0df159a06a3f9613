"""Which qualified names and modules are the project's own code, not a library's.

Kept free of libcst: the configuration and the pre-filter need it on warm runs,
which must not pay for importing the parser.
"""

from __future__ import annotations

import sys


# Roots of qualified names that never hold a project's jitted callables, unless
# they are the project's own packages (jaxmem run on optax itself).
LIBRARY_ROOTS = frozenset(sys.stdlib_module_names) | frozenset(
    {"jax", "jaxlib", "numpy", "flax", "optax", "equinox", "haiku", "chex", "einops", "orbax",
     "absl", "tensorflow", "torch", "ml_collections", "tqdm", "wandb", "scipy", "pandas", "penzai",
     "haliax", "clu", "tensorstore", "etils", "numpy_typing"}
)


def is_project_module(module: str, own_packages=()) -> bool:
    """Whether ``module`` (``lib``, ``.sibling``, ``optax._src.alias``) is the project's own code,
    not a library's; ``own_packages`` are the library names the project itself defines
    (see :attr:`jaxmem.settings.Settings.own_packages`)."""
    root = module.split(".")[0]
    return module.startswith(".") or root not in LIBRARY_ROOTS or root in own_packages


def is_project_name(qualified: str, own_packages=()) -> bool:
    """Whether ``qualified`` (``lib.step``, ``.sibling.step``) names the project's own code.

    In a package named like a library (``optax`` checking optax itself) only its private
    names (``optax._src.utils._step``): a public one is proposed at medium whoever calls
    it, so following those imports would change no advice and cost much (about 1.6x the
    time on optax)."""
    root = qualified.split(".")[0]
    if qualified.startswith(".") or root not in LIBRARY_ROOTS:
        return True
    return root in own_packages and _is_private(qualified.rsplit(".", 1)[-1])


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def private_names_of(names) -> list[str]:
    """The private ones of ``names``: what counts of a module of a package named like a
    library (see :func:`is_project_name`)."""
    return [n for n in names if _is_private(n)]

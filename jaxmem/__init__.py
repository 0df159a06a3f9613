"""jaxmem: find, fix and verify buffer donation in JAX programs."""

__version__ = "0.1.0"


def load_ipython_extension(shell) -> None:
    """``%load_ext jaxmem`` in IPython or Jupyter: adds the ``%jaxmem`` magic (see :mod:`jaxmem.ipython`)."""
    from jaxmem.ipython import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell) -> None:
    """``%unload_ext jaxmem``."""
    from jaxmem.ipython import unload_ipython_extension as unload

    unload(shell)

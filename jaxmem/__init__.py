"""jaxmem: find, fix and verify buffer donation in JAX programs."""

__version__ = "0.1.0"

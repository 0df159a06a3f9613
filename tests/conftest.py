"""Shared test set-up: make the helper modules in tests/ importable."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

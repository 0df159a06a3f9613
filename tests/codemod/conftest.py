"""Make the shared case tables in this folder (fix_cases.py) importable."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

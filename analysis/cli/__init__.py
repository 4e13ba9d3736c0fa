"""The ``meleelab`` command line: parse, call the library, print or write what it returns.

``main`` is the console script's entry point (``meleelab = "analysis.cli:main"``).
"""

from .app import cli, main

__all__ = ["main", "cli"]

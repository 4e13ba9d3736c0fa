"""The matrix settings shared by ``meleelab matrix``, ``balance`` and ``report`` (and ``analysis.report.build.build_report``).

One set of defaults for the three commands, so that ``meleelab matrix RULESET`` and
``meleelab balance RULESET`` run the very cells of ``meleelab report RULESET``:
the same seed, precision and cap give the same numbers, and ``balance --from-matrix``
of a default matrix equals a default ``balance``. Kept in a module of its own, with
no imports, because the command line reads them to build its ``--help``.
"""

from __future__ import annotations

__all__ = ["DEFAULT_SEED", "DEFAULT_HALF_WIDTH", "DEFAULT_MAX_TRIALS"]

#: Matrices feed published reports: a fixed default seed makes them reproducible (``--seed`` to change it).
DEFAULT_SEED = 2026
#: Target Wilson half-width per cell (+-1 percentage point).
DEFAULT_HALF_WIDTH = 0.01
#: Trial cap per cell. 32,768 fights give +-0.54 pp at worst (p = 0.5), inside the
#: target, so no cell stops short of it: each stops at the first sub-block of 4,096
#: fights that meets it (at most 12,288 at p = 0.5); ask for more with
#: ``--max-trials`` / ``--half-width`` (a cap too low for the target is named on stderr).
DEFAULT_MAX_TRIALS = 32_768

"""`meleelab --help` and command-line errors load no heavy library (checked by what is imported, not by timing)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "pandas", "matplotlib", "rich")

#: Runs the CLI in-process in a fresh interpreter, then prints which heavy libraries it imported.
PROBE = """
import json, sys
from analysis.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(m for m in %r if m in sys.modules)}), file=sys.stderr)
""" % (HEAVY,)


def _probe(*argv: str) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["loaded"]


@pytest.mark.parametrize("argv, code", [
    (["--help"], 0),
    (["--version"], 0),
    (["fight", "--help"], 0),
    (["matrix", "--help"], 0),
    (["report", "--help"], 0),
    (["fight", "mecha", "AFS", "Nutrocker", "--bogus"], 2),  # a bad flag
    (["fight", "mecha", "AFS", "Nutrocker", "--trials", "0"], 2),  # a bad number
    (["sweep", "mecha", "AFS", "--vary", "defence=1..2"], 2),  # a missing OPPONENT / --all-opponents
])
def test_help_and_usage_errors_import_no_heavy_library(argv, code):
    assert _probe(*argv) == (code, [])


def test_errors_after_loading_the_rulesets_need_no_scipy_pandas_or_matplotlib():
    # an unknown ruleset and a unit not in the roster load the rulesets (NumPy), but nothing heavier
    for argv in (["fight", "chess", "A", "B"], ["fight", "mecha", "AFS", "Nobody"], ["units", "duel"],
                 ["units", "grimdark", "--json"]):
        code, loaded = _probe(*argv)
        assert code in (0, 2) and not {"scipy", "pandas", "matplotlib"} & set(loaded), (argv, loaded)


def test_z95_is_scipys_quantile_to_the_last_bit():
    from scipy import stats

    from sim.stats import Z95, wilson_interval

    assert Z95 == float(stats.norm.ppf(0.975))
    # other confidence levels still come from scipy
    lo, hi = wilson_interval(50, 100, confidence=0.9)
    assert (lo, hi) == pytest.approx(stats.binomtest(50, 100).proportion_ci(0.9, method="wilson"), abs=1e-12)


def test_import_sim_is_light_and_its_names_load_on_first_use():
    code = ("import sys, sim; before = sorted(m for m in ('numpy', 'scipy') if m in sys.modules); "
            "f, r, ids = sim.fight, sim.Roster, [rs.id for rs in sim.rulesets()]; "
            "print(before, callable(sim.rulesets), 'mecha' in ids, sim.__version__ != '', "
            "sorted(set(sim.__all__) - set(dir(sim))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["[]", "True", "True", "True", "[]"]

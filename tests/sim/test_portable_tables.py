"""Issue 30, item 2: the same seed gives the same counts on every machine.

A fresh ``report --all`` on another machine changed a duel cell (Reaver vs
Militia 0.547119 -> 0.546326) and pools rows: the tables the kernels draw from
were built with BLAS (``@``), NumPy's SIMD ``exp``/``log``/``power`` and the C
library's ``pow``/``exp``/``lgamma`` (``scipy.stats``, ``**``), whose last bits
depend on the CPU, and one bit moves a uniform to another outcome.

Another machine is emulated here on this one: NumPy's dispatched SIMD targets
switched off (``NPY_DISABLE_CPU_FEATURES``), OpenBLAS's plainest kernels
(``OPENBLAS_CORETYPE``), glibc's FMA variants of libm off (``GLIBC_TUNABLES``) and
Numba compiling for a generic CPU (``NUMBA_CPU_NAME``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest

from sim.kernels.portable import binomial_pmf, binomial_rows, int_power, matmul, max_of_d6_pmf

ROOT = Path(__file__).resolve().parents[2]

#: One small cell per ruleset and table builder: duel's group tables (the cell that changed) and chain,
#: pools' engagement tables one a side and at equal points, grimdark's count tables and round chain,
#: warband's strike and volley tables (compiled loop), mecha.
CELLS = [
    ("duel", "Reaver", "Militia", {"budget": 120}),
    ("duel", "Knight", "Sellsword", {"budget": "none"}),
    ("pools", "Gun Crew", "Berserkers", {"budget": "none"}),
    ("pools", "Militia", "Goblin Horde", {"budget": "none", "rounds": "end"}),
    ("pools", "Line Infantry", "Spear Wall", {}),
    ("grimdark", "Horde mob", "Terminators", {}),
    ("grimdark", "Troopers", "Assault squad", {"budget": "none", "rounds": "end"}),
    ("warband", "Mercenary Captain", "Champion", {}),
    ("mecha", "AFS", "Nutrocker", {}),
]

#: One exact chain per ruleset that has one (their dense products, sums and binomials).
EXACT_CELLS = [
    ("duel", "Knight", "Sellsword", {"budget": "none"}),
    ("pools", "Gun Crew", "Berserkers", {"budget": "none", "rounds": 3}),
    ("grimdark", "Troopers", "Assault squad", {"budget": "none", "rounds": "end"}),
    ("warband", "Champion", "Youngblood", {"budget": "none"}),
    ("mecha", "AFS", "Nutrocker", {"rounds": "end"}),
]

PROBE = """
import json, sys
import sim
cells, EXACT_CELLS = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = []
for ruleset, a, d, kw in cells:
    r = sim.fight(ruleset, a, d, trials=6000, seed=2026, method="mc", **kw)
    out.append({"cell": f"{ruleset}: {a} vs {d}", "counts": r.to_dict()["counts"],
                "damage": r.to_dict()["damage"], "outcomes": r.to_dict()["outcomes"]})
for ruleset, a, d, kw in EXACT_CELLS:  # the exact chains: probabilities to the last bit
    r = sim.fight(ruleset, a, d, method="exact", **kw)
    out.append({"cell": f"{ruleset}: {a} vs {d} (exact)", "win": [repr(p) for p in r.win.values()],
                "means": [repr(r.damage("attacker")[0]), repr(r.damage("defender")[0]), repr(r.mean_rounds[0])]})
print(json.dumps(out))
"""


def _other_machine_env(tmp_path: Path) -> dict[str, str]:
    """This machine made to compute like a plainer one (see the module docstring)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CPU_NAME="generic",
               NUMBA_CACHE_DIR=str(tmp_path / "numba-generic"))
    try:
        from numpy._core import _multiarray_umath as umath

        found = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    except (ImportError, AttributeError):  # pragma: no cover - another NumPy layout
        found = []
    if found:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(found)
    if platform.machine() in ("x86_64", "AMD64"):
        env["OPENBLAS_CORETYPE"] = "Prescott"
        env["GLIBC_TUNABLES"] = "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F"
    return env


def _counts(env: dict[str, str]) -> list[dict]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(CELLS), json.dumps(EXACT_CELLS)], env=env, cwd=ROOT,
                          text=True,
                          capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.slow  # a second interpreter fights the same cells (8 s)
def test_the_counts_do_not_depend_on_the_machine(tmp_path):
    here = _counts(dict(os.environ, PYTHONPATH=str(ROOT)))
    there = _counts(_other_machine_env(tmp_path))
    differ = [a["cell"] for a, b in zip(here, there) if a != b]
    assert not differ, f"counts differ on the emulated machine: {differ}"


def test_the_emulation_does_change_what_it_should(tmp_path):
    """The emulated machine really computes otherwise (so the test above can fail): BLAS sums or SIMD
    logarithms differ in their last bits, and the C library's pow too (on x86-64 with FMA)."""
    probe = ("import numpy as np, math; r = np.random.default_rng(1); a = r.random((64, 64)); "
             "print((a @ a).tobytes().hex()[:4000], np.log(a).tobytes().hex()[:4000], "
             "[math.pow(x, 7.3) for x in r.random(20000)].__repr__()[-2000:])")
    outs = [subprocess.run([sys.executable, "-c", probe], env=env, text=True, capture_output=True, timeout=120).stdout
            for env in (dict(os.environ), _other_machine_env(tmp_path))]
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the emulation switches are x86-64's")
    assert outs[0] != outs[1]


# ------------------------------------------------------------------ the arithmetic itself
@pytest.mark.parametrize("n,p", [(0, 0.3), (1, 0.5), (7, 1 / 3), (40, 1 / 6), (300, 0.5), (5, 0.0), (5, 1.0)])
def test_binomial_tables_are_exact_to_a_few_ulps(n, p):
    exact = [comb(n, k) * Fraction(p) ** k * (1 - Fraction(p)) ** (n - k) for k in range(n + 1)]
    row = binomial_pmf(n, p)
    assert np.array_equal(binomial_rows(n, p)[n, : n + 1], row)
    for k, e in enumerate(exact):
        if e > Fraction(1, 10**250):
            assert abs(Fraction(float(row[k])) / e - 1) < Fraction(4 * (n + 1), 2**53), (n, p, k)
        else:
            assert row[k] < 1e-240


def test_matmul_sums_in_index_order_and_skips_zeros():
    rng = np.random.default_rng(5)
    a, b = rng.random((9, 13)), rng.random((13, 6))
    a[:, 4] = 0.0
    a[2:, 7] = 0.0
    b[9, :3] = 0.0
    want = np.zeros((9, 6))
    for j in range(13):
        want = want + np.multiply.outer(a[:, j], b[j])
    assert np.array_equal(matmul(a, b), want)
    assert np.allclose(matmul(a, b), a @ b, rtol=1e-14)
    with pytest.raises(ValueError):
        matmul(a, a)


def test_powers_and_dice_maxima_are_exactly_rounded():
    assert int_power(0.1, 3) == 0.1 * 0.1 * 0.1 and int_power(2.5, 0) == 1.0
    for n in (1, 2, 5, 60):
        exact = [Fraction(k**n - (k - 1) ** n, 6**n) for k in range(1, 7)]
        assert max_of_d6_pmf(n) == [float(e) for e in exact]
    assert max_of_d6_pmf(0) == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]


#: Matrix products whose every partial sum is exact, so their order does not matter, or that are not BLAS.
EXACT_MATMUL = {
    "sim/rulesets/warband/phases.py": "float32 sums of distinct powers of two below 2**24",
    "sim/tally.py": "int64 histograms",
    # a scipy.sparse matrix times a vector: a plain loop over the stored entries in a fixed order (no BLAS);
    # the dense products of the exact chains go through sim.kernels.portable.matmul
    "sim/rulesets/duel/exact.py": "scipy.sparse CSR matrix-vector products",
    "sim/rulesets/grimdark/exact.py": "scipy.sparse CSR matrix-vector products",
}
#: Modules that import scipy.sparse for those products (scipy.stats and scipy.special stay banned).
SPARSE_ONLY = {"sim/rulesets/duel/exact.py", "sim/rulesets/grimdark/exact.py"}


def test_no_machine_dependent_arithmetic_in_the_table_builders():
    """The simulator builds its tables without BLAS, exp/log/pow or scipy.stats (sim/kernels/portable.py
    says why); a new use would bring back numbers that differ between machines."""
    import ast

    banned_calls = {"exp", "log", "log1p", "expm1", "power", "lgamma", "gammaln", "dot", "matmul", "einsum", "pow"}
    found = []
    for path in sorted((ROOT / "sim").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.endswith("reference.py") or rel.startswith("sim/testing/"):
            continue  # the scalar references and the conformance kit draw no tables
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                if rel not in EXACT_MATMUL:
                    found.append(f"{rel}:{node.lineno} @")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
                base_is_float = isinstance(node.left, ast.Constant) and isinstance(node.left.value, float)
                if base_is_float or isinstance(node.left, (ast.BinOp, ast.Subscript)) and \
                        isinstance(getattr(node.left, "op", None), ast.Div):
                    found.append(f"{rel}:{node.lineno} float **")
            elif isinstance(node, ast.Call):
                func = node.func
                library = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    func.value.id in ("np", "numpy", "math", "special", "stats", "scipy")
                if library and func.attr in banned_calls or isinstance(func, ast.Name) and func.id == "pow":
                    found.append(f"{rel}:{node.lineno} {ast.unparse(func)}()")
            elif isinstance(node, ast.ImportFrom) and node.module == "scipy" or \
                    isinstance(node, ast.Import) and any(a.name.startswith("scipy.stats") for a in node.names):
                sparse = rel in SPARSE_ONLY and isinstance(node, ast.ImportFrom) and \
                    [a.name for a in node.names] == ["sparse"]
                if rel not in ("sim/api.py", "sim/stats.py") and not sparse:  # a version; interval quantiles
                    found.append(f"{rel}:{node.lineno} scipy")
    assert not found, found

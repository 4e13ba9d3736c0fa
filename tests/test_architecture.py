"""The architecture as the README and pyproject.toml state it, checked on every run of the suite.

* the import contracts of ``pyproject.toml`` (``[tool.importlinter]``): ``sim`` never
  imports ``analysis``, pandas or matplotlib; ``analysis`` is four layers whose imports
  only point down (cli > report > runs > stats); ``stats`` draws no plots and fights
  nothing; rulesets share code only through ``sim.kernels`` and the protocol;
* ``analysis.stats`` reads and writes no files (pandas I/O included), which an import
  contract cannot see;
* no module is over 500 lines.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500
#: pandas and Python calls that read or write files.
FILE_CALLS = {"to_csv", "read_csv", "to_json", "read_json", "to_excel", "read_excel", "to_parquet", "read_parquet",
              "to_html", "read_html", "to_pickle", "read_pickle", "to_sql", "read_sql", "write_text", "write_bytes",
              "read_text", "read_bytes", "open", "savefig"}


def _lint_imports() -> Path | None:
    here = Path(sys.executable).parent / "lint-imports"
    return here if here.is_file() else (Path(p) if (p := shutil.which("lint-imports")) else None)


def test_import_contracts_hold():
    exe = _lint_imports()
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    run = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "4 kept, 0 broken" in run.stdout, run.stdout[-2000:]


def test_stats_reads_and_writes_no_files():
    offenders = []
    for path in sorted((ROOT / "analysis" / "stats").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if name in FILE_CALLS:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}()")
    assert not offenders, offenders


def test_no_module_is_over_500_lines():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in sorted([*(ROOT / "sim").rglob("*.py"),
                                                                 *(ROOT / "analysis").rglob("*.py")])
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not long, long

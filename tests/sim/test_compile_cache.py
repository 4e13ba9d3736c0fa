"""Issue 30, item 1: the compiled kernels' cache is never written inside the installed package.

Numba's ``cache=True`` writes ``*.nbi``/``*.nbc`` next to the source; in an
installed meleelab that is ``site-packages/sim/...``, which pip then leaves
behind as a folder without ``__init__.py`` that shadows the next install
(tests/test_quickstart.py runs the README's commands that broke). Here a copy of
the ``sim`` package stands for the installed one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Compiles and runs Vose's pairing (the smallest cached kernel), then says where Numba's settings stand.
PROBE = """
import numpy as np
import numba
before = (numba.config.CACHE_DIR, getattr(numba.config, "CACHE_LOCATOR_CLASSES", None))
from sim.kernels.alias import alias_tables
prob, alias = alias_tables(np.array([[0.5, 0.25, 0.25]]), compiled=True)
assert prob.tolist() == [1.0, 0.75, 0.75], prob
after = (numba.config.CACHE_DIR, getattr(numba.config, "CACHE_LOCATOR_CLASSES", None))
print("restored" if before == after else f"changed {before} -> {after}")
"""


def _installed_copy(tmp_path: Path) -> Path:
    """A copy of the ``sim`` package (as pip installs it) in ``tmp_path/site``."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "sim", site / "sim", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def _run(site: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    full.update(PYTHONPATH=str(site), **env)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=full, cwd=site.parent, text=True, capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _cache_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in (".nbi", ".nbc"))


def test_compiled_kernels_cache_in_the_user_cache_folder_not_the_package(tmp_path):
    site = _installed_copy(tmp_path)
    proc = _run(site, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert not _cache_files(site), _cache_files(site)
    assert _cache_files(tmp_path / "xdg" / "meleelab" / "numba")
    assert proc.stdout.strip() == "restored"  # other packages' Numba functions keep their own cache settings


def test_numba_cache_dir_is_honoured(tmp_path):
    site = _installed_copy(tmp_path)
    _run(site, NUMBA_CACHE_DIR=str(tmp_path / "mine"), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert not _cache_files(site) and not (tmp_path / "xdg").exists()
    assert _cache_files(tmp_path / "mine")


def test_an_unwritable_cache_folder_means_no_file_cache_never_the_package(tmp_path):
    """A cache folder that cannot be created (below a file): the kernel still runs, compiled in memory."""
    site = _installed_copy(tmp_path)
    (tmp_path / "a-file").write_text("x")
    _run(site, NUMBA_CACHE_DIR=str(tmp_path / "a-file" / "numba"))
    assert not _cache_files(site) and not _cache_files(tmp_path)


def test_every_cached_kernel_goes_through_njit_cached():
    """``cache=True`` written directly would bring back the cache next to the source."""
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "sim").rglob("*.py")
                 if p.name != "compile_cache.py"
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "cache=True" in line]
    assert not offenders, offenders


def test_njit_cached_refuses_fastmath():
    from sim.kernels.compile_cache import njit_cached

    with pytest.raises(ValueError, match="fastmath"):
        njit_cached(fastmath=True)

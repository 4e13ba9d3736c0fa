"""Issue 30, item 1: the README's two quick-start commands, run in order, leave a working install.

Command 1 installs meleelab and runs ``report --all``, which compiles the Numba
kernels; command 2 reinstalls it editable. When the kernels cached themselves
inside ``site-packages/sim/``, pip's uninstall left that folder behind without
``__init__.py`` and every ``meleelab`` command outside the repository failed
(``module 'sim' has no attribute 'rulesets'``).

The commands are read from the README and run as written, in a copy of the
repository, except: the test suite that ends command 2 is replaced by
``pytest --version`` (this test runs inside that suite), and the new
environment finds the third-party dependencies already installed here (a
``.pth`` file to a folder of links to them), so nothing large is downloaded
(pip still fetches setuptools for the build). Slow (a few minutes): run with
``pytest -m slow``, as ``.ci/run`` does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def quickstart_commands() -> list[str]:
    """The two commands of the README's quick start, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(commands) == 2 and "report --all" in commands[0] and '-e ".[dev]"' in commands[1], commands
    return commands


def _dependency_links(tmp_path: Path) -> Path:
    """A folder linking every package installed here except meleelab itself (its editable install)."""
    here = Path(sysconfig.get_paths()["purelib"])
    deps = tmp_path / "deps"
    deps.mkdir()
    for entry in here.iterdir():
        name = entry.name.lower()
        if name.startswith(("__editable__", "meleelab", "sim", "analysis", "_virtualenv", "distutils-precedence")) \
                or name.endswith(".pth"):
            continue
        (deps / entry.name).symlink_to(entry)
    return deps


def _copy_repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, text=True,
                            capture_output=True, check=True).stdout.splitlines()
    for rel in listed:
        src = ROOT / rel
        if rel.startswith("reports/") or not src.is_file():
            continue
        dst = repo / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    return repo


def test_the_readme_quick_start_run_in_order_leaves_a_working_meleelab(tmp_path):
    python3 = shutil.which("python3")
    if python3 is None:
        pytest.skip("the README's commands call python3")
    first, second = quickstart_commands()
    repo = _copy_repository(tmp_path)
    deps = _dependency_links(tmp_path)
    # the same interpreter as this suite's (so the linked compiled packages load), first on PATH as python3
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "NUMBA_CACHE"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", HOME=str(tmp_path / "home"),
               XDG_CACHE_HOME=str(tmp_path / "home" / ".cache"), PIP_DISABLE_PIP_VERSION_CHECK="1")

    def sh(command: str, cwd: Path = repo) -> subprocess.CompletedProcess:
        proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, text=True, capture_output=True,
                              timeout=1800)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        return proc

    def link_dependencies() -> None:
        site = next((repo / ".venv" / "lib").glob("python3*/site-packages"))
        (site / "meleelab_test_dependencies.pth").write_text(f"{deps}\n", encoding="utf-8")

    # command 1, its venv made first so that the dependencies are found installed
    venv_part, rest = first.split(" && ", 1)
    sh(venv_part)
    link_dependencies()
    sh(rest)
    assert (repo / "reports" / "index.html").is_file()
    # command 2 as written, but this suite's run replaced by a check that pytest is there
    install = re.sub(r"\.venv/bin/python -m pytest .*$", ".venv/bin/python -m pytest --version", second)
    assert install != second
    sh(install)
    site = next((repo / ".venv" / "lib").glob("python3*/site-packages"))
    leftovers = sorted(str(p.relative_to(site)) for p in site.glob("sim/**/*") if p.is_file())
    assert not leftovers, f"files left inside site-packages/sim after the reinstall: {leftovers[:10]}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = sh(f"{repo / '.venv' / 'bin' / 'meleelab'} rulesets", cwd=elsewhere).stdout
    assert "mecha" in out and "warband" in out

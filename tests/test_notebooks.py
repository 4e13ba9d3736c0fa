"""Every notebook runs top to bottom in a fresh ``python3`` kernel, in a child process (a run that
hangs is killed and tried once more, see ``_execute``).

Notebooks are committed without outputs; this executes them with nbclient (dev
dependencies: nbclient, nbformat, ipykernel, ipywidgets). A ruleset notebook
(``notebooks/<id>.ipynb``) is skipped only while its ruleset is not registered
or ships no default roster, so the suite stays green while rulesets land.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import sim
from sim.errors import InputError

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
#: Notebooks that exist whatever rulesets are registered.
GENERAL = ("00_quickstart.ipynb", "balancing_workflow.ipynb", "explorer.ipynb")
#: One notebook per ruleset, named by its id.
RULESET_IDS = ("mecha", "grimdark", "duel", "pools", "warband")
#: Seconds a notebook may run before it counts as hung (a guard, not a speed goal: speed lives in
#: `meleelab bench`; the notebooks take well under a minute each on a quiet 2-core machine).
BUDGET = float(os.environ.get("MELEELAB_NOTEBOOK_BUDGET", "600"))


def _registered() -> set[str]:
    return {rs.id for rs in sim.rulesets()}


def _skip_reason(stem: str) -> str | None:
    if stem not in RULESET_IDS:
        return None
    if stem not in _registered():
        return f"ruleset {stem!r} is not registered (no sim/rulesets/{stem}.py with RULESET yet)"
    try:
        sim.default_roster(stem)
    except InputError as e:
        return f"ruleset {stem!r} has no default roster yet ({e})"
    return None


def _all_notebooks() -> list[str]:
    found = {p.name for p in NOTEBOOKS.glob("*.ipynb")}
    return sorted(found | set(GENERAL) | {f"{r}.ipynb" for r in RULESET_IDS})


#: Seconds a whole notebook may take before its run counts as hung (the slowest takes about 30 s here).
HANG = float(os.environ.get("MELEELAB_NOTEBOOK_HANG", "300"))

#: Runs one notebook in a child process: argv = notebook, socket prefix, cell budget, working folder.
#: The kernel talks over Unix sockets, not TCP ports: with several test processes (and Dask clusters)
#: picking free ports at once, a kernel could lose a port to another process between the choice and
#: the bind, and the client then waited for ever (seen twice in full parallel runs, in explorer.ipynb:
#: kernel and client both idle, no timeout firing).
_RUNNER = """
import sys, nbformat, nbclient
from traitlets.config import Config
path, sockets, budget, folder = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ipc = Config({"KernelManager": {"transport": "ipc", "ip": sockets}})
nbclient.NotebookClient(nbformat.read(path, as_version=4), timeout=budget, kernel_name="python3", config=ipc,
                        resources={"metadata": {"path": folder}}).execute()
"""


def _execute(path: Path, tmp_path: Path, attempt: int) -> subprocess.CompletedProcess | None:
    """Run the notebook top to bottom in a fresh kernel, in a child process; None if it hung.

    A hung run is killed after :data:`HANG` seconds (its kernel exits when its parent dies).
    """
    env = {**os.environ, "MPLBACKEND": "Agg"}   # no display needed, nothing pops up
    args = [sys.executable, "-c", _RUNNER, str(path), str(tmp_path / f"kernel{attempt}"), str(int(BUDGET)),
            str(NOTEBOOKS)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


#: The notebooks that fight for seconds to a minute (each ruleset's, the balancing workflow) and the explorer
#: (its widget kernel has been seen to hang once in a while, which costs the five-minute HANG before the rerun):
#: run by ``pytest -m slow`` (``.ci/run`` does), so the default suite stays within five minutes on two cores;
#: the quick start runs in every suite.
SLOW_NOTEBOOKS = {"balancing_workflow.ipynb", "explorer.ipynb", *(f"{r}.ipynb" for r in RULESET_IDS)}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_NOTEBOOKS else n
                                  for n in _all_notebooks()])
def test_notebook_runs(name: str, tmp_path: Path) -> None:
    path = NOTEBOOKS / name
    reason = _skip_reason(path.stem)
    if reason:
        pytest.skip(reason)
    assert path.is_file(), f"{path} is missing"
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        f"{name} is committed with outputs: clear them before committing"
    run = _execute(path, tmp_path, 1)
    if run is None:  # hung (see _execute): once more, so that a lost message neither fails nor blocks the suite
        warnings.warn(f"{name} hung for {HANG:.0f} s and was run again", stacklevel=1)
        run = _execute(path, tmp_path, 2)
    assert run is not None, f"{name} hung twice ({HANG:.0f} s each)"
    assert run.returncode == 0, f"{name} failed:\n{run.stderr[-4000:]}"


def test_every_registered_ruleset_has_a_notebook() -> None:
    missing = [r for r in sorted(_registered()) if not (NOTEBOOKS / f"{r}.ipynb").is_file()]
    assert not missing, f"no notebook for {', '.join(missing)} (add notebooks/<id>.ipynb)"


def test_explorer_builds_and_updates_without_a_frontend() -> None:
    pytest.importorskip("ipywidgets")
    from analysis.explore import explorer, stat_fields, unit_stats

    ex = explorer("mecha", "AFS", "Nutrocker", trials=5_000, seed=3, plot=False)
    assert ex.error is None
    p = dict(zip(ex.table["quantity"], ex.table["value"]))
    assert abs(sum(v for k, v in p.items() if "wins" in k or k == "draw") - 1) < 1e-12
    # a slider change becomes an override, a checkbox a state, exactly as --set would
    ex.set(**{"attacker.defence": 5, "defender.evading": True})
    ex.update()
    s = ex.settings()
    assert s["overrides"] == {"attacker": {"defence": 5}}
    assert s["states"]["defender"]["evading"] is True
    # an evading defender's opponent does not roll: the AFS cannot be harmed
    assert ex.result.damage("attacker")[0] == 0
    # an impossible matchup is reported, not raised
    ex.set(**{"defender.immobilised": True})
    assert ex.update() is None and "cannot evade" in ex.error
    assert {f.name for f in stat_fields("mecha")} == {"defence", "physical"}
    assert unit_stats("mecha", sim.default_roster("mecha").unit("AFS")) == {"defence": 2, "physical": 0}


@pytest.mark.parametrize("ruleset", sorted(r.id for r in sim.rulesets()))
def test_explorer_works_for_every_ruleset(ruleset: str) -> None:
    pytest.importorskip("ipywidgets")
    from analysis.explore import explorer

    ex = explorer(ruleset, trials=2_000, seed=1)  # with the plot: every widget kind, optional states included
    assert ex.error is None, ex.error
    assert ex.command().startswith(f"meleelab fight {ruleset} ")
    assert abs(ex.table["value"].iloc[:3].sum() - 1) < 1e-12


def test_guide_lists_every_field_of_every_ruleset() -> None:
    """docs/guide.md's field tables are generated from the schemas; this catches a schema that moved on."""
    guide = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text(encoding="utf-8")
    reference = guide.split("## 11. Field reference", 1)[-1]
    missing = []
    for rs in sim.rulesets():
        head = f"### `{rs.id}`:"
        if head not in reference:
            missing.append(f"{rs.id} (no section)")
            continue
        section = reference.split(head, 1)[1].split("\n### `", 1)[0]
        names = [f.name for f in rs.unit_fields] + [s.name for s in rs.state_fields] + [f.name for f in rs.option_fields]
        missing += [f"{rs.id}.{n}" for n in names if f"| `{n}` |" not in section]
    assert not missing, f"docs/guide.md section 11 lacks {', '.join(missing)}: regenerate the field tables"

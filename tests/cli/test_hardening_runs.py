"""Issue 30, items 5 to 8: memory refused before the work, a clamped local cluster, a cluster that dies,
and the tracebacks that were left (an empty --out, unusable scheduler addresses, closed standard output).
"""

from __future__ import annotations

import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import sim
from analysis.cli import main
from sim.limits import cpu_count

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code, err, *needles):
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("meleelab: error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT))


# ------------------------------------------------------------------ item 5: memory, before the work
def grimdark_roster(path: Path, squads: int, budget: int) -> Path:
    """``squads`` copies of the shipped grimdark squads, renamed, at ``budget`` points."""
    text = (ROOT / "sim" / "rosters" / "grimdark.toml").read_text(encoding="utf-8")
    head, *units = re.split(r"(?m)^\[\[unit\]\]\n", text)
    head = re.sub(r"(?m)^budget = \d+", f"budget = {budget}", head)
    body = [re.sub(r'(?m)^name = "([^"]+)"', lambda m, k=k: f'name = "{m.group(1)} {k}"', units[k % len(units)],
                   count=1) for k in range(squads)]
    path.write_text(head + "".join("[[unit]]\n" + u for u in body), encoding="utf-8")
    return path


def _capped() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.slow  # builds and fights the first chunk of a 100-squad matrix (6 s)
def test_a_100_squad_matrix_is_not_refused_and_fights_within_3_gib(tmp_path):
    """The issue's roster (about 10 GiB of tables if built at once) was refused for its size; a matrix now
    streams its cells (analysis.runs.streaming): with 3 GiB of address space it starts fighting in seconds."""
    roster = grimdark_roster(tmp_path / "g100.toml", 100, 1000)
    proc = subprocess.Popen([sys.executable, "-m", "analysis", "matrix", "grimdark", "--roster", str(roster),
                             "--max-trials", "200"], env=_env(), text=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=_capped)
    said: list[str] = []

    def read() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            said.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and proc.poll() is None and \
                not any(ln.startswith("meleelab: grimdark matrix: ") for ln in said):
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
    assert not any("error" in ln for ln in said), said
    assert any(re.match(r"meleelab: grimdark matrix: [\d,]+ of [\d,]+ cells", ln) for ln in said), said


def _count_builds(monkeypatch, module, name) -> list:
    built: list = []
    real = getattr(module, name)

    def counting(*args, **kwargs):
        built.append(args[:3])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return built


def test_the_matrix_fights_a_chunk_of_plans_before_it_builds_the_rest(monkeypatch):
    import sim.limits
    from analysis.runs import fielding, streaming
    from analysis.runs.matrix import matchup_matrix

    # four of the roster's squads: 49 plans, ~90 MiB, against limits of 8 MiB (the whole roster built 361 plans,
    # ~230 MiB, against 64 MiB: the same streaming in 5 s instead of 1.5 s)
    monkeypatch.setattr(sim.limits, "PLANS_BUDGET", 8 << 20)  # no longer refuses a matrix over it
    monkeypatch.setattr(sim.limits, "STREAM_PLAN_BYTES", 8 << 20)
    built = _count_builds(monkeypatch, fielding.RunContext, "build")
    at_fights: list[int] = []
    real = streaming.run_jobs

    def spy(rs, root, jobs, **kw):
        at_fights.append(len(built))
        return real(rs, root, jobs, **kw)

    monkeypatch.setattr(streaming, "run_jobs", spy)
    m = matchup_matrix("grimdark", units=["Troopers", "Horde mob", "Swarm", "Monster"], max_trials=100, method="mc")
    assert (m.long.trials > 0).any() and len(at_fights) > 1
    assert at_fights[0] < len(built)  # the first chunk is fought before the others are built


def test_the_sweep_estimate_comes_from_the_first_and_last_values(monkeypatch):
    import sim.limits
    from analysis.runs import sweep as sweep_module

    monkeypatch.setattr(sim.limits, "PLANS_BUDGET", 8 << 20)
    built = _count_builds(monkeypatch, sweep_module.sim, "build_matchup")
    opponents = ["Troopers", "Swarm", "Horde mob"]
    with pytest.raises(sim.InputError, match=r"sweep: the tables of its 300 matchups .* first and last values"):
        sweep_module.sweep("grimdark", "Troopers", "models", list(range(1, 101)), opponents, trials=100)
    assert len(built) == 2 * len(opponents)


# ------------------------------------------------------------------ item 6: local:N clamped
def test_scheduler_local_n_is_clamped_to_the_cores_with_a_note(capsys, monkeypatch):
    distributed = pytest.importorskip("distributed")
    started: list[int] = []
    real = distributed.LocalCluster

    class Recording(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            started.append(kwargs["n_workers"])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(distributed, "LocalCluster", Recording)
    asked = cpu_count() + 10
    code, out, err = run(capsys, "fight", "mecha", "AFS", "Nutrocker", "--trials", "1000", "--seed", "1", "--json",
                         "--scheduler", f"local:{asked}")
    assert code == 0 and out.strip(), err
    assert started == [cpu_count()]
    notes = [ln for ln in err.splitlines() if ln.strip()]
    assert notes == [f"meleelab: note: --scheduler local:{asked} is more than the {cpu_count()} cores here; "
                     f"used local:{cpu_count()}"], err


# ------------------------------------------------------------------ item 7: a cluster that dies
def test_a_cluster_failure_is_one_line(capsys, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from analysis.runs import pairs  # the one-a-side cells of a matrix (analysis.runs.pairs.fixed_cells)

    def lost(*args, **kwargs):
        raise distributed.client.FutureCancelledError("run_items-1", reason="scheduler-connection-lost")

    monkeypatch.setattr(pairs, "run_jobs", lost)
    code, _, err = run(capsys, "matrix", "mecha", "--units", "AFS,Nutrocker", "--max-trials", "100", "--quiet")
    one_line(code, err, "--scheduler: the Dask cluster failed during the run", "scheduler-connection-lost")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # a minute of waiting for a scheduler and its worker to start, then die
@pytest.mark.parametrize("after,expected", [(3, "--scheduler"),
                                            (20, "--scheduler: the Dask cluster failed during the run")])
def test_a_scheduler_killed_mid_run_is_one_line(after, expected):
    """Killed early, while the command connects, checks the workers, builds the plans or sends the first tasks
    (the client could then close with tasks still pending, and the command waited for them for ever: any of
    these moments is one line), and while the blocks run (a 46-line traceback)."""
    pytest.importorskip("distributed")
    address = f"tcp://127.0.0.1:{_free_port()}"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", address.rsplit(":", 1)[1], "--no-dashboard"], **quiet)
    worker = command = None
    try:
        time.sleep(3)
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "1",
                                   "--nthreads", "1", "--no-dashboard"], **quiet)
        time.sleep(5)
        command = subprocess.Popen([sys.executable, "-m", "analysis", "matrix", "warband", "--half-width", "0.0005",
                                    "--max-trials", "50000000", "--quiet", "--scheduler", address],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
        time.sleep(after)
        assert command.poll() is None, command.communicate()[1]
        scheduler.send_signal(signal.SIGKILL)
        _, err = command.communicate(timeout=120)
    finally:
        for p in (command, worker, scheduler):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    # the cost announced before a long run starts is the line before; the failure is one line of its own
    err = "".join(ln for ln in err.splitlines(keepends=True) if not ln.startswith("meleelab: estimate: "))
    one_line(command.returncode, err, expected)


def test_a_closed_client_with_tasks_in_flight_ends_the_wait():
    """The wait for a task looks at the client: once it has closed, the pending tasks will never finish."""
    from concurrent.futures import Future

    from sim import executor as ex

    class ClosingClient:  # taken for a Dask client (sim.executor.is_dask_client: its module and scheduler_info)
        status = "running"
        scheduler_info = None

        def submit(self, fn, *args, pure=True):
            return Future()  # never finishes

        def nthreads(self):
            return {"w": 1}

    ClosingClient.__module__ = "distributed.client"
    client = ClosingClient()
    assert ex.is_dask_client(client)
    tasks = ex.TaskQueue(client)
    tasks.submit("a", print)
    client.status = "closed"
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            tasks.next()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            raised.append(e)

    waiter = threading.Thread(target=wait, daemon=True)  # (the old wait never returned: a thread, not the test)
    waiter.start()
    waiter.join(timeout=5 * ex.CLIENT_POLL)
    assert not waiter.is_alive(), "still waiting for tasks of a closed client"
    assert len(raised) == 1 and isinstance(raised[0], ex.ClusterLostError) and "closed" in str(raised[0])


# ------------------------------------------------------------------ item 8: tracebacks
@pytest.mark.parametrize("command", [["report", "mecha", "--max-trials", "100"],
                                     ["matrix", "mecha", "--units", "AFS,Nutrocker"], ["balance", "mecha"],
                                     ["report", "--all"]])
def test_an_empty_out_is_one_line(capsys, command):
    code, _, err = run(capsys, *command, "--out", "")
    one_line(code, err, "--out", "an empty path")


@pytest.mark.parametrize("address", ["ucx://x", "tls://127.0.0.1:1"])
def test_unusable_scheduler_addresses_are_one_line(capsys, address):
    pytest.importorskip("distributed")
    code, _, err = run(capsys, "fight", "mecha", "AFS", "Nutrocker", "--trials", "10", "--scheduler", address)
    one_line(code, err, f"--scheduler {address}: cannot connect")


def test_closed_standard_output_is_one_line():
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m analysis rulesets >&-"], env=_env(), text=True,
                          capture_output=True, timeout=120)
    one_line(proc.returncode, proc.stderr, "cannot write standard output (it is closed)")


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``meleelab units ... | head`` stops when head stops reading: status 0, nothing on stderr (the usual
    Unix behaviour; it was status 1 from click's own handler). The output is larger than a pipe's buffer, so
    the write does meet the closed pipe."""
    roster = tmp_path / "many.csv"
    roster.write_text("name,defence,physical,armour\n" + "".join(f"Unit number {k},2,0,B\n" for k in range(4000)),
                      encoding="utf-8")
    script = (f"set -o pipefail; {sys.executable} -m analysis units mecha --roster {roster} | head -c 10 "
              ">/dev/null")
    proc = subprocess.run(["bash", "-c", script], env=_env(), text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0 and not proc.stderr.strip(), (proc.returncode, proc.stderr)

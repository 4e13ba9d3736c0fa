"""Property: the CLI, given any roster and any command line, exits 0 with complete output or 2 with one line.

Random rosters (valid and corrupted, TOML and CSV, every ruleset, :mod:`tests.fuzz.strategies`)
and random command lines for every command (diff: run folders with generated, sometimes corrupted
matrix files) run in-process through
:func:`analysis.cli.main`. For every example:

* exit 0: standard output is there (JSON parses under ``--json``), every file
  the command promises under ``--out`` exists, no CSV cell could run as a
  spreadsheet formula and no Markdown output carries raw HTML from a name;
* exit 2: exactly one line on stderr, ``meleelab: error: ...``, no traceback;
* nothing else (no exception escapes ``main``, no other status).

Deterministic (``derandomize=True``) and small enough for the normal suite; set
``MELEELAB_FUZZ_EXAMPLES`` to run more examples locally (``pytest tests/fuzz -s``
prints how many ran and how they ended).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim
from analysis.cli import main
from analysis.report.safe_csv import FORMULA_START
from sim.names import visible

from .strategies import RULESET_IDS, matrix_files, one_in, roster_files

pytestmark = pytest.mark.fuzz

#: Examples per property in the normal suite (about a minute for all the fuzz tests on one core).
EXAMPLES = int(os.environ.get("MELEELAB_FUZZ_EXAMPLES", "0")) or None
#: A third of each property's examples in the default suite (five minutes on two cores); all of them with
#: MELEELAB_FUZZ_FULL=1, which .ci/run's second step sets.
FULL = os.environ.get("MELEELAB_FUZZ_FULL") == "1"


def examples(full: int, part: int = 3) -> int:
    """``full`` with MELEELAB_FUZZ_FULL=1, else ``full // part`` (a third; less for the slowest property)."""
    return EXAMPLES or (full if FULL else full // part)
#: A file to append every example's command line, status and stderr to (for reading what the fuzzer tried).
LOG = os.environ.get("MELEELAB_FUZZ_LOG")

#: Files each command promises under --out.
OUT_FILES = {
    "matrix": ["matrix_long.csv", "matrix.csv", "matrix.json", "matrix.png"],
    "sweep": ["sweep.csv", "sweep_marginal.csv", "sweep.png"],
    "compare": ["compare.csv"],
    "balance": ["rankings.csv", "nash.csv", "dominated.csv", "cycles.csv", "fair_points.csv", "points_efficiency.csv",
                "side_averaged.csv", "payoff.csv", "balance_model.txt"],
    "report": ["report.html", "summary.md", "metadata.json", "matrix_long.csv", "matrix.csv", "matrix.png",
               "units.csv", "switches.csv", "rankings.csv"],
    "diff": ["diff.csv", "diff_changed.csv", "diff.png"],
    "rebalance": ["rebalanced.toml", "changes.csv", "verification.csv", "summary.md", "report.html", "metadata.json"],
}

# ------------------------------------------------------------------ flag values
# Each flag: (valid values, invalid values); the invalid ones must give one line and exit 2.
SMALL_TRIALS = (["1", "7", "100", "600"], ["0", "-1", "many", "1e3", "٣", "1_000", str(10**20), ""])
RUN_FLAGS: dict[str, tuple[list[str], list[str]]] = {
    "--seed": (["0", "1", "42", str(2**64)], ["-1", "x", str(2**200), "1.5"]),
    "--rounds": (["1", "2", "end", "END"], ["0", "1001", str(10**9), "x", "-2", "٢", ""]),
    "--max-rounds": (["1", "5", "50"], ["0", str(10**11), "x", "1001"]),
    "--workers": (["1", "1", "1", "0", "99"], ["x", "1.5"]),
    "--half-width": (["0.2", "0.1", "0.45"], ["0", "0.5", "-1", "nan", "inf", "x"]),
    "--seconds": (["0.001", "0.002"], ["-1", "0", "61", "nan", "x"]),
    "--z": (["3", "2.5", "6"], ["0", "-1", "nan", "inf", "x"]),
    # only addresses refused before any connection: a cluster per example would take seconds
    "--scheduler": ([], ["local:0", "local:x", "local:-2", "local:", "", "tcp://a b"]),
    # mostly one unit a side: the shipped rosters' own budgets field group fights, slow for tiny runs
    "--budget": (["none", "none", "none", "60"], ["-1", "0", "x", "inf", "٣00", "1_000"]),
}
#: Flags without a value, added now and then (a valid --fresh reruns from an empty store).
SWITCHES = {"matrix": ["--fresh"], "sweep": ["--fresh"], "report": ["--fresh"]}
#: Trial-count flags per command (kept tiny: the point is the paths, not the numbers).
TRIAL_FLAG = {"fight": "--trials", "sweep": "--trials", "compare": "--trials", "matrix": "--max-trials",
              "balance": "--max-trials", "report": "--max-trials"}
#: Flags each command takes besides its trial count (a new flag is one entry here and one in RUN_FLAGS).
COMMAND_FLAGS = {
    "fight": ["--seed", "--rounds", "--max-rounds", "--workers"],
    "matrix": ["--seed", "--rounds", "--max-rounds", "--workers", "--half-width"],
    "sweep": ["--seed", "--rounds", "--max-rounds", "--workers"],
    "compare": ["--seed", "--rounds", "--max-rounds", "--workers"],
    "balance": ["--seed", "--rounds", "--max-rounds", "--half-width"],
    "report": ["--seed", "--rounds", "--max-rounds", "--half-width"],
    "bench": ["--seconds"],
}


def flag_value(draw: Callable, flag: str, values: tuple[list[str], list[str]]) -> list[str]:
    good, bad = values
    return [flag, draw(st.sampled_from(bad) if not good or one_in(draw, 12) else st.sampled_from(good))]


def set_items(draw: Callable, rid: str) -> list[str]:
    """``--set`` items from the ruleset's states, options and unit fields, with valid and invalid values."""
    rs = sim.get_ruleset(rid)
    items = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.integers(0, 3))
        if kind == 0 and rs.state_fields:
            s = draw(st.sampled_from(rs.state_fields))
            side = draw(st.sampled_from(list(s.sides)))
            value = draw(st.sampled_from(["true", "false", "0", "1", "-1", "3", "x"]))
            items.append(f"{side}.{s.name}={value}")
        elif kind == 1 and rs.option_fields:
            f = draw(st.sampled_from([f for f in rs.option_fields if f.kind != "table"]))
            choices = list(f.choices) or ["true", "false", "1", "-1", "x", "custom", "chart.toml"]
            items.append(f"{f.name}={draw(st.sampled_from(choices))}")
        elif kind == 2:
            f = draw(st.sampled_from([f for f in rs.unit_fields if f.name != "name"]))
            value = draw(st.sampled_from(["1", "2", "3", "0", "none", "x", "99", "2_0"]))
            items.append(f"{draw(st.sampled_from(['attacker', 'defender']))}.{f.name}={value}")
        else:
            items.append(draw(st.sampled_from(["nonsense", "=", "attacker.=3", "sideways.x=1", "x=", "a.b.c=1"])))
    return [a for item in items for a in ("--set", item)]


def int_field(draw: Callable, rid: str) -> tuple[str, int]:
    """An integer unit field of the ruleset and a value in its range (``("x", 1)`` for an unknown ruleset)."""
    if rid not in RULESET_IDS:
        return "x", 1
    rs = sim.get_ruleset(rid)
    fields = [f for f in rs.unit_fields if f.kind == "int" and f.lo is not None]
    if rid == "grimdark":
        from sim.rulesets.grimdark.units import PROFILE_FIELDS

        fields = [f for f in PROFILE_FIELDS if f.kind == "int" and f.lo is not None]
    f = draw(st.sampled_from(fields))
    return f.name, draw(st.integers(int(f.lo), int(f.hi if f.hi is not None else f.lo + 5)))


# ---------------------------------------------------------------- command lines
@st.composite
def command_lines(draw: Callable, tmp: Path) -> tuple[list[str], str]:
    """``(argv, command)``, with the roster and matrix files it names written into ``tmp``."""
    command = draw(st.sampled_from(["fight", "matrix", "sweep", "compare", "balance", "fight", "matrix", "units",
                                    "fight", "balance", "report", "rulesets", "bench", "diff", "diff", "rebalance"]))
    if command == "diff":
        return diff_line(draw, tmp), command
    if command == "rebalance":
        return rebalance_line(draw, tmp), command
    if command == "rulesets":
        return ["rulesets"] + (["--json"] if one_in(draw, 2) else []), command
    if command == "bench":
        rids = draw(st.lists(st.sampled_from(RULESET_IDS + ["chess"]), min_size=1, max_size=1))
        argv = ["bench", *rids, *flag_value(draw, "--seconds", RUN_FLAGS["--seconds"])]
        return argv + (["--json"] if one_in(draw, 2) else []), command

    use_file = command in ("matrix", "balance", "report") or draw(st.integers(0, 3)) > 0
    if use_file:
        rid, suffix, text, names = draw(roster_files())
        path = tmp / f"roster{suffix}"
        path.write_text(text, encoding="utf-8")
        roster = ["--roster", str(path)]
    else:
        rid = draw(st.sampled_from(RULESET_IDS))
        names = sim.default_roster(rid).names
        roster = []
    if one_in(draw, 20):
        rid = draw(st.sampled_from(["chess", "MECHA", ""]))
    name = st.sampled_from(["Nobody", "", "a,b"]) if one_in(draw, 10) else st.sampled_from(names)
    argv = [command, rid]
    if command == "units":
        return argv + roster + (["--json"] if one_in(draw, 2) else []), command
    if command == "fight":
        argv += [draw(name), draw(name)]
    elif command == "sweep":
        argv += [draw(name)]
        argv += [draw(name)] if one_in(draw, 2) else ["--all-opponents"]  # one opponent, or every unit of the roster
        field, lo = int_field(draw, rid)
        vary = f"{field}={lo}..{lo + draw(st.integers(0, 2))}"
        if one_in(draw, 6):
            vary = draw(st.sampled_from(["defence=0..100000000000", "ws=1..", "=1..2", "ws=3..1", "ws=١..٣", "ws"]))
        argv += ["--vary", vary]
        if one_in(draw, 2):
            argv += ["--side", draw(st.sampled_from(["attacker", "defender", "defender", "both"]))]
    elif command == "compare":
        argv += [draw(name)]
        field, value = int_field(draw, rid)
        variant = f"{field}={value}" if not one_in(draw, 3) else draw(name)
        argv += [draw(st.sampled_from(["x=", "=1", "a=1,b", "points=0"])) if one_in(draw, 10) else variant]
        argv += draw(st.lists(name, max_size=2))
        if one_in(draw, 2):
            argv += ["--role", draw(st.sampled_from(["both", "attacker", "defender"]))]
    elif command in ("matrix", "balance", "report"):
        if one_in(draw, 3):
            chosen = draw(st.lists(name, min_size=1, max_size=3))
            if one_in(draw, 2):
                buf = io.StringIO()
                csv.writer(buf, lineterminator="").writerow(chosen)  # CSV quoting, as the help says
                argv += ["--units", buf.getvalue()]
            else:
                argv += [a for n in chosen for a in ("--unit", n)]
        if command == "balance" and one_in(draw, 3):
            matrix = tmp / "matrix_long.csv"
            matrix.write_text(draw(matrix_files()), encoding="utf-8")
            argv += ["--from-matrix", str(matrix)]
    argv += roster
    good_trials, bad_trials = SMALL_TRIALS
    if command in ("matrix", "balance", "report"):  # many cells: fewer fights each
        good_trials = ["1", "50", "200"]
    argv += flag_value(draw, TRIAL_FLAG[command], (good_trials, bad_trials))
    for flag in COMMAND_FLAGS[command]:
        if one_in(draw, 3):
            argv += flag_value(draw, flag, RUN_FLAGS[flag])
    if command in TRIAL_FLAG and one_in(draw, 25):
        argv += flag_value(draw, "--scheduler", RUN_FLAGS["--scheduler"])
    argv += [f for f in SWITCHES.get(command, []) if one_in(draw, 4)]
    if command in TRIAL_FLAG:  # always given: the roster's budget would be the default
        argv += flag_value(draw, "--budget", RUN_FLAGS["--budget"])
    if command != "units":
        argv += set_items(draw, rid if rid in RULESET_IDS else "mecha")
    if command in OUT_FILES and (command == "report" or one_in(draw, 2)):
        out = draw(st.sampled_from(["FILE/below", "/proc/meleelab-nope/x"]) if one_in(draw, 8)
                   else st.sampled_from(["out", "out/deeper"]))
        (tmp / "FILE").write_text("a file, not a folder")
        argv += ["--out", out if out.startswith("/") else str(tmp / out)]
    if command == "fight" and one_in(draw, 2):
        argv += ["--json"]
    if command == "report" and rid == "mecha" and one_in(draw, 3):
        argv += ["--rebalance"]  # mecha cannot field copies: the report is written and says why (issue 38, item 7)
    return argv + ["--quiet"], command


#: Two or three one-model duel units at 60 points: a rebalance of a few seconds.
TINY_DUEL = """ruleset = "duel"
budget = 60
[[unit]]
name = "Guard"
count = 1
wounds = 2
toughness = 4
ws = 3
strength = 3
points = {guard}
weapon = {{ strength = 3, damage = 1 }}
[[unit]]
name = "Blade"
count = 1
wounds = 1
toughness = 4
ws = 5
strength = 3
points = 20
weapon = {{ strength = 4, damage = 1 }}
"""


def rebalance_line(draw: Callable, tmp: Path) -> list[str]:
    """``rebalance duel --roster TINY`` with its flags drawn from valid and invalid values."""
    roster = tmp / "tiny.toml"
    roster.write_text(TINY_DUEL.format(guard=draw(st.sampled_from([20, 25, 30, 45]))), encoding="utf-8")
    argv = ["rebalance", "duel", "--roster", str(roster), "--max-trials", draw(st.sampled_from(["64", "256", "0"])),
            "--half-width", draw(st.sampled_from(["0.3", "0.45", "0.5"]))]
    if one_in(draw, 2):
        argv += ["--round-to", draw(st.sampled_from(["1", "5", "2.5", "20", "60", "61", "500", "0", "-1", "x"]))]
    if one_in(draw, 2):
        argv += ["--tolerance", draw(st.sampled_from(["2", "10", "25", "0", "26", "nan"]))]
    if one_in(draw, 3):
        argv += ["--lock", draw(st.sampled_from(["Guard", "Blade", "Nobody", ""]))]
    if one_in(draw, 3):
        argv += ["--budget", draw(st.sampled_from(["60", "90", "none", "10", "-1", "x"]))]
    for flag in ("--seed", "--rounds", "--max-rounds"):
        if one_in(draw, 4):
            argv += flag_value(draw, flag, RUN_FLAGS[flag])
    if one_in(draw, 4):
        argv += ["--method", draw(st.sampled_from(["auto", "mc", "exact"]))]
    if one_in(draw, 2):
        argv += ["--out", draw(st.sampled_from([str(tmp / "out"), str(tmp / "out" / "deeper"), "", str(tmp / "FILE")]))]
        (tmp / "FILE").write_text("a file, not a folder")
    return argv + ["--quiet"]


def diff_line(draw: Callable, tmp: Path) -> list[str]:
    """``diff OLD NEW``: run folders with a generated matrix_long.csv (valid or corrupted), or paths that are not."""
    folders = []
    for side in ("old", "new"):
        kind = draw(st.sampled_from(["run", "missing", "run", "file", "run", "empty", "run", "same"]))
        if kind == "missing":
            folders.append(str(tmp / "missing"))
        elif kind == "file":
            (tmp / "FILE").write_text("a file, not a folder")
            folders.append(str(tmp / "FILE"))
        elif kind == "empty":
            (tmp / "empty").mkdir(exist_ok=True)
            folders.append(str(tmp / "empty"))
        elif kind == "same" and folders:
            folders.append(folders[0])  # a run against itself
        else:
            run_dir = tmp / side
            run_dir.mkdir()
            text = draw(matrix_files(clean=not one_in(draw, 4)))
            (run_dir / "matrix_long.csv").write_text(text, encoding="utf-8")
            if one_in(draw, 3):
                (run_dir / "matrix.json").write_text(json.dumps({"ruleset": draw(st.sampled_from(RULESET_IDS))}))
            folders.append(str(run_dir))
    argv = ["diff", *folders]
    if one_in(draw, 3):
        argv += flag_value(draw, "--z", RUN_FLAGS["--z"])
    if one_in(draw, 3):
        argv += ["--all"]
    if one_in(draw, 2):
        argv += ["--out", str(tmp / draw(st.sampled_from(["out", "out/deeper", "old"])))]
    return argv


# -------------------------------------------------------------------- checking
def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def out_dir(argv: list[str]) -> Path | None:
    return Path(argv[argv.index("--out") + 1]) if "--out" in argv else None


def check_csv_safe(path: Path) -> None:
    for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))):
        for cell in row:
            if visible(cell).startswith(FORMULA_START):  # also behind invisible characters (U+034F, U+3164...)
                float(cell)  # only numbers may start with + or -; anything else must have been quoted


def check_outcome(argv: list[str], command: str, code: int, out: str, err: str) -> str:
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("meleelab: error: "), (argv, err)
        return "error"
    assert code == 0, (argv, code, err)
    assert out.strip(), (argv, "no output")
    if "--json" in argv:
        json.loads(out)
    folder = out_dir(argv)
    if folder is not None and command in OUT_FILES:
        for name in OUT_FILES[command]:
            assert (folder / name).is_file(), (argv, name)
        for path in folder.glob("*.csv"):
            check_csv_safe(path)
        for path in folder.glob("*.md"):
            text = path.read_text(encoding="utf-8")
            assert "<script" not in text and not re.search(r"(?<!\\)\]\(javascript", text), (argv, path)
    return "ok"


OUTCOMES: Counter[str] = Counter()


@settings(max_examples=examples(300, part=6), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_cli_any_input_exits_0_with_output_or_2_with_one_line(data: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        argv, command = data.draw(command_lines(Path(tmp)))
        code, out, err = run(argv)
        OUTCOMES[f"{command}: {check_outcome(argv, command, code, out, err)}"] += 1
        if LOG:
            with open(LOG, "a", encoding="utf-8") as f:
                record = {"argv": argv, "code": code, "stderr": err.strip()[-300:]}
                f.write(json.dumps(record, ensure_ascii=False) + "\n")


# ------------------------------------------------- flags checked against each other (issue 38, items 3-5)
#: Mistakes a command must refuse before any work (one line, exit 2, nothing written): each is a flag, or a
#: flag against the others, wrong in itself; (commands it applies to, argv pieces, words of the message).
MISTAKES: list[tuple[tuple[str, ...], list[str], str]] = [
    (("matrix", "sweep", "compare", "balance", "report", "rebalance", "diff"), ["--out", ""], "--out"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance", "diff"), ["--out", "   "], "--out"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--out", "{tmp}/FILE"], "FILE"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--out", "{tmp}/FILE/below"], "FILE"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--half-width", "0.5"], "half-width"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--half-width", "nan"], "half-width"),
    (("matrix", "balance", "report", "rebalance"), ["--max-trials", "0"], "max-trials"),
    (("fight", "sweep", "compare"), ["--trials", "-3"], "trials"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--max-rounds", "0"], "max-rounds"),
    (("matrix", "sweep", "compare", "balance", "report"), ["--rounds", "0"], "rounds"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--seed", "-1"], "seed"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--workers", "2", "--scheduler", "local:2"],
     "--workers or --scheduler"),
    (("matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--scheduler", "local:0"], "scheduler"),
    (("matrix", "balance", "report"), ["--units", "Nobody"], "Nobody"),
    (("matrix", "balance", "report", "sweep", "compare", "rebalance"), ["--budget", "-5"], "budget"),
    (("matrix", "balance", "report", "sweep", "compare", "rebalance"), ["--set", "nonsense"], "nonsense"),
    (("matrix", "balance", "report", "sweep", "compare", "rebalance"), ["--set", "warp=9"], "warp"),
    (("matrix", "balance", "report", "sweep", "compare", "rebalance"), ["--method", "magic"], "method"),
    (("matrix", "balance", "report", "sweep", "compare"), ["--fielding", "half"], "fielding"),
    (("rebalance",), ["--round-to", "500"], "larger than the budget"),
    (("rebalance",), ["--round-to", "0"], "round-to"),
    (("rebalance",), ["--round-to", "-2"], "round-to"),
    (("rebalance",), ["--tolerance", "0"], "tolerance"),
    (("rebalance",), ["--tolerance", "26"], "tolerance"),
    (("rebalance",), ["--lock", "Nobody"], "Nobody"),
    (("rebalance",), ["--budget", "none"], "needs a budget"),
    (("rebalance",), ["--budget", "10"], "budget 10"),
    (("report",), ["--all", "--roster", "{roster}"], "--all"),
    (("report",), ["--feature", "Nobody vs Sellsword"], "Nobody"),
    (("report",), ["--baseline", "{tmp}/missing"], "missing"),
    (("sweep",), ["--vary", "ws=3..1"], "ws"),
    (("sweep",), ["--vary", "points=10..20"], "points"),
    (("compare",), ["x="], "x"),
    (("fight", "matrix", "sweep", "compare", "balance", "report", "rebalance"), ["--roster", "{tmp}/missing.toml"],
     "missing.toml"),
]
#: The valid start of each command's line (duel: every command, rebalance too, can field copies), tiny runs.
BASES = {
    "fight": ["fight", "duel", "Sellsword", "Knight", "--trials", "100"],
    "matrix": ["matrix", "duel", "--units", "Sellsword,Knight", "--max-trials", "100"],
    "sweep": ["sweep", "duel", "Sellsword", "Knight", "--vary", "ws=3..4", "--trials", "100"],
    "compare": ["compare", "duel", "Sellsword", "ws=5", "Knight", "--trials", "100"],
    "balance": ["balance", "duel", "--units", "Sellsword,Knight", "--max-trials", "100"],
    "report": ["report", "duel", "--units", "Sellsword,Knight", "--max-trials", "100", "--out", "{tmp}/r"],
    "rebalance": ["rebalance", "duel", "--max-trials", "100", "--half-width", "0.3"],
    "diff": ["diff", "{tmp}/old", "{tmp}/new"],
}


@st.composite
def mistaken_lines(draw: Callable, tmp: Path) -> tuple[list[str], str, list[str]]:
    """A valid tiny command line with one to three mistakes from :data:`MISTAKES` put in, in any order."""
    command = draw(st.sampled_from(sorted(BASES)))
    fitting = [m for m in MISTAKES if command in m[0]]
    chosen = draw(st.lists(st.sampled_from(fitting), min_size=1, max_size=3, unique_by=lambda m: tuple(m[1])))
    (tmp / "FILE").write_text("a file, not a folder")
    roster = tmp / "roster.toml"
    roster.write_text('ruleset = "duel"\nbudget = 120\n[[unit]]\nname = "Sellsword"\ncount = 1\nwounds = 3\n'
                      'toughness = 5\nws = 4\nstrength = 3\npoints = 30\nweapon = { strength = 4, damage = 1 }\n')
    fill = {"tmp": str(tmp), "roster": str(roster)}
    base = [a.format(**fill) for a in BASES[command]]
    pieces = [[a.format(**fill) for a in m[1]] for m in chosen]
    if draw(st.booleans()):
        pieces.reverse()
    argv = base + [a for p in pieces for a in p] + (["--quiet"] if command not in ("diff",) else [])
    return argv, command, [m[2] for m in chosen]


REFUSED: Counter[str] = Counter()


@settings(max_examples=examples(1800), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_mistaken_flag_is_refused_in_one_line_before_any_work(data: Any) -> None:
    """Every mistake (a flag wrong in itself, or against the others) is one line and exit 2, before any matchup
    is prepared and before anything is written (``--out ''`` used to run 44 s and write nothing, exit 0)."""
    from sim.rulesets.duel import Duel

    with tempfile.TemporaryDirectory() as tmp:
        argv, command, words = data.draw(mistaken_lines(Path(tmp)))
        prepared = []
        real = Duel.prepare

        def counted(self: Any, matchup: Any) -> Any:
            prepared.append(matchup)
            return real(self, matchup)

        Duel.prepare = counted  # type: ignore[method-assign]
        try:
            code, out, err = run(argv)
        finally:
            Duel.prepare = real  # type: ignore[method-assign]
        assert "Traceback" not in err, (argv, err)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2 and len(lines) == 1 and lines[0].startswith("meleelab: error: "), (argv, code, err)
        assert any(w.lower() in lines[0].lower() for w in words), (argv, words, lines[0])
        assert not prepared, (argv, "work started before the refusal", lines[0])
        left = sorted(p.name for p in Path(tmp).iterdir() if p.name not in ("FILE", "roster.toml"))
        assert left == [], (argv, left)  # nothing written, no folder made
        REFUSED[command] += 1


def teardown_module() -> None:
    if OUTCOMES:
        print(f"\nCLI fuzz: {sum(OUTCOMES.values())} command lines: "
              + ", ".join(f"{k} {v}" for k, v in sorted(OUTCOMES.items())))
    if REFUSED:
        print(f"\nCLI fuzz, mistaken flags: {sum(REFUSED.values())} command lines refused before any work: "
              + ", ".join(f"{k} {v}" for k, v in sorted(REFUSED.items())))

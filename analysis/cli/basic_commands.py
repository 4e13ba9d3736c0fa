"""``meleelab rulesets``, ``units``, ``fight`` and ``bench``: what there is, and one matchup."""

from __future__ import annotations

import click

import sim

from ..report.io import to_json
from .console import rows_text
from .options import (
    budget_option,
    progress_bar,
    roster_arg,
    roster_option,
    rounds_option,
)
from .scale import executor_for as _executor
from .scale import scheduler_option as _scheduler_option
from .types import SEED, TRIALS, WORKERS, Number

__all__ = ["rulesets_cmd", "units_cmd", "fight_cmd", "bench_cmd"]


@click.command("rulesets")
@click.option("--json", "as_json", is_flag=True, help="One JSON array on stdout.")
def rulesets_cmd(as_json: bool) -> None:
    """List the rulesets: id, title, source text, default rounds, origin (built-in or plugin).

    A plugin that could not be loaded is left out, with one warning line on
    stderr saying why; the listing still succeeds.
    """
    from sim.plugins import origin, problems

    rows = [r.describe() | {"origin": origin(r.id)} for r in sim.rulesets()]
    for problem in problems():
        click.echo(f"meleelab: warning: {problem.line}", err=True)
    if as_json:
        click.echo(to_json(rows))
        return
    click.echo(rows_text(rows, ["id", "title", "source", "default_rounds", "origin"],
                         {"source": "source text", "default_rounds": "default rounds"}))


@click.command("units")
@click.argument("ruleset")
@roster_option
@click.option("--json", "as_json", is_flag=True)
def units_cmd(ruleset: str, roster: str | None, as_json: bool) -> None:
    """Show the units of a roster and their fields (and its army lists, if it has any)."""
    rs = sim.get_ruleset(ruleset)
    ros = roster_arg(rs.id, roster)
    rows = [row for u in ros.units.values() for row in rs.unit_rows(u)]
    from sim.lists import list_models, list_points

    lists = [{"list": n, "points": list_points(lst, ros.units), "models": list_models(lst, ros.units),
              "units": lst.units_text()} for n, lst in ros.lists.items()]
    if as_json:
        click.echo(to_json({"ruleset": rs.id, "source": ros.source, "units": rows,
                            **({"lists": lists} if lists else {})}))
        return
    click.echo(f"{rs.id} roster: {ros.source}" + (f" ({ros.description})" if ros.description else ""))
    click.echo(rows_text(rows, list(rows[0]) if rows else []))
    if lists:
        click.echo(f"\narmy lists ({len(lists)}; `meleelab lists {rs.id}` fights them against each other):")
        click.echo(rows_text(lists, ["list", "points", "models", "units"]))


@click.command("fight")
@click.argument("ruleset")
@click.argument("attacker")
@click.argument("defender")
@roster_option
@click.option("--trials", type=TRIALS, default=1_000_000, show_default=True)
@click.option("--seed", type=SEED, default=None,
              help="Seed (default: fresh entropy, printed so the run can be repeated).")
@rounds_option
@click.option("--set", "settings", multiple=True, metavar="SIDE.KEY=VALUE",
              help="A state (attacker.evading=true), a unit field (attacker.defence=3) or an option (KEY=VALUE).")
@click.option("--workers", type=WORKERS, default=1, show_default=True,
              help="Local processes (same result for any value; at most the cores).")
@_scheduler_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@budget_option(default_text="one unit a side, whatever the roster's budget")
@click.option("--method", type=click.Choice(["auto", "exact", "mc"]), default="auto", show_default=True,
              help="exact: the outcome distribution of the matchup's Markov chain (no noise); mc: TRIALS Monte "
                   "Carlo fights; auto: exact where the ruleset has a chain and it costs less than the fights.")
def fight_cmd(ruleset: str, attacker: str, defender: str, roster: str | None, trials: int, seed: int | None,
              rounds: str | None, max_rounds: int, settings: tuple[str, ...], workers: int, scheduler: str | None,
              as_json: bool, quiet: bool, budget: str | None, method: str) -> None:
    """Fight ATTACKER against DEFENDER, one unit a side, under the rules' own defaults: exactly where the fight is
    a small chain, else TRIALS Monte Carlo fights.

    --budget POINTS fields copies at equal points; the balance commands (matrix,
    balance, report) fight under the ruleset's balance settings instead.
    """
    rs = sim.get_ruleset(ruleset)
    ros = roster_arg(rs.id, roster)
    states, overrides, options = sim.parse_settings(rs, settings)
    update, close = progress_bar(quiet, f"{attacker} vs {defender}")
    try:
        with _executor(scheduler, workers) as executor:
            result = sim.fight(rs, attacker, defender, trials=trials, seed=seed, rounds=rounds, max_rounds=max_rounds,
                               states=states, overrides=overrides, options=options, workers=workers, roster=ros,
                               progress=update, from_text=True, budget="none" if budget is None else budget,
                               executor=executor, method=method)
    finally:
        close()
    if as_json:
        click.echo(to_json(result.to_dict()))
    else:
        from .tables import fight_text

        click.echo(fight_text(result))


@click.command("bench")
@click.argument("rulesets", nargs=-1)
@click.option("--json", "as_json", is_flag=True)
@click.option("--seconds", type=Number(0, 60), default=0.5, show_default=True,
              help="Minimum time per measurement (more than 0, at most 60).")
def bench_cmd(rulesets: tuple[str, ...], as_json: bool, seconds: float) -> None:
    """Kernel vs scalar reference speed, and cost in bare d6 draws, per ruleset."""
    from .bench import bench

    for r in rulesets:
        sim.get_ruleset(r)
    out = bench(list(rulesets) or None, seconds=seconds)
    if as_json:
        click.echo(to_json(out))
        return
    click.echo(f"bare d6 draws: {out['d6_per_second']:,.0f} per second (int8, one core)")
    rows = []
    for rid, entry in out["rulesets"].items():
        for e in [entry, *entry.get("extra", [])]:
            rows.append({"ruleset": rid, "matchup": e["matchup"], "kernel/s": f"{e['kernel_per_second']:,.0f}",
                         "reference/s": f"{e['reference_per_second']:,.0f}", "speedup": f"{e['speedup']:,.0f}x",
                         "d6-equivalents": f"{e['d6_equivalents']:.2f}"})
    click.echo(rows_text(rows, list(rows[0]), numeric=("kernel/s", "reference/s", "speedup", "d6-equivalents")))
    exact = []
    for rid, entry in out["rulesets"].items():
        for e in [entry, *entry.get("extra", [])]:
            x = e["exact"]
            row = {"ruleset": rid, "matchup": e["matchup"], "exact": "none", "P(attacker)": "", "fights": "",
                   "MC kernel": "", "MC run": "", "exact vs run": ""}
            if x["available"]:
                ratio = x["run_speedup"]
                row.update({"exact": _seconds(x["exact_seconds"]), "P(attacker)": f"{x['p_attacker']:.4f}",
                            "fights": f"{x['mc_trials_1pp']:,}", "MC kernel": _seconds(x["mc_seconds_1pp"]),
                            "MC run": _seconds(x["mc_run_seconds_1pp"]),
                            "exact vs run": f"{ratio:,.1f}x faster" if ratio >= 1 else f"{1 / ratio:,.1f}x slower"})
            exact.append(row)
    click.echo("")
    click.echo("exact answers: one exact cell against Monte Carlo at +-1 percentage point (95%): the fights that "
               "needs at the exact P(attacker), at the kernel's rate and as a whole run")
    click.echo(rows_text(exact, list(exact[0]), numeric=("exact", "P(attacker)", "fights", "MC kernel", "MC run",
                                                          "exact vs run")))


def _seconds(s: float) -> str:
    return f"{s * 1e3:,.2f} ms" if s < 1 else f"{s:,.2f} s"

"""The interactive explorer behind ``notebooks/explorer.ipynb``.

Pick a ruleset, two units, their situational states, the ruleset's switches and
sliders for the units' stats; the explorer runs a modest number of fights
(:data:`DEFAULT_TRIALS`, about a second) and shows win probabilities with Wilson
intervals and damage with standard errors.

The logic lives in plain functions (:func:`stat_fields`, :func:`unit_stats`,
:func:`fight_table`) that need no frontend; :func:`explorer` only wires them to
ipywidgets. ipywidgets is a development dependency, so it is imported inside
the functions that build widgets, never at module import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

import sim
from sim.errors import InputError, MatchupError
from sim.results import FightResult
from sim.ruleset import END, Ruleset
from sim.rulesets import get_ruleset
from sim.schema import Field

from .stats.estimates import tally_row

__all__ = ["DEFAULT_TRIALS", "ROUND_CHOICES", "stat_fields", "unit_stats", "fight_table", "Explorer", "explorer"]

#: Fights per update: about a second for every shipped ruleset, Wilson half-width below 0.6 pp.
DEFAULT_TRIALS = 30_000
#: Choices of the rounds menu.
ROUND_CHOICES: tuple[Any, ...] = (1, 2, 3, 5, END)
#: Fields never offered as sliders: names and costs do not change a fight.
_NOT_STATS = {"name", "points"}
#: Slider range for integer fields with no upper bound.
_OPEN_RANGE = 20


def stat_fields(ruleset: str | Ruleset) -> list[Field]:
    """The unit fields a slider can vary: integers with a lower bound.

    Parameters
    ----------
    ruleset : str or Ruleset

    Returns
    -------
    list of sim.schema.Field
        In schema order, ``name`` and ``points`` left out.
    """
    rs = get_ruleset(ruleset)
    return [f for f in rs.unit_fields if f.kind == "int" and f.lo is not None and f.name not in _NOT_STATS]


def unit_stats(ruleset: str | Ruleset, unit: Any) -> dict[str, int]:
    """Current value of every slider field of ``unit`` (fields it has no single value for are left out).

    Units made of several model groups (squads) show the first group's value;
    an override then changes every group (see the ruleset's ``with_overrides``).
    ``models``/``count`` show the total number of models.
    """
    rs = get_ruleset(ruleset)
    flat = rs.unit_to_dict(unit)
    rows = rs.unit_rows(unit) or [flat]
    out: dict[str, int] = {}
    for f in stat_fields(rs):
        value = flat.get(f.name)
        if not _is_int(value):
            value = rows[0].get(f.name)
        if not _is_int(value) and f.name in ("models", "count"):
            counts = [r.get("count") for r in rows]
            value = sum(counts) if counts and all(_is_int(c) for c in counts) else None
        if _is_int(value):
            out[f.name] = int(value)
    return out


def _text(value: Any) -> str:
    """A value as ``--set`` text (booleans lower-case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def fight_table(
    ruleset: str | Ruleset,
    attacker: str,
    defender: str,
    *,
    states: Mapping[str, Mapping[str, Any]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    options: Mapping[str, Any] | None = None,
    rounds: Any = None,
    trials: int = DEFAULT_TRIALS,
    seed: int | None = 1,
    roster: Any = None,
) -> tuple[FightResult, pd.DataFrame]:
    """One fight's headline numbers as a small table.

    Parameters
    ----------
    ruleset, attacker, defender, states, overrides, options, rounds, roster
        As in :func:`sim.fight`.
    trials : int
        Fights to run (default :data:`DEFAULT_TRIALS`).
    seed : int or None
        A fixed seed keeps the random numbers the same between updates, so a
        change of a slider shows the effect of the change, not fresh noise.

    Returns
    -------
    (sim.FightResult, pandas.DataFrame)
        The frame has one row per quantity: ``quantity, value, lo, hi, se``
        (win probabilities with Wilson 95% intervals; mean damage and rounds
        with standard errors and normal 95% intervals).
    """
    r = sim.fight(ruleset, attacker, defender, trials=trials, seed=seed, rounds=rounds, states=states,
                  overrides=overrides, options=options, roster=roster, method="mc")  # its rows read counts
    rows = []
    labels = {"attacker": f"{r.attacker} (attacker) wins", "defender": f"{r.defender} (defender) wins",
              "draw": "draw"}
    for key in ("attacker", "defender", "draw"):
        p = r.win[key]
        lo, hi = r.ci95[key]
        rows.append({"quantity": labels[key], "value": p, "lo": lo, "hi": hi,
                     "se": (p * (1 - p) / r.trials) ** 0.5})
    for side, name in (("attacker", r.attacker), ("defender", r.defender)):
        mean, se = r.damage(side)
        rows.append({"quantity": f"damage to {name} ({side})", "value": mean, "lo": mean - 1.96 * se,
                     "hi": mean + 1.96 * se, "se": se})
    mean, se = r.mean_rounds
    rows.append({"quantity": "rounds fought", "value": mean, "lo": mean - 1.96 * se, "hi": mean + 1.96 * se,
                 "se": se})
    return r, pd.DataFrame(rows, columns=["quantity", "value", "lo", "hi", "se"])


# ------------------------------------------------------------------ widgets
def _value_widget(f: Field, value: Any, description: str) -> Any:
    """A widget editing one bool/int/choice/str field (None for kinds a widget cannot edit)."""
    import ipywidgets as w

    style = {"description_width": "initial"}
    if value is None and f.optional or value is None and f.kind in ("int", "bool"):
        # an optional field left at "none" (e.g. duel's unlimited space): a menu with none and a few values
        if f.kind == "bool":
            values = [True, False]
        elif f.kind == "int":
            lo = int(f.lo) if f.lo is not None else 0
            values = list(range(lo, min(int(f.hi) if f.hi is not None else lo + 10, lo + 10) + 1))
        elif f.kind == "choice":
            values = list(f.choices)
        else:
            return None
        return w.Dropdown(options=[("none", None)] + [(str(v).lower() if isinstance(v, bool) else str(v), v)
                                                      for v in values],
                          value=None, description=description, style=style)
    if f.kind == "bool":
        return w.Checkbox(value=bool(value), description=description, indent=False)
    if f.kind == "choice":
        return w.Dropdown(options=list(f.choices), value=value if value in f.choices else f.choices[0],
                          description=description, style=style)
    if f.kind == "int":
        lo = int(f.lo) if f.lo is not None else -_OPEN_RANGE
        hi = int(f.hi) if f.hi is not None else max(lo + _OPEN_RANGE, int(value or 0))
        return w.IntSlider(value=int(value), min=lo, max=hi, description=description, continuous_update=False,
                           style=style)
    if f.kind == "str" and isinstance(value, str):
        return w.Text(value=value, description=description, continuous_update=False, style=style)
    return None


@dataclass
class Explorer:
    """The explorer's widgets and state. Build it with :func:`explorer`.

    Attributes
    ----------
    widget : ipywidgets.VBox
        Display this (the last expression of a cell, or ``IPython.display.display``).
    result : sim.FightResult or None
        The last fight.
    table : pandas.DataFrame or None
        The last fight's headline table (see :func:`fight_table`).
    error : str or None
        The last input or matchup error (shown instead of numbers).
    """

    trials: int = DEFAULT_TRIALS
    seed: int | None = 1
    widget: Any = None
    result: FightResult | None = None
    table: pd.DataFrame | None = None
    error: str | None = None
    plot: bool = True
    _controls: dict[str, Any] = field(default_factory=dict)
    _states: dict[tuple[str, str], Any] = field(default_factory=dict)
    _options: dict[str, Any] = field(default_factory=dict)
    _stats: dict[tuple[str, str], Any] = field(default_factory=dict)
    _building: bool = False

    # ---------------------------------------------------------- building
    def _build(self, ruleset: str, attacker: str | None, defender: str | None) -> None:
        import ipywidgets as w

        self._building = True
        rs = get_ruleset(ruleset)
        names = sim.default_roster(rs.id).names
        attacker = attacker if attacker in names else names[0]
        defender = defender if defender in names else names[min(1, len(names) - 1)]
        c = self._controls
        if not c:
            c["ruleset"] = w.Dropdown(options=[r.id for r in sim.rulesets()], value=rs.id, description="ruleset")
            c["ruleset"].observe(self._on_ruleset, names="value")
            c["output"] = w.Output()
            c["status"] = w.HTML()
            self.widget = w.VBox()
        c["attacker"] = w.Dropdown(options=names, value=attacker, description="attacker")
        c["defender"] = w.Dropdown(options=names, value=defender, description="defender")
        rounds = list(ROUND_CHOICES)
        if rs.default_rounds not in rounds:
            rounds.insert(0, rs.default_rounds)
        c["rounds"] = w.Dropdown(options=rounds, value=rs.default_rounds, description="rounds")
        for key in ("attacker", "defender"):
            c[key].observe(self._on_unit, names="value")
        c["rounds"].observe(self._on_change, names="value")

        self._states = {}
        for s in rs.state_fields:
            for side in s.sides:
                wid = _value_widget(s.field, s.default_for(side), f"{side}.{s.name}")
                if wid is not None:
                    wid.observe(self._on_change, names="value")
                    self._states[(side, s.name)] = wid
        self._options = {}
        for f in rs.option_fields:
            if f.kind == "table" or f.default is None:
                continue
            wid = _value_widget(f, f.default, f.name)
            if wid is not None:
                wid.observe(self._on_change, names="value")
                self._options[f.name] = wid
        self._make_stat_sliders()
        self._layout()
        self._building = False

    def _make_stat_sliders(self) -> None:
        rs = get_ruleset(self._controls["ruleset"].value)
        roster = sim.default_roster(rs.id)
        by_name = {f.name: f for f in stat_fields(rs)}
        self._stats = {}
        for side in ("attacker", "defender"):
            unit = roster.unit(self._controls[side].value)
            for name, value in unit_stats(rs, unit).items():
                wid = _value_widget(by_name[name], value, f"{side}.{name}")
                wid.observe(self._on_change, names="value")
                self._stats[(side, name)] = wid

    def _layout(self) -> None:
        import ipywidgets as w

        c = self._controls
        head = w.HBox([c["ruleset"], c["attacker"], c["defender"], c["rounds"]])
        states = w.HBox(list(self._states.values()))
        options = w.HBox(list(self._options.values()))
        cols = [w.VBox([w.HTML(f"<b>{side} stats</b>")] + [wid for (s, _), wid in self._stats.items() if s == side])
                for side in ("attacker", "defender")]
        parts = [head, w.HTML("<b>states</b>"), states]
        if self._options:
            parts += [w.HTML("<b>switches</b>"), options]
        parts += [w.HBox(cols), c["status"], c["output"]]
        self.widget.children = parts

    # ---------------------------------------------------------- events
    def _on_ruleset(self, change: Any) -> None:
        self._build(change["new"], None, None)
        self.update()

    def _on_unit(self, change: Any) -> None:
        if self._building:
            return
        self._building = True
        self._make_stat_sliders()
        self._layout()
        self._building = False
        self.update()

    def _on_change(self, change: Any) -> None:
        if not self._building:
            self.update()

    # ---------------------------------------------------------- settings
    def settings(self) -> dict[str, Any]:
        """The fight the widgets describe: keyword arguments of :func:`fight_table`.

        Only changes from the roster's values become overrides, so the
        settings read like the ``--set`` items of the same CLI run.
        """
        c = self._controls
        rs = get_ruleset(c["ruleset"].value)
        roster = sim.default_roster(rs.id)
        states: dict[str, dict[str, Any]] = {}
        for (side, name), wid in self._states.items():
            states.setdefault(side, {})[name] = wid.value
        overrides: dict[str, dict[str, Any]] = {}
        for side in ("attacker", "defender"):
            current = unit_stats(rs, roster.unit(c[side].value))
            for (s, name), wid in self._stats.items():
                if s == side and wid.value != current.get(name):
                    overrides.setdefault(side, {})[name] = int(wid.value)
        options = {name: wid.value for name, wid in self._options.items()}
        return {"ruleset": rs.id, "attacker": c["attacker"].value, "defender": c["defender"].value,
                "states": states, "overrides": overrides, "options": options, "rounds": c["rounds"].value}

    def command(self) -> str:
        """The ``meleelab fight`` command line that repeats the current fight."""
        import shlex

        s = self.settings()
        items = [f"{side}.{k}={_text(v)}" for side, kv in s["states"].items() for k, v in kv.items()
                 if v != get_ruleset(s["ruleset"]).state_field(k).default_for(side)]
        items += [f"{side}.{k}={_text(v)}" for side, kv in s["overrides"].items() for k, v in kv.items()]
        rs = get_ruleset(s["ruleset"])
        items += [f"{k}={_text(v)}" for k, v in s["options"].items() if v != rs.option_field(k).default]
        parts = ["meleelab", "fight", rs.id, s["attacker"], s["defender"], "--trials", str(self.trials)]
        if self.seed is not None:
            parts += ["--seed", str(self.seed)]
        if s["rounds"] != rs.default_rounds:
            parts += ["--rounds", str(s["rounds"])]
        for item in items:
            parts += ["--set", item]
        return shlex.join(parts)

    def set(self, **values: Any) -> None:
        """Set widgets by name without triggering updates: ``attacker="AFS"``, ``**{"defender.evading": True}``.

        Call :meth:`update` afterwards. Keys: ``attacker``, ``defender``,
        ``rounds``, ``SIDE.STATE``, ``SIDE.FIELD`` (a stat slider) or an option name.
        """
        self._building = True
        try:
            for key in ("attacker", "defender"):
                if key in values:
                    self._controls[key].value = values.pop(key)
                    self._make_stat_sliders()
            if "rounds" in values:
                self._controls["rounds"].value = values.pop("rounds")
            for key, value in values.items():
                side, _, name = key.partition(".")
                wid = (self._states.get((side, name)) or self._stats.get((side, name)) if name
                       else self._options.get(key))
                if wid is None:
                    raise KeyError(f"explorer: no widget {key!r}")
                wid.value = value
            self._layout()
        finally:
            self._building = False

    # ---------------------------------------------------------- update
    def update(self) -> pd.DataFrame | None:
        """Run the fight the widgets describe and show it; returns the table (None on a bad input)."""
        from IPython.display import display

        c = self._controls
        kwargs = self.settings()
        ruleset = kwargs.pop("ruleset")
        out = c["output"]
        try:
            self.result, self.table = fight_table(ruleset, trials=self.trials, seed=self.seed, **kwargs)
            self.error = None
        except (InputError, MatchupError) as e:
            self.result, self.table, self.error = None, None, str(e)
        c["status"].value = (f"<span style='color:#b00'>{self.error}</span>" if self.error else
                             f"{self.trials:,} fights, seed {self.seed}; overrides: {kwargs['overrides'] or 'none'}")
        with out:
            out.clear_output(wait=True)
            if self.table is not None:
                display(self.table.style.format({"value": "{:.4f}", "lo": "{:.4f}", "hi": "{:.4f}", "se": "{:.4f}"})
                        .hide(axis="index"))
                if self.plot:
                    display(self._figure())
        return self.table

    def _figure(self) -> Any:
        from matplotlib.figure import Figure

        from .report import plots

        fig = Figure(figsize=(10, 3.2))
        ax1, ax2 = fig.subplots(1, 2)
        # the matrix-row form of wdl_bars (clips the error bars: a Wilson bound at p = 0 can sit 1e-20 above p)
        r = self.result
        row = pd.DataFrame([{"attacker": r.attacker, "defender": r.defender, **tally_row(r.tally)}])
        plots.wdl_bars(row, ax=ax1, title=f"{r.attacker} (attacker) vs {r.defender} (defender), {r.trials:,} fights")
        plots.damage_distributions(self.result, ax=ax2)
        fig.tight_layout()
        return fig


def explorer(ruleset: str = "mecha", attacker: str | None = None, defender: str | None = None, *,
             trials: int = DEFAULT_TRIALS, seed: int | None = 1, plot: bool = True, run: bool = True) -> Explorer:
    """Build the interactive explorer (ipywidgets) on a ruleset's shipped roster.

    Parameters
    ----------
    ruleset : str
        Starting ruleset (the menu offers every registered one).
    attacker, defender : str, optional
        Starting units (default the roster's first two).
    trials : int
        Fights per update.
    seed : int or None
        Fixed by default, so that moving a slider shows the change, not new noise.
    plot : bool
        Draw win/draw/loss bars and damage distributions under the table.
    run : bool
        Run the first fight now.

    Returns
    -------
    Explorer
        Display ``.widget``; ``.table`` and ``.result`` hold the last fight.

    Examples
    --------
    >>> from analysis import explorer            # doctest: +SKIP
    >>> ex = explorer("mecha", "AFS", "Nutrocker")       # doctest: +SKIP
    >>> ex.widget                                        # doctest: +SKIP
    """
    from .stats.checks import check_flag

    check_flag(plot, "plot")
    check_flag(run, "run")
    for side, name in (("attacker", attacker), ("defender", defender)):
        if name is not None and not isinstance(name, str):
            raise InputError(f"{side}: got {name!r:.60}, expected a unit name or None")
    ex = Explorer(trials=trials, seed=seed, plot=plot)
    ex._build(get_ruleset(ruleset).id, attacker, defender)
    if run:
        ex.update()
    return ex

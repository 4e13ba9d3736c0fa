"""The result of a fight: probabilities with intervals, damage with errors, provenance.

A result is either Monte Carlo (``method == "mc"``: integer counts in a
:class:`~sim.tally.Tally`, intervals from them) or exact (``method == "exact"``:
an :class:`~sim.exact.ExactOutcome`, the probabilities themselves, zero-width
intervals and standard errors of 0). Every property answers for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import InputError, shown
from .exact import ExactOutcome
from .outcomes import WINNER_NAMES
from .ruleset import Ruleset
from .stats import wilson_interval
from .tally import Moments, Tally

__all__ = ["FightResult"]


@dataclass(frozen=True)
class FightResult:
    """Everything measured for one matchup.

    Attributes
    ----------
    ruleset : Ruleset
    attacker, defender : str
        Unit names.
    tally : Tally or None
        The raw integer counts (None for an exact result).
    settings : dict
        ``rounds``, ``max_rounds``, ``states``, ``options``, ``overrides``.
    provenance : dict
        Seed entropy, versions, block size, stream key.
    seed : int or None
        The seed the caller gave (``None``: fresh entropy, see provenance).
    exact : ExactOutcome or None
        The exact outcome distribution, for an exact result (then ``tally`` is None).
    """

    ruleset: Ruleset
    attacker: str
    defender: str
    tally: Tally | None
    settings: dict[str, Any]
    provenance: dict[str, Any]
    seed: int | None = None
    exact: ExactOutcome | None = None

    # ------------------------------------------------------------ headline
    @property
    def method(self) -> str:
        """``"exact"`` (probabilities from the matchup's Markov chain) or ``"mc"`` (Monte Carlo counts)."""
        return "exact" if self.exact is not None else "mc"

    @property
    def trials(self) -> int:
        """Fights simulated (0 for an exact result: nothing was sampled)."""
        return 0 if self.exact is not None else self.tally.trials

    @property
    def rounds(self) -> Any:
        return self.settings["rounds"]

    @property
    def win(self) -> dict[str, float]:
        """``{"attacker": p, "defender": p, "draw": p}``."""
        if self.exact is not None:
            return {k: self.exact.win_probability(k) for k in ("attacker", "defender", "draw")}
        n = self.trials
        w = self.tally.wins
        return {"attacker": int(w[1]) / n, "defender": int(w[2]) / n, "draw": int(w[0]) / n}

    @property
    def win_counts(self) -> dict[str, int]:
        """Fights won by each side and drawn (Monte Carlo only: an exact result counted no fights)."""
        self._counted("win_counts", "win")
        w = self.tally.wins
        return {"attacker": int(w[1]), "defender": int(w[2]), "draw": int(w[0])}

    @property
    def ci95(self) -> dict[str, tuple[float, float]]:
        """Wilson 95% intervals of :attr:`win` (exact: the probability itself, zero width)."""
        if self.exact is not None:
            return {k: (p, p) for k, p in self.win.items()}
        return {k: wilson_interval(c, self.trials) for k, c in self.win_counts.items()}

    @property
    def capped_share(self) -> float:
        """Share of fights stopped by ``max_rounds`` (counted as draws)."""
        if self.exact is not None:
            return self.exact.capped
        return self.tally.capped / self.trials

    def damage(self, to: str) -> tuple[float, float]:
        """Mean damage to ``"attacker"`` or ``"defender"`` and its standard error (0 for an exact result)."""
        if self.exact is not None:
            return ExactOutcome.mean(self.damage_distribution(to)), 0.0
        return self._moments(to).mean_se(self.trials)

    def damage_distribution(self, to: str) -> NDArray[np.float64]:
        """``p[k]`` = probability that ``to`` takes exactly ``k`` damage."""
        if self.exact is not None:
            if to not in ("attacker", "defender"):
                self._moments(to)  # the same one-line error
            return np.array(self.exact.damage_to_attacker if to == "attacker" else self.exact.damage_to_defender)
        return self._moments(to).hist / self.trials

    @property
    def mean_rounds(self) -> tuple[float, float]:
        """Mean rounds fought and its standard error (0 for an exact result)."""
        if self.exact is not None:
            return ExactOutcome.mean(self.exact.rounds), 0.0
        return self.tally.rounds.mean_se(self.trials)

    def rounds_distribution(self) -> NDArray[np.float64]:
        """``p[k]`` = probability that the fight lasted exactly ``k`` rounds."""
        if self.exact is not None:
            return np.array(self.exact.rounds)
        return self.tally.rounds.hist / self.trials

    @property
    def outcomes(self) -> dict[str, dict[str, float]]:
        """Final-state category probabilities per side (each side sums to 1)."""
        cats = self.ruleset.outcome_categories
        if self.exact is not None:
            return {side: {c: float(self.exact.categories[i, j]) for j, c in enumerate(cats)}
                    for i, side in enumerate(("attacker", "defender"))}
        n = self.trials
        return {
            side: {c: int(self.tally.categories[i, j]) / n for j, c in enumerate(cats)}
            for i, side in enumerate(("attacker", "defender"))
        }

    @property
    def outcomes_ci95(self) -> dict[str, dict[str, tuple[float, float]]]:
        """Wilson 95% intervals of :attr:`outcomes` (exact: the probability itself, zero width)."""
        if self.exact is not None:
            return {side: {c: (p, p) for c, p in probs.items()} for side, probs in self.outcomes.items()}
        cats = self.ruleset.outcome_categories
        return {
            side: {c: wilson_interval(int(self.tally.categories[i, j]), self.trials) for j, c in enumerate(cats)}
            for i, side in enumerate(("attacker", "defender"))
        }

    def extra(self, name: str) -> dict[str, Any]:
        """A ruleset-specific measure: mean, standard error, and interval or distribution."""
        spec = next((e for e in self.ruleset.extras if isinstance(name, str) and e.name == name), None)
        if spec is None:
            names = ", ".join(e.name for e in self.ruleset.extras) or "none"
            raise InputError(f"name: got {shown(name)}, expected one of {self.ruleset.id}'s extras ({names})")
        if self.exact is not None:
            dist = self.exact.extras[name]
            mean = ExactOutcome.mean(dist)
            out = {"mean": mean, "se": 0.0, "doc": spec.doc}
            if spec.kind == "proportion":
                out["ci95"] = [mean, mean]
            else:
                out["distribution"] = dist.tolist()
            return out
        m = self.tally.extras[name]
        mean, se = m.mean_se(self.trials)
        out: dict[str, Any] = {"mean": mean, "se": se, "doc": spec.doc}
        if spec.kind == "proportion":
            out["ci95"] = list(wilson_interval(m.total, self.trials))
        else:
            out["distribution"] = (m.hist / self.trials).tolist()
        return out

    def _counted(self, what: str, instead: str) -> None:
        if self.exact is not None:
            raise InputError(f"{what}: an exact result counted no fights; read {instead} (probabilities), or fight "
                             "with method=\"mc\" for counts")

    def _moments(self, to: str) -> Moments:
        if isinstance(to, str) and to == "attacker":
            return self.tally.damage_to_attacker
        if isinstance(to, str) and to == "defender":
            return self.tally.damage_to_defender
        raise InputError(f"to: got {shown(to)}, expected 'attacker' or 'defender'")

    # -------------------------------------------------------------- export
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``meleelab fight --json``."""
        dmg = {}
        for side in ("attacker", "defender"):
            mean, se = self.damage(side)
            dmg[f"to_{side}"] = {"mean": mean, "se": se, "distribution": self.damage_distribution(side).tolist()}
        mr, mr_se = self.mean_rounds
        return {
            "ruleset": self.ruleset.id,
            "attacker": self.attacker,
            "defender": self.defender,
            "method": self.method,
            "trials": self.trials,
            "seed": self.seed,
            "rounds": self.rounds,
            "max_rounds": self.settings["max_rounds"],
            "budget": self.settings.get("budget"),
            "copies": self.settings.get("copies", {"attacker": 1, "defender": 1}),
            "fielded": self.settings.get("fielded"),
            "win": self.win,
            "ci95": {k: list(v) for k, v in self.ci95.items()},
            "counts": self.win_counts if self.exact is None else None,
            "capped": self.capped_share,
            "damage_unit": self.ruleset.damage_unit,
            "damage": dmg,
            "outcomes": self.outcomes,
            "outcomes_ci95": {s: {c: list(v) for c, v in d.items()} for s, d in self.outcomes_ci95.items()},
            "mean_rounds": mr,
            "mean_rounds_se": mr_se,
            "rounds_distribution": self.rounds_distribution().tolist(),
            "extras": {e.name: self.extra(e.name) for e in self.ruleset.extras},
            "settings": _jsonable(self.settings),
            "provenance": _jsonable(self.provenance),
            **({"truncated": self.exact.truncated} if self.exact is not None else {}),
        }

    def summary_lines(self) -> list[str]:
        """A readable table of the headline numbers."""
        lo_hi = self.ci95
        lines = [
            f"{self.ruleset.id}: {self.attacker} (attacker) vs {self.defender} (defender)",
            (f"{self.trials:,} trials, rounds={self.rounds}, seed entropy {self.provenance['seed_entropy']}"
             if self.exact is None else
             f"exact (the matchup's Markov chain, no sampling: intervals have zero width), rounds={self.rounds}"),
        ]
        copies = self.settings.get("copies") or {}
        if self.settings.get("budget") is not None or any(k != 1 for k in copies.values()):
            fielded = self.settings.get("fielded") or {}

            def side(s: str, name: str) -> str:
                pts = fielded.get(s)
                return f"{copies.get(s, 1)} x {name}" + (f" ({pts:g} points)" if pts is not None else "")

            budget = self.settings.get("budget")
            lines.append((f"equal points, budget {budget:g}: " if budget is not None else "copies: ")
                         + f"{side('attacker', self.attacker)} vs {side('defender', self.defender)}")
        labels = {"attacker": f"{self.attacker} wins", "defender": f"{self.defender} wins", "draw": "draw"}
        wide = max(16, *(len(v) + 2 for v in labels.values()))  # whole names: the columns widen, never cut
        lines += [
            "",
            f"{'result':<{wide}}{'probability':>12}   95% interval",
        ]
        for k in ("attacker", "defender", "draw"):
            lo, hi = lo_hi[k]
            lines.append(f"{labels[k]:<{wide}}{self.win[k]:>12.4f}   [{lo:.4f}, {hi:.4f}]")
        if self.capped_share:
            lines.append(f"{'(capped)':<{wide}}{self.capped_share:>12.4f}   fights stopped at max_rounds, "
                         "counted as draws")
        names = max(20, len(self.attacker), len(self.defender))
        lines += ["", f"damage ({self.ruleset.damage_unit})", f"{'':<{names + 5}}{'mean':>10}{'s.e.':>10}"]
        for side, name in (("attacker", self.attacker), ("defender", self.defender)):
            mean, se = self.damage(side)
            lines.append(f"  to {name:<{names}}{mean:>10.4f}{se:>10.4f}")
        mr, mr_se = self.mean_rounds
        lines.append(f"mean rounds {mr:.4f} (s.e. {mr_se:.4f})")
        states = max(12, len(self.attacker) + 1, len(self.defender) + 1)
        lines += ["", f"{'final state':<{states}}" + "  ".join(f"{c:>12}" for c in self.ruleset.outcome_categories)]
        for side, name in (("attacker", self.attacker), ("defender", self.defender)):
            probs = self.outcomes[side]
            lines.append(f"{name:<{states}}" + "  ".join(f"{probs[c]:>12.4f}" for c in self.ruleset.outcome_categories))
        for e in self.ruleset.extras:
            x = self.extra(e.name)
            lines.append(f"{e.name}: {x['mean']:.4f} (s.e. {x['se']:.4f})")
        return lines


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if hasattr(x, "to_jsonable"):
        return x.to_jsonable()
    if hasattr(x, "__dataclass_fields__"):
        import dataclasses

        return _jsonable(dataclasses.asdict(x))
    return x

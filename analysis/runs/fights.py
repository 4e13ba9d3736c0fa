"""Single fights a report shows beside its matrix: a featured attacker against every unit, to the end."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["to_the_end"]


def to_the_end(rs: Any, ros: Any, matrix: Any, attacker: str, max_rounds: int, trials: int,
               states: Any, overrides: Any, options: Any, from_text: bool) -> list[Any]:
    """``attacker`` against every unit with ``rounds="end"`` on streams of their own (same root seed)."""
    import sim
    from sim.rng import stable_key

    root = np.random.SeedSequence(matrix.provenance["seed_entropy"], spawn_key=tuple(matrix.provenance["spawn_key"]))
    out = []
    for d in matrix.units:
        if (attacker, d) not in matrix.results:
            continue
        try:
            out.append(sim.fight(rs, attacker, d, trials=trials, seed=root, rounds="end", max_rounds=max_rounds,
                                 states=states, overrides=overrides, options=options, roster=ros, from_text=from_text,
                                 stream=(stable_key("to the end"), stable_key(attacker), stable_key(d)),
                                 budget=matrix.budget if matrix.budget is not None else "none",
                                 method="mc"))  # the report reads fight counts; exact cells come with its own integration
        except sim.MeleelabError:  # a pair that cannot fight to the end is left out of the curves
            continue
    return out

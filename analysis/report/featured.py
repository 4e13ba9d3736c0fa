"""Which matchups a report shows in detail: the designer's choice, or the most lopsided and the most even cell.

``meleelab report --feature "A vs B"`` (``feature=`` in :func:`analysis.report.build.build_report`)
names them; by default the report features two cells of its headline matrix (at
equal points when a budget is set): the most lopsided one (the attacker's score,
win + draw/2, furthest from 50%) and the most even one (closest to 50%). Mirror
matches and pairs of twins (units that fight exactly alike) are left out of the
default choice, since they say nothing about the roster's balance; the ruleset's
benchmark pair plays no part. :func:`analysis.runs.fights.to_the_end` fights
each featured attacker against every unit to the end, for the report's
rounds-to-resolution curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sim.errors import InputError

__all__ = ["parse_features", "check_features", "default_features"]

_SEP = " vs "


def _names_list(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} units)" if len(names) > limit else "")


def _match(name: str, names: Sequence[str]) -> str | None:
    """``name`` as spelt in the roster: exact, else the one unit equal to it ignoring case and spaces."""
    if name in names:
        return name
    folded = [n for n in names if " ".join(n.split()).casefold() == " ".join(name.split()).casefold()]
    return folded[0] if len(folded) == 1 else None


def _parse_one(spec: Any, names: Sequence[str]) -> tuple[str, str]:
    if _is_pair(spec) or (isinstance(spec, list) and len(spec) == 2 and all(isinstance(x, str) for x in spec)
                          and not any(_SEP in x for x in spec)):
        pieces = [(spec[0], spec[1])]
        text = f"{spec[0]}{_SEP}{spec[1]}"
    elif isinstance(spec, str):
        text = " ".join(spec.split())
        parts = text.split(_SEP)
        if len(parts) < 2:
            raise InputError(f"--feature {spec!r}: expected \"ATTACKER vs DEFENDER\" (two unit names with ' vs ' "
                             "between them)")
        pieces = [(_SEP.join(parts[:i]).strip(), _SEP.join(parts[i:]).strip()) for i in range(1, len(parts))]
    else:
        raise InputError(f"--feature: expected \"ATTACKER vs DEFENDER\" or a pair of unit names, got {spec!r}")
    for a, b in pieces:
        ma, mb = _match(a, names), _match(b, names)
        if ma is not None and mb is not None:
            return ma, mb
    a, b = pieces[0]
    unknown = a if _match(a, names) is None else b
    raise InputError(f"--feature {text!r}: no unit {unknown!r} in the roster (units: {_names_list(list(names))})")


def _is_pair(x: Any) -> bool:
    """``("A", "B")``: a tuple of two names (a tuple of two "A vs B" texts is two matchups)."""
    return (isinstance(x, tuple) and len(x) == 2 and all(isinstance(v, str) for v in x)
            and not all(_SEP in " ".join(v.split()) for v in x))


def parse_features(feature: Any, names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The matchups named by ``feature`` (``"A vs B"``, ``("A", "B")`` or a sequence of them), checked against ``names``.

    Raises
    ------
    InputError
        A name that is not a unit of the roster, or text without ``" vs "``.
    """
    if feature is None:
        return ()
    if not isinstance(feature, (str, list, tuple)):
        raise InputError(f"feature: got {type(feature).__name__}, expected \"A vs B\", a pair (A, B) or a list of them")
    specs = [feature] if isinstance(feature, str) or _is_pair(feature) else list(feature)
    pairs = tuple(_parse_one(s, names) for s in specs)
    return tuple(dict.fromkeys(pairs))  # each once, in the order given


def check_features(pairs: Sequence[tuple[str, str]], matrix: Any) -> None:
    """Each featured pair was fought in ``matrix`` (a unit may have been left out, a pair may not fight)."""
    for a, b in pairs:
        for u in (a, b):
            if u in matrix.excluded:
                raise InputError(f"--feature {a}{_SEP}{b}: {u} is left out of the matrix ({matrix.excluded[u]})")
            if u not in matrix.units:
                raise InputError(f"--feature {a}{_SEP}{b}: {u} is not among the units of this report "
                                 f"({_names_list(list(matrix.units))})")
        if (a, b) not in matrix.results:
            long = matrix.long
            note = long.loc[(long["attacker"] == a) & (long["defender"] == b), "note"]
            why = str(note.iloc[0]) if len(note) and str(note.iloc[0]) else "not fought"
            raise InputError(f"--feature {a}{_SEP}{b}: that pair cannot fight ({why})")


def default_features(matrix: Any) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The most lopsided and the most even cell of ``matrix`` and a sentence saying why each was chosen.

    Mirror matches and twin pairs are left out; ties go to the first cell in
    roster order. With no such cell, the first pair fought (if any).
    """
    long = matrix.long
    twins = matrix.twins() if hasattr(matrix, "twins") else {}
    answered = (long["trials"] > 0) | ((long["method"] == "exact") if "method" in long else False)  # exact: 0 trials
    ok = answered & (long["attacker"] != long["defender"])
    ok &= np.array([twins.get(a, a) != twins.get(d, d) and (a, d) in matrix.results
                    for a, d in zip(long["attacker"], long["defender"])], dtype=bool)
    cells = long[ok]
    if not len(cells):
        first = next(iter(matrix.results), None)
        return ((first,), ("The only kind of pair this roster fights",)) if first else ((), ())
    score = (cells["p_attacker"] + cells["p_draw"] / 2).to_numpy(float)
    where = "at equal points" if getattr(matrix, "budget", None) is not None else "one unit a side"
    far = int(np.argmax(np.abs(score - 0.5)))
    pairs = [(str(cells["attacker"].iloc[far]), str(cells["defender"].iloc[far]))]
    why = [f"The most lopsided cell of the matrix ({where}): the attacker scores {100 * score[far]:.1f}% "
           "(win + draw/2)"]
    rest = np.abs(score - 0.5)
    rest[far] = np.inf
    if len(cells) > 1:
        near = int(np.argmin(rest))
        pairs.append((str(cells["attacker"].iloc[near]), str(cells["defender"].iloc[near])))
        why.append(f"The most even cell of the matrix ({where}): the attacker scores {100 * score[near]:.1f}%")
    return tuple(pairs), tuple(why)

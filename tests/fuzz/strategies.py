"""Hypothesis strategies for the fuzz tests: rosters (valid and corrupted, TOML and CSV) and command lines.

Rosters start from a ruleset's shipped units (so most of them are valid and get
far into the simulator) and are then changed field by field, from the schema's
own ranges, towards edge values, wrong types and hostile text (formulas, HTML,
mathtext, commas, non-Latin scripts), then written as TOML or CSV and possibly
corrupted as text (a byte-order mark, a duplicated column, a broken line).

Command lines are built from tables of flags and value strategies
(:data:`RUN_FLAGS`), so a new flag (``--budget``, ``--scheduler``) is one line here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

import sim
from sim.schema import Field

RULESET_IDS = [r.id for r in sim.rulesets()]

#: Unit names that have broken something somewhere: formulas, mathtext, HTML, commas, scripts, pipes.
#: Valid names that have broken outputs somewhere: formulas, mathtext, HTML, Markdown links, commas, scripts, pipes.
HOSTILE_NAMES = [
    '=HYPERLINK("http://x","y")', "+1", "-1 minus", "@SUM(A1)", "Bad $\\frac{$ math", "$x$", "<script>x</script>",
    "[a](javascript:1)", "A, the second", 'Quo"te', "pipe|name", "漢字の戦車", "Ωмега", "العربية",
    "naïve café",
    "x" * 100, " padded ", "\\", "'quoted", "#hash", "*bold*", "'=already quoted",
    "\u034f=1+1", "\u3164+cmd", "\ufe0f@SUM(A1)",  # a formula behind default-ignorable code points (issue 38)
]
#: Names a roster must refuse (empty, too long, control characters).
INVALID_NAMES = ["", "   ", "x" * 101, "tab\tinside", "line\nbreak", "nul\x00", "\u3164", "\u115f\u1160"]
PLAIN_NAMES = ["Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot"]


def one_in(draw: Callable, n: int) -> bool:
    """True with probability about 1/n. (Hypothesis favours small integers, so the rare branch is the largest.)"""
    return draw(st.integers(0, n - 1)) == n - 1


# ----------------------------------------------------------------- field values
def valid_value(f: Field) -> st.SearchStrategy[Any]:
    """A value the field accepts (typed, as TOML would give it)."""
    if f.kind == "int":
        lo = int(f.lo) if f.lo is not None else -5
        hi = int(f.hi) if f.hi is not None else lo + 20
        return st.integers(lo, min(hi, lo + 40)) | st.sampled_from([lo, hi])
    if f.kind == "number":
        lo = f.lo if f.lo is not None else 0.0
        hi = f.hi if f.hi is not None else 1e6
        return st.sampled_from([lo, hi, 1, 10, 25.5, 100]).filter(lambda x: lo <= x <= hi)
    if f.kind == "bool":
        return st.booleans()
    if f.kind == "choice":
        return st.sampled_from(f.choices)
    if f.kind == "str_list":
        if f.choices:
            return st.lists(st.sampled_from(f.choices), min_size=f.min_items, max_size=min(f.max_items, 3), unique=True)
        return st.lists(st.sampled_from(["a", "b"]), max_size=2)
    if f.kind == "str":
        return st.sampled_from(PLAIN_NAMES)
    return st.nothing()


def invalid_value(f: Field) -> st.SearchStrategy[Any]:
    """Values the field should refuse with one clear line (or edge values it should accept)."""
    edges: list[Any] = ["", "x", "٣", "2_0", "1e3", None, True, [1], {"a": 1}, 1.5, math.inf, -1, 0, 10**30, -10**30,
                        1e308, 0.001, 0.01, 1e6, 1e6 + 1]
    if f.lo is not None:
        edges += [f.lo - 1, f.lo]
    if f.hi is not None:
        edges += [f.hi, f.hi + 1]
    if f.kind == "str":
        edges += HOSTILE_NAMES + INVALID_NAMES
    if f.kind in ("choice", "str_list") and f.choices:
        edges += [f.choices[0].upper(), list(f.choices) * 2, ["nonsense"]]
    return st.sampled_from(edges)


def field_value(f: Field) -> st.SearchStrategy[Any]:
    return st.one_of(valid_value(f), valid_value(f), invalid_value(f))


def unit_name(*, invalid: bool = False) -> st.SearchStrategy[str]:
    names = st.sampled_from(PLAIN_NAMES) | st.sampled_from(HOSTILE_NAMES)
    return names | st.sampled_from(INVALID_NAMES) if invalid else names


# ------------------------------------------------------------------- rosters
def _base_units(rid: str) -> list[dict[str, Any]]:
    rs = sim.get_ruleset(rid)
    ros = sim.default_roster(rid)
    return [_drop_none(rs.unit_to_dict(u)) for u in ros.units.values()]


def _drop_none(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {k: _drop_none(v) for k, v in x.items() if v is not None}
    if isinstance(x, (list, tuple)):
        return [_drop_none(v) for v in x]
    return x


_BASE: dict[str, list[dict[str, Any]]] = {}


def base_units(rid: str) -> list[dict[str, Any]]:
    if rid not in _BASE:
        _BASE[rid] = _base_units(rid)
    return _BASE[rid]


def _profile_fields(rid: str) -> tuple[Field, ...]:
    """Fields that can be changed on a unit mapping (for grimdark: on its groups)."""
    if rid == "grimdark":
        from sim.rulesets.grimdark.units import GROUP_FIELDS

        return tuple(f for f in GROUP_FIELDS if f.name != "name")
    return tuple(f for f in sim.get_ruleset(rid).unit_fields if f.name not in ("name", "weapon", "second_weapon"))


@st.composite
def unit_dicts(draw: Callable, rid: str, *, corrupt: bool) -> list[dict[str, Any]]:
    """One to four units of ``rid`` as TOML-shaped mappings, changed field by field."""
    pool = base_units(rid)
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1 if one_in(draw, 6) else 2, max_size=4))
    units = [json.loads(json.dumps(pool[k])) for k in picks]  # deep copies
    names = draw(st.lists(unit_name(invalid=corrupt), min_size=len(units), max_size=len(units),
                          unique=not corrupt))
    fields = _profile_fields(rid)
    for unit, name in zip(units, names):
        unit["name"] = name
        for _ in range(draw(st.integers(0, 3))):
            f = draw(st.sampled_from(fields))
            value = draw(field_value(f) if corrupt else valid_value(f))
            target = draw(st.sampled_from(unit["models"])) if rid == "grimdark" else unit
            target[f.name] = value
        if rid == "grimdark" and one_in(draw, 6):  # more groups (up to the cap, or past it)
            unit["models"] = unit["models"] * draw(st.sampled_from([2, 5, 11] if corrupt else [2, 3]))
        if rid == "duel" and one_in(draw, 2):
            unit["weapon"] = draw(st.fixed_dictionaries({
                "strength": st.integers(0, 20) if not corrupt else st.sampled_from([0, 20, 21, -1, "x"]),
                "damage": st.integers(1, 20) if not corrupt else st.sampled_from([1, 0, 21, None]),
                "abilities": st.just([])}))
        if corrupt and one_in(draw, 10):
            unit.pop(draw(st.sampled_from(sorted(unit))), None)
        if corrupt and one_in(draw, 10):
            unit["speed"] = 3
        if "points" in unit or one_in(draw, 2):
            unit["points"] = draw(st.sampled_from([10, 20, 35, 60, 120, 7.5]) if not corrupt
                                  else st.sampled_from([0, -1, 1e308, 0.01, 1e6, 1e6 + 1, "ten", 30]))
    return units


def options_strategy(rid: str, *, corrupt: bool) -> st.SearchStrategy[dict[str, Any]]:
    fields = [f for f in sim.get_ruleset(rid).option_fields if f.kind != "table" and f.name != "chart"]
    if not fields:
        return st.just({})
    return st.dictionaries(st.sampled_from([f.name for f in fields]), st.just(None), max_size=2).flatmap(
        lambda keys: st.fixed_dictionaries({
            k: (field_value if corrupt else valid_value)(next(f for f in fields if f.name == k)) for k in keys}))


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if not isinstance(v, float) or math.isfinite(v) else ("inf" if v > 0 else "nan")
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items() if x is not None) + " }"
    return json.dumps(str(v))


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").isalnum() and k.isascii() else json.dumps(k)


def to_toml(rid: str | None, units: list[dict[str, Any]], options: Mapping[str, Any]) -> str:
    lines = [f'ruleset = "{rid}"'] if rid is not None else []
    if options:
        lines += ["[options]"] + [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in options.items() if v is not None]
    for u in units:
        lines.append("[[unit]]")
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in u.items() if v is not None]
    return "\n".join(lines) + "\n"


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ";".join(str(x) for x in v)
    return str(v)


def to_csv(rid: str, units: list[dict[str, Any]]) -> str:
    import csv
    import io

    rows: list[dict[str, Any]] = []
    for u in units:
        if rid == "grimdark":
            for k, g in enumerate(u.get("models") or [{}]):
                row = {"unit": u.get("name", ""), "points": u.get("points") if k == 0 else None}
                row.update({("name" if key == "name" else key): v for key, v in g.items()})
                rows.append(row)
        elif rid == "duel":
            row = {k: v for k, v in u.items() if k not in ("weapon", "second_weapon")}
            for slot in ("weapon", "second_weapon"):
                w = u.get(slot)
                if isinstance(w, Mapping):
                    for part in ("strength", "damage", "abilities"):
                        row[f"{slot}_{part}"] = w.get(part)
            rows.append(row)
        else:
            rows.append(dict(u))
    header: list[str] = []
    for r in rows:
        header += [k for k in r if k not in header]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([_cell(r.get(k)) for k in header])
    return buf.getvalue()


@st.composite
def roster_files(draw: Callable, rid: str | None = None) -> tuple[str, str, str, list[str]]:
    """``(ruleset, suffix, text, unit names)`` of a roster file, valid or corrupted."""
    rid = rid or draw(st.sampled_from(RULESET_IDS))
    corrupt = one_in(draw, 3)  # a third of the rosters go looking for errors
    units = draw(unit_dicts(rid, corrupt=corrupt))
    options = draw(options_strategy(rid, corrupt=corrupt))
    suffix = draw(st.sampled_from([".toml", ".csv"]))
    if suffix == ".toml":
        declared = rid if not corrupt or draw(st.integers(0, 5)) else draw(st.sampled_from([None, "chess", "MECHA"]))
        text = to_toml(declared, units, options)
    else:
        text = to_csv(rid, units)
    if one_in(draw, 5):
        text = "\ufeff" + text  # spreadsheets' "CSV UTF-8"
    if corrupt and one_in(draw, 2):
        text = draw(_text_corruption(text, suffix))
    names = [str(u.get("name", "")) for u in units]
    return rid, suffix, text, names


def _text_corruption(text: str, suffix: str) -> st.SearchStrategy[str]:
    lines = text.split("\n")
    header = lines[0]
    options = [
        st.just(text[: len(text) // 2]),                          # cut short
        st.just(text.replace("=", "", 1)),                        # broken line
        st.just(text + "\x00garbage\n"),
        st.just(text + ",".join(["x"] * 40) + "\n"),              # a row with too many cells
        st.just(""),
        st.just(text.replace("\n", "\r\n")),
    ]
    if suffix == ".csv":
        first = header.split(",")[0]
        options += [
            st.just(header + "," + first + "\n" + "\n".join(lines[1:])),            # duplicate column
            st.just("\n".join([header] + [ln.replace(",", ",2_0", 1) for ln in lines[1:]])),
            st.just("\n".join([header, "A" * 140_000 + "," * header.count(",")]) + "\n"),  # over the field limit
            st.just('"unterminated,' + text),
        ]
    return st.one_of(options)


# ------------------------------------------------------------ matrix files
@st.composite
def matrix_files(draw: Callable, clean: bool = False) -> str:
    """A ``matrix_long.csv`` (complete and consistent, or corrupted one way; never corrupted when ``clean``)."""
    names = draw(st.lists(unit_name(), min_size=1, max_size=3, unique=True))
    header = ["attacker", "defender", "trials", "p_attacker", "p_defender", "p_draw", "p_attacker_se",
              "points_attacker", "points_defender", "note"]
    points = {n: draw(st.sampled_from([10.0, 20.0, 55.5, None])) for n in names}
    rows = []
    for a in names:
        for d in names:
            pa = draw(st.integers(0, 1_000_000))
            pd_ = draw(st.integers(0, 1_000_000 - pa))
            rows.append([a, d, "1000", f"{pa / 1e6:.6f}", f"{pd_ / 1e6:.6f}", f"{(1_000_000 - pa - pd_) / 1e6:.6f}",
                         "0.010000", _cell(points[a]), _cell(points[d]), ""])
    corruption = 0 if clean else draw(st.integers(0, 9))
    if corruption == 1 and len(rows) > 1:
        rows.pop(draw(st.integers(0, len(rows) - 1)))
    elif corruption == 2:
        rows.append(list(rows[0]))
    elif corruption == 3:
        r, c = draw(st.integers(0, len(rows) - 1)), draw(st.integers(2, len(header) - 2))
        rows[r][c] = draw(st.sampled_from(["abc", "-0.1", "1.5", "nan", "inf", "", "1e400", "٣", "0x10", "2_0"]))
    elif corruption == 4:
        header[3] = "p_attacker_typo"
    elif corruption == 5:
        header.append("attacker")
        for r in rows:
            r.append("x")
    elif corruption == 6:
        rows[0][2] = "0"
    elif corruption == 7:
        rows[0] = rows[0][:3]
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()

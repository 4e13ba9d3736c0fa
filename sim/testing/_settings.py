"""Settings checks: every declared state and option accepted and round-tripped through ``--set``
text, bad values refused with one line, unit profiles round-tripped through their fields."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..api import build_matchup, parse_settings
from ..errors import MatchupError, MeleelabError, Where
from ..roster import Roster
from ..ruleset import Ruleset
from ..schema import Field
from ._report import ConformanceReport
from ._values import invalid_texts, to_text, valid_values

__all__ = ["Setting", "declared_settings", "check_setting", "check_bad_values", "check_units"]

Pair = tuple[str, str]
#: Called with (subject, pair, plan) for a non-default setting: compares kernel and reference there.
Compare = Callable[[str, Pair, Any], None]


class Setting:
    """One ``--set`` item to try: a state of one side or an option, with its value."""

    def __init__(self, kind: str, name: str, field: Field, value: Any, default: Any, side: str | None = None) -> None:
        self.kind, self.name, self.field, self.value, self.default, self.side = kind, name, field, value, default, side

    @property
    def item(self) -> str:
        key = f"{self.side}.{self.name}" if self.side else self.name
        return f"{key}={to_text(self.value)}"


def declared_settings(rs: Ruleset) -> list[Setting]:
    """Every state (each side it applies to) and option, with representative valid values."""
    out = []
    for s in rs.state_fields:
        for side in s.sides:
            default = s.default_for(side)
            out += [Setting("state", s.name, s.field, v, default, side) for v in valid_values(s.field, default)]
    for f in rs.option_fields:
        out += [Setting("option", f.name, f, v, f.default) for v in valid_values(f, f.default)]
    return out


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def _same(a: Any, b: Any) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def check_setting(rs: Ruleset, ros: Roster, pairs: Sequence[Pair], start: int, setting: Setting,
                  companions: Sequence[Setting], report: ConformanceReport, compare: Compare) -> None:
    """Parse ``setting`` as ``--set`` text, build a matchup with it, check it arrived unchanged.

    A value refused on every pair alone (a state that excludes another's default,
    say) is tried again together with each of ``companions`` in turn.
    """
    subject = f"--set {setting.item}"
    last = "no pair to try"
    for extra in [None, *companions]:
        items = [setting.item] + ([extra.item] if extra else [])
        try:
            states, overrides, options = parse_settings(rs, items)
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            report.add("settings round-trip", subject, False,
                       f"parse_settings raised {type(e).__name__}: {_one_line(e)}")
            return
        filed = states.get(setting.side or "", {}) if setting.kind == "state" else options
        if setting.name not in filed or overrides:
            report.add("settings round-trip", subject, False,
                       f"parse_settings filed it as {states, overrides, options}")
            return
        for k in range(len(pairs)):
            a, d = pairs[(start + k) % len(pairs)]
            try:
                matchup, plan = build_matchup(rs, a, d, states=states, options=options, roster=ros, from_text=True,
                                              budget="none")
            except MatchupError as e:
                last = f"{a} v {d}: {_one_line(e)}"
                continue
            except Exception as e:  # noqa: BLE001
                report.add("settings accepted", subject, False, f"{a} v {d}: {type(e).__name__}: {_one_line(e)}")
                return
            held = matchup.states[setting.side] if setting.kind == "state" else matchup.options
            got = held[setting.name]
            report.add("settings accepted", subject, True, f"{a} v {d}" + (f" with {extra.item}" if extra else ""))
            report.add("settings round-trip", subject, _same(got, setting.value),
                       f"wrote {setting.value!r}, the matchup holds {got!r}")
            if not _same(setting.value, setting.default):
                compare(f"{a} v {d} with {' '.join(items)}", (a, d), plan)
            return
    report.add("settings accepted", subject, False, f"refused on every pair, alone and with any one other setting "
               f"(last: {last})")


def _expect_refused(rs: Ruleset, ros: Roster, pair: Pair, item: str, needle: str, report: ConformanceReport) -> None:
    subject = f"--set {item}"
    try:
        states, overrides, options = parse_settings(rs, [item])
        build_matchup(rs, pair[0], pair[1], states=states, overrides=overrides, options=options, roster=ros,
                      from_text=True, budget="none")
    except MeleelabError as e:
        text = str(e)
        if not text.strip() or "\n" in text.strip():
            report.add("bad values", subject, False, f"the error is not one line: {text!r}")
        elif needle not in text:
            report.add("bad values", subject, False, f"the error does not name {needle!r}: {text}")
        else:
            report.add("bad values", subject, True, text)
        return
    except Exception as e:  # noqa: BLE001
        report.add("bad values", subject, False,
                   f"raised {type(e).__name__} instead of a one-line error: {_one_line(e)}")
        return
    report.add("bad values", subject, False, f"accepted (on {pair[0]} v {pair[1]})")


def check_bad_values(rs: Ruleset, ros: Roster, pair: Pair, report: ConformanceReport) -> None:
    """Values the schema refuses, unknown names and states on the wrong side: one line each, naming the field."""
    for s in rs.state_fields:
        for side in s.sides:
            for text in invalid_texts(s.field):
                _expect_refused(rs, ros, pair, f"{side}.{s.name}={text}", s.name, report)
        for side in {"attacker", "defender"} - set(s.sides):
            _expect_refused(rs, ros, pair, f"{side}.{s.name}={to_text(s.default_for(s.sides[0]))}", s.name, report)
    for f in rs.option_fields:
        for text in invalid_texts(f):
            _expect_refused(rs, ros, pair, f"{f.name}={text}", f.name, report)
    for f in rs.unit_fields:
        if f.name != "name":
            for text in invalid_texts(f):
                _expect_refused(rs, ros, pair, f"attacker.{f.name}={text}", f.name, report)
    _expect_refused(rs, ros, pair, "attacker.no_such_field_in_any_game=1", "no_such_field_in_any_game", report)
    _expect_refused(rs, ros, pair, "no_such_option_in_any_game=1", "no_such_option_in_any_game", report)


def check_units(rs: Ruleset, ros: Roster, pair: Pair, report: ConformanceReport) -> None:
    """Every roster unit survives fields -> profile, and each field survives ``--set attacker.FIELD=...``."""
    for name, unit in ros.units.items():
        try:
            again = rs.parse_unit(rs.unit_to_dict(unit), Where("kit", name))
            report.add("units round-trip", name, again == unit, "" if again == unit else f"{again!r} != {unit!r}")
        except Exception as e:  # noqa: BLE001
            report.add("units round-trip", name, False, f"{type(e).__name__}: {_one_line(e)}")
    attacker = ros.unit(pair[0])
    values = rs.unit_to_dict(attacker)
    for f in rs.unit_fields:
        if f.name == "name" or f.kind == "table" or f.name not in values:
            continue
        try:  # a field stored in another shape on the profile (a squad's groups) is not a --set value
            f.parse(values[f.name])
        except MeleelabError:
            continue
        item = f"attacker.{f.name}={to_text(values[f.name])}"
        try:
            states, overrides, options = parse_settings(rs, [item])
            matchup, _ = build_matchup(rs, pair[0], pair[1], states=states, overrides=overrides, options=options,
                                       roster=ros, from_text=True, budget="none")
            ok = matchup.attacker == attacker
            report.add("units round-trip", f"--set {item}", ok, "" if ok else "the unit changed")
        except Exception as e:  # noqa: BLE001
            report.add("units round-trip", f"--set {item}", False, f"{type(e).__name__}: {_one_line(e)}")

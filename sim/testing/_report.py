"""What the kit found: one :class:`Check` per thing checked, gathered in a :class:`ConformanceReport`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Check", "ConformanceReport", "ConformanceError"]


class ConformanceError(AssertionError):
    """A ruleset failed the conformance kit; the message lists every failed check, one per line."""


@dataclass(frozen=True)
class Check:
    """One check of the kit.

    Attributes
    ----------
    name : str
        The kind of check: ``"protocol"``, ``"kernel vs reference"``, ``"dice"``...
    subject : str
        What was checked: a pair and rounds, a field, a unit.
    passed : bool
    detail : str
        One line: the evidence (a p-value, the first difference, the error).
    """

    name: str
    subject: str
    passed: bool
    detail: str = ""

    def line(self) -> str:
        mark = "ok  " if self.passed else "FAIL"
        return f"{mark} {self.name}: {self.subject}" + (f": {self.detail}" if self.detail else "")


@dataclass
class ConformanceReport:
    """Every check the kit ran on one ruleset, with the sample sizes behind the statistical ones.

    Attributes
    ----------
    ruleset : str
    checks : list of Check
    pairs : list of (str, str)
        Pairs the kernel was compared with the reference on.
    refused : dict
        ``{(attacker, defender): reason}`` for pairs ``prepare`` refused (skipped).
    dice : set of int
        Die sizes the reference rolled (``{6}`` for a d6 game).
    settings : dict
        The kit's parameters (trials, reference trials, rounds, alpha...) and
        the shift in a probability near 1/2 that one pair's test detects.
    seconds : float
    """

    ruleset: str
    checks: list[Check] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    refused: dict[tuple[str, str], str] = field(default_factory=dict)
    dice: set[int] = field(default_factory=set)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, name: str, subject: str, passed: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, subject, bool(passed), " ".join(str(detail).split())))
        return bool(passed)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def ok(self) -> bool:
        return not self.failures

    def failed(self, name: str) -> list[Check]:
        """Failed checks of one kind."""
        return [c for c in self.failures if c.name == name]

    def summary(self) -> str:
        """A few lines: counts per kind of check, the sample sizes, then every failure."""
        counts = Counter(c.name for c in self.checks)
        bad = Counter(c.name for c in self.failures)
        s = self.settings
        lines = [f"conformance of {self.ruleset!r}: {len(self.checks) - len(self.failures)} of {len(self.checks)} "
                 f"checks passed in {self.seconds:.1f} s",
                 f"  {len(self.pairs)} pairs ({len(self.refused)} refused by prepare), rounds {s.get('rounds')}, "
                 f"{s.get('trials')} kernel / {s.get('reference_trials')} reference fights per pair and rounds, "
                 f"alpha {s.get('alpha')} (one pair's test flags a shift of "
                 f"{s.get('detectable_shift', float('nan')):.3f} "
                 f"in a probability near 1/2); dice used: {', '.join(f'd{d}' for d in sorted(self.dice)) or 'none'}"]
        lines += [f"  {name}: {counts[name] - bad[name]}/{counts[name]}" for name in counts]
        lines += ["  " + c.line() for c in self.failures]
        return "\n".join(lines)

    def raise_for_failures(self) -> "ConformanceReport":
        """Raise :class:`ConformanceError` listing the failures; return the report when there are none."""
        if self.failures:
            raise ConformanceError(self.summary())
        return self

    def __str__(self) -> str:
        return self.summary()

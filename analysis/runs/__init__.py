"""Everything that fights: matrices, copy-count fights, sweeps, compares, the solver, fair prices and the balance
summary's fights, the block runner, executors and the results store.

A run returns data (frames, :class:`~analysis.runs.matrix.MatchupMatrix`,
:class:`~analysis.stats.summary.BalanceSummary`) and writes no report file; the
numbers come from :mod:`analysis.stats`. Every cell draws from block-addressed
streams, so a run is determined by its seed whatever the workers or scheduler.
"""

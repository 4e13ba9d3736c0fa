"""What a person reads: the balance report, its findings, tables and plots, the diff of two runs, and the safe
CSV/HTML/Markdown writers every output goes through.

Builds on :mod:`analysis.runs` (to fight what a report shows) and
:mod:`analysis.stats`; the ``meleelab`` command (:mod:`analysis.cli`) sits on top.
"""

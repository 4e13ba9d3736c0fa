"""Numbers from arrays and tables: estimates and intervals, strengths, the equilibrium, dominance, cycles,
copy curves and fair prices.

The bottom layer of :mod:`analysis`: nothing here fights (no :mod:`sim.engine`),
writes a file or draws a plot. Functions take tallies, frames of cells or a
matrix's ``long`` frame and return numbers or tidy frames, so each is tested on
hand-built inputs with known answers.
"""

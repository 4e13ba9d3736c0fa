"""The table helpers shared by rulesets: alias tables and the uniforms that draw from them.

A ruleset imports another ruleset's code only through this package (and the
protocol, :mod:`sim.ruleset`): the helpers here know nothing of any ruleset.

Modules
-------
alias           Walker/Vose alias tables (:class:`~.alias.AliasRows`, :class:`~.alias.AliasBits`,
                :class:`~.alias.AliasPacked`) and one-uniform sampling from them
alias_compiled  Vose's pairing row by row in Numba (the same tables to the bit; loaded only when asked for)
compile_cache   ``njit_cached``: Numba kernels cached in the user's cache folder, never inside the package
portable        binomial tables and products whose bits do not depend on the machine (no BLAS, exp, log, pow)
uniforms        32-bit uniforms from a generator's raw output, and the buffers that feed compiled loops
"""

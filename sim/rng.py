"""Seeds and block-addressed random streams.

A run is determined by its root :class:`numpy.random.SeedSequence` alone. Trials
are cut into blocks of :data:`BLOCK_TRIALS`; block ``b`` of a stream ``key`` always
draws from ``SeedSequence(root.entropy, spawn_key=root.spawn_key + key + (b,))``.
Streams are *addressed*, never spawned in sequence (``SeedSequence.spawn`` keeps a
counter, which would tie results to call order), so a result does not depend on
how blocks are grouped into tasks, on the number of worker processes, or on the
order in which blocks run.

Adaptive runs (a stopping rule such as a target half-width) need a finer grain
than a block: they cut block ``b`` into :data:`SUB_BLOCKS` sub-blocks of
:data:`SUB_BLOCK_TRIALS`, and sub-block ``s`` of block ``b`` draws from its own
addressed stream (:func:`sub_block_rng`, key ``(..., b, SUB_BLOCK_TAG, s)``), so
the rule can be checked every few thousand fights and the result still does not
depend on grouping, workers or order. Fixed-trial runs keep whole blocks (their
numbers do not change).
"""

from __future__ import annotations

import hashlib

import numpy as np

from .errors import InputError

__all__ = ["BLOCK_TRIALS", "SUB_BLOCK_TRIALS", "SUB_BLOCKS", "SUB_BLOCK_TAG", "SeedLike", "root_sequence",
           "block_rng", "sub_block_rng", "stable_key", "block_sizes"]

#: Trials per random-stream block. Part of the reproducibility contract: results
#: for a given seed and trial count are identical for every worker count, task
#: grouping and execution order, and are recorded with this constant.
BLOCK_TRIALS: int = 65_536

#: Trials per sub-block of an adaptive run: its stopping rule is checked after each. Small
#: enough that a loose target (+-1 pp needs at most 9,604 fights) stops after a few
#: thousand fights, large enough that a kernel call costs little more per fight than a
#: whole block (measured: 1.0-1.35 times, mecha to warband). Divides :data:`BLOCK_TRIALS`.
SUB_BLOCK_TRIALS: int = 4_096

#: Sub-blocks per block.
SUB_BLOCKS: int = BLOCK_TRIALS // SUB_BLOCK_TRIALS

SeedLike = int | np.random.SeedSequence | None


def root_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """Return the root seed sequence for ``seed``.

    Parameters
    ----------
    seed : int, numpy.random.SeedSequence or None
        ``None`` draws fresh entropy from the operating system; record
        ``root_sequence(None).entropy`` to reproduce the run later.

    Returns
    -------
    numpy.random.SeedSequence

    Raises
    ------
    sim.errors.InputError
        For anything else (a negative int, a float, a string...).
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**128:
        text = repr(seed) if len(repr(seed)) <= 60 else repr(seed)[:57] + "..."
        raise InputError(f"seed: got {text}, expected an integer in 0..2**128-1, a SeedSequence or None")
    return np.random.SeedSequence(int(seed))


def block_rng(root: np.random.SeedSequence, *key: int) -> np.random.Generator:
    """Return the generator of the stream addressed by ``key``.

    Parameters
    ----------
    root : numpy.random.SeedSequence
        The run's root sequence.
    *key : int
        Stream address, for example ``(cell_key, block_index)``.

    Returns
    -------
    numpy.random.Generator
    """
    seq = np.random.SeedSequence(
        root.entropy, spawn_key=tuple(root.spawn_key) + tuple(int(k) for k in key), pool_size=root.pool_size
    )
    return np.random.Generator(np.random.PCG64(seq))


def sub_block_rng(root: np.random.SeedSequence, *key: int, block: int, sub: int) -> np.random.Generator:
    """Return the generator of sub-block ``sub`` of block ``block`` of the stream ``key``.

    Its address is ``key + (block, SUB_BLOCK_TAG, sub)``: the 128-bit tag keeps it
    apart from every block address (``key + (block,)`` of any stream a caller may
    give, including ``key + (block, sub)``).

    Parameters
    ----------
    root : numpy.random.SeedSequence
    *key : int
        Stream address.
    block : int
        Block index (a block holds :data:`SUB_BLOCKS` sub-blocks).
    sub : int
        Sub-block index within the block.

    Returns
    -------
    numpy.random.Generator
    """
    return block_rng(root, *key, block, SUB_BLOCK_TAG, sub)


def stable_key(text: str) -> int:
    """A stream key derived from a name, stable across processes and runs.

    The 128-bit BLAKE2b digest of the UTF-8 name, as an integer. Python's ``hash``
    is salted per process, and CRC-32 collides (``"plumless"`` and ``"buckeroo"``
    share one), which would give two cells the same random numbers; a 128-bit
    cryptographic digest makes a collision between names practically impossible.
    """
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest(), "big")


def block_sizes(n_trials: int, block_trials: int = BLOCK_TRIALS) -> list[int]:
    """Sizes of the blocks that make up ``n_trials`` (all full but the last)."""
    if n_trials < 1:
        raise ValueError(f"trials must be at least 1, got {n_trials}")
    full, rest = divmod(n_trials, block_trials)
    return [block_trials] * full + ([rest] if rest else [])


#: Marks a sub-block address (see :func:`sub_block_rng`).
SUB_BLOCK_TAG: int = stable_key("meleelab sub-block")

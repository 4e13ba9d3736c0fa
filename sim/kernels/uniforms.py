"""Uniforms for the kernels: 32-bit integers from a generator's raw output, and buffers of them for compiled loops.

:func:`uniform32` gives two 32-bit uniforms per raw 64-bit draw (the draws of
:class:`.alias.AliasBits` and :class:`.alias.AliasPacked`); :func:`play_buffered`
feeds such uniforms, in buffers read in stream order, to a compiled fight loop
(the ``duel`` and ``warband`` compiled kernels).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["uniform32", "play_buffered"]


#: Bit generators whose raw output is 64 random bits: each raw draw gives two 32-bit uniforms.
_RAW64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


def uniform32(rng: np.random.Generator, shape: int | tuple[int, ...]) -> NDArray[np.uint32]:
    """Uniform 32-bit integers of the given shape, from ``rng``'s stream (reproducible).

    The two halves of each raw 64-bit output (``random_raw``: about a quarter of the
    cost of a float64 uniform); other bit generators go through ``rng.integers``.
    """
    n = math.prod(shape) if isinstance(shape, tuple) else int(shape)  # not np.prod: a few us a call
    bg = rng.bit_generator
    if isinstance(bg, _RAW64):
        u = bg.random_raw((n + 1) // 2).view(np.uint32)[:n]
    else:
        u = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    return u.reshape(shape)


def play_buffered(play, rng: np.random.Generator, n: int, per_fight: int, *, buffer: int, headroom: float) -> None:
    """Drive a compiled fight loop over ``n`` fights with uniforms from ``rng`` in buffers.

    ``play(done, u)`` plays fights from ``done`` on while ``u`` holds at least ``per_fight``
    (an upper bound on the uniforms a fight reads) past its position, and returns the fights
    done and the uniforms it read. The unused rest of a refill starts the next one, which holds
    about what the fights left will read (``headroom`` times their mean so far), not their bound,
    and at most ``max(buffer, 4 * per_fight)``: the stream is read in order, so the results do not
    depend on ``buffer`` or ``headroom``, and memory is bounded whatever ``n`` (one array of
    ``max(buffer, 4 * per_fight) + per_fight + 2`` uniforms for the whole run).
    """
    size = max(4 * per_fight, buffer)
    # one buffer for the whole run, the unused rest moved to its front (a new array each refill
    # cost more in fresh pages than the copy)
    buf = np.empty(size + per_fight + 2, np.uint32)
    done = used = left = 0
    while done < n:
        want = per_fight * (n - done) if done == 0 else int(headroom * used / done * (n - done)) + per_fight
        want = max(per_fight, min(size, want))
        fresh = max(0, want - left)
        fresh += fresh & 1                        # even: uniform32 splits 64-bit draws, no half dropped
        buf[left:left + fresh] = uniform32(rng, fresh)
        done, pos = play(done, buf[:left + fresh])
        used += pos
        rest = left + fresh - pos
        buf[:rest] = buf[pos:pos + rest].copy()
        left = rest

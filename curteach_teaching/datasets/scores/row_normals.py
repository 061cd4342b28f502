"""Standard normal draws of many seeded generators, one per row, at a fraction of the cost of making the generators.

``action-variance`` and ``action-likelihood`` give every demonstrated step its own generator,
``default_rng(SeedSequence([seed, tag, t]))`` (:mod:`~curteach_teaching.datasets.scores.policy_samples`), so a step's
samples never depend on the others. On a pool of 56,000 steps making those generators costs about a second of CPU
(a ``SeedSequence`` and a ``PCG64`` object per row, each about 20 microseconds), more than sampling. This module
computes the same generators' states for all rows at once and draws each row's normals from one reused ``Generator``
whose bit generator is set to that state, so the numbers are NumPy's own, bit for bit:

* NumPy's ``SeedSequence`` (O'Neill's ``seed_seq`` design, ``numpy/random/bit_generator.pyx``) turns its entropy
  into uint32 words (an int: its 32-bit words from the least significant, ``0`` as one word ``0``), hashes them into
  a pool of 4 words and mixes the pool with multiply-xorshift steps whose constants do not depend on the data; so
  for rows that differ only in their last word every step is one vectorised uint32 operation over the rows.
  ``generate_state(4, uint64)`` hashes the pool, cycled, into 8 words, read as 4 little-endian uint64.
* ``PCG64(seed_sequence)`` seeds PCG's 128-bit LCG with ``initstate = v0 * 2**64 + v1`` and
  ``initseq = v2 * 2**64 + v3``: ``inc = 2 initseq + 1``, then ``state = inc``, ``state += initstate``, and one
  step ``state = state * MULTIPLIER + inc`` (mod ``2**128``), with no buffered 32-bit draw.

The test compares every state and every draw with NumPy's own generators (seeds of one, two and three words, so
the pool's second mixing loop runs too).
"""

from __future__ import annotations

import numpy as np

__all__ = ["pcg64_states", "row_standard_normals", "seed_sequence_words"]

# NumPy's SeedSequence constants (bit_generator.pyx)
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4
_MASK32 = 0xFFFFFFFF
# PCG64's default 128-bit multiplier (pcg64.h: PCG_DEFAULT_MULTIPLIER_HIGH, _LOW)
_PCG_MULTIPLIER = (2549297995355413924 << 64) + 4865540595714422341
_MASK128 = (1 << 128) - 1


def _int_words(value: int) -> list[int]:
    """NumPy's ``_int_to_uint32_array``: the 32-bit words of ``value >= 0``, least significant first (``0``: one
    word ``0``)."""
    if value < 0:
        raise ValueError(f"a seed must be >= 0; got {value}")
    words = [0] if value == 0 else []
    while value > 0:
        words.append(value & _MASK32)
        value >>= 32
    return words


def seed_sequence_words(prefix: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
    """``(R, 8)`` uint32: ``SeedSequence([*prefix, row]).generate_state(8)`` for every ``row`` of ``rows`` ``(R,)``
    (each ``0 <= row < 2**32``, one word), computed for all rows at once."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size and (rows.min() < 0 or rows.max() > _MASK32):
        raise ValueError("rows must be in [0, 2**32)")
    n = rows.shape[0]
    words = [w for value in prefix for w in _int_words(int(value))]
    entropy = [np.full(n, w, dtype=np.uint32) for w in words] + [rows.astype(np.uint32)]
    const = _INIT_A

    def hashmix(value: np.ndarray) -> np.ndarray:
        nonlocal const
        value = value ^ np.uint32(const)
        const = (const * _MULT_A) & _MASK32
        value = value * np.uint32(const)
        return value ^ (value >> np.uint32(16))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        result = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
        return result ^ (result >> np.uint32(16))

    pool = [hashmix(entropy[i] if i < len(entropy) else np.zeros(n, dtype=np.uint32)) for i in range(_POOL)]
    for source in range(_POOL):  # every word into every other, late bits into early ones
        for target in range(_POOL):
            if source != target:
                pool[target] = mix(pool[target], hashmix(pool[source]))
    for source in range(_POOL, len(entropy)):  # entropy beyond the pool, mixed into each word
        for target in range(_POOL):
            pool[target] = mix(pool[target], hashmix(entropy[source]))
    const = _INIT_B
    out = []
    for i in range(8):
        value = pool[i % _POOL] ^ np.uint32(const)
        const = (const * _MULT_B) & _MASK32
        value = value * np.uint32(const)
        out.append(value ^ (value >> np.uint32(16)))
    return np.stack(out, axis=1)


def pcg64_states(prefix: tuple[int, ...], rows: np.ndarray) -> list[tuple[int, int]]:
    """``[(state, inc)]``: the 128-bit state of ``PCG64(SeedSequence([*prefix, row]))`` for each row ``(R,)``."""
    values = seed_sequence_words(prefix, rows).astype("<u4").view("<u8").astype(np.uint64)  # (R, 4)
    states = []
    for v0, v1, v2, v3 in values.tolist():  # 128-bit arithmetic: Python ints, a few per row
        initstate, initseq = (v0 << 64) | v1, (v2 << 64) | v3
        inc = ((initseq << 1) | 1) & _MASK128
        state = (((inc + initstate) & _MASK128) * _PCG_MULTIPLIER + inc) & _MASK128
        states.append((state, inc))
    return states


def row_standard_normals(prefix: tuple[int, ...], rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``(R, *shape)``: row ``r``'s ``default_rng(SeedSequence([*prefix, rows[r]])).standard_normal(shape)``, the
    same numbers, drawn from one ``Generator`` set to each row's state in turn."""
    bit_generator = np.random.PCG64(0)
    generator = np.random.Generator(bit_generator)
    out = np.empty((len(rows), *shape))
    for r, (state, inc) in enumerate(pcg64_states(prefix, rows)):
        bit_generator.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc}, "has_uint32": 0,
                               "uinteger": 0}
        out[r] = generator.standard_normal(shape)
    return out

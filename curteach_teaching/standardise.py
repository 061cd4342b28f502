"""Scores standardised over a pool, ``(v - mean) / std``: the one function, with the two rules for "no spread".

Two callers standardise and have always differed in when a spread counts as none, and both rules are kept so that no
number moves:

* ``zero="exact"`` (a curriculum's preference terms, :mod:`~curteach_teaching.curriculum.scaled`): zeros only where
  the population standard deviation is exactly 0 or not finite;
* ``zero="relative"`` (the terms of a weighted task score, :mod:`~curteach_teaching.datasets.scores.sums`): zeros
  also where the spread is at rounding level of the values (``std <= 1e-12 * max(1, max |v|)``), since dividing by
  it would blow rounding up to whole units of a sum's other terms.

The two compute the standard deviation as their callers always did (NumPy's ``std`` for ``exact``; the root of the
mean squared deviation for ``relative``), since the two can differ in the last bit. This module needs NumPy alone.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ZERO_RULES", "standardise"]

#: when a spread counts as none: see the module docstring
ZERO_RULES = ("exact", "relative")


def standardise(values, *, zero: str = "exact") -> np.ndarray:
    """``(N,)`` float64 ``(values - mean) / std`` (population std); all zeros where the values do not spread by
    ``zero``'s rule (a constant score carries no preference).

    Raises:
        ValueError: ``zero`` not one of :data:`ZERO_RULES`.
    """
    values = np.asarray(values, dtype=np.float64)
    if zero == "exact":
        spread = values.std()
        if not np.isfinite(spread) or spread == 0.0:
            return np.zeros_like(values)
        return (values - values.mean()) / spread
    if zero == "relative":
        centred = values - values.mean()
        std = float(np.sqrt(np.mean(centred ** 2)))
        if std <= 1e-12 * max(1.0, float(np.max(np.abs(values)))):
            return np.zeros_like(values)
        return centred / std
    raise ValueError(f"zero must be one of {ZERO_RULES}; got {zero!r}")

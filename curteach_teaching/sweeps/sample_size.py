"""What few pairs can show: the exact signed-rank test's smallest p-value, the pairs it takes to reach a level, the
smallest difference pairs of a given spread detect, and the notes a report prints beside paired statistics of too
few pairs (see docs/statistics.md, "Tiny samples" and "Detectable difference").

Duck-typed over :mod:`curteach_teaching.sweeps.paired`'s dataclasses (a difference's ``p_value``, ``min_p_value``
and ``nonzero``; a comparison's ``runs``, ``final``, ``steps_to_target`` and ``scalars``), which import this module.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from curteach_envs._util import counted

__all__ = ["ALPHA", "DETECTABLE_PRINTED_FROM", "POWER", "below_floor", "detectable_difference", "floor_note",
           "min_p_value", "pairs_needed", "sample_size_note"]

#: the level the notes read p-values against
ALPHA = 0.05
#: the power at which a detectable difference is given
POWER = 0.8
#: the fewest pairs at which the printed lines give it: below 10 the exact signed-rank test the reports print finds
#: the t-test's detectable difference of normal differences only 0.63 (6 pairs) to 0.73 (8) of the time
DETECTABLE_PRINTED_FROM = 10


def detectable_difference(differences, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest mean difference that a two-sided paired t-test at level ``alpha`` finds with probability
    ``power``, for pairs as many and as spread as ``differences`` (``(n,)``):
    ``(t_{1-alpha/2, n-1} + t_{power, n-1}) * s / sqrt(n)``, ``s`` their sample standard deviation (``ddof=1``).

    The usual shift approximation, with t quantiles; the exact power at that difference (noncentral t) is 0.795 at
    6 pairs, 0.799 at 10 and 0.800 from 20 (0.766 at 3). It reads a comparison that found nothing: a difference
    this large would have been found four times in five by a t-test, a smaller one may have been missed. The
    signed-rank test the reports print is less powerful at few pairs: for normal differences of this mean it finds
    them 0.63 of the time at 6 pairs, 0.73 at 8 and 0.75-0.78 from 10 to 30 (simulated), less with tied
    differences (success rates). It uses the observed spread, so it is itself an estimate. None for fewer than 2
    pairs or differences that are all equal.
    """
    from scipy import stats

    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1); got {alpha} and {power}")
    differences = np.asarray(differences, dtype=float)
    n = differences.size
    if n < 2 or np.all(differences == differences[0]):
        return None
    quantiles = stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1)
    return float(quantiles * differences.std(ddof=1) / np.sqrt(n))


def min_p_value(m: int) -> float:
    """The smallest two-sided p-value the exact signed-rank test can give with ``m`` non-zero differences:
    ``min(1, 2 / 2^m)``.

    Of the ``2^m`` equally likely sign assignments, only "all positive" reaches the largest ``T⁺`` (and "all
    negative" the smallest), with or without tied magnitudes, so ``P(T⁺ ≥ t_max) = 1 / 2^m`` and the two-sided p
    is twice that.
    """
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
        raise ValueError(f"m must be a positive number of non-zero differences; got {m!r}")
    return min(1.0, 2.0 / 2.0 ** int(m))


def pairs_needed(alpha: float = ALPHA) -> int:
    """The fewest non-zero pairs with which the exact test can give ``p < alpha``: the smallest ``m`` with
    ``2 / 2^m < alpha`` (6 for 0.05, since ``2 / 2^5 = 0.0625``)."""
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must lie in (0, 1]; got {alpha}")
    m = 1
    while min_p_value(m) >= alpha:
        m += 1
    return m


def below_floor(difference, alpha: float = ALPHA) -> bool:
    """Whether a tested difference (a ``PairedDifference``) has too few non-zero pairs for its p-value to fall
    below ``alpha`` (its floor ``2 / 2^m`` is ``>= alpha``)."""
    return difference.p_value is not None and difference.min_p_value is not None and difference.min_p_value >= alpha


def floor_note(difference, alpha: float = ALPHA) -> str | None:
    """Why this difference's p-value cannot fall below ``alpha`` (too few non-zero pairs), or None."""
    if not below_floor(difference, alpha):
        return None
    m = difference.nonzero
    return (f"{counted(m, 'non-zero pair')} cannot give p < {difference.min_p_value:.3g} (2/2^{m}); "
            f"p < {alpha:g} needs at least {pairs_needed(alpha)}")


def sample_size_note(results: Mapping[str, object], alpha: float = ALPHA) -> str | None:
    """One line for the reader of paired statistics (cell -> ``PairedStatistics``) when the pairs are too few for
    the test to reach ``p < alpha`` (``R`` pairs with ``2 / 2^R >= alpha``, i.e. at most 5 for 0.05), or when some
    comparison has too few non-zero pairs (ties, or runs that never reach the target); None otherwise.

    The percentile bootstrap's interval of a mean over so few pairs is too narrow (it under-covers), so an interval
    that excludes 0 beside p = 0.5 is no evidence: the note says so, and how many paired runs could be.
    """
    if not results:
        return None
    runs = next(iter(results.values())).runs
    needed = pairs_needed(alpha)
    if min_p_value(runs) >= alpha:
        return (f"note: with {counted(runs, 'pair')} the signed-rank test cannot give p < {min_p_value(runs):.3g} "
                f"(2/2^{runs}), so none of these p-values can fall below {alpha:g}, and a bootstrap interval over so "
                f"few pairs is too narrow to stand in for a test (one that excludes 0 is no evidence); {needed} paired "
                f"runs are the fewest that can show a difference at {alpha:g}")
    differences = [d for result in results.values()
                   for d in (result.final, *(() if result.steps_to_target is None else
                                             (result.steps_to_target.difference,)), *result.scalars.values())]
    short = [d for d in differences if below_floor(d, alpha)]
    if short:
        verb = "rests" if len(short) == 1 else "rest"
        return (f"note: {counted(len(short), 'comparison')} {verb} on fewer than {needed} non-zero pairs (ties, or "
                f"runs that never reach the target), so their p-values cannot fall below {alpha:g} (each names its "
                f"floor 2/2^m)")
    return None

"""Paired statistics of a sweep: every curriculum or teacher against a baseline, run by run.

Run ``i`` of every cell draws from the same seed (the same data, the same initialisation), so run ``i`` of a cell pairs
with run ``i`` of the baseline and a comparison is made of the per-pair differences ``cell − baseline``. The formulas,
and why each choice was made, are on the docs page "Paired statistics" (docs/statistics.md).

Plain arrays in, frozen dataclasses out; :func:`statistics_to_json` turns the result into a ``report.json`` entry,
and :func:`~curteach_teaching.sweeps.paired_text.summary_lines` into printed lines.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from curteach_teaching.sweeps.sample_size import detectable_difference, floor_note, min_p_value

__all__ = [
    "PairedDifference", "PairedStatistics", "TargetComparison", "interquartile_mean", "paired_comparison",
    "paired_difference", "statistics_to_json", "steps_to_target",
]


# the interval of the mean difference: BCa is undefined for equal differences, erratic at few pairs (see the docs)
_INTERVAL_METHOD = "percentile"
# scipy's exact Wilcoxon distribution assumes distinct magnitudes; with ties, all 2^m sign flips are enumerated up to
# this m (2^13 = 8192 fits within PermutationMethod's default 9999 resamples, so the enumeration is complete).
_EXACT_WITH_TIES = 13
_EXACT_WITHOUT_TIES = 50


@dataclass(frozen=True)
class PairedDifference:
    """The paired comparison of one per-run scalar: ``d_i = x_i − y_i`` over pairs ``i`` (cell ``x``, baseline ``y``).

    Attributes:
        pairs: ``n``, the number of pairs compared.
        mean: the mean difference ``(1/n) Σ_i d_i``; None when ``n = 0``.
        low, high: the percentile-bootstrap interval of the mean difference at level ``confidence``; None when
            ``n < 2``; both equal to ``mean`` when every ``d_i`` is the same (``interval_note`` says which).
        interval_note: None for an ordinary interval, else why there is none or why it is a point.
        p_value: the two-sided Wilcoxon signed-rank p-value over the non-zero differences; None when every difference
            is 0 (``p_value_method`` then says so).
        p_value_method: how ``p_value`` was computed (``"exact"``, ``"exact, all sign flips (tied magnitudes)"``,
            ``"normal approximation"``), or why there is none.
        min_p_value: the smallest p-value an exact test can give with ``nonzero`` differences, ``min(1, 2 / 2^m)``
            (0.0625 for 5 pairs); None for the normal approximation or when there is no test.
        nonzero: ``m``, the number of non-zero differences, the Wilcoxon test's sample size.
        better: pairs where the cell is strictly better than the baseline (higher or lower, per ``higher_is_better``).
        ties: pairs with ``d_i = 0`` exactly.
        higher_is_better: the direction that ``better`` counts.
        confidence, n_resamples: the bootstrap's level and resample count.
        detectable: the smallest mean difference a paired t-test at 0.05 finds with 80 % power at these pairs'
            count and spread (:func:`~curteach_teaching.sweeps.sample_size.detectable_difference`); None for
            fewer than 2 pairs or equal differences.
    """

    pairs: int
    mean: float | None
    low: float | None
    high: float | None
    interval_note: str | None
    p_value: float | None
    p_value_method: str
    min_p_value: float | None
    nonzero: int
    better: int
    ties: int
    higher_is_better: bool
    confidence: float
    n_resamples: int
    detectable: float | None = None

    @property
    def better_share(self) -> float | None:
        """``better / pairs``; None without pairs."""
        return self.better / self.pairs if self.pairs else None

    @property
    def tie_share(self) -> float | None:
        """``ties / pairs``; None without pairs."""
        return self.ties / self.pairs if self.pairs else None


@dataclass(frozen=True)
class TargetComparison:
    """Steps to reach a target, cell against baseline.

    Attributes:
        target: the value a curve must reach (``>=`` when higher is better, ``<=`` otherwise).
        runs: ``R``, the runs per cell.
        reached, baseline_reached: how many of the cell's and of the baseline's runs reach the target.
        difference: the paired difference of the steps over the pairs where *both* runs reach it
            (``difference.pairs`` of them); fewer steps count as better. Pairs where either run never reaches the
            target are censored: they enter only the two counts above.
    """

    target: float
    runs: int
    reached: int
    baseline_reached: int
    difference: PairedDifference


@dataclass(frozen=True)
class PairedStatistics:
    """One cell against the baseline.

    Attributes:
        cell, baseline: the two cells' names.
        runs: ``R``, the paired runs.
        final: the paired difference of the final values.
        iqm, baseline_iqm: the interquartile mean of the final values across runs, of each cell.
        steps_to_target: the steps-to-target comparison; None when no curves were given.
        scalars: any further per-run scalars' paired differences, by name.
    """

    cell: str
    baseline: str
    runs: int
    final: PairedDifference
    iqm: float
    baseline_iqm: float
    steps_to_target: TargetComparison | None = None
    scalars: Mapping[str, PairedDifference] = field(default_factory=dict)


def interquartile_mean(values, axis: int = 0):
    """The interquartile mean (IQM) along ``axis``: the mean after cutting ``floor(0.25 n)`` values from each end.

    ``scipy.stats.trim_mean(values, 0.25)`` semantics, as rliable's IQM (Agarwal et al., 2021): no fractional
    weights, so for ``n`` not a multiple of 4 more than half the runs are kept (6 of 10), and for ``n < 4`` it is
    the plain mean.

    values: ``(R,)`` or ``(R, ...)`` finite values with ``R >= 1`` along ``axis``. Returns a float, or an array of the
    remaining shape (for curves ``(R, K)`` with ``axis=0``: ``(K,)``, one IQM per checkpoint).
    """
    array = np.asarray(values, dtype=float)
    if array.ndim == 0 or array.shape[axis] == 0:
        raise ValueError(f"interquartile_mean needs at least one value along axis {axis}; got shape {array.shape}")
    result = stats.trim_mean(array, 0.25, axis=axis)
    return float(result) if np.ndim(result) == 0 else result


def steps_to_target(curves, steps, target: float, *, higher_is_better: bool = True) -> np.ndarray:
    """The first checkpoint step at which each run reaches ``target``.

    curves: ``(R, K)``, run ``r``'s value at checkpoint ``k``; steps: ``(K,)``, strictly increasing; a run reaches the
    target at the first ``k`` with ``curves[r, k] >= target`` (``<=`` when not ``higher_is_better``).
    Returns ``(R,)`` float: ``steps[k]``, or NaN for a run that never reaches the target (censored).
    """
    curves, steps = np.asarray(curves, dtype=float), np.asarray(steps, dtype=float)
    _check_steps(steps, target)
    if curves.ndim != 2 or curves.shape[1] != steps.size:
        raise ValueError(f"curves have shape {curves.shape}; expected (runs, {steps.size}) for {steps.size} steps")
    reached = curves >= target if higher_is_better else curves <= target
    return np.where(reached.any(axis=1), steps[reached.argmax(axis=1)], np.nan)


def paired_difference(values, baseline_values, *, higher_is_better: bool = True, confidence: float = 0.95,
                      n_resamples: int = 10_000, rng: np.random.Generator | int = 0) -> PairedDifference:
    """The paired comparison of ``values`` against ``baseline_values`` (both ``(n,)``, finite, pair ``i`` = index
    ``i``): mean difference, percentile-bootstrap interval, Wilcoxon p-value, better and tied pairs.

    rng: a generator the bootstrap draws from, or a seed for a fresh one.
    """
    values, baseline_values = np.asarray(values, dtype=float), np.asarray(baseline_values, dtype=float)
    if values.ndim != 1 or values.shape != baseline_values.shape:
        raise ValueError(f"values and baseline_values must be equal-length 1-D arrays; got shapes {values.shape} "
                         f"and {baseline_values.shape}")
    for name, array in (("values", values), ("baseline_values", baseline_values)):
        if not np.all(np.isfinite(array)):
            bad = int(np.flatnonzero(~np.isfinite(array))[0])
            raise ValueError(f"{name}[{bad}] is {array[bad]}; every value must be finite")
    _check_settings(confidence, n_resamples, rng)
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return _compare(values - baseline_values, higher_is_better, confidence, n_resamples, generator)


def _compare(differences: np.ndarray, higher_is_better: bool, confidence: float, n_resamples: int,
             rng: np.random.Generator) -> PairedDifference:
    n = differences.size
    mean = float(differences.mean()) if n else None
    if n < 2:
        low = high = None
        note = "no interval: fewer than 2 pairs"
    elif np.all(differences == differences[0]):
        # Every resample has the same mean, so the bootstrap sees no spread (and BCa would divide by zero).
        low = high = mean
        note = "a point: every difference is equal"
    else:
        result = stats.bootstrap((differences,), np.mean, n_resamples=n_resamples, vectorized=True,
                                 confidence_level=confidence, method=_INTERVAL_METHOD, rng=rng)
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        note = None
    p_value, method, min_p, nonzero = _wilcoxon(differences)
    better = int(np.sum(differences > 0 if higher_is_better else differences < 0))
    return PairedDifference(pairs=n, mean=mean, low=low, high=high, interval_note=note, p_value=p_value,
                            p_value_method=method, min_p_value=min_p, nonzero=nonzero, better=better,
                            ties=int(np.sum(differences == 0)), higher_is_better=higher_is_better,
                            confidence=confidence, n_resamples=n_resamples,
                            detectable=detectable_difference(differences))


def _wilcoxon(differences: np.ndarray) -> tuple[float | None, str, float | None, int]:
    """(p-value, method, smallest attainable p, m) of the two-sided signed-rank test; zero differences dropped."""
    # Wilcoxon's own rule (zero_method="wilcox"): a tie says nothing about the direction, so it leaves the sample.
    # Dropping the zeros here rather than in scipy keeps the exact distribution available when some pairs tie.
    nonzero = differences[differences != 0]
    m = nonzero.size
    if m == 0:
        return None, "no test: every difference is 0" if differences.size else "no test: no pairs", None, 0
    tied = np.unique(np.abs(nonzero)).size < m
    if not tied and m <= _EXACT_WITHOUT_TIES:
        method, label = "exact", "exact"
    elif tied and m <= _EXACT_WITH_TIES:
        # 2^m resamples make the enumeration complete: the generator is never drawn from (no global state either).
        method = stats.PermutationMethod(n_resamples=2**m, rng=np.random.default_rng(0))
        label = "exact, all sign flips (tied magnitudes)"
    else:
        method, label = "asymptotic", "normal approximation"
    p_value = float(stats.wilcoxon(nonzero, zero_method="wilcox", alternative="two-sided", method=method).pvalue)
    min_p = None if label == "normal approximation" else min_p_value(m)
    return p_value, label, min_p, m


def paired_comparison(final: Mapping[str, object], *, baseline: str = "Agn", curves: Mapping[str, object] | None = None,
                      steps=None, target: float | None = None, higher_is_better: bool = True,
                      scalars: Mapping[str, Mapping[str, object]] | None = None,
                      scalar_higher_is_better: Mapping[str, bool] | None = None, confidence: float = 0.95,
                      n_resamples: int = 10_000, rng: np.random.Generator | int = 0) -> dict[str, PairedStatistics]:
    """Every cell of ``final`` against ``baseline``, pair by pair.

    final: cell -> ``(R,)`` final values, the same ``R`` for every cell; run ``i`` of a cell pairs with run ``i`` of
        the baseline.
    curves, steps, target: optional, all three or none: cell -> ``(R, K)`` curves, the ``(K,)`` strictly increasing
        checkpoint steps, and the value whose first reaching is timed (:func:`steps_to_target`).
    higher_is_better: the direction of the final values and of the curves.
    scalars: optional, name -> (cell -> ``(R,)``), further per-run scalars compared like the final values, each in
        the direction ``scalar_higher_is_better[name]`` (default: ``higher_is_better``).
    confidence, n_resamples: the bootstrap interval's level and resample count.
    rng: a seed, from which each (cell, quantity) gets a stream of its own, so that one cell's interval does not
        change when cells are added; or a generator, drawn from in order (cells in ``final``'s order; final, steps to
        target, then scalars).

    Returns cell -> :class:`PairedStatistics`, for every cell but the baseline, in ``final``'s order.
    Raises ValueError (one line) for a missing baseline, unequal run counts, a non-finite value (named by cell and
    run), mismatched curves or steps, or bad settings.
    """
    _check_settings(confidence, n_resamples, rng)
    finals = _cells("final", final, baseline)
    runs = next(iter(finals.values())).size
    reach = None
    given = [name for name, value in (("curves", curves), ("steps", steps), ("target", target)) if value is not None]
    if given:
        if len(given) < 3:
            raise ValueError(f"curves, steps and target go together; got only {', '.join(given)}")
        steps = np.asarray(steps, dtype=float)
        _check_steps(steps, target)
        arrays = _cells("curves", curves, baseline, cells=finals, shape=(runs, steps.size))
        reach = {cell: steps_to_target(array, steps, target, higher_is_better=higher_is_better)
                 for cell, array in arrays.items()}
    extra = {name: _cells(f"scalars[{name!r}]", values, baseline, cells=finals, shape=(runs,))
             for name, values in (scalars or {}).items()}
    unknown = [name for name in scalar_higher_is_better or {} if name not in extra]
    if unknown:
        raise ValueError(f"scalar_higher_is_better names {unknown[0]!r}, which is not among the scalars")
    directions = {name: higher_is_better for name in extra} | dict(scalar_higher_is_better or {})

    def compare(x: np.ndarray, y: np.ndarray, higher: bool, cell: str, quantity: str) -> PairedDifference:
        return _compare(x - y, higher, confidence, n_resamples, _stream(rng, cell, quantity))

    results = {}
    for cell, values in finals.items():
        if cell == baseline:
            continue
        final_difference = compare(values, finals[baseline], higher_is_better, cell, "final")
        target_comparison = None
        if reach is not None:
            mine, theirs = reach[cell], reach[baseline]
            both = ~np.isnan(mine) & ~np.isnan(theirs)
            target_comparison = TargetComparison(
                target=float(target), runs=runs, reached=int(np.sum(~np.isnan(mine))),
                baseline_reached=int(np.sum(~np.isnan(theirs))),
                difference=compare(mine[both], theirs[both], False, cell, "steps_to_target"))
        results[cell] = PairedStatistics(
            cell=cell, baseline=baseline, runs=runs,
            final=final_difference,
            iqm=interquartile_mean(values), baseline_iqm=interquartile_mean(finals[baseline]),
            steps_to_target=target_comparison,
            scalars={name: compare(arrays[cell], arrays[baseline], directions[name], cell, f"scalar:{name}")
                     for name, arrays in extra.items()})
    return results


def _stream(rng: np.random.Generator | int, cell: str, quantity: str) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    # crc32, not hash(): Python salts string hashes per process, and the interval must be the same in every process.
    return np.random.default_rng([rng, zlib.crc32(cell.encode()), zlib.crc32(quantity.encode())])


def _check_settings(confidence: float, n_resamples: int, rng: object) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1); got {confidence}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer; got {n_resamples!r}")
    if not isinstance(rng, np.random.Generator) and (
            isinstance(rng, bool) or not isinstance(rng, int | np.integer) or rng < 0):
        raise ValueError(f"rng must be a numpy Generator or a non-negative integer seed; got {rng!r}")


def _check_steps(steps: np.ndarray, target: float) -> None:
    if steps.ndim != 1 or steps.size == 0:
        raise ValueError(f"steps must be a non-empty 1-D array of checkpoint steps; got shape {steps.shape}")
    if not np.all(np.isfinite(steps)) or np.any(np.diff(steps) <= 0):
        raise ValueError(f"steps must be finite and strictly increasing; got {steps.tolist()}")
    if not np.isfinite(target):
        raise ValueError(f"target must be finite; got {target}")


def _cells(name: str, mapping: Mapping[str, object], baseline: str, *, cells: Mapping[str, np.ndarray] | None = None,
           shape: tuple[int, ...] | None = None) -> dict[str, np.ndarray]:
    """The arrays of ``mapping`` as floats, checked: the baseline and (with ``cells``) exactly those cells present,
    equal run counts, (with ``shape``) that shape, every value finite."""
    if cells is None:
        if baseline not in mapping:
            raise ValueError(f"baseline {baseline!r} is not among the cells of {name} ({', '.join(map(str, mapping))})")
        if len(mapping) < 2:
            raise ValueError(f"{name} holds only the baseline {baseline!r}: nothing to compare it with")
    else:
        missing = [cell for cell in cells if cell not in mapping] + [cell for cell in mapping if cell not in cells]
        if missing:
            raise ValueError(f"{name} and final must hold the same cells; {missing[0]!r} is in only one of them")
    arrays = {cell: np.asarray(values, dtype=float) for cell, values in mapping.items()}
    for cell, array in arrays.items():
        if shape is None and array.ndim != 1:
            raise ValueError(f"{name}[{cell!r}] has shape {array.shape}; expected (runs,)")
        if shape is not None and array.shape != shape:
            raise ValueError(f"{name}[{cell!r}] has shape {array.shape}; expected {shape} (paired with final)")
    counts = {cell: array.shape[0] for cell, array in arrays.items()}
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{cell} {count}" for cell, count in counts.items())
        raise ValueError(f"{name} has unequal run counts ({listed}); run i of each cell must pair with run i of "
                         f"{baseline!r}")
    for cell, array in arrays.items():
        if array.shape[0] == 0:
            raise ValueError(f"{name}[{cell!r}] holds no runs")
        if not np.all(np.isfinite(array)):
            where = np.argwhere(~np.isfinite(array))[0]
            place = f"run {where[0]}" + (f" checkpoint {where[1]}" if array.ndim > 1 else "")
            raise ValueError(f"{name}[{cell!r}] {place} is {array[tuple(where)]}; every value must be finite")
    return arrays


def _difference_json(difference: PairedDifference) -> dict[str, object]:
    return {
        "pairs": difference.pairs, "mean_difference": difference.mean,
        "ci_low": difference.low, "ci_high": difference.high, "ci_note": difference.interval_note,
        "confidence": difference.confidence, "n_resamples": difference.n_resamples,
        "wilcoxon_p": difference.p_value, "wilcoxon_method": difference.p_value_method,
        "wilcoxon_min_p": difference.min_p_value, "wilcoxon_note": floor_note(difference),
        "nonzero_pairs": difference.nonzero,
        "better": difference.better, "ties": difference.ties,
        "better_share": difference.better_share, "tie_share": difference.tie_share,
        "higher_is_better": difference.higher_is_better, "detectable_difference": difference.detectable,
    }


def statistics_to_json(results: Mapping[str, PairedStatistics]) -> dict[str, dict[str, object]]:
    """``report.json``'s paired statistics: cell -> a dict of plain numbers, strings, booleans and None (never NaN).

    Keys of a cell: ``baseline``, ``runs``, ``iqm``, ``baseline_iqm``, ``final`` (a difference), ``steps_to_target``
    (None, or a difference with ``target``, ``reached`` and ``baseline_reached`` added; its ``pairs`` are the pairs
    where both reach the target), ``scalars`` (name -> a difference). Keys of a difference: ``pairs``,
    ``mean_difference``, ``ci_low``, ``ci_high``, ``ci_note``, ``confidence``, ``n_resamples``, ``wilcoxon_p``,
    ``wilcoxon_method``, ``wilcoxon_min_p``, ``wilcoxon_note`` (None, or why the p-value cannot fall below 0.05:
    too few non-zero pairs), ``nonzero_pairs``, ``better``, ``ties``, ``better_share``, ``tie_share``,
    ``higher_is_better``, ``detectable_difference`` (80 % power at 0.05; None without spread). Differences are
    ``cell − baseline``; the meaning of each is on docs/statistics.md.
    """
    report = {}
    for cell, result in results.items():
        target = result.steps_to_target
        report[cell] = {
            "baseline": result.baseline, "runs": result.runs,
            "iqm": result.iqm, "baseline_iqm": result.baseline_iqm,
            "final": _difference_json(result.final),
            "steps_to_target": None if target is None else {
                "target": target.target, "reached": target.reached, "baseline_reached": target.baseline_reached,
                **_difference_json(target.difference)},
            "scalars": {name: _difference_json(difference) for name, difference in result.scalars.items()},
        }
    return report

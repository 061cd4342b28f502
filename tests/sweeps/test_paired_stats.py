"""Paired statistics (curteach_teaching.sweeps.paired) against hand-computed values, degenerate cases and bad input."""

import itertools
import json

import numpy as np
import pytest

from curteach_teaching.sweeps.paired import (
    interquartile_mean,
    paired_comparison,
    paired_difference,
    statistics_to_json,
    steps_to_target,
)
from curteach_teaching.sweeps.paired_text import summary_lines

# scipy must not warn on any path of the module (a degenerate case must be handled, not left to scipy).
pytestmark = pytest.mark.filterwarnings("error")

FAST = 2000  # resamples: enough for the properties below, and quick


def _difference(differences, **kwargs):
    differences = np.asarray(differences, dtype=float)
    return paired_difference(differences, np.zeros_like(differences), **kwargs)


# --- mean difference, better and tied pairs ------------------------------------------------------------------------

def test_mean_difference_better_and_ties_by_hand():
    result = paired_difference([3, 5, 5, 9], [2, 3, 5, 5], n_resamples=FAST)  # differences [1, 2, 0, 4]
    assert result.pairs == 4 and result.mean == pytest.approx(7 / 4)
    assert (result.better, result.ties) == (3, 1)
    assert (result.better_share, result.tie_share) == (0.75, 0.25)
    lower = paired_difference([3, 5, 5, 9], [2, 3, 5, 5], higher_is_better=False, n_resamples=FAST)
    assert (lower.better, lower.ties) == (0, 1)


def test_mean_of_differences_1_to_4():
    assert _difference([1, 2, 3, 4], n_resamples=FAST).mean == 2.5


# --- Wilcoxon signed-rank -------------------------------------------------------------------------------------------

def _enumerated_p(ranks_plus_signs):
    """Two-sided p by enumerating all 2^m sign assignments of the ranks (the test's null distribution)."""
    ranks = [rank for rank, _ in ranks_plus_signs]
    observed = sum(rank for rank, positive in ranks_plus_signs if positive)
    sums = [sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product([0, 1], repeat=len(ranks))]
    upper = sum(s >= observed for s in sums) / len(sums)
    lower = sum(s <= observed for s in sums) / len(sums)
    return min(1.0, 2 * min(upper, lower))


def test_wilcoxon_exact_n5_by_hand():
    # d = [1, 2, -3, 4, 5]: ranks 1..5, T+ = 1 + 2 + 4 + 5 = 12. Subsets of {1..5} with sum >= 12 are the complements
    # of those with sum <= 3: {}, {1}, {2}, {3}, {1, 2}: 5 of 32. Two-sided p = 2 * 5/32 = 0.3125.
    result = _difference([1, 2, -3, 4, 5], n_resamples=FAST)
    assert result.p_value == pytest.approx(0.3125)
    assert result.p_value == pytest.approx(_enumerated_p([(1, 1), (2, 1), (3, 0), (4, 1), (5, 1)]))
    assert result.p_value_method == "exact" and result.nonzero == 5 and result.min_p_value == 0.0625


def test_wilcoxon_exact_n4_by_hand():
    # d = [1, -2, 3, 4]: T+ = 8; subsets of {1..4} with sum >= 8: complements of {}, {1}, {2}: 3 of 16 -> p = 0.375.
    assert _difference([1, -2, 3, 4], n_resamples=FAST).p_value == pytest.approx(0.375)


def test_smallest_attainable_p_for_five_pairs_is_0_0625():
    result = _difference([0.5, 1.5, 2.5, 3.5, 4.5], n_resamples=FAST)
    assert result.p_value == pytest.approx(0.0625) == result.min_p_value


def test_wilcoxon_drops_zero_differences():
    # Wilcoxon's rule: the two zeros leave the sample, which is then the all-positive n = 5 case.
    result = _difference([0, 1, 0, 2, 3, 4, 5], n_resamples=FAST)
    assert result.p_value == pytest.approx(0.0625)
    assert (result.pairs, result.nonzero, result.ties) == (7, 5, 2)
    assert result.tie_share == pytest.approx(2 / 7)


def test_wilcoxon_with_tied_magnitudes_enumerates_sign_flips():
    # d = [1, 1, -2, 2]: ranks 1.5, 1.5, 3.5, 3.5; T+ = 6.5. Of the 16 sign assignments, 6 give T+ >= 6.5
    # (7 once, 8.5 twice, 10 once, 6.5 twice) and 12 give T+ <= 6.5: p = 2 * 6/16 = 0.75.
    result = _difference([1, 1, -2, 2], n_resamples=FAST)
    assert result.p_value == pytest.approx(0.75)
    assert result.p_value == pytest.approx(_enumerated_p([(1.5, 1), (1.5, 1), (3.5, 0), (3.5, 1)]))
    assert result.p_value_method.startswith("exact, all sign flips")
    # all four positive: only 1 assignment of 16 reaches T+ = 10: p = 2/16.
    assert _difference([1, 1, 2, 2], n_resamples=FAST).p_value == pytest.approx(0.125)


def test_wilcoxon_large_sample_with_ties_uses_the_normal_approximation():
    result = _difference(np.repeat([1.0, 2.0, -1.0], 10), n_resamples=FAST)
    assert result.p_value_method == "normal approximation" and result.min_p_value is None
    assert 0 < result.p_value < 1


def test_wilcoxon_undefined_when_every_difference_is_zero():
    result = paired_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], n_resamples=FAST)
    assert result.p_value is None and "every difference is 0" in result.p_value_method
    assert (result.better, result.ties, result.nonzero) == (0, 3, 0)


# --- the bootstrap interval -----------------------------------------------------------------------------------------

def test_interval_matches_a_direct_percentile_bootstrap_with_the_same_draws():
    differences = np.array([0.3, -1.2, 2.5, 0.7, 1.1, -0.4])
    result = _difference(differences, n_resamples=FAST, rng=np.random.default_rng(7))
    draws = np.random.default_rng(7).integers(0, differences.size, (FAST, differences.size))
    expected = np.quantile(differences[draws].mean(axis=1), [0.025, 0.975])
    assert (result.low, result.high) == pytest.approx(tuple(expected), rel=1e-12)
    assert result.interval_note is None


def test_interval_contains_the_mean_and_shrinks_with_more_pairs():
    differences = np.array([0.3, -1.2, 2.5, 0.7, 1.1, -0.4, 0.9, 1.6])
    small = _difference(differences, n_resamples=FAST)
    large = _difference(np.tile(differences, 4), n_resamples=FAST)
    assert small.low < small.mean < small.high and large.low < large.mean < large.high
    # four times the pairs with the same spread: about half the width
    assert (large.high - large.low) < 0.6 * (small.high - small.low)
    wider = _difference(differences, n_resamples=FAST, confidence=0.99)
    assert wider.high - wider.low > small.high - small.low


def test_interval_with_fewer_than_two_pairs_is_absent():
    one = _difference([1.5], n_resamples=FAST)
    assert (one.mean, one.low, one.high) == (1.5, None, None) and "fewer than 2 pairs" in one.interval_note
    assert one.p_value == 1.0 and one.min_p_value == 1.0  # one non-zero difference: p = 2 * 1/2
    none = _difference([], n_resamples=FAST)
    assert (none.pairs, none.mean, none.low, none.p_value, none.better_share) == (0, None, None, None, None)


def test_interval_of_equal_differences_is_the_point():
    result = _difference([0.1, 0.1, 0.1], n_resamples=FAST)
    assert result.low == result.high == result.mean == pytest.approx(0.1)
    assert "every difference is equal" in result.interval_note
    assert result.p_value == pytest.approx(0.25)  # tied magnitudes, all positive: 2 * 1/8


def test_same_seed_same_result_and_cells_do_not_disturb_each_other():
    rng = np.random.default_rng(3)
    final = {"Agn": rng.normal(size=8), "Cur": rng.normal(size=8), "Cur-L": rng.normal(size=8)}
    first = paired_comparison(final, n_resamples=FAST, rng=11)
    assert first == paired_comparison(final, n_resamples=FAST, rng=11)
    assert first["Cur"].final != paired_comparison(final, n_resamples=FAST, rng=12)["Cur"].final
    # with a seed each (cell, quantity) has its own stream: dropping Cur-L leaves Cur's interval as it was
    alone = paired_comparison({"Agn": final["Agn"], "Cur": final["Cur"]}, n_resamples=FAST, rng=11)
    assert alone["Cur"] == first["Cur"]
    by_generator = [paired_comparison(final, n_resamples=FAST, rng=np.random.default_rng(5)) for _ in range(2)]
    assert by_generator[0] == by_generator[1]
    # a generator is drawn from in order: Cur's final values first, so they match a lone paired_difference
    lone = paired_difference(final["Cur"], final["Agn"], n_resamples=FAST, rng=np.random.default_rng(5))
    assert by_generator[0]["Cur"].final == lone


# --- steps to target and censoring ----------------------------------------------------------------------------------

def test_steps_to_target_first_checkpoint_reaching_it():
    curves = [[0.1, 0.5, 0.9], [0.6, 0.7, 0.8], [0.1, 0.2, 0.3]]
    found = steps_to_target(curves, [100, 200, 300], 0.5)
    np.testing.assert_array_equal(found, [200, 100, np.nan])  # equality reaches; the third run is censored
    lower = steps_to_target(curves, [100, 200, 300], 0.2, higher_is_better=False)
    np.testing.assert_array_equal(lower, [100, np.nan, 100])


def test_censored_pairs_leave_the_difference_and_enter_the_counts():
    steps = [100, 200, 300]
    reach = {100: [1, 1, 1], 200: [0, 1, 1], 300: [0, 0, 1], None: [0, 0, 0]}  # first step at which 1 is reached
    agn = [300, 200, None, 300, None]
    cur = [100, 200, 200, None, None]
    curves = {"Agn": [reach[s] for s in agn], "Cur": [reach[s] for s in cur]}
    final = {"Agn": np.zeros(5), "Cur": np.ones(5)}
    result = paired_comparison(final, curves=curves, steps=steps, target=1, n_resamples=FAST)["Cur"]
    target = result.steps_to_target
    # both reach in runs 0 and 1 only: differences [100 - 300, 200 - 200] = [-200, 0]
    assert (target.runs, target.reached, target.baseline_reached, target.difference.pairs) == (5, 3, 3, 2)
    assert target.difference.mean == -100
    assert (target.difference.better, target.difference.ties) == (1, 1)  # fewer steps is better
    assert target.difference.higher_is_better is False and target.difference.p_value == 1.0
    assert "both reach 2/5: Cur 3/5, Agn 3/5" in summary_lines({"Cur": result})[0]


def test_no_pair_reaching_the_target_gives_no_difference():
    curves = {"Agn": np.zeros((3, 2)), "Cur": [[0, 1], [0, 0], [0, 0]]}
    final = {"Agn": np.zeros(3), "Cur": np.ones(3)}
    result = paired_comparison(final, curves=curves, steps=[1, 2], target=1, n_resamples=FAST)
    target = result["Cur"].steps_to_target
    assert (target.reached, target.baseline_reached, target.difference.pairs, target.difference.mean) == (1, 0, 0, None)
    assert "steps to target n/a (both reach 0/3: Cur 1/3, Agn 0/3)" in summary_lines(result)[0]


# --- interquartile mean ---------------------------------------------------------------------------------------------

def test_interquartile_mean_cuts_floor_of_a_quarter_from_each_end():
    # n = 10: floor(2.5) = 2 cut from each end of -50, 1, 2, ..., 8, 100, leaving 2..7: mean 4.5
    assert interquartile_mean([100, 1, 2, 3, 4, 5, 6, 7, 8, -50]) == pytest.approx(4.5)
    assert interquartile_mean([10, 1, 2, 3, -7]) == pytest.approx(2.0)  # n = 5: floor(1.25) = 1 cut: 1, 2, 3
    assert interquartile_mean([1, 2, 9]) == pytest.approx(4.0)  # n = 3: nothing cut, the plain mean
    assert interquartile_mean([7, 0, 1, 2, 3, 4, -9]) == pytest.approx(2.0)  # n = 7: 1 cut: 0, 1, 2, 3, 4
    np.testing.assert_allclose(interquartile_mean([[0, 10], [1, 20], [2, 30], [100, 40]]), [1.5, 25])  # (R, K)


def test_paired_comparison_reports_each_cells_iqm():
    final = {"Agn": [10, 1, 2, 3, -7], "Cur": [4, 5, 6, 7, 100]}
    result = paired_comparison(final, n_resamples=FAST)["Cur"]
    assert (result.iqm, result.baseline_iqm) == (pytest.approx(6.0), pytest.approx(2.0))


# --- scalars, JSON and summary lines --------------------------------------------------------------------------------

def test_scalars_are_compared_in_their_own_direction():
    final = {"Agn": np.zeros(4), "Cur": np.ones(4)}
    scalars = {"length": {"Agn": [10, 10, 10, 10], "Cur": [8, 9, 12, 7]}}
    result = paired_comparison(final, scalars=scalars, scalar_higher_is_better={"length": False}, n_resamples=FAST)
    length = result["Cur"].scalars["length"]
    assert (length.mean, length.better, length.higher_is_better) == (-1.0, 3, False)


def test_json_keys_are_stable_and_plain():
    final = {"Agn": np.zeros(3), "Cur": [1.0, 2.0, 3.0], "Same": np.zeros(3)}
    curves = {cell: np.zeros((3, 2)) for cell in final}
    report = statistics_to_json(paired_comparison(final, curves=curves, steps=[1, 2], target=1, n_resamples=FAST))
    text = json.dumps(report, allow_nan=False)  # no NaN anywhere: undefined values are null
    assert json.loads(text) == report and list(report) == ["Cur", "Same"]
    difference_keys = {"pairs", "mean_difference", "ci_low", "ci_high", "ci_note", "confidence", "n_resamples",
                       "wilcoxon_p", "wilcoxon_method", "wilcoxon_min_p", "wilcoxon_note", "nonzero_pairs", "better",
                       "ties",
                       "better_share", "tie_share", "higher_is_better", "detectable_difference"}
    cur = report["Cur"]
    assert set(cur) == {"baseline", "runs", "iqm", "baseline_iqm", "final", "steps_to_target", "scalars"}
    assert set(cur["final"]) == difference_keys
    assert set(cur["steps_to_target"]) == difference_keys | {"target", "reached", "baseline_reached"}
    assert (cur["baseline"], cur["runs"], cur["final"]["mean_difference"], cur["final"]["better"]) == ("Agn", 3, 2, 3)
    assert report["Same"]["final"]["wilcoxon_p"] is None and report["Same"]["final"]["ci_low"] == 0.0
    # differences 1, 2, 3: s = 1, (t_{0.975,2} + t_{0.8,2}) / sqrt(3) = (4.302653 + 1.060660) / 1.732051
    assert cur["final"]["detectable_difference"] == pytest.approx(3.096511, rel=1e-6)
    assert report["Same"]["final"]["detectable_difference"] is None
    assert cur["steps_to_target"]["mean_difference"] is None


def test_summary_line():
    final = {"Agn": [1.0, 2.0, 3.0, 4.0, 5.0], "Cur": [3.0, 4.0, 5.0, 6.0, 7.0]}
    curves = {"Agn": [[0, 1]] * 5, "Cur": [[1, 1]] * 5}
    result = paired_comparison(final, curves=curves, steps=[100, 200], target=1, n_resamples=FAST)
    assert summary_lines(result) == [
        "Cur - Agn: final +2 [2, 2] (p=0.0625, floor 2/2^5=0.0625, better in 5/5, ties 0); IQM 5 vs 3; "
        "steps to target -100 [-100, -100] (p=0.0625, floor 2/2^5=0.0625, better in 5/5, ties 0; both reach 5/5: "
        "Cur 5/5, Agn 5/5)"]
    one = paired_comparison({"Agn": [1.0], "Cur": [1.0]}, n_resamples=FAST)
    assert summary_lines(one) == ["Cur - Agn: final +0 [no interval] (p n/a, better in 0/1, ties 1); IQM 1 vs 1"]


# --- bad input: one line each ---------------------------------------------------------------------------------------

GOOD = {"Agn": [1.0, 2.0, 3.0], "Cur": [2.0, 3.0, 4.0]}
CURVES = {"Agn": np.zeros((3, 2)), "Cur": np.ones((3, 2))}


@pytest.mark.parametrize("call, message", [
    (lambda: paired_comparison({"Cur": [1.0], "Cur-L": [2.0]}), "baseline 'Agn' is not among the cells"),
    (lambda: paired_comparison({"Agn": [1.0]}), "only the baseline"),
    (lambda: paired_comparison({"Agn": [1.0, 2.0], "Cur": [1.0]}), r"unequal run counts \(Agn 2, Cur 1\)"),
    (lambda: paired_comparison({"Agn": [], "Cur": []}), r"final\['Agn'\] holds no runs"),
    (lambda: paired_comparison({"Agn": [1.0, 2.0, 3.0], "Cur": [1.0, 2.0, np.nan]}), r"final\['Cur'\] run 2 is nan"),
    (lambda: paired_comparison({"Agn": [[1.0]], "Cur": [[1.0]]}), r"final\['Agn'\] has shape \(1, 1\)"),
    (lambda: paired_comparison(GOOD, curves=CURVES), "go together; got only curves"),
    (lambda: paired_comparison(GOOD, curves={"Agn": CURVES["Agn"]}, steps=[1, 2], target=1), "'Cur' is in only"),
    (lambda: paired_comparison(GOOD, curves=CURVES, steps=[1, 2, 3], target=1), r"curves\['Agn'\] has shape"),
    (lambda: paired_comparison(GOOD, curves=CURVES, steps=[2, 1], target=1), "strictly increasing"),
    (lambda: paired_comparison(GOOD, curves=CURVES, steps=[1, 2], target=np.nan), "target must be finite"),
    (lambda: paired_comparison(GOOD, curves={"Agn": CURVES["Agn"], "Cur": [[0, 1], [0, np.inf], [0, 0]]},
                               steps=[1, 2], target=1), r"curves\['Cur'\] run 1 checkpoint 1 is inf"),
    (lambda: paired_comparison(GOOD, scalars={"length": {"Agn": [1, 2, 3], "Cur": [1, 2]}}),
     r"scalars\['length'\]\['Cur'\] has shape \(2,\)"),
    (lambda: paired_comparison(GOOD, scalar_higher_is_better={"length": False}), "'length', which is not among"),
    (lambda: paired_comparison(GOOD, confidence=1.0), "confidence must lie in"),
    (lambda: paired_comparison(GOOD, n_resamples=0), "n_resamples must be a positive integer"),
    (lambda: paired_comparison(GOOD, rng=-1), "non-negative integer seed"),
    (lambda: paired_comparison(GOOD, rng=1.5), "non-negative integer seed"),
    (lambda: paired_difference([1.0, 2.0], [1.0]), "equal-length 1-D arrays"),
    (lambda: paired_difference([1.0, np.nan], [1.0, 2.0]), r"values\[1\] is nan"),
    (lambda: steps_to_target([[0.0, 1.0]], [1, 2, 3], 0.5), "expected \\(runs, 3\\)"),
    (lambda: interquartile_mean([]), "at least one value"),
])
def test_bad_input_raises_one_line(call, message):
    with pytest.raises(ValueError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_grouped_scalars_get_one_brief_line_per_group_after_their_cell():
    final = {"Agn": np.zeros(4), "Cur": np.ones(4)}
    scalars = {"length": {"Agn": [10, 10, 10, 10], "Cur": [8, 9, 12, 7]},
               "success:reach": {"Agn": np.ones(4), "Cur": np.ones(4)},
               "success:push": {"Agn": np.zeros(4), "Cur": np.ones(4)}}
    lines = summary_lines(paired_comparison(final, scalars=scalars, n_resamples=FAST))
    assert len(lines) == 2 and "length -1 [" in lines[0] and "reach" not in lines[0]
    # every pair of push differs by +1 in the same direction: the exact signed-rank p of 4 pairs is 2/2^4
    assert lines[1].startswith("  success: reach +0") and lines[1].endswith("; push +1 [1, 1] p=0.125")

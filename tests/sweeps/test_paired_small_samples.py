"""Few pairs: the exact signed-rank test's smallest p-value, the runs it takes to reach 0.05, and the notes that say
so wherever the paired statistics are printed (stdout, report.json's entries and lines)."""

import itertools
import json
import math

import numpy as np
import pytest

from curteach_teaching.sweeps.paired import paired_comparison, paired_difference, statistics_to_json
from curteach_teaching.sweeps.paired_text import summary_lines
from curteach_teaching.sweeps.reports import Report
from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.sample_size import detectable_difference, min_p_value, pairs_needed, sample_size_note
from curteach_teaching.sweeps.sweep import SweepResult

FAST = 500


@pytest.mark.parametrize("m", range(1, 11))
def test_the_smallest_p_is_two_over_two_to_the_m(m):
    # every difference of one sign is the most extreme of the 2^m equally likely sign assignments
    assert min_p_value(m) == min(1.0, 2.0 / 2**m)
    distinct = paired_difference(np.arange(1.0, m + 1), np.zeros(m), n_resamples=FAST)
    assert distinct.p_value_method == "exact" and distinct.p_value == pytest.approx(min(1.0, 2.0 / 2**m), rel=1e-12)
    tied = paired_difference(-np.ones(m), np.zeros(m), n_resamples=FAST)  # all magnitudes tie
    assert tied.p_value == pytest.approx(min(1.0, 2.0 / 2**m), rel=1e-12) == tied.min_p_value


@pytest.mark.parametrize("m", range(1, 7))
def test_no_sign_pattern_goes_below_the_floor(m):
    p_values = [paired_difference(np.array(signs) * np.arange(1.0, m + 1), np.zeros(m), n_resamples=FAST).p_value
                for signs in itertools.product((-1.0, 1.0), repeat=m)]
    assert min(p_values) == pytest.approx(2.0 / 2**m if m > 1 else 1.0, rel=1e-12)
    assert sum(p == pytest.approx(min(p_values), rel=1e-12) for p in p_values) == 2  # all + or all -


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1, 0.0625, 0.5, 0.001])
def test_pairs_needed_is_the_closed_form(alpha):
    # the smallest m with 2 / 2^m < alpha: floor(log2(2 / alpha)) + 1
    m = pairs_needed(alpha)
    assert m == math.floor(math.log2(2 / alpha)) + 1
    assert min_p_value(m) < alpha and (m == 1 or min_p_value(m - 1) >= alpha)


def test_five_pairs_cannot_reach_five_percent_and_six_can():
    assert pairs_needed() == 6 and min_p_value(5) == 0.0625 and min_p_value(6) == 0.03125
    with pytest.raises(ValueError, match="m must be a positive"):
        min_p_value(0)
    with pytest.raises(ValueError, match="alpha must lie"):
        pairs_needed(0.0)


def _results(runs, offset=1.0):
    rng = np.random.default_rng(3)
    agn = rng.normal(size=runs)
    return paired_comparison({"Agn": agn, "Cur": agn + offset + 0.01 * np.arange(runs)}, n_resamples=FAST)


def test_the_note_and_the_floor_with_five_pairs():
    results = _results(5)
    note = sample_size_note(results)
    assert "5 pairs" in note and "cannot give p < 0.0625 (2/2^5)" in note and "6 paired runs" in note
    assert "excludes 0 is no evidence" in note
    assert "p=0.0625, floor 2/2^5=0.0625" in summary_lines(results)[0]
    entry = statistics_to_json(results)["Cur"]["final"]
    assert entry["wilcoxon_note"] == "5 non-zero pairs cannot give p < 0.0625 (2/2^5); p < 0.05 needs at least 6"


def test_no_note_with_enough_pairs_and_one_for_a_comparison_short_of_non_zero_pairs():
    results = _results(8)
    assert sample_size_note(results) is None and "floor" not in summary_lines(results)[0]
    assert statistics_to_json(results)["Cur"]["final"]["wilcoxon_note"] is None
    # 8 pairs, but 4 of them tie: 4 non-zero pairs cannot reach 0.05
    tied = paired_comparison({"Agn": np.zeros(8), "Cur": np.array([1.0, 2, 3, 4, 0, 0, 0, 0])}, n_resamples=FAST)
    note = sample_size_note(tied)
    assert note.startswith("note: 1 comparison rests on fewer than 6 non-zero pairs")
    assert "floor 2/2^4=0.125" in summary_lines(tied)[0]


class _Experiment:
    cells = ("Agn", "Cur")

    def settings(self):
        return {"experiment": "fake"}


def _sweep(runs):
    rng = np.random.default_rng(0)
    cells = {}
    for k, cell in enumerate(_Experiment.cells):
        cells[cell] = [RunResult(index=i, seed=0, cell=cell, curves={"test": np.array([0.0, 1.0 + k + rng.normal()])},
                                 records={"batches": {"test": np.array([0, 100])}}) for i in range(runs)]
    return SweepResult(cells=cells, seed=0, reused=[(c, i) for c in cells for i in range(runs)])


@pytest.mark.parametrize("runs, expected", [
    (1, "note: one run each: a difference between these numbers is one draw"),
    (3, "note: with 3 pairs the signed-rank test cannot give p < 0.25 (2/2^3)"),
    (6, None),
])
def test_the_report_prints_and_records_the_note(tmp_path, capsys, runs, expected):
    report = Report(_Experiment(), curves=["test"]).write(_sweep(runs), tmp_path, figures=False)
    out = capsys.readouterr().out
    written = json.loads((tmp_path / "report.json").read_text())["paired"]
    if expected is None:
        assert written["note"] is None and "note:" not in out and len(written["lines"]) == 1
    else:
        assert written["note"].startswith(expected) and expected in out and report["paired"] == written
        assert "6 paired runs are the fewest" in written["note"]


def test_the_detectable_difference_against_a_hand_computed_value():
    # d = 0.1, 0.3, -0.2, 0.4, 0.0, 0.2: mean 2/15, squared deviations sum to 0.233333, s = sqrt(0.233333/5)
    # = 0.216025; t_{0.975,5} = 2.570582, t_{0.8,5} = 0.919544 (tables): 3.490126 * 0.216025 / sqrt(6) = 0.307800
    differences = [0.1, 0.3, -0.2, 0.4, 0.0, 0.2]
    assert detectable_difference(differences) == pytest.approx(0.307800, rel=1e-5)
    # the same difference at 90 % power: t_{0.9,5} = 1.475884
    assert detectable_difference(differences, power=0.9) == pytest.approx(
        (2.570582 + 1.475884) * 0.216025 / math.sqrt(6), rel=1e-5)
    assert detectable_difference([0.3]) is None and detectable_difference([0.2, 0.2, 0.2]) is None
    with pytest.raises(ValueError, match="power"):
        detectable_difference(differences, power=1.0)


def test_the_detectable_difference_finds_four_in_five_of_such_differences():
    # its meaning, simulated: normal differences of that mean and spread are found (t-test p < 0.05) in about 80 %
    from scipy import stats

    rng = np.random.default_rng(7)
    n = 10
    delta = detectable_difference(_unit_spread(n))  # pairs whose differences have standard deviation 1
    samples = rng.normal(delta, 1.0, size=(20_000, n))
    found = stats.ttest_1samp(samples, 0.0, axis=1).pvalue < 0.05
    assert found.mean() == pytest.approx(0.80, abs=0.01)


def _unit_spread(n: int) -> np.ndarray:
    """``n`` values whose sample standard deviation is exactly 1."""
    values = np.arange(n, dtype=float)
    return (values - values.mean()) / values.std(ddof=1)


def test_a_comparison_that_found_nothing_says_what_it_could_find_from_ten_pairs():
    agn = np.arange(1.0, 11.0)
    final = {"Agn": agn, "Cur": agn + [0.5, -0.5, 0.5, -1.0, 0.5, 0.5, -0.5, 0.3, -0.2, 0.1]}
    result = paired_comparison(final, n_resamples=FAST)["Cur"]
    assert result.final.p_value >= 0.05
    assert f"p={result.final.p_value:.3g}, t-test detects ±{result.final.detectable:.3g}," in summary_lines(
        {"Cur": result})[0]
    fewer = paired_comparison({cell: values[:9] for cell, values in final.items()}, n_resamples=FAST)
    # at 9 pairs the signed-rank test printed beside it would find that difference too seldom to quote it
    assert fewer["Cur"].final.p_value >= 0.05 and fewer["Cur"].final.detectable is not None
    assert "detects" not in summary_lines(fewer)[0]
    strong = paired_comparison({"Agn": np.zeros(10), "Cur": np.arange(1.0, 11.0)}, n_resamples=FAST)
    assert strong["Cur"].final.p_value < 0.05 and "detects" not in summary_lines(strong)[0]

"""The statistics of ``rank --compare`` on hand examples: AUROC (ties half), Spearman with length, the rank residual
on length, and the kept overlap with length's cut."""

from __future__ import annotations

import numpy as np
import pytest

from curteach_teaching.datasets.compare import auroc, compare_scores, plot_compare, rank_residual
from curteach_teaching.datasets.curation import spearman

stats = pytest.importorskip("scipy.stats")


def test_auroc_against_a_hand_count_with_a_tie():
    scores = [0.1, 0.4, 0.4, 0.8, 0.2]
    label = [False, True, False, True, False]
    # the (True, False) pairs: 0.4 beats 0.1 and 0.2 and ties 0.4 (2.5); 0.8 beats all three (3); of 2 x 3 pairs
    assert auroc(scores, label) == pytest.approx(5.5 / 6)
    u = stats.mannwhitneyu([0.4, 0.8], [0.1, 0.4, 0.2]).statistic  # the same count, scipy's
    assert auroc(scores, label) == pytest.approx(u / 6)
    # the label flipped (a label true for good episodes) reads 1 - AUROC
    assert auroc(scores, [not flag for flag in label]) == pytest.approx(0.5 / 6)
    assert auroc([3.0] * 5, label) == 0.5  # a constant: every pair a tie
    assert auroc(scores, [False] * 5) is None and auroc(scores, [True] * 5) is None
    with pytest.raises(ValueError, match="one label per score"):
        auroc(scores, label[:4])


def test_spearman_with_length_against_a_hand_computation_and_scipy():
    score, lengths = [1.0, 2.0, 2.0, 3.0], [4, 1, 3, 2]
    # average ranks (1, 2.5, 2.5, 4) and (4, 1, 3, 2): deviations (-1.5, 0, 0, 1.5) and (1.5, -1.5, 0.5, -0.5),
    # products summing to -3, squares to 4.5 and 5
    hand = -3 / np.sqrt(4.5 * 5)
    rows = compare_scores({"s": score}, lengths, 0.5)
    assert rows["s"]["spearman_length"] == pytest.approx(hand)
    assert hand == pytest.approx(stats.spearmanr(score, lengths).statistic)


def test_the_rank_residual_on_a_hand_example():
    lengths = [1, 2, 3, 4]
    # ranks (2, 1, 4, 3) on (1, 2, 3, 4): centred (-1.5, -0.5, 0.5, 1.5), slope 3 / 5, residual
    # (2, 1, 4, 3) - 2.5 - 0.6 x centred
    residual = rank_residual([20.0, 10.0, 40.0, 30.0], lengths)
    np.testing.assert_allclose(residual, [0.4, -1.2, 1.2, -0.4])
    slope, intercept = np.polyfit([1, 2, 3, 4], [2, 1, 4, 3], 1)
    np.testing.assert_allclose(residual, np.array([2, 1, 4, 3]) - (intercept + slope * np.arange(1, 5)), atol=1e-12)
    # a score ranked as length ranks: zero everywhere, so nothing beyond length (its AUROC that of a constant)
    lengths = [5, 3, 9, 3, 7]
    assert rank_residual(lengths, lengths).tolist() == [0.0] * 5
    assert rank_residual(np.exp(lengths), lengths).tolist() == [0.0] * 5
    row = compare_scores({"length": lengths}, lengths, 0.4, label=[True, False, True, False, False])["length"]
    assert row["residual_auroc"] == 0.5 and row["residual_spearman_length"] is None
    assert row["spearman_length"] == pytest.approx(1.0) and row["kept_overlap_length"] == 1.0
    # constant lengths: the residual is the score's centred ranks
    np.testing.assert_allclose(rank_residual([3.0, 1.0, 2.0], [4, 4, 4]), [1.0, -1.0, 0.0])


def test_the_kept_overlap_with_length_by_hand():
    lengths = [10, 20, 30, 40, 50, 60]
    score = [6.0, 1.0, 5.0, 2.0, 4.0, 3.0]
    # keep 3: the score keeps episodes 1, 3, 5; length keeps 0, 1, 2; both keep 1
    rows = compare_scores({"s": score, "length": lengths}, lengths, 0.5, seconds={"s": 2.5})
    assert rows["s"]["kept_overlap_length"] == pytest.approx(1 / 3)
    assert rows["length"]["kept_overlap_length"] == 1.0
    assert rows["s"]["seconds"] == 2.5 and rows["length"]["seconds"] is None
    assert rows["s"]["auroc"] is None and rows["s"]["residual_auroc"] is None  # no label given
    # within groups a, a, a, b, b, b (2 of 3 each): the score keeps 1, 2 and 3, 5; length keeps 0, 1 and 3, 4
    within = compare_scores({"s": score}, lengths, 0.5, groups=list("aaabbb"))
    assert within["s"]["kept_overlap_length"] == pytest.approx(2 / 4)
    # nothing dropped: no overlap to measure
    assert compare_scores({"s": score}, lengths, 1.0)["s"]["kept_overlap_length"] is None


def test_a_row_has_the_keys_and_the_residual_is_nearly_uncorrelated_with_length():
    rng = np.random.default_rng(0)
    lengths = rng.integers(10, 60, size=40)
    label = rng.random(40) < 0.3
    score = lengths + 30 * label + rng.normal(0, 5, size=40)
    row = compare_scores({"s": score}, lengths, 0.5, label=label)["s"]
    assert list(row) == ["auroc", "spearman_length", "kept_overlap_length", "seconds", "residual_auroc",
                         "residual_spearman_length"]
    assert row["auroc"] == pytest.approx(auroc(score, label)) and row["residual_auroc"] > 0.5
    assert abs(row["residual_spearman_length"]) < 0.15 < row["spearman_length"]
    assert spearman(rank_residual(score, lengths), lengths) == row["residual_spearman_length"]


def test_the_figure(tmp_path):
    lengths = [4, 2, 7, 5]
    values = {"a": [1.0, 2.0, 3.0, 4.0], "b": [4.0, 4.0, 1.0, 0.0]}
    assert plot_compare(tmp_path / "c.png", values, lengths, [True, False, False, True], "worse", "t").stat().st_size
    assert plot_compare(tmp_path / "d.png", {"a": values["a"]}, lengths).stat().st_size

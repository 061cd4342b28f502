"""Ranking, the keep rule and the length-only control against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from curteach_teaching.datasets.curation import (
    average_ranks,
    episode_groups,
    group_order,
    length_control,
    rank_episodes,
    spearman,
)


def test_average_ranks_share_ties():
    assert average_ranks(np.array([5, 6, 7, 8, 7])).tolist() == [1, 2, 3.5, 5, 3.5]
    assert average_ranks(np.array([2.0, 2.0, 2.0])).tolist() == [2, 2, 2]


def test_spearman_by_hand():
    # no ties: 1 - 6 sum d^2 / (n (n^2 - 1)) with d = (0, -1, 1, 0): 1 - 12 / 60
    assert spearman([10, 20, 30, 40], [1, 3, 2, 4]) == pytest.approx(0.8, abs=1e-15)
    # ties: ranks (1..5) and (1, 2, 3.5, 5, 3.5); sum dx dy = 8, sum dx^2 = 10, sum dy^2 = 9.5
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / np.sqrt(95), abs=1e-15)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3], [4, 4, 4]) is None and spearman([1], [2]) is None
    with pytest.raises(ValueError, match="one length"):
        spearman([1, 2], [1, 2, 3])


def test_rank_and_keep_rule():
    ranking = rank_episodes([3.0, 1.0, 2.0, 5.0, 1.0], keep=0.5)
    assert ranking.order.tolist() == [1, 4, 2, 0, 3]  # lowest first, ties to the lower position
    assert ranking.rank.tolist() == [4, 1, 3, 5, 2]
    assert ranking.kept.tolist() == [False, True, True, False, True]  # round(2.5) = 3: halves round up
    assert rank_episodes([1.0, 2.0, 3.0], keep=0.01).n_kept == 1  # at least one
    assert rank_episodes([1.0, 2.0, 3.0], keep=1).n_kept == 3
    for bad in (0, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match="keep must be a fraction"):
            rank_episodes([1.0], keep=bad)
    with pytest.raises(ValueError, match="finite"):
        rank_episodes([1.0, np.nan], keep=0.5)


def test_ties_at_the_cut_by_hand():
    # scores 0 0 1 0 1 0: keep round(0.5 * 6) = 3 of the four 0s, those at positions 0, 1, 3
    ranking = rank_episodes([0.0, 0.0, 1.0, 0.0, 1.0, 0.0], keep=0.5)
    assert ranking.kept.tolist() == [True, True, False, True, False, False]
    assert ranking.ties_at_cut() == {"score": 0.0, "episodes": 4, "kept": 3}
    assert rank_episodes([0.0, 0.0, 1.0, 1.0], keep=0.5).ties_at_cut() is None  # the cut falls between 0 and 1
    assert rank_episodes([2.0, 2.0, 2.0], keep=1).ties_at_cut() is None  # everything kept: no choice made
    assert rank_episodes([2.0, 2.0, 2.0], keep=0.4).ties_at_cut() == {"score": 2.0, "episodes": 3, "kept": 1}


def test_length_control_of_equal_lengths_says_nothing():
    control = length_control(rank_episodes([3.0, 1.0, 2.0, 5.0], keep=0.5), [200, 200, 200, 200])
    assert control == {"spearman_length": None, "kept_by_length_too": None}  # no length rule to compare with


def test_length_control_by_hand():
    ranking = rank_episodes([3.0, 1.0, 2.0, 5.0, 4.0], keep=0.4)  # keeps positions 1 and 2
    control = length_control(ranking, [10, 30, 20, 50, 40])
    # length ranks (1, 3, 2, 5, 4) against (3, 1, 2, 5, 4): d = (2, -2, 0, 0, 0), 1 - 6 * 8 / 120
    assert control["spearman_length"] == pytest.approx(0.6, abs=1e-15)
    # the 2 shortest are positions 0 and 2: one of the two kept
    assert control["kept_by_length_too"] == 0.5
    assert length_control(rank_episodes([1.0, 2.0], keep=1.0), [3, 4])["kept_by_length_too"] is None


def test_groups(make_pool):
    pool = make_pool("box", n_episodes=3)
    assert episode_groups(pool, None) is None
    assert episode_groups(pool, "level") == ["0", "1", "2"]
    with pytest.raises(ValueError, match="no metadata field 'quality'"):
        episode_groups(pool, "quality")
    with pytest.raises(ValueError, match="each be a boolean field"):
        episode_groups(pool, "level,name")
    from dataclasses import replace

    flags = [{"better": True, "worse": False}, {"better": False, "worse": True}, {"better": False, "worse": False}]
    flagged = replace(pool, metadata=tuple({**m, **f} for m, f in zip(pool.metadata, flags)))
    groups = episode_groups(flagged, "better,worse")
    assert groups == ["better", "worse", "none"]
    assert group_order(groups, "worse,better") == ["worse", "better", "none"]
    assert group_order(["b", "a", "b"], None) == ["a", "b"]


def test_a_cut_within_groups_by_hand():
    from curteach_teaching.datasets.curation import rank_within_groups

    # task a scores low, task b high: a global cut keeps a alone; within groups each keeps round(0.5 n) of its own
    difficulty = [1.0, 2.0, 3.0, 4.0, 10.0, 12.0, 11.0, 13.0]
    groups = ["a"] * 4 + ["b"] * 4
    assert rank_episodes(difficulty, 0.5).kept.tolist() == [True] * 4 + [False] * 4
    ranking = rank_within_groups(difficulty, groups, 0.5)
    assert ranking.kept.tolist() == [True, True, False, False, True, False, True, False]
    assert ranking.rank.tolist() == rank_episodes(difficulty, 0.5).rank.tolist()  # the order is the pool's
    # the length-only control keeps as many of each group's shortest: a 2 (positions 0 and 2), b 2 (4 and 5); of the
    # kept 0, 1, 4 and 6, those are 0 and 4: a half
    control = length_control(ranking, [10, 30, 20, 40, 10, 20, 30, 40], groups)
    assert control["kept_by_length_too"] == 0.5
    with pytest.raises(ValueError, match="one group per episode"):
        rank_within_groups(difficulty, groups[:3], 0.5)

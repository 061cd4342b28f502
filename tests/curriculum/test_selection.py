"""The curriculum's selection (scores -> preference -> ranking -> pacing, logged), in plain NumPy."""

import subprocess
import sys

import numpy as np
import pytest

from curteach_teaching.curriculum.pacing import FullPacing, LinearPacing, kept_count
from curteach_teaching.curriculum.selection import (
    VARIANTS,
    CurriculumSelection,
    EpochSelection,
    check_variant,
    needs_learner_difficulty,
    needs_teacher_difficulty,
    preference,
    ranking,
)
from curteach_teaching.names import AGN, CUR, CUR_L, CUR_T, CURRICULUM_VARIANTS

LEARNER = np.array([3.0, 1.0, 2.0, 2.0])  # log Psi^L
TEACHER = np.array([1.0, 0.0, 2.0, -1.0])  # log Psi^E


def test_variants_and_what_they_read():
    assert VARIANTS is CURRICULUM_VARIANTS == ("Cur", "Cur-L", "Cur-T", "Agn")
    assert [needs_learner_difficulty(v) for v in VARIANTS] == [True, True, False, False]
    assert [needs_teacher_difficulty(v) for v in VARIANTS] == [True, False, True, False]
    assert check_variant(CUR_T) == "Cur-T"
    with pytest.raises(ValueError, match="unknown curriculum 'Omn'; available: Cur, Cur-L, Cur-T, Agn. To add one"):
        check_variant("Omn")
    with pytest.raises(ValueError, match="an object with preference"):
        check_variant(3)


@pytest.mark.parametrize(
    "variant, expected, order",
    [
        (CUR, [2.0, 1.0, 0.0, 3.0], [3, 0, 1, 2]),  # log Psi^L - log Psi^E
        (CUR_L, [3.0, 1.0, 2.0, 2.0], [0, 2, 3, 1]),  # log Psi^L; the tie of 2 and 3 keeps 2 first
        (CUR_T, [-1.0, -0.0, -2.0, 1.0], [3, 1, 0, 2]),  # -log Psi^E
    ],
)
def test_preference_and_ranking_by_hand(variant, expected, order):
    prefer = preference(variant, LEARNER, TEACHER)
    assert prefer.tolist() == expected
    assert ranking(prefer).tolist() == order
    assert prefer is not LEARNER and prefer is not TEACHER  # a new array
    assert preference(AGN, LEARNER, TEACHER) is None


def test_ranking_ties_go_to_the_lower_index():
    assert ranking(np.array([1.0, 5.0, 1.0, 5.0, 5.0])).tolist() == [1, 3, 4, 0, 2]
    assert ranking(np.zeros(4)).tolist() == [0, 1, 2, 3]


def test_pacing_counts():
    pacing = LinearPacing()  # N = 4, E = 2: int(2 + min(1, e / 1.6) * 2)
    assert [kept_count(pacing, e, 2, 4) for e in (1, 2)] == [3, 4]
    assert [kept_count(FullPacing(), e, 3, 7) for e in (1, 2, 3)] == [7, 7, 7]
    assert kept_count(lambda e, E, n: np.int64(2), 1, 1, 4) == 2
    for bad in (0, 5, 2.0, True, None):
        with pytest.raises(ValueError, match=r"integer in \[1, 4\]"):
            kept_count(lambda e, E, n, bad=bad: bad, 1, 1, 4)


def test_select_and_log_by_hand():
    selection = CurriculumSelection(4, CUR, TEACHER)  # default LinearPacing(0.8, 0.5)
    assert selection.needs_learner_difficulty
    first = selection.select(1, 2, LEARNER)
    assert isinstance(first, EpochSelection)
    assert first.selected.tolist() == [3, 0, 1] and first.preference.tolist() == [2.0, 1.0, 0.0, 3.0]
    assert first.learner_difficulty is LEARNER
    record = selection.log(first, n_transitions=30, n_batches=2)
    assert (record.epoch, record.n_selected, record.fraction) == (1, 3, 0.75)
    assert (record.n_transitions, record.n_batches) == (30, 2)
    assert record.selected.tolist() == [3, 0, 1]
    assert record.learner_difficulty_mean == 2.0 and record.learner_difficulty_max == 3.0  # of [2, 3, 1]
    assert record.learner_difficulty_all_mean == 2.0
    assert record.teacher_difficulty_mean == 0.0  # of [-1, 1, 0]
    assert record.preference_min == 1.0  # the cut-off
    second = selection.log(selection.select(2, 2, LEARNER), 40, 3)
    assert second.epoch == 2 and second.n_selected == 4
    assert selection.history == [record, second]
    assert selection.selection_matrix().tolist() == [[True, True, False, True], [True, True, True, True]]
    table = selection.log_table()
    assert table["epoch"].tolist() == [1, 2] and table["fraction"].tolist() == [0.75, 1.0] and "selected" not in table


def test_agn_keeps_all_and_never_calls_the_pacing():
    def pacing(epoch, n_epochs, n_items):
        raise AssertionError("Agn must not call the pacing")

    selection = CurriculumSelection(5, AGN, pacing=pacing)
    assert not selection.needs_learner_difficulty
    chosen = selection.select(1, 10, learner_difficulty=np.arange(5.0))  # given, but Agn ignores it
    assert chosen.selected.tolist() == [0, 1, 2, 3, 4]
    assert chosen.preference is None and chosen.learner_difficulty is None
    record = selection.log(chosen, 50, 5)
    assert record.fraction == 1.0
    for name in ("learner_difficulty_mean", "learner_difficulty_max", "learner_difficulty_all_mean",
                 "teacher_difficulty_mean", "preference_min"):
        assert np.isnan(getattr(record, name))


def test_cur_t_reads_no_learner_and_cur_l_no_teacher():
    cur_t = CurriculumSelection(4, CUR_T, TEACHER, pacing=lambda e, E, n: 2)
    chosen = cur_t.select(1, 1)  # no learner difficulty needed
    assert chosen.selected.tolist() == [3, 1] and chosen.learner_difficulty is None
    record = cur_t.log(chosen, 1, 1)
    assert np.isnan(record.learner_difficulty_mean) and record.teacher_difficulty_mean == -0.5
    cur_l = CurriculumSelection(4, CUR_L, pacing=lambda e, E, n: 2)
    record = cur_l.log(cur_l.select(1, 1, LEARNER), 1, 1)
    assert record.selected.tolist() == [0, 2] and np.isnan(record.teacher_difficulty_mean)


def test_a_growing_selection_keeps_its_history_and_refuses_to_shrink():
    selection = CurriculumSelection.growing(CUR_T, pacing=lambda e, E, n: 1)
    assert selection.n_items == 0 and selection.history == []
    selection.grow(2, np.array([1.0, 0.0]))
    first = selection.log(selection.select(1, 2), 1, 1)
    selection.grow(3, np.array([1.0, 0.0, -1.0]))
    second = selection.log(selection.select(2, 2), 1, 1)
    assert (first.selected.tolist(), second.selected.tolist()) == ([1], [2]) and second.epoch == 2
    assert selection.selection_matrix().tolist() == [[False, True, False], [False, False, True]]
    with pytest.raises(ValueError, match="n_items must be an integer >= 3"):
        selection.grow(2, np.zeros(2))
    with pytest.raises(ValueError, match="needs a teacher difficulty"):
        selection.grow(4)


def test_bad_input():
    with pytest.raises(ValueError, match="unknown curriculum 'Omn'"):
        CurriculumSelection(4, "Omn")
    with pytest.raises(ValueError, match="pacing must be a callable"):
        CurriculumSelection(4, AGN, pacing=3)
    with pytest.raises(ValueError, match="n_items must be an integer >= 1"):
        CurriculumSelection(0, AGN)
    with pytest.raises(ValueError, match="needs a teacher difficulty"):
        CurriculumSelection(4, CUR)
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        CurriculumSelection(4, CUR_T, np.zeros(3))
    with pytest.raises(ValueError, match="without NaN"):
        CurriculumSelection(4, CUR_T, np.array([0.0, np.nan, 0.0, 0.0]))
    selection = CurriculumSelection(4, CUR_L)
    with pytest.raises(ValueError, match="needs the learner's difficulty"):
        selection.select(1, 1)
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        selection.select(1, 1, np.zeros(5))
    with pytest.raises(ValueError, match=r"epoch must be in \[1, n_epochs = 2\]"):
        selection.select(3, 2, LEARNER)


def test_selection_needs_neither_torch_nor_imitation():
    code = (
        "import sys; import curteach_teaching.curriculum.selection, curteach_teaching.names, "
        "curteach_teaching.difficulty; "
        "print(sorted(m for m in ('torch', 'imitation', 'stable_baselines3') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

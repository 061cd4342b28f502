"""ScaledPreference: a task score and the learner's difficulty on one scale (per step or summed, standardised or raw),
and the built-in curricula of a dataset as registered objects."""

from __future__ import annotations

import numpy as np
import pytest

from curteach_teaching.curriculum.scaled import ScaledPreference, scaled_curriculum
from curteach_teaching.standardise import standardise


def test_scaled_preference_by_hand():
    lengths = np.array([1.0, 2.0, 4.0])
    learner_sum = np.array([2.0, 2.0, 4.0])  # per step: 2, 1, 1
    teacher = np.array([0.0, 3.0, 6.0])  # standardised: -1.2247, 0, 1.2247
    per_step = standardise(np.array([2.0, 1.0, 1.0]))
    np.testing.assert_allclose(per_step, [np.sqrt(2), -1 / np.sqrt(2), -1 / np.sqrt(2)])
    cur = ScaledPreference("Cur", lengths).preference(learner_sum, teacher)
    np.testing.assert_allclose(cur, per_step - np.array([-1.5, 0.0, 1.5]) / np.sqrt(1.5))
    raw = ScaledPreference("Cur", lengths, learner="sum", scale="raw").preference(learner_sum, teacher)
    np.testing.assert_allclose(raw, [2.0, -1.0, -2.0])
    assert ScaledPreference("Cur-T", lengths).preference(None, teacher).argmax() == 0  # the easiest first
    assert not ScaledPreference("Cur-T", lengths).needs_learner and not ScaledPreference("Cur-L", lengths).needs_teacher
    np.testing.assert_array_equal(standardise(np.ones(3)), np.zeros(3))
    with pytest.raises(ValueError, match="Agn has none"):
        ScaledPreference("Agn", lengths)


class _Mine:
    name = "Mine"

    def preference(self, learner_difficulty, teacher_difficulty):
        return -np.asarray(teacher_difficulty)


def test_scaled_curriculum_reads_the_curricula_registry(monkeypatch):
    import sys
    import types

    lengths = np.array([2.0, 4.0])
    assert scaled_curriculum("Agn", lengths) == "Agn"
    cur = scaled_curriculum("Cur-T", lengths, learner="sum", scale="raw")
    assert isinstance(cur, ScaledPreference) and (cur.name, cur.learner, cur.scale) == ("Cur-T", "sum", "raw")
    module = types.ModuleType("my_curricula")
    module.Mine = _Mine
    monkeypatch.setitem(sys.modules, "my_curricula", module)
    assert isinstance(scaled_curriculum("my_curricula:Mine", lengths), _Mine)  # a plug-in keeps its own scales
    with pytest.raises(ValueError, match="unknown curriculum 'Omn'"):
        scaled_curriculum("Omn", lengths)

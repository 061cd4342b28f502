"""A plug-in teacher or learner that raises: one line naming the plug-in and the exception, exit code 2, and its
traceback in the output folder's errors.log (on every backend); what a plug-in learner returns is checked where it
enters (NaN, the wrong shape, rows that are not distributions: named, never written as NaN)."""

from __future__ import annotations

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.registry import PluginError

BROKEN = '''
class Broken:
    name = "Broken"

    def __init__(self, context):
        self.starts = context.start_states

    def select(self, view, step):
        if step == 2:
            raise ZeroDivisionError("my teacher divides by zero")
        return int(self.starts[0])
'''


@pytest.mark.parametrize("backend", ["serial", "processes"])
def test_a_raising_plugin_teacher_is_one_line_and_a_log(tmp_path, monkeypatch, capsys, backend):
    (tmp_path / "broken_teacher.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    code = main(["teach", "--env", "FrozenLake-v1", "--teachers", "Agn,broken_teacher:Broken", "--runs", "2",
                 "--steps", "4", "--workers", "2", "--backend", backend, "--no-progress", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert "teacher 'Broken' raised ZeroDivisionError in select at step 2: my teacher divides by zero" in err
    assert str(out / "errors.log") in err
    log = (out / "errors.log").read_text()
    assert "Traceback" in log and "broken_teacher.py" in log and "my teacher divides by zero" in log


def test_plugin_error_keeps_its_line_and_traceback_across_pickling():
    import pickle

    error = pickle.loads(pickle.dumps(PluginError("teacher 'X' raised KeyError", "Traceback ...")))
    assert str(error) == "teacher 'X' raised KeyError" and error.details == "Traceback ..."
    assert isinstance(error, ValueError)


LEARNERS = '''
import numpy as np


class Uniform:
    name = "uniform"

    def __init__(self, context):
        self.shape = (context.mdp.n_states, context.mdp.n_actions)
        self.lessons = 0

    def action_log_probabilities(self):
        return np.full(self.shape, -np.log(self.shape[1]))

    def learn(self, lesson):
        self.lessons += 1


class GoesNaN(Uniform):
    name = "goes-nan"

    def action_log_probabilities(self):
        out = super().action_log_probabilities()
        if self.lessons >= 2:
            out[3] = np.nan
        return out


class Flat(Uniform):
    name = "flat"

    def action_log_probabilities(self):
        return np.zeros(self.shape[0])


class Unnormalised(Uniform):
    name = "unnormalised"

    def action_log_probabilities(self):
        return np.zeros(self.shape)


class Raises(Uniform):
    name = "raises"

    def learn(self, lesson):
        raise KeyError("my learner has no such lesson")
'''


def _teach_with_learner(tmp_path, monkeypatch, learner, backend="serial"):
    (tmp_path / "my_learners.py").write_text(LEARNERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    code = main(["teach", "--env", "FrozenLake-v1", "--teachers", "Agn,Cur", "--learner", f"my_learners:{learner}",
                 "--runs", "2", "--steps", "4", "--workers", "2", "--backend", backend, "--no-progress",
                 "--out", str(out)])
    return code, out


@pytest.mark.parametrize("learner, message", [
    ("GoesNaN", "learner 'goes-nan' returned NaN log-probabilities from action_log_probabilities after lesson 2 "
                "(in 1 of 17 states, the first 3); they must be finite or -inf"),
    ("Flat", "learner 'flat' returned log-probabilities of shape (17,) from action_log_probabilities before its first "
             "lesson; expected (S, A) = (17, 4), the environment's states and actions"),
    ("Unnormalised", "learner 'unnormalised' returned log-probabilities that are not a policy from "
                     "action_log_probabilities before its first lesson: in state 0 their exponentials sum to 4, not 1"),
])
def test_what_a_plugin_learner_returns_is_checked_where_it_enters(tmp_path, monkeypatch, capsys, learner, message):
    code, out = _teach_with_learner(tmp_path, monkeypatch, learner)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert not (out / "summary.csv").exists() and not list(out.glob("runs/*/run_*.json"))  # no NaN row written
    assert "Found here" in (out / "errors.log").read_text()  # where the library found it


@pytest.mark.parametrize("backend", ["serial", "processes"])
def test_a_raising_plugin_learner_is_one_line_and_a_log(tmp_path, monkeypatch, capsys, backend):
    code, out = _teach_with_learner(tmp_path, monkeypatch, "Raises", backend)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "learner 'raises' raised KeyError in learn on lesson 1 (start state " in err
    assert "my learner has no such lesson" in err and str(out / "errors.log") in err
    log = (out / "errors.log").read_text()
    assert "Traceback" in log and "my_learners.py" in log


def test_a_checked_learner_forwards_the_rest_and_lets_divergence_through():
    from curteach_teaching.learners.divergence import LearnerDiverged
    from curteach_teaching.teaching.plugin_learner import CheckedLearner

    class Mine:
        parameters = np.zeros(2)

        def action_log_probabilities(self):
            return np.log(np.full((3, 2), 0.5))

        def gradients_per_start(self, occupancy, scale=1.0):
            return occupancy * scale

        def fit(self, occupancy, steps):
            raise RuntimeError("cannot fit")

        def learn(self, lesson):
            raise LearnerDiverged("too fast")

    checked = CheckedLearner(Mine(), "mine", 3, 2)
    assert checked.parameters is Mine.parameters and isinstance(checked.wrapped, Mine)
    np.testing.assert_array_equal(checked.gradients_per_start(np.ones(2), scale=2.0), [2.0, 2.0])
    np.testing.assert_allclose(checked.action_log_probabilities(), np.log(0.5))
    with pytest.raises(LearnerDiverged):  # the protocol's way to stop a lane, not the plug-in's failure
        checked.learn(None)
    with pytest.raises(PluginError, match=r"^learner 'mine' raised RuntimeError in fit after lesson 1: cannot fit$"):
        checked.fit(np.ones(2), 3)
    with pytest.raises(AttributeError):
        checked.occupancy_per_start  # noqa: B018  (a view it lacks stays lacking: teachers test for it)

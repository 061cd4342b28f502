"""The realizable Theorem-2 experiment: the teacher is the soft-optimal policy of theta*, distances to theta*."""

import json

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.backends import run_seed_sequence
from curteach_teaching.experiments.theorem2 import RealizableExperiment, contraction_rate
from curteach_teaching.learners.maxent_irl import MaxEntIRLLearner


def test_contraction_rate_of_a_geometric_curve():
    assert contraction_rate(5.0 * 0.9 ** np.arange(40)) == pytest.approx(0.9, rel=1e-12)
    assert contraction_rate(np.full(10, 2.0)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="positive"):
        contraction_rate(np.array([1.0, 0.0]))


def test_theta_star_reproduces_the_teachers_policy_and_reward():
    mdp, theta_star, teacher, pool, _ = RealizableExperiment().build(run_seed_sequence(0, 0))
    np.testing.assert_allclose(mdp.reward, mdp.features @ theta_star)  # realizable: the true reward is linear
    learner = MaxEntIRLLearner(mdp, reward_model="linear", initial_parameters=theta_star)
    np.testing.assert_array_equal(learner.log_policy, teacher.log_policy)
    # the pool's actions are drawn from that policy: every demonstrated action has positive probability
    assert np.all(np.isfinite(teacher.log_policy[pool.states, pool.actions]))
    # and the teacher's own gradient at theta* is zero from every start (it is the optimum of its own loss)
    gradients = teacher.gradients_per_start(teacher.occupancy_per_start())
    np.testing.assert_allclose(gradients, 0.0, atol=1e-9)


def test_cur_and_omn_shrink_the_distance_at_every_step_for_a_small_rate():
    """With a small rate each step moves theta along -g, and for these teachers <theta* - theta, g> < 0 holds
    strongly enough that the distance never grows (the condition of Theorem 2); a rounding margin of 1e-12."""
    result = RealizableExperiment(steps=40, teaching_rate=0.02, teachers=("Cur", "Omn", "Agn")).run(
        0, run_seed_sequence(0, 0))
    for name in ("Cur", "Omn"):
        curve = result.curves[name]
        assert np.all(np.diff(curve) <= 1e-12 * curve[:-1]) and curve[-1] < curve[0]
    assert result.curves["Omn"][1] <= min(result.curves[n][1] for n in ("Cur", "Agn")) + 1e-12  # Omn's greedy step


def test_theorem2_command(tmp_path, capsys):
    out = tmp_path / "t2"
    assert main(["car-irl-theorem2", "--runs", "2", "--steps", "10", "--workers", "1", "--no-progress",
                 "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["contraction"]) == {"Agn", "Omn", "Cur", "Cur-T", "Cur-L", "BBox"}
    assert (out / "distance_to_theta_star.png").exists()
    assert "factor per step" in capsys.readouterr().out
    assert main(["car-irl-theorem2", "--teaching-rate", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--teaching-rate must be a finite number > 0" in capsys.readouterr().err

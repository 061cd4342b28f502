"""The realizable Theorem-2 experiment: the teacher is the soft-optimal policy of theta*, distances to theta*."""

import json

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.theory.theorem2 import RealizableExperiment, contraction_rate
from curteach_teaching.learners.maxent_irl import MaxEntIRLLearner
from curteach_teaching.sweeps.backends import run_seed_sequence


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


def test_the_random_layered_mdp():
    from curteach_teaching.experiments.theory.theorem2 import random_layered_mdp

    mdp = random_layered_mdp(np.random.default_rng(0), n_tasks=4, depth=5, width=3)
    assert mdp.n_states == 4 * (1 + 4 * 3) + 1 and mdp.depth == 6 and mdp.horizon == 5
    assert np.all(np.diff(mdp.transitions.tocsr().indptr) == 1)  # deterministic: one successor per (s, a)
    assert mdp.absorbing[-1] and not mdp.features[-1].any()
    learner = MaxEntIRLLearner(mdp, reward_model="linear")  # the task decomposition accepts it
    assert learner.tasks.start_states.tolist() == [0, 13, 26, 39]


def test_lemma1_holds_on_a_deterministic_mdp_with_gamma_1():
    """Lemma 1: log Psi^L - log Psi^E - <theta* - theta, mu> depends only on the start state; the spread across a
    start's demonstrations is zero up to rounding (sums of ~10 terms of order 1: 1e-9 is generous)."""
    result = RealizableExperiment(steps=30, gamma=1.0, mdp_kind="random", teachers=("Cur", "Agn")).run(
        0, run_seed_sequence(0, 0))
    assert result.extras["lemma1_max_spread"] < 1e-9
    # the car's dynamics are not deterministic (some actions have two successors): there the identity fails
    car = RealizableExperiment(steps=3, gamma=1.0, teachers=("Cur",)).run(0, run_seed_sequence(0, 0))
    assert car.extras["lemma1_max_spread"] > 1e-3


def test_cur_converges_linearly_on_the_small_mdp():
    """From step 100 on, Cur's distance shrinks by a fixed factor per step: the factors fitted over steps 100-200
    and 200-300 differ by less than half of their distance from 1 (a sublinear rate would push the later factor
    towards 1 by much more; a linear rate keeps it)."""
    for index in range(3):
        curve = RealizableExperiment(steps=300, gamma=1.0, mdp_kind="random", teachers=("Cur",)).run(
            index, run_seed_sequence(0, index)).curves["Cur"]
        early, late = contraction_rate(curve[100:201]), contraction_rate(curve[200:])
        assert early < 1 and abs(late - early) < 0.5 * (1 - early)

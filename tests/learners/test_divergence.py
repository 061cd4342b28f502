"""Divergent learners (a rate too large for them): the step is refused, the learner keeps its last finite state,
the run finishes and records the step; non-finite rates are refused up front."""

import json

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.demonstrations import sample_demonstrations
from curteach_teaching.experiments.car.bc import CarBCExperiment
from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.experiments.car.report import diverged_share
from curteach_teaching.experiments.car.result import diverged_steps
from curteach_teaching.learners import MaxEntIRLLearner
from curteach_teaching.learners.bc_car import BCCarLearner, step_many
from curteach_teaching.learners.divergence import LearnerDiverged, all_finite
from curteach_teaching.planning import hard_value_iteration
from curteach_teaching.sweeps.sweep import run_seed_sequence
from curteach_teaching.teaching.teachers import OmniscientTeacher

STATE = ("parameters", "values", "q_values", "log_policy", "policy", "occupancy", "expected_reward")


def test_all_finite():
    assert all_finite(np.ones(3), 2.0) and not all_finite(np.ones(3), np.array([1.0, np.nan]))
    assert not all_finite(np.inf)


def test_a_maxent_irl_step_that_diverges_leaves_the_learner_as_it_was(car_mdp):
    expert = hard_value_iteration(car_mdp)
    learner = MaxEntIRLLearner(car_mdp)
    start = int(learner.tasks.start_states[5])
    target = learner.tasks.per_start(learner.policy_occupancy(expert.policy))[5]
    before = {name: np.copy(getattr(learner, name)) for name in STATE}
    with pytest.raises(LearnerDiverged, match="rate 1e\\+300"):
        learner.update(target, start, learning_rate=1e300)
    for name in STATE:
        np.testing.assert_array_equal(getattr(learner, name), before[name])
    learner.update(target, start, learning_rate=0.17)  # a sane step still works from there
    assert all_finite(learner.parameters) and learner.expected_reward != before["expected_reward"]


def test_omniscient_objective_survives_a_huge_rate(car_mdp):
    expert = hard_value_iteration(car_mdp)
    learner = MaxEntIRLLearner(car_mdp)
    per_start = learner.tasks.per_start(learner.policy_occupancy(expert.policy))
    omn = OmniscientTeacher(learner.tasks.start_states, np.zeros_like(learner.parameters), per_start)
    learner.learning_rate = 1e300  # eta**2 overflows a float
    scores = omn.objective(learner)
    assert all_finite(scores)
    g = learner.gradients_per_start(per_start)
    scaled = 1e300 * np.einsum("kp,kp->k", g, g) - 2.0 * (g @ learner.parameters)
    assert np.argmin(scores) == np.argmin(scaled)


def test_car_irl_run_finishes_and_records_the_divergence():
    result = CarIRLExperiment(teaching_rate=0.5).run(0, run_seed_sequence(0, 0))
    steps = diverged_steps(result)
    assert steps, "a teaching rate of 0.5 diverges Cur's learner in this run"
    for name, t in steps.items():
        curve = result.curves[name]
        assert np.all(np.isfinite(curve)) and np.all(curve[t:] == curve[t])  # the last finite value is kept
        assert result.records["picks"][name].shape == (200,)  # the teacher still picks
    for name in set(result.curves) - set(steps):
        assert np.all(np.isfinite(result.curves[name]))
    sane = CarIRLExperiment().run(0, run_seed_sequence(0, 0))
    assert "diverged" not in sane.extras and diverged_steps(sane) == {}
    assert diverged_share([result, sane], ["Agn", *steps]) == {"Agn": 0.0, **{name: 0.5 for name in steps}}


@pytest.mark.parametrize("rate", [np.inf, np.nan, -1.0, 0.0])
def test_non_finite_or_non_positive_rates_are_refused(rate):
    with pytest.raises(ValueError, match="teaching_rate must be a finite number > 0"):
        CarIRLExperiment(teaching_rate=rate)
    with pytest.raises(ValueError, match="learning_rate must be a finite number > 0"):
        CarBCExperiment(learning_rate=rate)
    with pytest.raises(ValueError, match="pretrain_rate must be a finite number > 0; got True"):
        CarIRLExperiment(pretrain_rate=True)


@pytest.mark.parametrize("update", ["sequential", "batch"])
def test_a_bc_step_that_diverges_leaves_the_learner_as_it_was(car_mdp, update):
    pool = sample_demonstrations(car_mdp, hard_value_iteration(car_mdp).policy, np.random.default_rng(0))
    states, actions = pool.states[3].reshape(1, -1), pool.actions[3].reshape(1, -1)  # a T3 set (informative)
    learner = BCCarLearner(car_mdp, update=update, learning_rate=1e200, n_pairs=states.shape[1],
                           rng=np.random.default_rng(0))
    theta, log_policy = learner.theta, learner.action_log_probabilities().copy()
    with pytest.raises(LearnerDiverged):
        for _ in range(5):
            learner.train_sets(states, actions)
            theta, log_policy = learner.theta, learner.action_log_probabilities().copy()
    np.testing.assert_array_equal(learner.theta, theta)
    np.testing.assert_array_equal(learner.action_log_probabilities(), log_policy)
    # step_many: the learners whose step diverges are named and unchanged; sequential learners share one rate
    rate = 0.01 if update == "batch" else 1e200
    calm = BCCarLearner(car_mdp, update=update, learning_rate=rate, n_pairs=states.shape[1],
                        rng=np.random.default_rng(1))
    wild = BCCarLearner(car_mdp, update=update, learning_rate=1e200, n_pairs=states.shape[1],
                        rng=np.random.default_rng(0))
    wild.set_theta(theta)
    lost = step_many([calm, wild], np.repeat(states, 2, axis=0), np.repeat(actions, 2, axis=0))
    assert lost == ([1] if update == "batch" else [0, 1]) and np.array_equal(wild.theta, theta)
    assert all_finite(calm.theta)


def test_car_bc_pretraining_that_diverges_freezes_every_learner():
    experiment = CarBCExperiment(init_types=4, pretrain_sweeps=20, steps=5, learning_rate=5.0, update="sequential")
    result = experiment.run(0, run_seed_sequence(0, 0))
    assert result.extras["pretraining_diverged"] is True
    assert diverged_steps(result) == {name: 0 for name in experiment.teachers}
    for curve in result.curves.values():
        assert np.all(curve == curve[0]) and np.isfinite(curve[0])


def test_cli_reports_the_diverged_share(tmp_path, capsys):
    out = tmp_path / "irl"
    args = ["car-irl", "--runs", "2", "--teaching-rate", "0.5", "--workers", "1", "--no-progress",
            "--no-figures", "--out", str(out)]
    assert main(args) == 0
    assert "diverged (learner kept its last finite parameters): share of runs" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert set(report["diverged_share"]) == set(CarIRLExperiment().teachers)
    assert max(report["diverged_share"].values()) > 0 and report["diverged_runs"]
    assert main(["car-irl", "--teaching-rate", "inf", "--out", str(tmp_path / "x")]) == 2
    assert "--teaching-rate must be a finite number > 0; got inf" in capsys.readouterr().err

"""Theorems 1 and 3 measured: the one-step decrease of the teaching objective per candidate."""

import json

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.theory.monotonicity import (
    STATISTICS,
    bc_gradients,
    candidate_statistics,
    irl_gradients,
    linear_softmax_log_policy,
    one_step_decrease,
    spearman,
    step_size_ratio,
    stored_decrease,
)
from curteach_teaching.experiments.theory.monotonicity_experiment import MonotonicityExperiment, monotonicity_setup
from curteach_teaching.sweeps.backends import run_seed_sequence

SMALL = MonotonicityExperiment(mdp_kind="random", checkpoints=(0, 3), gamma=1.0)


def test_one_step_decrease_is_the_change_of_the_squared_distance():
    rng = np.random.default_rng(0)
    theta, theta_star, g = rng.normal(size=4), rng.normal(size=4), rng.normal(size=(6, 4))
    explicit = np.sum((theta_star - theta) ** 2) - np.sum((theta_star - (theta - 0.3 * g)) ** 2, axis=1)
    np.testing.assert_allclose(one_step_decrease(theta, theta_star, g, 0.3), explicit, rtol=1e-12)
    progress, squared = -(g @ (theta_star - theta)), np.sum(g**2, axis=1)
    np.testing.assert_allclose(stored_decrease(progress, squared, 0.3), explicit, rtol=1e-12)


def test_bc_by_hand_one_state_two_actions():
    """psi(s, 0) = (1, 0), psi(s, 1) = (0, 1), theta = 0, theta* = (1, -1), the demonstration takes action 0:
    pi_theta = (1/2, 1/2), g = (1/2, 1/2) - (1, 0) = (-1/2, 1/2), <theta* - theta, g> = -1, ||g||^2 = 1/2; at
    eta = 0.1 the decrease is -0.01 * 0.5 + 0.2 = 0.195 and the ratio 0.1 * 0.5 / 2 = 0.025. Lemma 2's neglected
    term is KL(pi_theta || pi_theta*) = log(1/2) - (log sigma(2) + log sigma(-2)) / 2."""
    features = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    theta, theta_star = np.zeros(2), np.array([1.0, -1.0])
    g = bc_gradients(theta, features, np.array([[0]]), np.array([[0]]))
    np.testing.assert_allclose(g, [[-0.5, 0.5]])
    assert one_step_decrease(theta, theta_star, g, 0.1)[0] == pytest.approx(0.195, rel=1e-12)
    assert step_size_ratio(theta, theta_star, g, 0.1)[0] == pytest.approx(0.025, rel=1e-12)
    log_psi_l = -linear_softmax_log_policy(theta, features)[0, 0]
    log_psi_e = -linear_softmax_log_policy(theta_star, features)[0, 0]
    assert log_psi_l == pytest.approx(np.log(2.0)) and log_psi_e == pytest.approx(np.log1p(np.exp(-2.0)))
    kl = np.log(0.5) + 0.5 * (np.log1p(np.exp(-2.0)) + np.log1p(np.exp(2.0)))
    progress = -(g[0] @ (theta_star - theta))
    assert progress - (log_psi_l - log_psi_e) == pytest.approx(kl, rel=1e-12)


def test_bc_gradient_is_the_gradient_of_the_summed_negative_log_likelihood():
    rng = np.random.default_rng(1)
    features = rng.normal(size=(5, 3, 4))
    theta = rng.normal(size=4)
    states, actions = rng.integers(5, size=(2, 6)), rng.integers(3, size=(2, 6))

    def nll(t):
        return -linear_softmax_log_policy(t, features)[states, actions].sum(axis=1)

    step = 1e-6
    numeric = np.stack([(nll(theta + step * e) - nll(theta - step * e)) / (2 * step) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(bc_gradients(theta, features, states, actions), numeric, rtol=1e-6, atol=1e-8)


def test_bc_step_is_the_car_learners_step_with_the_quadratic_part_at_zero():
    """With theta[d:] = 0 the car BC learner's score is linear, and its SGD step on one pair (sequential_sgd, the
    original's rule) is theta - eta g of the linear learner."""
    from curteach_teaching.learners.bc import sequential_sgd

    rng = np.random.default_rng(2)
    features = rng.normal(size=(4, 3, 2))
    theta = rng.normal(size=2)
    g = bc_gradients(theta, features, np.array([[1]]), np.array([[2]]))[0]
    stepped = sequential_sgd(np.concatenate([theta, np.zeros(2)]), features, np.array([1]), np.array([2]), 0.07)
    np.testing.assert_allclose(stepped, np.concatenate([theta - 0.07 * g, np.zeros(2)]), rtol=1e-12, atol=1e-15)


def test_irl_decrease_matches_an_explicit_update_of_the_learner():
    """The vectorised decrease of every demonstration equals ||theta* - theta||^2 - ||theta* - theta'||^2 after
    MaxEntIRLLearner.update on that demonstration's discounted visit counts from its start."""
    setup = monotonicity_setup(SMALL.__class__(mdp_kind="random", gamma=0.9), "irl", run_seed_sequence(0, 0))
    pool, learner = setup.pool, setup.learner
    states = pool.states.reshape(-1, pool.length)
    decrease = one_step_decrease(learner.parameters, setup.theta_star, irl_gradients(learner, states), 0.2)
    before = np.sum((setup.theta_star - learner.parameters) ** 2)
    for i in (0, 7, states.shape[0] - 1):
        visits = np.zeros(setup.mdp.n_states)
        np.add.at(visits, states[i], 0.9 ** np.arange(pool.length))
        clone = learner.copy()
        clone.update(visits, int(states[i, 0]), learning_rate=0.2)
        assert decrease[i] == pytest.approx(before - np.sum((setup.theta_star - clone.parameters) ** 2), rel=1e-9)


def test_lemma1_on_the_deterministic_mdp_and_convexity_per_start():
    """gamma = 1, deterministic MDP, full episodes: -<theta* - theta, g> - log Psi^L/Psi^E is the same for every
    demonstration of a start (Lemma 1's K_t, per start); and the exact per-start gradient never points away from
    theta* (each start's MaxEnt objective is convex with its minimum at theta*)."""
    setup = monotonicity_setup(SMALL, "irl", run_seed_sequence(0, 1))
    for _ in range(3):
        setup.teach_random_start()
    demos = setup.score("demonstrations")
    residual = (demos["progress"] - (demos["log_psi_L"] - demos["log_psi_E"])).reshape(setup.pool.n_starts, -1)
    assert np.ptp(residual, axis=1).max() < 1e-9 and np.ptp(residual[:, 0]) > 1e-3  # constant per start only
    assert setup.score("starts")["progress"].min() > -1e-12


def test_lemma2_residual_is_the_kl_along_the_demonstration():
    setup = monotonicity_setup(SMALL, "bc", run_seed_sequence(0, 2))
    demos = setup.score("demonstrations")
    log_l = linear_softmax_log_policy(setup.theta, setup.features)
    log_e = setup.teacher_log_policy
    kl_per_state = np.sum(np.exp(log_l) * (log_l - log_e), axis=1)
    kl = kl_per_state[setup.pool.states].sum(axis=-1).ravel()
    np.testing.assert_allclose(demos["progress"] - (demos["log_psi_L"] - demos["log_psi_E"]), kl, atol=1e-9)


def test_spearman_and_candidate_statistics():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 45]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 2, 3], [5, 5, 5]))
    rng = np.random.default_rng(3)
    log_e, log_l = rng.normal(size=20), rng.normal(size=20)
    rate = 0.1
    decrease = 2 * rate * (log_l - log_e + 0.7)  # exactly the theorems' first-order decrease
    ratio = np.where(np.arange(20) < 15, 0.01, 1.0)
    cur = int(np.argmax(log_l - log_e))
    stats = candidate_statistics(decrease, ratio, log_e, log_l, cur, rate, inside_ratio=0.1)
    assert tuple(stats) == STATISTICS
    assert stats["slope_E"] == pytest.approx(-1.0) and stats["slope_L"] == pytest.approx(1.0)
    assert stats["spearman_ratio"] == pytest.approx(1.0) and stats["cur_percentile"] == 1.0
    assert stats["cur_vs_best"] == 1.0 and stats["share_inside"] == 0.75
    assert stats["share_away"] == pytest.approx(np.mean(log_l - log_e + 0.7 < 0))
    assert np.isfinite(stats["spearman_E_outside"])  # exactly MIN_GROUP = 5 outside
    stats = candidate_statistics(decrease, np.ones(20), log_e, log_l, cur, rate, inside_ratio=0.1)
    assert np.isnan(stats["spearman_E_inside"]) and stats["share_inside"] == 0.0


def test_the_experiment_is_seeded_and_validated():
    first = SMALL.run_cell("bc", 0, run_seed_sequence(0, 0))
    again = SMALL.run_cell("bc", 0, run_seed_sequence(0, 0))
    assert set(first.curves) == set(SMALL.curve_names())
    for name, curve in first.curves.items():
        assert curve.shape == (2,)
        np.testing.assert_array_equal(curve, again.curves[name])
    assert first.extras["candidates"][1]["starts"]["cur"] in range(6)
    with pytest.raises(ValueError, match="learners"):
        MonotonicityExperiment(learners=("irl", "svm"))
    with pytest.raises(ValueError, match="checkpoints must be increasing"):
        MonotonicityExperiment(checkpoints=(0, 5, 5))
    with pytest.raises(ValueError, match="rates must be a finite number > 0"):
        MonotonicityExperiment(rates=(0.1, -1.0))
    with pytest.raises(ValueError, match="cell must be one of"):
        SMALL.run_cell("svm", 0, run_seed_sequence(0, 0))


def test_monotonicity_command(tmp_path, capsys):
    out = tmp_path / "mono"
    assert main(["car-monotonicity", "--mdp", "random", "--gamma", "1", "--checkpoints", "0,4", "--runs", "2",
                 "--workers", "1", "--no-progress", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["checkpoints"] == [0, 4] and set(report["monotonicity"]) == {"irl", "bc"}
    entry = report["monotonicity"]["irl"]["demonstrations"]["eta=0.005"]
    assert entry["statistics"]["spearman_ratio"]["n"] == [2, 2] and "slope_E < 0" in entry["signs"]
    for name in ("decrease_vs_difficulty.png", "correlations_over_training.png", "slopes_over_training.png"):
        assert (out / name).exists()
    assert "Spearman(decrease, log Psi^E)" in capsys.readouterr().out
    assert main(["car-monotonicity", "--rates", "0.1,x", "--out", str(tmp_path / "x")]) == 2
    assert "--rates must be comma-separated numbers" in capsys.readouterr().err
    assert main(["car-monotonicity", "--teaching-rate", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--teaching-rate must be a finite number > 0" in capsys.readouterr().err

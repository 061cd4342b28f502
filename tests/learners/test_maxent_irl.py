"""The MaxEnt-IRL learner: fast path vs the generic planners, closed forms, updates, underflow safety."""

import numpy as np
import pytest

from curteach_envs import CarTeachEnv
from curteach_teaching.demonstrations import occupancy_per_start, sample_demonstrations
from curteach_teaching.experiments.car.irl import CarIRLExperiment, original_would_crash
from curteach_teaching.learners import MaxEntIRLLearner, pretraining_learning_rate
from curteach_teaching.planning import hard_value_iteration, occupancy, soft_value_iteration
from curteach_teaching.sweeps.sweep import run_seed_sequence


@pytest.fixture(scope="module")
def mdp():
    return CarTeachEnv(layout_seed=11).tabular()


def _check_against_generic(learner, mdp):
    generic = soft_value_iteration(mdp, learner.reward())
    np.testing.assert_allclose(learner.values, generic.values, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(learner.log_policy, generic.log_policy, rtol=1e-10, atol=1e-10)
    rho = occupancy(mdp, generic.policy)
    np.testing.assert_allclose(learner.occupancy, rho, atol=1e-12)
    per_start = occupancy_per_start(mdp, generic.policy)
    per_start[:, -1] = 0.0  # the per-start trick excludes the sink (zero features and reward)
    np.testing.assert_allclose(learner.occupancy_per_start(), per_start, atol=1e-12)
    assert learner.expected_reward == pytest.approx(float(mdp.reward @ rho), abs=1e-12)


def test_fast_path_matches_generic_planners(mdp):
    rng = np.random.default_rng(0)
    learner = MaxEntIRLLearner(mdp)
    _check_against_generic(learner, mdp)
    for scale in (0.5, 3.0):
        learner = MaxEntIRLLearner(mdp, initial_parameters=rng.normal(scale=scale, size=16))
        _check_against_generic(learner, mdp)
    linear = MaxEntIRLLearner(mdp, reward_model="linear", initial_parameters=rng.normal(size=8))
    _check_against_generic(linear, mdp)


def test_closed_forms(mdp):
    learner = MaxEntIRLLearner(mdp)  # theta = 1
    n_active = mdp.features.sum(axis=1)
    np.testing.assert_allclose(learner.reward(), n_active + n_active**2)  # 0, 2 and 6 for 0, 1 and 2 features
    assert learner.values[-1] == pytest.approx(np.log(3))  # the sink: soft V = log 3
    assert learner.occupancy.sum() == pytest.approx(10.46617, abs=1e-5)
    np.testing.assert_allclose(learner.occupancy_per_start().sum(axis=1), sum(0.99**t for t in range(10)))
    assert [pretraining_learning_rate(i) for i in (0, 3)] == [0.5, 0.25]


def test_gradient_is_occupancy_difference_times_jacobian(mdp):
    rng = np.random.default_rng(1)
    theta = rng.normal(size=16)
    learner = MaxEntIRLLearner(mdp, initial_parameters=theta)
    # Jacobian against finite differences of the reward
    eps = 1e-6
    numeric = np.stack(
        [(learner.reward(theta + eps * e) - learner.reward(theta - eps * e)) / (2 * eps) for e in np.eye(16)], axis=1
    )
    np.testing.assert_allclose(learner.reward_jacobian(), numeric, atol=1e-6)
    expert = hard_value_iteration(mdp)
    start = int(mdp.start_states[13])
    expert_rho = occupancy_per_start(mdp, expert.policy)[13]
    learner_rho = occupancy_per_start(mdp, learner.policy)[13]
    expected = (learner_rho - expert_rho) @ learner.reward_jacobian()
    np.testing.assert_allclose(learner.gradient(expert_rho, start), expected, atol=1e-10)
    # Omn's look-ahead: one gradient per start
    all_expert = occupancy_per_start(mdp, expert.policy)
    np.testing.assert_allclose(learner.gradients_per_start(all_expert)[13], expected, atol=1e-10)
    before = learner.parameters.copy()
    applied = learner.update(expert_rho, start, learning_rate=0.1)
    np.testing.assert_allclose(learner.parameters, before - 0.1 * applied)
    _check_against_generic(learner, mdp)  # caches refreshed


def test_init_t0_leaves_theta_unchanged():
    setup = CarIRLExperiment(init_types=1, target_steps=0).build_setup(run_seed_sequence(0, 0))
    assert np.array_equal(setup.learner.parameters, np.ones(16))
    setup4 = CarIRLExperiment(init_types=4, target_steps=0, pretrain_steps=50).build_setup(run_seed_sequence(0, 0))
    assert not np.array_equal(setup4.learner.parameters, np.ones(16))


def test_fit_matches_feature_expectations_for_linear_model(mdp):
    expert = hard_value_iteration(mdp)
    weights = mdp.initial_state_dist[mdp.start_states]
    target = occupancy(mdp, expert.policy)
    learner = MaxEntIRLLearner(mdp, reward_model="linear")
    gap_before = np.linalg.norm(learner.gradient(target, weights))
    learner.fit(target, weights, 200, 0.5)
    assert np.linalg.norm(learner.gradient(target, weights)) < 0.5 * gap_before


def test_projection_and_copy(mdp):
    learner = MaxEntIRLLearner(mdp, projection_radius=2.0)
    assert np.linalg.norm(learner.parameters) == pytest.approx(2.0)  # ones(16) has norm 4
    clone = learner.copy()
    expert_rho = occupancy_per_start(mdp, hard_value_iteration(mdp).policy)
    clone.update(expert_rho[3], int(mdp.start_states[3]), learning_rate=5.0)
    assert np.linalg.norm(clone.parameters) <= 2.0 + 1e-12
    assert not np.array_equal(clone.parameters, learner.parameters)
    assert np.linalg.norm(learner.parameters) == pytest.approx(2.0)


def test_underflowing_policy_is_safe_and_flagged(mdp):
    # a learner that loves stones: on T2 (stones in the right column) the expert's left-column actions get
    # probability exactly 0.0 in float64, as in the original's crashed runs
    theta = np.ones(16)
    theta[0] = 3000.0
    learner = MaxEntIRLLearner(mdp, initial_parameters=theta)
    assert np.isfinite(learner.log_policy).all() and np.isfinite(learner.occupancy).all()
    assert (learner.policy == 0.0).any()
    expert = hard_value_iteration(mdp)
    pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(0))
    assert original_would_crash(learner.q_values, pool.states, pool.actions)
    assert not original_would_crash(MaxEntIRLLearner(mdp).q_values, pool.states, pool.actions)
    # an update from there stays finite
    expert_rho = occupancy_per_start(mdp, expert.policy)
    learner.update(expert_rho[2], int(mdp.start_states[2]), learning_rate=0.17)
    assert np.isfinite(learner.parameters).all() and np.isfinite(learner.expected_reward)


def test_crash_rule_on_constructed_q_values():
    # pi = exp(Q - max Q)/sum underflows to exactly 0.0 for gaps beyond about 745
    q = np.array([[0.0, -740.0, 0.0], [0.0, -750.0, -1.0]])
    states, actions = np.array([0, 0]), np.array([0, 1])
    assert not original_would_crash(q, states, actions)
    assert original_would_crash(q, np.array([1]), np.array([1]))
    assert not original_would_crash(q, np.array([1]), np.array([2]))


def test_bad_input(mdp):
    with pytest.raises(ValueError, match="reward_model"):
        MaxEntIRLLearner(mdp, reward_model="cubic")
    with pytest.raises(ValueError, match="projection_radius"):
        MaxEntIRLLearner(mdp, projection_radius=-1.0)
    with pytest.raises(ValueError, match="initial_parameters"):
        MaxEntIRLLearner(mdp, initial_parameters=np.ones(3))
    learner = MaxEntIRLLearner(mdp)
    with pytest.raises(ValueError, match="not a start state"):
        learner.gradient(np.zeros(mdp.n_states), 5)
    with pytest.raises(ValueError, match="expert_occupancy"):
        learner.gradient(np.zeros(3), 0)
    with pytest.raises(ValueError, match="n_steps"):
        learner.fit(np.zeros(mdp.n_states), 0, -1)


def test_policy_occupancy_of_any_policy(mdp):
    learner = MaxEntIRLLearner(mdp)
    assert np.array_equal(learner.policy_occupancy(learner.policy), learner.occupancy)  # the learner's own
    expert = hard_value_iteration(mdp)
    np.testing.assert_allclose(learner.policy_occupancy(expert.policy), occupancy(mdp, expert.policy), atol=1e-12)

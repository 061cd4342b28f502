"""Planners: closed-form values of the car (docs/environments/car.md), hand-made MDPs, a cross-check with imitation."""

import numpy as np
import pytest
import scipy.special

from curteach_envs import CarTeachEnv, TabularMDP
from curteach_teaching.planning import (
    expected_return,
    feature_expectations,
    hard_value_iteration,
    occupancy,
    policy_transition_matrix,
    soft_value_iteration,
)


def discounted_steps(gamma, n):
    return sum(gamma**t for t in range(n))


# ------------------------------------------------------ car closed forms (docs/environments/car.md)
def test_geometric_sums_of_the_spec():
    assert discounted_steps(0.99, 10) == pytest.approx(9.56179, abs=5e-6)
    assert discounted_steps(0.999, 10) == pytest.approx(9.95512, abs=5e-6)
    assert discounted_steps(0.99, 11) == pytest.approx(10.46617, abs=5e-6)


@pytest.mark.parametrize("layout_seed", [0, 1, 2])
def test_total_visitation_mass(layout_seed):
    mdp = CarTeachEnv(layout_seed=layout_seed).tabular()
    expert = hard_value_iteration(mdp)
    rho = occupancy(mdp, expert.policy)
    assert rho.sum() == pytest.approx(10.46617, abs=5e-6)
    assert rho[-1] == pytest.approx(0.99**10, abs=1e-12)  # the sink, visited once per start
    learner = soft_value_iteration(mdp, np.random.default_rng(layout_seed).normal(size=mdp.n_states))
    assert occupancy(mdp, learner.policy).sum() == pytest.approx(discounted_steps(0.99, 11), abs=1e-12)


@pytest.mark.parametrize("gamma, empty, t7", [(0.99, 4.78090, 11.4211), (0.999, 4.97756, 11.9407)])
def test_expert_values_per_task_type(gamma, empty, t7):
    env = CarTeachEnv(layout_seed=5, gamma=gamma)
    mdp = env.tabular()
    values = hard_value_iteration(mdp).values[mdp.start_states]
    types = mdp.task_of_state[mdp.start_states]
    for k in (0, 2, 4):
        np.testing.assert_allclose(values[types == k], empty, atol=5e-6)
    np.testing.assert_allclose(values[types == 7], t7, atol=5e-5)
    # exact form of the T7 value: 0.5 * sum_{t<10} g^t + sum over the HOV rows
    exact_t7 = 0.5 * discounted_steps(gamma, 10) + sum(gamma**t for t in (1, 3, 4, 5, 7, 8, 9))
    np.testing.assert_allclose(values[types == 7], exact_t7, rtol=0, atol=1e-12)
    assert empty == pytest.approx(0.5 * discounted_steps(gamma, 10), abs=5e-6)


def test_expert_t7_path(car_mdp):
    """The expert drives L, R, L, R, R, R, L, R, R, R by row: HOV except on the police rows."""
    expert = hard_value_iteration(car_mdp)
    start = int(car_mdp.start_states[7])
    rho = occupancy(car_mdp, expert.policy, car_mdp.state_indicator([start]))[0]
    lane = rho[start : start + 20].reshape(10, 2)
    columns = lane.argmax(axis=1)
    np.testing.assert_array_equal(columns, [0, 1, 0, 1, 1, 1, 0, 1, 1, 1])
    np.testing.assert_allclose(lane.max(axis=1), 0.99 ** np.arange(10), atol=1e-12)


@pytest.mark.parametrize("layout_seed", range(4))
def test_expert_ties_are_one_or_three(layout_seed):
    env = CarTeachEnv(layout_seed=layout_seed)
    mdp = env.tabular()
    policy = hard_value_iteration(mdp).policy
    n_optimal = (policy > 0).sum(axis=1)
    assert set(np.unique(n_optimal)) <= {1, 3}
    assert set(np.unique(policy[policy > 0]).round(12)) <= {1.0, round(1 / 3, 12)}
    t0 = mdp.task_of_state == 0
    last_row = (np.arange(mdp.n_states) % 20) // 2 == 9
    assert (n_optimal[t0] == 3).all() and (n_optimal[last_row[:-1].tolist() + [False]] == 3).all()
    assert n_optimal[-1] == 3  # the sink: all Q = 0
    log_policy = hard_value_iteration(mdp).log_policy
    np.testing.assert_array_equal(log_policy[policy > 0], -np.log(n_optimal[:, None].repeat(3, axis=1)[policy > 0]))
    assert (log_policy[policy == 0] == -np.inf).all()


def test_soft_values_on_the_car(car_mdp):
    zero = soft_value_iteration(car_mdp, np.zeros(car_mdp.n_states))
    assert zero.values[-1] == pytest.approx(np.log(3))  # the original's sink
    np.testing.assert_allclose(zero.policy, 1 / 3)
    # With zero reward, V(row r) = log 3 * sum_{i=0}^{10-r} gamma^i.
    rows = (np.arange(800) % 20) // 2
    expected = np.log(3) * np.array([discounted_steps(0.99, 11 - r) for r in rows])
    np.testing.assert_allclose(zero.values[:800], expected, rtol=1e-12)
    assert zero.n_sweeps == car_mdp.depth == 11


# ---------------------------------------------------------------- hand-made MDPs
def one_step_mdp(gamma=0.9, rewards=(1.0, 2.0)):
    """State 0 has two actions that both lead to the absorbing state 1; rewards r(0, a)."""
    T = np.array([[0, 1.0], [0, 1.0], [0, 1.0], [0, 1.0]])
    R = np.array([list(rewards), [0.0, 0.0]])
    return TabularMDP(transitions=T, reward=R, features=np.array([[1.0], [0.0]]),
                      initial_state_dist=[1.0, 0.0], gamma=gamma, horizon=1)


def test_soft_value_iteration_closed_form():
    g = 0.9
    result = soft_value_iteration(one_step_mdp(g))
    v_sink = np.log(2)
    q0 = np.array([1 + g * v_sink, 2 + g * v_sink])
    np.testing.assert_allclose(result.values, [scipy.special.logsumexp(q0), v_sink], rtol=1e-14)
    np.testing.assert_allclose(result.policy[0], scipy.special.softmax([1.0, 2.0]), rtol=1e-14)
    np.testing.assert_allclose(result.log_policy[0], np.log(scipy.special.softmax([1.0, 2.0])), rtol=1e-12)


def test_soft_policy_underflow_keeps_log_policy_finite():
    result = soft_value_iteration(one_step_mdp(rewards=(0.0, 1000.0)))
    assert result.policy[0, 0] == 0.0  # underflows in float64, as in the original
    assert result.log_policy[0, 0] == pytest.approx(-1000.0)
    assert np.isfinite(result.log_policy).all() and not np.isnan(result.policy).any()


def test_hard_value_iteration_ties_within_tolerance():
    result = hard_value_iteration(one_step_mdp(rewards=(1.0, 1.0 + 1e-13)))
    np.testing.assert_allclose(result.policy[0], [0.5, 0.5])
    result = hard_value_iteration(one_step_mdp(rewards=(1.0, 1.0 + 1e-9)))
    np.testing.assert_allclose(result.policy[0], [0.0, 1.0])
    assert result.log_policy[0, 0] == -np.inf


def cyclic_mdp(gamma):
    """State 0: stay (reward 1) or go to 1; state 1: go back to 0 or stay. Cyclic, no absorbing state."""
    T = np.array([[1.0, 0], [0, 1.0], [1.0, 0], [0, 1.0]])
    return TabularMDP(transitions=T, reward=[1.0, 0.0], features=np.eye(2),
                      initial_state_dist=[1.0, 0.0], gamma=gamma, horizon=None)


def test_cyclic_fallback_matches_closed_form():
    g = 0.9
    mdp = cyclic_mdp(g)
    assert mdp.depth is None
    hard = hard_value_iteration(mdp)
    np.testing.assert_allclose(hard.values, [1 / (1 - g), g / (1 - g)], atol=1e-8)
    np.testing.assert_allclose(hard.policy, [[1, 0], [1, 0]])
    rho = occupancy(mdp, hard.policy)
    np.testing.assert_allclose(rho, [1 / (1 - g), 0.0], atol=1e-9)
    # soft: V = logsumexp(R + g * V) solved by the linear system of the fixed point policy
    soft = soft_value_iteration(mdp)
    backup = np.array([1.0, 0.0])[:, None] + g * soft.values[[[0, 1], [0, 1]]]
    residual = soft.values - scipy.special.logsumexp(backup, axis=1)
    assert np.abs(residual).max() < 1e-8
    with pytest.raises(RuntimeError, match="did not converge"):
        hard_value_iteration(cyclic_mdp(1.0), max_sweeps=50)


# ---------------------------------------------------------------- occupancy, features, returns
def test_per_start_occupancy_matrix(car_mdp):
    expert = hard_value_iteration(car_mdp)
    starts = car_mdp.start_states
    per_start = occupancy(car_mdp, expert.policy, car_mdp.state_indicator(starts))
    assert per_start.shape == (40, 801)
    np.testing.assert_allclose(per_start.mean(axis=0), occupancy(car_mdp, expert.policy), atol=1e-13)
    np.testing.assert_allclose(per_start[3], occupancy(car_mdp, expert.policy, car_mdp.state_indicator([starts[3]])[0]))
    # the lane trick of the original (docs/deviations.md): rho^(s) = 40 * mask_lane(s) * rho^{D_init} on the road cells
    rho = occupancy(car_mdp, expert.policy)
    for i, s in enumerate(starts[:8]):
        mask = np.zeros(801)
        mask[s : s + 20] = 1
        np.testing.assert_allclose(per_start[i] * mask, 40 * mask * rho, atol=1e-12)
    # per-start expected returns are the expert's values
    returns = expected_return(car_mdp, expert.policy, car_mdp.state_indicator(starts))
    np.testing.assert_allclose(returns, expert.values[starts], atol=1e-12)
    assert expected_return(car_mdp, expert.policy) == pytest.approx(expert.values[starts].mean(), abs=1e-12)


def test_feature_expectations(car_mdp):
    policy = soft_value_iteration(car_mdp, car_mdp.reward).policy
    mu = feature_expectations(car_mdp, policy)
    np.testing.assert_allclose(mu, occupancy(car_mdp, policy) @ car_mdp.features)
    assert feature_expectations(car_mdp, policy, car_mdp.state_indicator([0, 20])).shape == (2, 8)
    grass = car_mdp.features[:, 1] == 1
    assert mu[1] == pytest.approx(occupancy(car_mdp, policy)[grass].sum())


def test_policy_transition_matrix_rows(car_mdp):
    P = policy_transition_matrix(car_mdp, np.full((801, 3), 1 / 3))
    sums = np.asarray(P.sum(axis=1)).ravel()
    np.testing.assert_allclose(sums[:800], 1.0)
    assert sums[800] == 0.0  # the absorbing sink passes nothing on


def test_against_dense_reference(car_mdp):
    """Our sparse backward induction against a plain dense tolerance loop with the original's sub-stochastic sink."""
    T = np.array(car_mdp.transition_matrix)
    T[-1] = 0.0  # the original's all-zero sink rows
    reward = np.random.default_rng(0).normal(size=801)
    V = np.zeros(801)
    for _ in range(100):
        Q = reward[:, None] + 0.99 * np.einsum("sat,t->sa", T, V)
        new = scipy.special.logsumexp(Q, axis=1)
        if np.abs(new - V).max() < 1e-14:
            break
        V = new
    ours = soft_value_iteration(car_mdp, reward)
    np.testing.assert_allclose(ours.values, V, atol=1e-10)
    pi = np.exp(Q - V[:, None])
    rho = np.zeros(801)
    for _ in range(100):
        rho = car_mdp.initial_state_dist + 0.99 * np.einsum("s,sa,sat->t", rho, pi, T)
    np.testing.assert_allclose(occupancy(car_mdp, ours.policy), rho, atol=1e-10)


def test_bad_inputs(car_mdp):
    with pytest.raises(ValueError, match="reward must have shape"):
        soft_value_iteration(car_mdp, np.zeros(5))
    with pytest.raises(ValueError, match="policy must have shape"):
        occupancy(car_mdp, np.ones((801, 2)) / 2)
    with pytest.raises(ValueError, match="probabilities >= 0"):
        occupancy(car_mdp, np.full((801, 3), np.nan))
    with pytest.raises(ValueError, match="initial must have shape"):
        occupancy(car_mdp, np.full((801, 3), 1 / 3), np.ones(5))
    with pytest.raises(ValueError, match="gamma"):
        hard_value_iteration(car_mdp, gamma=1.2)
    with pytest.raises(ValueError, match="features must have shape"):
        feature_expectations(car_mdp, np.full((801, 3), 1 / 3), features=np.ones((3, 2)))


# ---------------------------------------------------------------- cross-check with imitation's MCE planners
@pytest.mark.parametrize("layout_seed", [0, 7])
def test_cross_check_with_imitation_mce(layout_seed):
    """Finite horizon, gamma = 1: our soft VI and occupancy against imitation's mce_partition_fh and
    mce_occupancy_measures on the seals export.

    imitation indexes values by time. In the car every state sits at a fixed time (its row; the sink at t = 10), so
    with horizon 11 (rows 0..9 and the sink) V[row(s), s] must equal our V(s). Occupancy counts t = 0..horizon, so
    horizon 10 counts the sink once, like ours.
    """
    from imitation.algorithms.mce_irl import mce_occupancy_measures, mce_partition_fh

    env = CarTeachEnv(layout_seed=layout_seed)
    mdp = env.tabular().replace(gamma=1.0)
    rng = np.random.default_rng(layout_seed)
    theta = rng.normal(size=16)
    reward = mdp.features @ theta[:8] + (mdp.features @ theta[8:]) ** 2  # the IRL learner's quadratic reward
    for r in (mdp.reward, reward):
        ours = soft_value_iteration(mdp, r)
        time_of_state = np.append((np.arange(800) % 20) // 2, 10)
        states = np.arange(mdp.n_states)
        task = mdp.replace(reward=r)
        V, Q, pi = mce_partition_fh(task.to_seals(horizon=11), discount=1.0)
        np.testing.assert_allclose(V[time_of_state, states], ours.values, rtol=0, atol=1e-8)
        np.testing.assert_allclose(Q[time_of_state, states], ours.q_values, rtol=0, atol=1e-8)
        np.testing.assert_allclose(pi[time_of_state, states], ours.policy, rtol=0, atol=1e-8)
        _, Dcum = mce_occupancy_measures(task.to_seals(), discount=1.0)
        np.testing.assert_allclose(Dcum, occupancy(mdp, ours.policy), rtol=0, atol=1e-8)
        assert Dcum.sum() == pytest.approx(11.0)

"""Demonstration pools: imitation Trajectories carrying state ids, seeded sampling, exact per-start occupancy."""

import numpy as np
import pytest
from imitation.data.types import Trajectory

from curteach_teaching.demonstrations import occupancy_per_start, sample_demonstrations
from curteach_teaching.learners import TaskDecomposition
from curteach_teaching.planning import occupancy

LAYOUT_SEED = 8  # the road the pools are drawn on: car_road(LAYOUT_SEED)


def test_pool_shapes_and_trajectories(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert = road.mdp, road.expert
    pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(0))
    assert pool.actions.shape == (40, 10, 10) and pool.observations.shape == (40, 10, 11)
    np.testing.assert_array_equal(pool.observations[:, :, 0], np.repeat(mdp.start_states[:, None], 10, axis=1))
    # every step is possible under the expert and the dynamics; every trajectory ends in the sink
    assert np.all(expert.policy[pool.states, pool.actions] > 0)
    dense = mdp.transition_matrix
    assert np.all(dense[pool.states, pool.actions, pool.observations[:, :, 1:]] > 0)
    assert np.all(pool.observations[:, :, -1] == mdp.n_states - 1) and pool.terminal.all()
    trajectories = pool.trajectories(7)
    assert len(trajectories) == 10 and all(isinstance(t, Trajectory) for t in trajectories)
    assert len(trajectories[0].obs) == len(trajectories[0].acts) + 1 and trajectories[0].terminal
    np.testing.assert_array_equal(trajectories[3].obs, pool.observations[7, 3])
    assert len(pool.all_trajectories()) == 400
    with pytest.raises(ValueError, match="start_index"):
        pool.trajectories(40)


def test_sampling_is_seeded(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert = road.mdp, road.expert
    a = sample_demonstrations(mdp, expert.policy, np.random.default_rng(3))
    b = sample_demonstrations(mdp, expert.policy, np.random.default_rng(3))
    c = sample_demonstrations(mdp, expert.policy, np.random.default_rng(4))
    np.testing.assert_array_equal(a.observations, b.observations)
    assert not np.array_equal(a.observations, c.observations)


def test_empirical_visitation_matches_exact_occupancy(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert = road.mdp, road.expert
    pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(0), n_per_start=2000)
    discount = 0.99 ** np.arange(10)
    exact = occupancy_per_start(mdp, expert.policy)
    for k in (1, 6, 13):  # a T1, a T6 and a T5 task
        empirical = np.zeros(mdp.n_states)
        np.add.at(empirical, pool.states[k].ravel(), np.tile(discount, 2000) / 2000)
        np.testing.assert_allclose(empirical[:-1], exact[k, :-1], atol=0.05)


def test_per_start_occupancy_closed_forms_and_lane_trick(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert = road.mdp, road.expert
    exact = occupancy_per_start(mdp, expert.policy)
    np.testing.assert_allclose(exact.sum(axis=1), sum(0.99**t for t in range(11)))  # 10.46617 with the sink
    tasks = TaskDecomposition(mdp)
    trick = tasks.per_start(occupancy(mdp, expert.policy))  # 40 * mask_lane * rho^{D_init}
    without_sink = exact.copy()
    without_sink[:, -1] = 0.0
    np.testing.assert_allclose(trick, without_sink, atol=1e-14)
    # the expert's value per task from the per-start occupancy: T0 = 4.78090 (closed form, docs/environments/car.md)
    values = exact @ mdp.reward
    np.testing.assert_allclose(values[mdp.task_of_state[mdp.start_states] == 0], 4.78090, atol=1e-5)


def test_bad_input(car_road):
    road = car_road(LAYOUT_SEED)
    mdp, expert = road.mdp, road.expert
    with pytest.raises(ValueError, match="policy"):
        sample_demonstrations(mdp, expert.policy[:5], np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_per_start"):
        sample_demonstrations(mdp, expert.policy, np.random.default_rng(0), n_per_start=0)
    with pytest.raises(ValueError, match="length"):
        sample_demonstrations(mdp, expert.policy, np.random.default_rng(0), length=0)

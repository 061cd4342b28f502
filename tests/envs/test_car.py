"""CarTeach-v0: the road layout rules, rewards, transitions and the Gymnasium API (see docs/environments/car.md)."""

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curteach_envs import CAR_FEATURE_NAMES, CarTeachEnv, car_reward, sample_road
from curteach_envs.car import CAR, CAR_FRONT, GRASS, HOV, INIT_CHOICES, PED, PED_FRONT, POLICE, STONE, parse_init
from curteach_teaching.planning import hard_value_iteration, occupancy


def test_registered_and_default_shapes():
    env = gym.make("CarTeach-v0")
    mdp = env.unwrapped.tabular()
    assert (mdp.n_states, mdp.n_actions, mdp.n_features) == (801, 3, 8)
    assert mdp.feature_names == CAR_FEATURE_NAMES
    assert mdp.action_names == ("straight", "left", "right")
    np.testing.assert_array_equal(mdp.start_states, np.arange(40) * 20)
    np.testing.assert_allclose(mdp.initial_state_dist[mdp.start_states], 1 / 40)
    assert mdp.horizon == 10 and mdp.gamma == 0.99 and mdp.depth == 11
    rows = (np.arange(800) % 20) // 2
    np.testing.assert_array_equal(mdp.state_levels, np.append(10 - rows, 0))  # row r is r steps from the start
    assert mdp.absorbing.tolist() == [False] * 800 + [True]
    assert mdp.task_of_state[-1] == -1
    np.testing.assert_array_equal(mdp.task_of_state[:800], (np.arange(800) // 20) % 8)
    assert mdp.features[-1].sum() == 0 and mdp.reward[-1] == 0


def test_layout_seed_determinism():
    a = CarTeachEnv(layout_seed=11).road
    b = gym.make("CarTeach-v0", layout_seed=11).unwrapped.road
    c = CarTeachEnv(layout_seed=12).road
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# ---------------------------------------------------------------- layout rules
@pytest.fixture(scope="module")
def many_roads():
    """(R, 5, 8, 10, 2, 8) roads from R layout seeds."""
    return np.stack([sample_road(np.random.default_rng(seed)) for seed in range(300)])


def test_deterministic_task_types(many_roads):
    road = many_roads
    assert road[:, :, 0].sum() == 0  # T0 is empty
    np.testing.assert_array_equal(road[:, :, 2, :, 1, STONE], 1)
    assert road[:, :, 2, :, 0].sum() == 0 and road[:, :, 2, :, 1].sum() == road[:, :, 2, :, 1, STONE].sum()
    np.testing.assert_array_equal(road[:, :, 4, :, 1, GRASS], 1)
    assert road[:, :, 4, :, 0].sum() == 0
    t7 = road[:, :, 7]
    np.testing.assert_array_equal(t7[..., 1, HOV], 1)
    assert t7[..., 0, HOV].sum() == 0
    police = np.zeros(10)
    police[[2, 6]] = 1
    np.testing.assert_array_equal(t7[..., 0, POLICE], np.broadcast_to(police, t7[..., 0, POLICE].shape))
    np.testing.assert_array_equal(t7[..., 1, POLICE], np.broadcast_to(police, t7[..., 1, POLICE].shape))
    assert t7[..., [STONE, GRASS, CAR, PED, CAR_FRONT, PED_FRONT]].sum() == 0
    for k in (0, 2, 4, 7):  # the five instances are identical
        assert (road[:, :, k] == road[:, :1, k]).all()


def object_frequencies(cells):
    """Fractions of (car, stone, grass, ped) among cells (..., 8)."""
    cells = cells.reshape(-1, 8)
    objects = (("car", CAR), ("stone", STONE), ("grass", GRASS), ("ped", PED))
    return {name: cells[:, idx].mean() for name, idx in objects}


@pytest.mark.parametrize(
    "task_type, column, expected",
    [
        (1, 0, dict(car=0.25, stone=0, grass=0, ped=0)),
        (1, 1, dict(car=0.25, stone=0, grass=0, ped=0)),
        (3, 0, dict(car=0.2, stone=0.2, grass=0, ped=0)),
        (3, 1, dict(car=0.2, stone=0.2, grass=0, ped=0)),
        (5, 0, dict(car=0.2, stone=0, grass=0.2, ped=0)),
        (5, 1, dict(car=0.2, stone=0, grass=0.2, ped=0)),
        (6, 0, dict(car=0, stone=0, grass=0, ped=0.05)),
    ],
)
def test_sampling_frequencies(many_roads, task_type, column, expected):
    """Per-type cell probabilities over 300 layout seeds (15,000 cells each: standard error <= 0.0036)."""
    freq = object_frequencies(many_roads[:, :, task_type, :, column])
    for name, p in expected.items():
        assert freq[name] == pytest.approx(p, abs=0.015), name


def test_t6_right_column_and_forced_pedestrian(many_roads):
    t6 = many_roads[:, :, 6]  # (R, 5, 10, 2, 8)
    right = np.delete(t6[:, :, :, 1], 4, axis=2)  # without row 4, where the forced pedestrian goes
    freq = object_frequencies(right)
    assert freq["grass"] == pytest.approx(0.95, abs=0.015) and freq["ped"] == pytest.approx(0.05, abs=0.01)
    # a lane gets the forced pedestrian when none was drawn: probability 0.95^20 ~ 0.358
    forced = (t6[:, :, 4, 1, PED] == 1) & (t6[:, :, 4, 1].sum(axis=-1) == 1) & (t6[..., PED].sum(axis=(2, 3)) == 1)
    assert forced.mean() == pytest.approx(0.95**20, abs=0.04)
    # every T6 lane has at least one pedestrian
    assert (t6[..., PED].sum(axis=(2, 3)) >= 1).all()


def test_look_ahead_rule(many_roads):
    road = many_roads
    np.testing.assert_array_equal(road[..., :-1, :, CAR_FRONT], road[..., 1:, :, CAR])
    assert road[..., -1, :, CAR_FRONT].sum() == 0 and road[..., -1, :, PED_FRONT].sum() == 0
    ped_ahead = road[..., 1:, :, PED].astype(bool)
    flagged = road[..., :-1, :, PED_FRONT].astype(bool)
    assert not (flagged & ~ped_ahead).any()
    missing = ped_ahead & ~flagged  # only the forced T6 pedestrian on row 4, right column, lacks its flag
    r, i, k, row, col = np.nonzero(missing)
    assert set(k.tolist()) <= {6} and set(row.tolist()) <= {3} and set(col.tolist()) <= {1}
    assert missing.sum() > 0


# ---------------------------------------------------------------- reward and transitions
def cell(*names):
    f = np.zeros(8)
    for name in names:
        f[CAR_FEATURE_NAMES.index(name)] = 1
    return f


@pytest.mark.parametrize(
    "names, original, paper",
    [
        ((), 0.5, 0.0),
        (("stone",), -0.5, -1.0),
        (("grass",), 0.0, -0.5),
        (("car",), -4.5, -5.0),
        (("car", "car-in-f"), -6.5, -7.0),
        (("car-in-f",), -1.5, -2.0),
        (("ped",), -9.5, -10.0),
        (("ped", "ped-in-f"), -14.5, -15.0),
        (("ped-in-f",), -4.5, -5.0),
        (("HOV",), 1.5, 1.0),
        (("HOV", "police"), -4.5, -5.0),
        (("police",), 0.5, 0.0),
    ],
)
def test_reward_table(names, original, paper):
    assert car_reward(cell(*names)) == pytest.approx(original)
    assert car_reward(cell(*names), "paper") == pytest.approx(paper)


def test_paper_reward_variant_env():
    mdp = CarTeachEnv(reward="paper").tabular()
    values = hard_value_iteration(mdp).values[mdp.start_states]
    assert values[0] == pytest.approx(0.0)  # T0 is worth nothing without the offset


def test_transition_table(car_mdp):
    T = car_mdp.transition_matrix
    s_left, s_right = 40 + 2 * 3, 40 + 2 * 3 + 1  # row 3 of task 2
    assert T[s_left, 0, s_left + 2] == 1
    assert T[s_left, 1, s_left + 2] == 0.5 and T[s_left, 1, s_left + 3] == 0.5
    assert T[s_left, 2, s_left + 3] == 1
    assert T[s_right, 0, s_right + 2] == 1
    assert T[s_right, 1, s_right + 1] == 1
    assert T[s_right, 2, s_right + 1] == 0.5 and T[s_right, 2, s_right + 2] == 0.5
    for s in (18, 19, 798, 799):
        np.testing.assert_array_equal(T[s, :, 800], 1)
    np.testing.assert_array_equal(T[800, :, 800], 1)
    assert T[:, :, :].sum(axis=2).min() == 1


# ---------------------------------------------------------------- Gymnasium API
def test_episode_follows_the_road_and_terminates(car_mdp):
    env = gym.make("CarTeach-v0")
    obs, info = env.reset(seed=3, options={"task": 7})
    assert obs == 140 and info["task_type"] == 7 and info["row"] == 0
    expert = hard_value_iteration(car_mdp).policy
    total = 0.0
    for t in range(10):
        action = int(np.argmax(expert[obs]))
        obs, reward, terminated, truncated, info = env.step(action)
        total += 0.99**t * reward
        assert terminated == (t == 9) and not truncated
    assert obs == 800 and info["task"] == -1
    assert total == pytest.approx(11.4211, abs=5e-5)
    with pytest.raises(RuntimeError, match="terminated"):
        env.step(0)


def test_reset_options_and_uniform_starts():
    env = CarTeachEnv()
    assert env.reset(options={"start_state": 60})[0] == 60
    starts = {int(env.reset(seed=s)[0]) for s in range(300)}
    assert starts <= set(range(0, 800, 20)) and len(starts) > 30
    assert env.reset(seed=4)[0] == env.reset(seed=4)[0]


def test_edge_moves_are_fifty_fifty():
    env = CarTeachEnv()
    env.reset(seed=0)
    right = 0
    for _ in range(400):
        env.reset(options={"task": 0})
        obs, *_ = env.step(1)  # steer left from the left column
        right += int(obs) % 2
    assert 150 < right < 250


def test_feature_observations():
    env = gym.make("CarTeach-v0", observation="features")
    obs, _ = env.reset(seed=0, options={"task": 7})
    assert obs.dtype == np.float32 and obs.shape == (8,) and env.observation_space.contains(obs)
    obs, *_ = env.step(2)
    np.testing.assert_array_equal(obs, cell("HOV"))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_instances=0), r"n_instances must be an integer >= 1"),
        (dict(road_length=1), r"road_length must be an integer >= 2"),
        (dict(road_length=2.5), r"road_length must be an integer"),
        (dict(gamma=1.5), r"gamma must be a number in \[0, 1\]"),
        (dict(reward="nice"), r"reward must be one of \('original', 'paper'\)"),
        (dict(observation="pixels"), r"observation must be one of \('state', 'features'\)"),
        (dict(render_mode="video"), r"render_mode must be None or one of"),
        (dict(layout_seed=-1), r"layout_seed must be a non-negative integer"),
    ],
)
def test_bad_kwargs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make("CarTeach-v0", **kwargs)


@pytest.mark.parametrize("action", [3, -1, 1.5, "left", None, True])
def test_bad_actions(action):
    env = CarTeachEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be 0 \(straight\), 1 \(left\) or 2 \(right\)"):
        env.step(action)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"task": 40}, r"options\['task'\] must be an integer in \[0, 39\]"),
        ({"task": -1}, r"\[0, 39\]"),
        ({"start_state": 21}, r"must be a start state: a multiple of 20 in \[0, 780\]"),
        ({"start_state": 800}, "start state"),
        ({"task": 1, "start_state": 20}, "not both"),
        ({"row": 3}, r"unknown reset options \['row'\]"),
    ],
)
def test_bad_reset_options(options, message):
    with pytest.raises(ValueError, match=message):
        CarTeachEnv().reset(options=options)


def test_step_before_reset():
    with pytest.raises(RuntimeError, match="reset"):
        CarTeachEnv().step(0)


# ---------------------------------------------------------------- properties over random layouts
@settings(max_examples=25, deadline=None)
@given(
    layout_seed=st.integers(0, 2**31 - 1),
    n_instances=st.integers(1, 3),
    road_length=st.integers(2, 12),
    gamma=st.sampled_from([0.9, 0.99, 1.0]),
)
def test_properties_over_random_layouts(layout_seed, n_instances, road_length, gamma):
    env = CarTeachEnv(layout_seed=layout_seed, n_instances=n_instances, road_length=road_length, gamma=gamma)
    mdp = env.tabular()
    S = 2 * road_length * 8 * n_instances + 1
    assert mdp.n_states == S and mdp.depth == road_length + 1
    assert set(np.unique(mdp.features)) <= {0.0, 1.0}
    road = env.road
    for k in (0, 2, 4, 7):
        assert (road[:, k] == road[:1, k]).all()
    assert (road[:, 6, ..., PED].sum(axis=(1, 2)) >= 1).all()
    np.testing.assert_array_equal(road[:, :, :-1, :, CAR_FRONT], road[:, :, 1:, :, CAR])
    expert = hard_value_iteration(mdp)
    assert set(np.unique((expert.policy > 0).sum(axis=1))) <= {1, 3}
    per_start = occupancy(mdp, expert.policy, mdp.state_indicator(mdp.start_states))
    np.testing.assert_allclose(per_start.sum(axis=1), sum(gamma**t for t in range(road_length + 1)), rtol=1e-12)
    # the expert is at least as good as always driving straight, from every start
    straight = np.zeros((S, 3))
    straight[:, 0] = 1
    straight_values = occupancy(mdp, straight, mdp.state_indicator(mdp.start_states)) @ mdp.reward
    assert (expert.values[mdp.start_states] >= straight_values - 1e-9).all()
    # T0 is worth the offset on every step
    t0 = mdp.start_states[mdp.task_of_state[mdp.start_states] == 0]
    np.testing.assert_allclose(expert.values[t0], 0.5 * sum(gamma**t for t in range(road_length)), rtol=1e-12)


def test_parse_init_task_types():
    assert parse_init("none") == 0 and parse_init("T0") == 1 and parse_init("T0-T3") == 4 and parse_init("T0-T7") == 8
    assert list(INIT_CHOICES) == ["none", "T0", "T0-T1", "T0-T2", "T0-T3", "T0-T4", "T0-T5", "T0-T6", "T0-T7"]
    for bad in ("T9", "t0", "T1", ""):
        with pytest.raises(ValueError, match=r"init must be one of \['none', 'T0', .*\]; got"):
            parse_init(bad)

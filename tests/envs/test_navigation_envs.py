"""ShortestPathTeach-v0 and TSPTeach-v0: step rewards, termination, observations, reset options, tabular export."""

import pickle

import gymnasium as gym
import numpy as np
import pytest

from curteach_envs import ShortestPathTask, ShortestPathTeachEnv, TSPTask, TSPTeachEnv
from curteach_envs.navigation.tsp import exact_tour


def cell(row, col):
    return 6 * row + col


def play(env, task, actions):
    obs, info = env.reset(options={"task": task})
    out = []
    for a in actions:
        out.append(env.step(a))
    return obs, out


# ---------------------------------------------------------------------------------------------------- shortest path

SP_TASK = ShortestPathTask(
    start=cell(2, 2), direction=0, goals=(cell(2, 5), cell(5, 5)), muds=(cell(2, 3),), bombs=(cell(1, 2),)
)


def test_sp_step_rewards():
    env = ShortestPathTeachEnv()
    _, steps = play(env, SP_TASK, [1, 2, 0, 1, 0])
    # left (-1), right (-1), move onto mud (-2), left on mud (-2), move north from (2,3) to (1,3) (-1)
    assert [s[1] for s in steps] == [-1, -1, -2, -2, -1]
    assert not any(s[2] or s[3] for s in steps)
    # bomb: from the start turn left (north) and move onto (1,2): -6, terminal
    _, steps = play(env, SP_TASK, [1, 0])
    assert steps[-1][1] == -6 and steps[-1][2]
    # goal: move, move, move along row 2 to (2,5): -2 (mud), -1, +9
    _, steps = play(env, SP_TASK, [0, 0, 0])
    assert [s[1] for s in steps] == [-2, -1, 9] and steps[-1][2]
    # leaving the grid: -6, terminal, and the agent is no longer drawn
    edge = ShortestPathTask(start=cell(0, 0), direction=3, goals=(cell(5, 5),))
    _, steps = play(env, edge, [0])
    obs, reward, terminated, truncated, info = steps[0]
    assert reward == -6 and terminated and not truncated and obs[:4].sum() == 0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_sp_observation_channels():
    env = ShortestPathTeachEnv()
    obs, info = env.reset(options={"task": SP_TASK})
    assert obs.shape == (7, 6, 6) and obs.dtype == np.float32
    assert obs[0, 2, 2] == 1 and obs[:4].sum() == 1  # channel = direction code (0 east)
    assert obs[4, 2, 3] == 1 and obs[4].sum() == 1  # mud
    assert obs[5, 1, 2] == 1 and obs[5].sum() == 1  # bomb
    assert obs[6, 2, 5] == 1 and obs[6, 5, 5] == 1 and obs[6].sum() == 2  # both goals share the goal plane
    obs, *_ = env.step(1)  # turn left: east -> north
    assert obs[3, 2, 2] == 1 and obs[:4].sum() == 1
    obs, *_ = env.step(1)  # north -> west
    assert obs[2, 2, 2] == 1
    assert info == {"pose": 4 * cell(2, 2), "steps": 0, "row": 2, "col": 2, "direction": 0}


def test_horizon_truncates_after_30_actions():
    env = ShortestPathTeachEnv()
    env.reset(options={"task": SP_TASK})
    for t in range(30):
        _, reward, terminated, truncated, _ = env.step(2)  # spin in place
        assert reward == -1 and not terminated
        assert truncated == (t == 29)
    with pytest.raises(RuntimeError):
        env.step(0)
    env = ShortestPathTeachEnv(horizon=3)
    env.reset(options={"task": SP_TASK})
    assert [env.step(2)[3] for _ in range(3)] == [False, False, True]


def test_sp_tabular_export():
    mdp = SP_TASK.tabular()
    assert mdp.n_states == 145 and mdp.n_actions == 3 and mdp.reward.shape == (145, 3)
    assert mdp.absorbing[144] and mdp.absorbing.sum() == 1
    assert mdp.initial_state_dist[SP_TASK.start_pose] == 1 and mdp.gamma == 1 and mdp.horizon == 30
    assert mdp.features.shape == (145, 252)
    # the features of a state are its flattened observation
    env = ShortestPathTeachEnv()
    obs, _ = env.reset(options={"task": SP_TASK})
    np.testing.assert_array_equal(mdp.features[SP_TASK.start_pose], obs.ravel())
    assert env.unwrapped.tabular().n_states == 145


# ---------------------------------------------------------------------------------------------------- TSP

TSP_TASK = TSPTask(start=cell(0, 0), direction=0, goals=(cell(0, 2), cell(2, 2)))


def test_tsp_step_rewards_and_goal_plane():
    env = TSPTeachEnv()
    obs, info = env.reset(options={"task": TSP_TASK})
    assert obs[4, 0, 0] == 1 and obs[5, 0, 2] == 1 and obs[5, 2, 2] == 1 and obs[6].sum() == 0
    assert info["goals_remaining"] == 2
    tour = [0, 0, 2, 0, 0, 2, 0, 0, 2, 0, 0]
    rewards = []
    for t, a in enumerate(tour):
        obs, reward, terminated, truncated, info = env.step(a)
        rewards.append(reward)
        if t == 1:  # entered goal (0,2): its bit is cleared
            assert obs[5, 0, 2] == 0 and obs[5, 2, 2] == 1 and info["goals_remaining"] == 1
        assert terminated == (t == len(tour) - 1)
    assert rewards == [-1] * 10 + [9] and sum(rewards) == exact_tour(TSP_TASK)[0]
    assert obs[5].sum() == 0 and info["goals_remaining"] == 0


def test_tsp_home_crossing_and_revisits_and_leaving_the_grid():
    env = TSPTeachEnv()
    task = TSPTask(start=cell(0, 1), direction=2, goals=(cell(0, 0), cell(0, 3)))
    _, steps = play(env, task, [0, 1, 1, 0, 0])  # goal (0,0), turn around, cross home with a goal left: nothing
    assert [s[1] for s in steps] == [-1, -1, -1, -1, -1] and not any(s[2] for s in steps)
    _, steps = play(env, task, [0, 1, 1, 0, 1, 1, 0])  # into (0,0), back home, back into the visited goal
    assert steps[-1][1] == -1 and steps[-1][4]["goals_remaining"] == 1
    _, steps = play(env, task, [1, 0])  # turn left (south) ... move to (1,1)
    assert steps[-1][1] == -1
    _, steps = play(env, task, [2, 0])  # turn right: north, off the grid: -11, terminal
    assert steps[-1][1] == -11 and steps[-1][2]


def test_tsp_tabular_export():
    mdp = TSP_TASK.tabular()
    assert mdp.n_states == 144 * 4 + 1 and mdp.absorbing.sum() == 1
    # the goal plane of a state follows its visited mask
    state = 3 * 144 + TSP_TASK.start_pose  # both goals visited
    features = mdp.features[state].reshape(7, 6, 6)
    assert features[5].sum() == 0 and features[4, 0, 0] == 1


# ---------------------------------------------------------------------------------------------------- both


@pytest.mark.parametrize("env_id", ["ShortestPathTeach-v0", "TSPTeach-v0"])
def test_seeded_reset_draws_the_same_task(env_id):
    env = gym.make(env_id)
    obs_a, _ = env.reset(seed=11)
    task_a = env.unwrapped.task
    obs_b, _ = env.reset(seed=11)
    assert env.unwrapped.task == task_a
    np.testing.assert_array_equal(obs_a, obs_b)
    env.reset(seed=12)
    assert env.unwrapped.task != task_a
    assert env.observation_space.shape == (7, 6, 6) and env.action_space.n == 3


@pytest.mark.parametrize("env_cls", [ShortestPathTeachEnv, TSPTeachEnv])
def test_bad_inputs(env_cls):
    with pytest.raises(ValueError, match="render_mode"):
        env_cls(render_mode="human")
    with pytest.raises(ValueError, match=r"horizon must be an integer in \[1, 10000\]"):
        env_cls(horizon=0)
    env = env_cls()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    with pytest.raises(RuntimeError, match="reset"):
        env.tabular()
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"start_state": 0})
    other = TSP_TASK if env_cls is ShortestPathTeachEnv else SP_TASK
    with pytest.raises(ValueError, match="options\\['task'\\] must be a"):
        env.reset(options={"task": other})
    env.reset(seed=0)
    for action in (3, -1, 1.5, True):
        with pytest.raises(ValueError, match="action must be 0"):
            env.step(action)


@pytest.mark.parametrize("env_cls, task", [(ShortestPathTeachEnv, SP_TASK), (TSPTeachEnv, TSP_TASK)])
def test_render_and_pickle(env_cls, task):
    env = env_cls(render_mode="ansi")
    env.reset(options={"task": task})
    text = env.render()
    assert "[>]" in text and "legend" in text and text.count("\n") >= 8
    picture = env_cls(render_mode="rgb_array")
    picture.reset(options={"task": task})
    image = picture.render()
    assert image.dtype == np.uint8 and image.shape == (145, 145, 3)
    assert (image == 20).all(axis=2).any()  # the agent's dark triangle
    clone = pickle.loads(pickle.dumps(picture))
    assert clone.task == task
    np.testing.assert_array_equal(clone.step(0)[0], picture.step(0)[0])

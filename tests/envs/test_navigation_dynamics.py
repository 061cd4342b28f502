"""The batched rules of the navigation tasks (TaskBatch.step / observe) against the environments stepped one action
at a time, and against hand-computed rewards."""

import copy

import numpy as np
import pytest

from curteach_envs.navigation import (
    EXIT_REWARD,
    GOAL_REWARD,
    LEAVE_GRID_REWARD,
    MUD_REWARD,
    N_POSES,
    STEP_REWARD,
    TOUR_REWARD,
    ShortestPathTask,
    ShortestPathTeachEnv,
    TaskBatch,
    TSPTask,
    TSPTeachEnv,
    sample_shortest_path_task,
    sample_tsp_task,
)


def cell(row, col):
    return 6 * row + col


def _sample(kind, rng):
    """A task of the dataset's distribution and one optimal action sequence of it."""
    if kind == "shortest_path":
        task, solution, _ = sample_shortest_path_task(rng, int(rng.integers(1, 3)), int(rng.integers(0, 13)),
                                                      int(rng.integers(0, 13)))
        return task, solution.paths[0]
    task, solution, _ = sample_tsp_task(rng, int(rng.integers(2, 5)))
    return task, solution.actions


def _reachable_states(kind, seed, n_tasks=40, per_task=4):
    """``(env, its last observation)`` pairs stopped at random reachable states: a random prefix of an optimal path
    (so that goals, bombs and the completed tour are near), then up to 4 random actions; each env is live."""
    rng = np.random.default_rng(seed)
    env_class = ShortestPathTeachEnv if kind == "shortest_path" else TSPTeachEnv
    envs = []
    while len(envs) < n_tasks * per_task:
        task, path = _sample(kind, rng)
        for _ in range(per_task):
            env = env_class(horizon=10_000)
            obs, _ = env.reset(options={"task": task})
            actions = list(path[: rng.integers(0, len(path))]) + list(rng.integers(0, 3, rng.integers(0, 5)))
            ended = False
            for action in actions:
                obs, _, ended, _, _ = env.step(int(action))
                if ended:
                    break
            if not ended:
                envs.append((env, obs))
    return envs


@pytest.mark.parametrize("kind", ["shortest_path", "tsp"])
@pytest.mark.parametrize("seed", [0, 1])
def test_batched_and_single_env_steps_agree_on_every_action(kind, seed):
    envs, observations = zip(*_reachable_states(kind, seed), strict=True)
    n = len(envs)
    batch = TaskBatch.from_tasks([env.task for env in envs])  # row i: the task of env i
    pose = np.array([env._pose for env in envs])
    mask = np.array([env._mask for env in envs])
    # every state with every action, in one batched call
    rows = np.repeat(np.arange(n), 3)
    action = np.tile(np.arange(3), n)
    next_pose, next_mask, reward, terminated = batch.step(pose[rows], mask[rows], action, rows=rows)
    observation = batch.observe(next_pose, next_mask, rows=rows)
    unchecked = batch.step(pose[rows], mask[rows], action, rows=rows, check=False)  # a rollout loop's fast path
    for checked_array, unchecked_array in zip((next_pose, next_mask, reward, terminated), unchecked, strict=True):
        np.testing.assert_array_equal(checked_array, unchecked_array)
    np.testing.assert_array_equal(batch.observe(next_pose, next_mask, rows=rows, check=False), observation)
    np.testing.assert_array_equal(batch.observe(pose, mask), np.stack(observations))
    for k, (i, a) in enumerate(zip(rows, action, strict=True)):
        env = copy.copy(envs[i])  # the env's state is replaced, never mutated, by a step
        obs, r, term, trunc, info = env.step(int(a))
        assert (r, term, trunc) == (reward[k], terminated[k], False), (kind, i, a)
        assert (info["pose"], env._mask) == (next_pose[k], next_mask[k]), (kind, i, a)
        np.testing.assert_array_equal(obs, observation[k])  # every plane, exactly (float32)
        # and the task's table, the same rules over all its states
        table_next, table_reward = env.task.dynamics()
        state = mask[i] * N_POSES + pose[i]
        assert table_reward[state, a] == r
        assert table_next[state, a] == (-1 if term else next_mask[k] * N_POSES + next_pose[k])
    # the rules were exercised: mud, bombs, goals, the tour and leaving the grid
    expected = {-1, -2, -6, 9} if kind == "shortest_path" else {-1, 9, -11}
    assert expected <= set(reward.tolist()), set(reward.tolist())
    assert terminated.any() and not terminated.all()
    if kind == "tsp":
        assert np.any(next_mask != mask[rows])  # goals were visited


def test_shortest_path_rules_by_hand():
    task = ShortestPathTask(start=cell(2, 2), direction=0, goals=(cell(2, 5), cell(5, 5)), muds=(cell(2, 3),),
                            bombs=(cell(1, 2),))
    other = ShortestPathTask(start=cell(0, 0), direction=3, goals=(cell(5, 5),))
    batch = TaskBatch.from_tasks([task, other])
    pose = 4 * np.array([cell(2, 2), cell(2, 2), cell(2, 3), cell(2, 4), cell(2, 3), cell(0, 0)])
    pose += np.array([0, 3, 2, 0, 0, 3])  # directions: E, N, W, E, E, N
    action = np.array([0, 0, 1, 0, 2, 0])
    rows = np.array([0, 0, 0, 0, 0, 1])
    next_pose, next_mask, reward, terminated = batch.step(pose, None, action, rows=rows)
    # onto mud; onto the bomb; a turn on mud; onto a goal; a turn on mud; off the grid
    assert reward.tolist() == [MUD_REWARD, EXIT_REWARD, MUD_REWARD, GOAL_REWARD + STEP_REWARD, MUD_REWARD,
                               EXIT_REWARD] == [-2, -6, -2, 9, -2, -6]
    assert terminated.tolist() == [False, True, False, True, False, True]
    assert next_pose.tolist() == [4 * cell(2, 3), 4 * cell(1, 2) + 3, 4 * cell(2, 3) + 1, 4 * cell(2, 5),
                                  4 * cell(2, 3) + 1, -1]
    assert next_mask.tolist() == [0] * 6
    obs = batch.observe(next_pose, next_mask, rows=rows)
    assert obs[1, 3, 1, 2] == 1 and obs[1, 5, 1, 2] == 1  # drawn on the bomb that ended the episode
    assert obs[5, :4].sum() == 0  # off the grid: not drawn
    assert obs[0, 6].sum() == 2 and obs[5, 6].sum() == 1  # the goal plane of each task


def test_tsp_rules_by_hand():
    task = TSPTask(start=cell(3, 3), direction=0, goals=(cell(3, 4), cell(3, 2)), muds=(cell(4, 3),))
    batch = TaskBatch.from_tasks([task])
    east, west = 4 * cell(3, 3), 4 * cell(3, 3) + 2
    cases = [  # (pose, mask, action) -> (next mask, reward, terminated)
        (east, 0b00, 0, 0b01, STEP_REWARD, False),  # visits goal 0
        (4 * cell(3, 4) + 2, 0b01, 0, 0b01, STEP_REWARD, False),  # home, goal 1 not visited: the tour goes on
        (4 * cell(3, 2), 0b11, 0, 0b11, TOUR_REWARD + STEP_REWARD, True),  # home with every goal visited
        (west, 0b01, 0, 0b11, STEP_REWARD, False),  # visits goal 1
        (4 * cell(3, 2), 0b10, 0, 0b10, STEP_REWARD, False),  # home (goal 0 missing)
        (4 * cell(3, 3) + 1, 0b00, 0, 0b00, MUD_REWARD, False),  # onto mud
        (4 * cell(4, 3), 0b00, 2, 0b00, MUD_REWARD, False),  # a turn on mud
        (4 * cell(3, 0) + 2, 0b11, 0, 0b11, LEAVE_GRID_REWARD, True),  # off the grid
    ]
    pose, mask, action, want_mask, want_reward, want_end = (np.array(c) for c in zip(*cases, strict=True))
    rows = np.zeros(len(cases), dtype=np.int64)
    next_pose, next_mask, reward, terminated = batch.step(pose, mask, action, rows=rows)
    assert next_mask.tolist() == want_mask.tolist()
    assert reward.tolist() == want_reward.tolist() and reward[2] == 9 and reward[-1] == -11
    assert terminated.tolist() == want_end.tolist()
    obs = batch.observe(next_pose, next_mask, rows=rows)
    assert obs[0, 5, 3, 4] == 0 and obs[0, 5, 3, 2] == 1  # a visited goal leaves plane 5
    assert obs[2, 5].sum() == 0 and obs[2, 0, 3, 3] == 1 and obs[2, 4, 3, 3] == 1  # home: drawn, plane 4
    assert obs[-1, :4].sum() == 0 and obs[:, 6, 4, 3].tolist() == [1] * len(cases)
    # the single-state step of the task is the same rule
    assert task.step(east, 0, 0) == (4 * cell(3, 4), 1, -1, False)


def test_transition_table_sizes_and_states():
    sp = ShortestPathTask(start=0, direction=0, goals=(35,))
    tsp = TSPTask(start=0, direction=0, goals=(35, 7, 8))
    assert sp.dynamics()[0].shape == (N_POSES, 3) and tsp.dynamics()[0].shape == (N_POSES * 8, 3)
    next_state, _ = tsp.dynamics()
    assert not next_state.flags.writeable
    pose = 4 * 6 + 0  # cell 6 = (1, 0) facing east: the move enters cell 7, goal 1 (bit 1 of the mask)
    assert next_state[pose, 0] == 0b010 * N_POSES + 4 * 7


def test_bad_states_raise_clear_errors():
    batch = TaskBatch.from_tasks([TSPTask(start=0, direction=0, goals=(35, 7))])
    with pytest.raises(ValueError, match="one state per task"):
        batch.observe(np.array([0, 1]))
    with pytest.raises(ValueError, match=r"pose must hold values in \[0, 143\]"):
        batch.step(np.array([-1]), None, np.array([0]))
    with pytest.raises(ValueError, match=r"pose must hold values in \[-1, 143\]"):
        batch.observe(np.array([144]))
    with pytest.raises(ValueError, match="mask must hold values"):
        batch.observe(np.array([0]), np.array([4]))
    with pytest.raises(ValueError, match="action must hold values"):
        batch.step(np.array([0]), None, np.array([3]))
    with pytest.raises(ValueError, match="rows must"):
        batch.step(np.array([0]), None, np.array([0]), rows=np.array([1]))
    with pytest.raises(ValueError, match="integer array"):
        batch.step(np.array([0.5]), None, np.array([0]))
    with pytest.raises(ValueError, match="row must be in"):
        batch.transition_table(1)
    task = TSPTask(start=0, direction=0, goals=(35, 7))
    with pytest.raises(ValueError, match="subset"):
        task.step(0, 4, 0)
    with pytest.raises(ValueError, match="action"):
        task.step(0, 0, 3)
    with pytest.raises(ValueError, match="pose"):
        task.observation(144)
    with pytest.raises(ValueError, match="subset"):
        ShortestPathTask(start=0, direction=0, goals=(35,)).observation(0, 1)

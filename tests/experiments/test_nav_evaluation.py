"""Batched greedy evaluation (docs/experiments/nav.md) against the environments stepped one action at a time."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th

import curteach_envs  # noqa: F401  (registers the environments)
from curteach_envs.navigation import TaskBatch
from curteach_envs.navigation.generate import generate_dataset
from curteach_teaching.experiments.nav.evaluation import evaluate_split, rollout
from curteach_teaching.learners.networks import NavigationCNN, NavigationCNNPolicy

ENV_ID = {"shortest_path": "ShortestPathTeach-v0", "tsp": "TSPTeach-v0"}


_TASK_COLUMNS = ("start", "direction", "goals", "muds", "bombs", "tries")


def _subsplit(split, tasks):
    """The split restricted to the tasks ``tasks`` (sorted indices) and their demonstrations, as a NavigationSplit."""
    c = split.columns
    new_index = np.full(split.n_tasks, -1)
    new_index[tasks] = np.arange(len(tasks))
    demos = np.flatnonzero(new_index[c["task_index"]] >= 0)
    columns = {}
    for name, value in c.items():
        if name in ("actions", "greedy_actions"):
            offsets = np.concatenate([[0], np.cumsum(c["lengths" if name == "actions" else "greedy_lengths"])])
            columns[name] = np.concatenate([value[offsets[i] : offsets[i + 1]] for i in demos])
        elif name in _TASK_COLUMNS:
            columns[name] = value[tasks]
        elif name == "task_index":
            columns[name] = new_index[value[demos]]
        else:
            columns[name] = value[demos]
    return type(split).from_columns(split.kind, split.name, columns)


@pytest.fixture(scope="module")
def splits():
    # shortest path: 85 tasks spread over the 338 (goals, muds, bombs) configurations, so that the batch-1 checks
    # against the environment stay cheap
    sp = generate_dataset("shortest_path", {"test": 1}, seed=5, workers=1, progress=False)["test"]
    tsp = generate_dataset("tsp", {"test": 6}, seed=5, workers=1, progress=False)["test"]
    return {"shortest_path": _subsplit(sp, np.arange(0, sp.n_tasks, 4)), "tsp": tsp}


def _env_rollout(kind, task, act, horizon=30):
    """Step the registered environment: ``act`` is a sequence of actions or a function of the observation."""
    env = gym.make(ENV_ID[kind], horizon=horizon)
    obs, _ = env.reset(options={"task": task})
    observations, rewards, terminated = [obs], [], False
    for t in range(horizon):
        if callable(act):
            action = act(obs)
        elif t < len(act) and act[t] >= 0:
            action = int(act[t])
        else:
            break
        obs, reward, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    return np.array(observations), np.array(rewards, dtype=np.int64), terminated


def _check_against_env(kind, tasks, result, act_of_row, horizon=30):
    for i, task in enumerate(tasks):
        observations, rewards, terminated = _env_rollout(kind, task, act_of_row(i), horizon)
        n = rewards.size
        assert result.lengths[i] == n, i
        assert result.returns[i] == rewards.sum(), i
        assert result.terminated[i] == terminated, i
        np.testing.assert_array_equal(result.rewards[i, :n], rewards)
        assert np.all(result.rewards[i, n:] == 0) and np.all(result.actions[i, n:] == -1)
        np.testing.assert_array_equal(result.observations[i, : n + 1], observations)  # exact, float32
        assert result.observations.dtype == np.float32


def _demo_tasks(split):
    return [split.task(i) for i in range(split.n_demos)]


# ---------------------------------------------------------------------------------------------------- equivalence


@pytest.mark.parametrize("kind", ["shortest_path", "tsp"])
def test_random_action_sequences_match_the_environment(splits, kind):
    split = splits[kind]
    batch = TaskBatch.from_split(split, per="demonstration")
    rng = np.random.default_rng(1)
    # uniform actions, and move-heavy ones that travel further (goals, bombs, mud, leaving the grid)
    table = np.concatenate([rng.integers(0, 3, (len(batch), 30)),
                            rng.choice(3, (len(batch), 30), p=[0.7, 0.15, 0.15])])
    both = batch.take(np.tile(np.arange(len(batch)), 2))
    result = rollout(table, both, record=True)
    tasks = _demo_tasks(split) * 2
    _check_against_env(kind, tasks, result, lambda i: table[i])
    assert result.terminated.any() and not result.terminated.all()
    # the rules are exercised: mud, bombs, goals and leaving the grid (shortest path); leaving the grid (TSP)
    expected = {-6, -2, -1, 9} if kind == "shortest_path" else {-11, -1}
    assert expected <= set(np.unique(result.rewards).tolist())


@pytest.mark.parametrize("kind", ["shortest_path", "tsp"])
def test_stored_demonstrations_match_the_environment_and_their_rewards(splits, kind):
    split = splits[kind]
    batch = TaskBatch.from_split(split, per="demonstration")
    demos = [split.actions(i) for i in range(split.n_demos)]
    horizon = int(split["lengths"].max())
    result = rollout(demos, batch, horizon=horizon, record=True)
    np.testing.assert_array_equal(result.returns, split["reward"])  # the stored return of each demonstration
    np.testing.assert_array_equal(result.lengths, split["lengths"])
    assert result.terminated.all()
    _check_against_env(kind, _demo_tasks(split), result, lambda i: demos[i], horizon=horizon)
    # and with the evaluation horizon of 30, as the environment truncates
    result30 = rollout(demos, batch, record=True)
    _check_against_env(kind, _demo_tasks(split), result30, lambda i: demos[i])


def test_tsp_tours_with_detours_match_the_environment(splits):
    # prefixes of the stored and greedy tours followed by random actions: goals visited in other orders, goals
    # re-entered, home crossed early, the grid left after some visits
    split = splits["tsp"]
    rng = np.random.default_rng(2)
    rows, sequences = [], []
    for i in range(split.n_demos):
        for tour in (split.actions(i), split.greedy_actions(i)):
            for cut in (len(tour) // 3, 2 * len(tour) // 3, len(tour) - 1):
                rows.append(i)
                sequences.append(np.concatenate([tour[:cut], rng.choice(3, 30, p=[0.6, 0.2, 0.2])])[:30])
    batch = TaskBatch.from_split(split, per="demonstration").take(np.array(rows))
    result = rollout(sequences, batch, record=True)
    tasks = [split.task(i) for i in rows]
    _check_against_env("tsp", tasks, result, lambda k: sequences[k])
    assert {9, -11} <= set(np.unique(result.rewards).tolist())  # tours completed, the grid left after visits
    greedy = [split.greedy_actions(i) for i in range(split.n_demos)]
    horizon = max(len(g) for g in greedy)
    replay = rollout(greedy, TaskBatch.from_split(split, per="demonstration"), horizon=horizon)
    np.testing.assert_array_equal(replay.returns, split["greedy_reward"])
    assert replay.terminated.all()


def _heuristic(obs: np.ndarray, kind: str) -> int:
    """A deterministic rule of the observation: move unless that leaves the grid or (shortest path) enters a bomb,
    else turn right; on mud, turn left unless a goal is ahead."""
    direction, row, col = (int(v[0]) for v in np.nonzero(obs[:4]))
    step = [(0, 1), (1, 0), (0, -1), (-1, 0)][direction]
    r, c = row + step[0], col + step[1]
    if not (0 <= r < 6 and 0 <= c < 6) or (kind == "shortest_path" and obs[5, r, c] > 0):
        return 2
    mud, goal = (4, 6) if kind == "shortest_path" else (6, 5)
    if obs[mud, row, col] > 0 and obs[goal, r, c] == 0:
        return 1
    return 0


@pytest.mark.parametrize("kind", ["shortest_path", "tsp"])
def test_a_callable_policy_of_the_observation_matches_the_environment(splits, kind):
    split = splits[kind]
    batch = TaskBatch.from_split(split)
    def policy(obs):
        return np.array([_heuristic(o, kind) for o in obs])

    result = rollout(policy, batch, record=True)
    _check_against_env(kind, split.tasks, result, lambda i: lambda obs: _heuristic(obs, kind))
    # skipping cycles gives the same returns (the rule is a function of the observation)
    for skip in (True, False):
        fast = rollout(policy, batch, skip_cycles=skip)
        np.testing.assert_array_equal(fast.returns, result.returns)
        np.testing.assert_array_equal(fast.lengths, result.lengths)
        np.testing.assert_array_equal(fast.terminated, result.terminated)
    assert (result.lengths == 30).any()  # some episodes loop to the horizon


@pytest.mark.parametrize("kind", ["shortest_path", "tsp"])
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_a_greedy_network_matches_the_environment(splits, kind, seed):
    split = splits[kind]
    policy = NavigationCNNPolicy.for_navigation(seed=seed)
    policy.set_training_mode(True)
    batch = TaskBatch.from_split(split)
    result = rollout(policy, batch, record=True)
    assert policy.training  # the mode is restored
    net = policy.net

    def greedy(obs):
        with th.no_grad():
            return int(net.eval()(th.from_numpy(obs)[None]).argmax())

    rows = np.arange(0, len(batch), max(1, len(batch) // 25))  # batch-1 forwards are slow: a sample of tasks
    _check_against_env(kind, [split.tasks[i] for i in rows], _Rows(result, rows), lambda k: greedy)
    skipped = rollout(policy, batch)
    np.testing.assert_array_equal(skipped.returns, result.returns)
    np.testing.assert_array_equal(skipped.terminated, result.terminated)
    # a plain network (logits) and a NumPy callable returning logits give the same rollouts
    np.testing.assert_array_equal(rollout(NavigationCNN(seed=seed), batch).returns, result.returns)

    def numpy_logits(obs):
        with th.no_grad():
            return net.eval()(th.from_numpy(obs)).numpy()

    np.testing.assert_array_equal(rollout(numpy_logits, batch).returns, result.returns)


class _Rows:
    """Rows ``rows`` of a recorded RolloutResult."""

    def __init__(self, result, rows):
        for name in ("returns", "lengths", "terminated", "actions", "rewards", "observations"):
            setattr(self, name, getattr(result, name)[rows])


# ---------------------------------------------------------------------------------------------------- split metric


@pytest.mark.parametrize("kind", ["shortest_path", "tsp"])
def test_evaluate_split_is_the_mean_return_per_datapoint(splits, kind):
    split = splits[kind]
    policy = NavigationCNNPolicy.for_navigation(seed=4)
    evaluation = evaluate_split(policy, split)
    per_demo = rollout(policy, TaskBatch.from_split(split, per="demonstration"))
    np.testing.assert_array_equal(evaluation.returns, per_demo.returns)
    np.testing.assert_array_equal(evaluation.task_returns[split["task_index"]], evaluation.returns)
    assert evaluation.mean_return == pytest.approx(per_demo.returns.mean())
    assert evaluation.task_returns.shape == (split.n_tasks,) and evaluation.returns.shape == (split.n_demos,)
    again = evaluate_split(policy, split, batch=TaskBatch.from_split(split), skip_cycles=False)
    np.testing.assert_array_equal(again.returns, evaluation.returns)


def test_shortest_path_split_has_duplicated_tasks(splits):
    # the metric counts a task once per stored path, as the original (docs/deviations.md, "The navigation learner")
    split = splits["shortest_path"]
    assert split.n_demos > split.n_tasks


# ---------------------------------------------------------------------------------------------------- action tables


def test_an_action_table_policy(splits):
    split = splits["shortest_path"]
    batch = TaskBatch.from_split(split).take(np.arange(4))
    table = np.array([[1, 1, 1, 1, 1, 1], [2, 2, -1, -1, -1, -1], [1] * 6, [0] * 6])
    result = rollout(table, batch)
    assert result.returns[0] == result.returns[2]
    assert result.lengths[1] == 2 and not result.terminated[1]  # the sequence ended: truncated there
    assert result.lengths[0] <= 6
    ragged = rollout([table[0], table[1][:2], table[2], table[3]], batch)
    np.testing.assert_array_equal(ragged.returns, result.returns)
    np.testing.assert_array_equal(ragged.lengths, result.lengths)
    # a table is never cycle-skipped: turning in place for 6 steps is 6 steps of -1 (or -2 on mud)
    assert result.lengths[0] == 6 and result.returns[0] in (-6, -12)


def test_observations_equal_the_tasks(splits):
    rng = np.random.default_rng(3)
    for kind in ("shortest_path", "tsp"):
        split = splits[kind]
        batch = TaskBatch.from_split(split)
        pose = rng.integers(-1, 144, len(batch))
        mask = rng.integers(0, 16, len(batch)) if kind == "tsp" else np.zeros(len(batch), dtype=np.int64)
        if kind == "tsp":
            mask &= batch.full_mask
        obs = batch.observe(pose, mask)
        expected = np.stack([t.observations(np.array([p]), np.array([m]))[0]
                             for t, p, m in zip(split.tasks, pose, mask, strict=True)])
        np.testing.assert_array_equal(obs, expected)
    same = TaskBatch.from_tasks(splits["tsp"].tasks)
    direct = TaskBatch.from_split(splits["tsp"])
    for name in ("start", "direction"):
        np.testing.assert_array_equal(getattr(same, name), getattr(direct, name))


# ---------------------------------------------------------------------------------------------------- bad input


def test_bad_input_raises_clear_errors(splits):
    split = splits["shortest_path"]
    batch = TaskBatch.from_split(split)
    policy = NavigationCNN(seed=0)
    with pytest.raises(ValueError, match="at least one task"):
        TaskBatch.from_tasks([])
    with pytest.raises(ValueError, match="all ShortestPathTask or all TSPTask"):
        TaskBatch.from_tasks([split.tasks[0], splits["tsp"].tasks[0]])
    with pytest.raises(ValueError, match="kind must be one of"):
        TaskBatch("maze", batch.start, batch.direction, batch.goals, batch.muds, batch.bombs)
    with pytest.raises(ValueError, match="non-empty"):
        TaskBatch("shortest_path", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), [], [], [])
    with pytest.raises(ValueError, match="distinct cells"):
        TaskBatch("shortest_path", np.array([3]), np.array([0]), np.array([[3]]), [], [])
    with pytest.raises(ValueError, match=r"\[0, 35\]"):
        TaskBatch("shortest_path", np.array([3]), np.array([0]), np.array([[36]]), [], [])
    with pytest.raises(ValueError, match="at least one goal"):
        TaskBatch("tsp", np.array([3]), np.array([0]), np.array([[-1, -1]]), [], [])
    with pytest.raises(ValueError, match="per must be"):
        TaskBatch.from_split(split, per="episode")
    with pytest.raises(ValueError, match="NavigationSplit"):
        TaskBatch.from_split({"not": "a split"})
    with pytest.raises(ValueError, match="horizon must be a positive integer"):
        rollout(policy, batch, horizon=0)
    with pytest.raises(ValueError, match="batch must be a TaskBatch"):
        rollout(policy, split)
    with pytest.raises(ValueError, match="one row per episode"):
        rollout(np.zeros((len(batch) + 1, 3), dtype=np.int64), batch)
    with pytest.raises(ValueError, match=r"actions in \{0, 1, 2\}"):
        rollout(np.full((len(batch), 3), 3), batch)
    with pytest.raises(ValueError, match="a torch module, a callable"):
        rollout("move", batch)
    with pytest.raises(ValueError, match=r"\(n, 3\) logits or \(n,\) actions"):
        rollout(lambda obs: np.zeros((len(obs), 4)), batch)
    with pytest.raises(ValueError, match="non-finite logits"):
        rollout(lambda obs: np.full((len(obs), 3), np.nan), batch)
    with pytest.raises(ValueError, match=r"outside \{0, 1, 2\}"):
        rollout(lambda obs: np.full(len(obs), 5), batch)
    with pytest.raises(ValueError, match="roll out action tables with rollout"):
        evaluate_split(np.zeros((len(batch), 3), dtype=np.int64), split)
    with pytest.raises(ValueError, match="TaskBatch.from_split"):
        evaluate_split(policy, split, batch=batch.take(np.arange(3)))
    with pytest.raises(ValueError, match="one state per task"):
        batch.observe(np.zeros(2, dtype=np.int64))

"""The protocol's optional ``window`` (curteach_teaching.learners.windows): each step's window within its episode,
padded at its start with the first observation, as the curriculum adapter trains and scores it and the evaluator
acts on it (restarted per environment at each episode's start, vectorised and serial alike)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("imitation")

from imitation.data import types  # noqa: E402

from curteach_teaching.curriculum.adapters.learner import LearnerSteps  # noqa: E402
from curteach_teaching.curriculum.index import DemonstrationIndex  # noqa: E402
from curteach_teaching.learners.windows import (  # noqa: E402
    WindowRows,
    episode_windows,
    learner_sequences,
    learner_window,
    sequence_batch,
    windowed,
)
from curteach_teaching.rollouts import evaluate_policy, evaluate_policy_serial  # noqa: E402


def test_windows_at_episode_starts_by_hand():
    assert episode_windows([2, 3], 3).tolist() == [[0, 0, 0], [0, 0, 1], [2, 2, 2], [2, 2, 3], [2, 3, 4]]
    assert episode_windows([4], 2).tolist() == [[0, 0], [0, 1], [1, 2], [2, 3]]
    assert episode_windows([2, 1], 1).tolist() == [[0], [1], [2]]
    obs = np.arange(5.0)[:, None] * 10
    assert windowed(obs, episode_windows([2, 3], 3)[[1, 4]])[..., 0].tolist() == [[0, 0, 10], [20, 30, 40]]


def test_a_learners_window_is_1_unless_it_declares_one():
    class Plain:
        pass

    class Windowed:
        window = 4

    assert learner_window(Plain()) == 1 and learner_window(Windowed()) == 4
    for bad in (0, 2.5, True):
        Windowed.window = bad
        with pytest.raises(ValueError, match="a learner's window must be an integer >= 1"):
            learner_window(Windowed())


def test_window_rows_restart_and_shift_per_slot():
    rows = WindowRows(2, 3)
    rows.start(0, np.array([1.0]))
    rows.start(1, np.array([7.0]))
    rows.push(0, np.array([2.0]))
    rows.push(0, np.array([3.0]))
    rows.push(0, np.array([4.0]))
    assert rows.stack([1, 0])[..., 0].tolist() == [[7, 7, 7], [2, 3, 4]]
    rows.start(0, np.array([9.0]))
    assert rows.stack([0])[..., 0].tolist() == [[9, 9, 9]]


class Counter(gym.Env):
    """Observation ``[100 * seed + t]``; an episode of ``seed + 2`` steps."""

    observation_space = gym.spaces.Box(-1e6, 1e6, (1,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float64)

    def reset(self, *, seed=None, options=None):
        self.seed_, self.t = int(seed), 0
        return np.array([100.0 * self.seed_]), {}

    def step(self, action):
        self.t += 1
        return np.array([100.0 * self.seed_ + self.t]), 0.0, self.t >= self.seed_ + 2, False, {}


class Recorder:
    """A dataset learner with a window of 3 that records every window it acts on (its actions: zeros)."""

    window = 3
    observation_space, action_space = Counter.observation_space, Counter.action_space

    def __init__(self):
        self.seen: list[list[float]] = []

    def train_step(self, obs, acts, weights):
        self.trained = (np.asarray(obs).copy(), np.asarray(acts).copy())
        self.weights = None if weights is None else np.asarray(weights).copy()
        return 0.0

    def log_likelihood(self, obs, acts):
        obs = np.asarray(obs)
        assert obs.ndim == 3 and obs.shape[1] == 3
        return -obs[:, -1, 0] - 0.001 * obs[:, 0, 0]

    def diverged(self):
        return False

    def act(self, obs, streams=None):
        obs = np.asarray(obs)
        self.seen.extend(obs[..., 0].tolist())
        return np.zeros((len(obs), 1))


@pytest.mark.parametrize("max_envs", [None, 1, 2])
def test_the_evaluator_restarts_each_environments_window_at_its_episodes_start(max_envs):
    learner = Recorder()
    evaluate_policy(learner, Counter, [1, 0, 2], max_envs=max_envs)
    expected = {  # seed -> the windows of its steps, in order
        1: [[100, 100, 100], [100, 100, 101], [100, 101, 102]],
        0: [[0, 0, 0], [0, 0, 1]],
        2: [[200, 200, 200], [200, 200, 201], [200, 201, 202], [201, 202, 203]],
    }
    by_seed: dict[int, list] = {}
    for window in learner.seen:
        by_seed.setdefault(int(window[-1] // 100), []).append(window)
    assert by_seed == expected
    serial = Recorder()
    evaluate_policy_serial(serial, Counter, [1, 0, 2])
    assert serial.seen == expected[1] + expected[0] + expected[2]


def test_the_curriculum_adapter_hands_a_windowed_learner_each_steps_window():
    trajectories = [types.Trajectory(obs=np.arange(n + 1, dtype=np.float64)[:, None] + 100 * i,
                                     acts=np.arange(n, dtype=np.float64)[:, None], infos=None, terminal=True)
                    for i, n in enumerate((2, 3))]
    from imitation.data import rollout

    transitions = rollout.flatten_trajectories(trajectories)
    learner = Recorder()
    steps = LearnerSteps(learner, transitions, DemonstrationIndex.from_trajectories(trajectories), min_log_prob=-1e9)
    steps.train_batches([np.array([4, 1, 2])], lambda: None)
    obs, acts = learner.trained
    assert obs[..., 0].tolist() == [[100, 101, 102], [0, 0, 1], [100, 100, 100]]
    assert acts[:, 0].tolist() == [2, 1, 0]
    # the difficulty sums the windows' scores per demonstration: -(last + 0.001 first) of every step's window
    np.testing.assert_allclose(steps.learner_difficulty(), [(0 + 0) + (1 + 0), (100.1 + 101.1 + 102.1)])


def test_a_sequence_batch_labels_each_step_with_its_own_action_and_weight_by_hand():
    rows = episode_windows([2, 3], 3)[[4, 1]]  # [[2, 3, 4], [0, 0, 1]]
    acts = np.array([[10.0], [11.0], [20.0], [21.0], [22.0]])
    weights = np.array([0.5, 0.5, 2.0, 2.0, 2.0])  # per demonstration, repeated over its steps
    actions, per_step = sequence_batch(acts, weights, rows)
    assert actions[..., 0].tolist() == [[20, 21, 22], [10, 10, 11]]  # the padding repeats the first step's action
    assert per_step.tolist() == [[2, 2, 2], [0.5, 0.5, 0.5]]  # a window's steps: the weight of the step it ends at
    assert sequence_batch(acts, None, rows)[1] is None
    # per-step weights that differ within a demonstration: each step of a window keeps its own
    assert sequence_batch(acts, np.arange(5.0), rows)[1].tolist() == [[2, 3, 4], [0, 0, 1]]


class SequenceRecorder(Recorder):
    sequence_targets = True


def test_the_curriculum_adapter_hands_a_sequence_learner_every_steps_action_and_weight():
    from imitation.data import rollout

    trajectories = [types.Trajectory(obs=np.arange(n + 1, dtype=np.float64)[:, None] + 100 * i,
                                     acts=np.arange(n, dtype=np.float64)[:, None] + 10 * i, infos=None,
                                     terminal=True) for i, n in enumerate((2, 3))]
    learner = SequenceRecorder()
    assert learner_sequences(learner) and not learner_sequences(Recorder())
    steps = LearnerSteps(learner, rollout.flatten_trajectories(trajectories),
                         DemonstrationIndex.from_trajectories(trajectories), min_log_prob=-1e9)
    steps.train_batches([np.array([4, 1])], lambda: None)
    obs, acts = learner.trained
    assert obs[..., 0].tolist() == [[100, 101, 102], [0, 0, 1]] and learner.weights is None
    assert acts[..., 0].tolist() == [[10, 11, 12], [0, 0, 1]]
    steps.set_transition_weights(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    steps.train_batches([np.array([2, 4])], lambda: None)
    assert learner.weights.tolist() == [[3, 3, 3], [3, 4, 5]]

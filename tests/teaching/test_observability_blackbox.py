"""ProbedPolicyView on learners that only act: an SB3 policy and a plain callable."""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy

from curteach_teaching.teaching.observability import ProbedPolicyView, sb3_log_policy


@pytest.fixture
def sb3_policy():
    th.manual_seed(0)  # the policy's initial weights only; the probes use the view's own rng
    return ActorCriticPolicy(gym.spaces.Box(-1.0, 1.0, (2,), np.float32), gym.spaces.Discrete(3), lambda _: 1e-3)


def test_sb3_log_policy_matches_evaluate_actions(sb3_policy):
    observations = np.random.default_rng(0).uniform(-1, 1, (5, 2)).astype(np.float32)
    log_policy = sb3_log_policy(sb3_policy, observations)
    assert log_policy.shape == (5, 3)
    obs = th.as_tensor(observations).repeat_interleave(3, dim=0)
    actions = th.arange(3).repeat(5)
    with th.no_grad():
        _, log_prob, _ = sb3_policy.evaluate_actions(obs, actions)
    np.testing.assert_allclose(log_policy, log_prob.numpy().reshape(5, 3), rtol=1e-6)


def test_sb3_exact_and_probed(sb3_policy):
    observations = np.random.default_rng(1).uniform(-1, 1, (4, 2)).astype(np.float32)
    exact = ProbedPolicyView(sb3_policy, 1, None, observations=observations)
    exact.at_step(0)
    np.testing.assert_allclose(exact.action_log_probabilities(), sb3_log_policy(sb3_policy, observations))
    views = [ProbedPolicyView(sb3_policy, 1, 50, np.random.default_rng(7), observations=observations) for _ in range(2)]
    for view in views:
        view.at_step(0)
    np.testing.assert_array_equal(views[0].action_log_probabilities(), views[1].action_log_probabilities())
    counts = np.exp(views[0].action_log_probabilities()) * (50 + 3 * 0.5) - 0.5
    np.testing.assert_allclose(counts.sum(axis=1), 50)  # k probes per state
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)


def test_callable_black_box_counts_by_hand():
    observations = np.array([[-1.0], [2.0], [0.5]])
    calls = []

    def act(obs):
        calls.append(obs.shape)
        return (obs[:, 0] > 0).astype(np.int64) * 2  # state 0 -> action 0, the others -> action 2

    view = ProbedPolicyView(act, 2, 10, observations=observations, n_actions=3, smoothing=0.5)
    view.at_step(0)
    assert calls == [(30, 1)]  # one call over every state repeated k times
    hit, miss = np.log(10.5 / 11.5), np.log(0.5 / 11.5)
    np.testing.assert_allclose(view.action_log_probabilities(),
                               [[hit, miss, miss], [miss, miss, hit], [miss, miss, hit]])
    view.at_step(1)
    assert len(calls) == 1  # B = 2: no refresh at step 1


def test_black_box_errors(sb3_policy):
    observations = np.zeros((3, 1))
    with pytest.raises(ValueError, match="needs observations"):
        ProbedPolicyView(lambda obs: obs, 1, 5, n_actions=2)
    with pytest.raises(ValueError, match="needs observations"):
        ProbedPolicyView(sb3_policy, 1, None)
    with pytest.raises(ValueError, match="finite k"):
        ProbedPolicyView(lambda obs: obs, 1, None, observations=observations, n_actions=2)
    with pytest.raises(ValueError, match="n_actions"):
        ProbedPolicyView(lambda obs: obs, 1, 5, observations=observations)
    with pytest.raises(ValueError, match="cannot probe a int"):
        ProbedPolicyView(3, 1, 5, observations=observations)
    view = ProbedPolicyView(lambda obs: np.full(len(obs), 4), 1, 5, observations=observations, n_actions=2)
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        view.at_step(0)
    view = ProbedPolicyView(lambda obs: np.zeros(2, dtype=int), 1, 5, observations=observations, n_actions=2)
    with pytest.raises(ValueError, match=r"must return \(15,\) integer actions"):
        view.at_step(0)

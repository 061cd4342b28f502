"""The evaluator's opt-in recording (``record=True``): each episode's observations and actions against a hand-made
environment whose every observation is known, batched and serial alike, and no change to the outcomes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from curteach_teaching.rollouts import evaluate_policy, evaluate_policy_serial


class Counter(gym.Env):
    """Observes ``[seed, t]`` at step ``t`` (0-based) of an episode of ``seed % 3 + 2`` steps, so that episodes of
    one batch end at different steps; the reward is the action taken."""

    observation_space = gym.spaces.Box(0.0, 100.0, (2,))
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.seed_, self.t = int(seed), 0
        return np.array([self.seed_, 0.0], dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        last = self.t == self.seed_ % 3 + 2
        return np.array([self.seed_, self.t], dtype=np.float32), float(action), last, False, {}


def parity(observations):
    """Logits of a greedy choice of action ``(seed + t) % 2``."""
    picks = (observations[:, 0] + observations[:, 1]).astype(int) % 2
    return np.where(np.arange(2)[None] == picks[:, None], 5.0, -5.0)


class DictCounter(Counter):
    """:class:`Counter` observed as ``{"pos": [seed, t], "t": [t]}``."""

    observation_space = gym.spaces.Dict({"pos": gym.spaces.Box(0.0, 100.0, (2,)), "t": gym.spaces.Box(0.0, 9.0, (1,))})

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        return {"pos": obs, "t": obs[1:]}, info

    def step(self, action):
        obs, *rest = super().step(action)
        return {"pos": obs, "t": obs[1:]}, *rest


def test_records_are_the_observations_acted_on_and_the_actions_taken_batched_and_serial():
    seeds = [4, 2, 6, 7, 3]
    batched = evaluate_policy(parity, Counter, seeds, max_envs=2, record=True)
    serial = evaluate_policy_serial(parity, Counter, seeds, record=True)
    for result in (batched, serial):
        assert len(result.observations) == len(result.actions) == len(seeds)
        for seed, obs, acts, length in zip(seeds, result.observations, result.actions, result.lengths, strict=True):
            steps = seed % 3 + 2
            assert length == steps and obs.shape == (steps, 2) and acts.shape == (steps,)
            np.testing.assert_array_equal(obs, [[seed, t] for t in range(steps)])  # the final one: not acted on
            np.testing.assert_array_equal(acts, [(seed + t) % 2 for t in range(steps)])
        np.testing.assert_array_equal(result.returns, [a.sum() for a in result.actions])
    plain = evaluate_policy(parity, Counter, seeds, max_envs=2)
    assert plain.observations is None and plain.actions is None
    for name in ("returns", "successes", "lengths", "reported"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(batched, name))


def test_dict_observations_are_recorded_per_key():
    def logits(observations):
        return parity(observations["pos"])

    result = evaluate_policy(logits, DictCounter, [5, 1], record=True)
    first = result.observations[0]
    assert set(first) == {"pos", "t"} and first["pos"].shape == (4, 2) and first["t"].shape == (4, 1)
    np.testing.assert_array_equal(first["t"][:, 0], [0, 1, 2, 3])
    np.testing.assert_array_equal(result.actions[1], [(1 + t) % 2 for t in range(3)])


def test_box_actions_are_recorded_as_the_policy_drew_them_before_the_clip():
    th = pytest.importorskip("torch")
    pytest.importorskip("stable_baselines3")
    from curteach_teaching.learners.factory import make_policy

    def pendulum():
        return gym.make("Pendulum-v1", max_episode_steps=6)

    env = pendulum()
    policy = make_policy("mlp", env.observation_space, env.action_space, 4)
    with th.no_grad():  # means well beyond the bounds, so that the clip shows
        policy.action_net.weight.copy_(30.0 * th.randn(policy.action_net.weight.shape,
                                                       generator=th.Generator().manual_seed(0)))
    batched = evaluate_policy(policy, pendulum, [0, 1, 2], deterministic=False, generator=3, max_envs=2, record=True)
    serial = evaluate_policy_serial(policy, pendulum, [0, 1, 2], deterministic=False, generator=3, record=True)
    for a, b, c, d in zip(batched.observations, serial.observations, batched.actions, serial.actions, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)
        np.testing.assert_allclose(c, d, rtol=1e-5)
        assert a.shape == (6, 3) and c.shape == (6, 1)
    acts = np.concatenate(batched.actions)
    assert np.abs(acts).max() > 2.0  # the draws beyond the bounds are kept as drawn: the env got them clipped
    # the env received the clip: the same episodes from the clipped actions replayed step by step
    for seed, taken in zip([0, 1, 2], batched.actions, strict=True):
        env, returns = pendulum(), 0.0
        env.reset(seed=seed)
        for action in taken:
            returns += env.step(np.clip(action, -2.0, 2.0).astype(np.float32))[1]
        assert returns == pytest.approx(batched.returns[[0, 1, 2].index(seed)], rel=1e-5)
    np.testing.assert_allclose(batched.observations[0][0], pendulum().reset(seed=0)[0])

"""The evaluator (curteach_teaching.rollouts): continuous actions against a plain serial loop written here, success at
any step, success by a terminating reward (one-step episodes too), and bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

th = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from curteach_teaching.learners.factory import make_policy  # noqa: E402
from curteach_teaching.rollouts import evaluate_policy, evaluate_policy_serial  # noqa: E402


def pendulum():
    return gym.make("Pendulum-v1", max_episode_steps=15)


def pendulum_policy():
    env = pendulum()
    policy = make_policy("mlp", env.observation_space, env.action_space, 4)
    with th.no_grad():  # a mean well beyond the bounds on some states, so that clipping matters
        shape = policy.action_net.weight.shape
        policy.action_net.weight.copy_(3.0 * th.randn(shape, generator=th.Generator().manual_seed(0)))
    return policy


def test_box_actions_greedy_equal_a_serial_loop_written_by_hand():
    policy = pendulum_policy()
    seeds = [3, 1, 4, 1, 5]
    result = evaluate_policy(policy, pendulum, seeds, max_envs=2)
    returns, clipped = [], 0
    env = pendulum()
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            with th.no_grad():
                mean = policy.get_distribution(th.as_tensor(obs[None])).distribution.mean.numpy()[0]
            clipped += int(np.any(np.abs(mean) > 2.0))
            obs, reward, terminated, truncated, _ = env.step(np.clip(mean.astype(np.float64), -2, 2).astype(np.float32))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    assert clipped > 0  # the test exercises the clip
    np.testing.assert_allclose(result.returns, returns, rtol=1e-6)
    assert result.lengths.tolist() == [15] * 5
    assert not result.successes.any() and not result.reported.any()  # Pendulum reports no success


def test_box_actions_sampled_batched_equal_serial_and_depend_on_the_generator():
    policy = pendulum_policy()
    batched = evaluate_policy(policy, pendulum, range(4), deterministic=False, generator=11, max_envs=3)
    serial = evaluate_policy_serial(policy, pendulum, range(4), deterministic=False, generator=11)
    # float32 forward passes of different batch sizes may differ in the last bits
    np.testing.assert_allclose(batched.returns, serial.returns, rtol=1e-6)
    other = evaluate_policy(policy, pendulum, range(4), deterministic=False, generator=12)
    assert not np.allclose(other.returns, batched.returns)
    greedy = evaluate_policy(policy, pendulum, range(4))
    assert not np.allclose(greedy.returns, batched.returns)


class Scripted(gym.Env):
    """Episodes of ``length`` steps; ``info[key]`` is true at step ``at`` only (1-based) when ``key`` is given, and
    the last step terminates with reward ``final``."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length=5, key=None, at=None, final=0.0):
        self.length, self.key, self.at, self.final = length, key, at, final

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        info = {} if self.key is None else {self.key: self.t == self.at}
        last = self.t == self.length
        return np.zeros(2, dtype=np.float32), self.final if last else 0.0, last, False, info


def uniform(observations):
    return np.zeros((len(observations), 2))


@pytest.mark.parametrize("key", ["success", "is_success"])
def test_success_at_any_step_counts(key):
    result = evaluate_policy(uniform, lambda: Scripted(key=key, at=2), [0, 1])
    assert result.successes.tolist() == [True, True] and result.reported.all()
    # reported but never true: no success, even with a positive final reward
    never = evaluate_policy(uniform, lambda: Scripted(key=key, at=None, final=1.0), [0])
    assert never.successes.tolist() == [False] and never.reported.tolist() == [True]


def test_without_a_success_key_a_positive_terminating_reward_is_success_one_step_episodes_too():
    one_step = evaluate_policy(uniform, lambda: Scripted(length=1, final=0.9), [0, 1, 2])
    assert one_step.successes.tolist() == [True] * 3 and one_step.lengths.tolist() == [1] * 3
    assert not one_step.reported.any()
    assert not evaluate_policy(uniform, lambda: Scripted(length=1, final=0.0), [0]).successes.any()
    serial = evaluate_policy_serial(uniform, lambda: Scripted(length=1, final=0.9), [0])
    assert serial.successes.tolist() == [True]


def test_bad_input_is_one_line():
    with pytest.raises(ValueError, match="non-negative integers"):
        evaluate_policy(uniform, Scripted, [-1])
    with pytest.raises(ValueError, match="max_envs must be >= 1"):
        evaluate_policy(uniform, Scripted, [0], max_envs=0)
    with pytest.raises(ValueError, match="SB3 policy or a logits callable"):
        evaluate_policy(3, Scripted, [0])

"""The action seam (curteach_teaching.learners.actions): greedy, sampled and scored actions of every SB3 distribution,
against closed forms and hand computations; the categorical path against the numbers it gave before the seam."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

th = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from curteach_teaching.curriculum.index import DemonstrationIndex  # noqa: E402
from curteach_teaching.curriculum.scores import policy_difficulty  # noqa: E402
from curteach_teaching.learners import actions  # noqa: E402
from curteach_teaching.learners.factory import make_policy  # noqa: E402
from curteach_teaching.learners.seeding import seeded_globals  # noqa: E402

LOG_2PI = math.log(2 * math.pi)


def gaussian_policy(mean, log_std, obs_dim=3):
    """A Box(2) Gaussian policy whose mean is ``mean`` at every observation (zero weights, the bias) and whose log
    standard deviation is ``log_std``."""
    policy = make_policy("mlp", gym.spaces.Box(-1, 1, (obs_dim,)), gym.spaces.Box(-2, 2, (2,)), 0)
    with th.no_grad():
        policy.action_net.weight.zero_()
        policy.action_net.bias.copy_(th.tensor(mean))
        policy.log_std.copy_(th.tensor(log_std))
    return policy


def _log_prob(policy, obs, acts):
    with th.no_grad():
        return actions.log_prob(policy, obs, acts)


def test_the_gaussian_log_density_is_the_closed_form():
    # mean (0.3, -1), standard deviations (0.5, 2), action (1, 0): z = (1.4, 0.5), sum log sigma = 0
    policy = gaussian_policy([0.3, -1.0], [math.log(0.5), math.log(2.0)])
    obs = th.zeros((1, 3))
    expected = -0.5 * (1.4**2 + 0.5**2) - 0.0 - LOG_2PI  # -2.94287706640934...
    got = _log_prob(policy, obs, th.tensor([[1.0, 0.0]]))
    assert got.shape == (1,)
    assert float(got[0]) == pytest.approx(expected, abs=1e-6)
    assert expected == pytest.approx(-2.9428770664093453)
    # a narrow density: positive at its mean, -2 log 0.01 - log 2 pi = 7.3724...
    narrow = gaussian_policy([0.3, -1.0], [math.log(0.01)] * 2)
    assert float(_log_prob(narrow, obs, th.tensor([[0.3, -1.0]]))[0]) == pytest.approx(7.3724633056, abs=1e-5)
    # an action outside the Box is scored as given: (3, -1) is 2.7 / 0.01 = 270 standard deviations away
    outside = float(_log_prob(narrow, obs, th.tensor([[3.0, -1.0]]))[0])
    assert outside == pytest.approx(7.3724633056 - 0.5 * 270.0**2, rel=1e-5)


def test_the_log_std_is_clamped_to_its_bounds():
    policy = gaussian_policy([0.0, 0.0], [-10.0, 5.0])
    obs = th.zeros((1, 3))
    # log sigma = (-5, 2): at the mean, log p = 5 - 2 - log 2 pi
    assert float(_log_prob(policy, obs, th.zeros((1, 2)))[0]) == pytest.approx(3.0 - LOG_2PI, abs=1e-5)
    distribution = actions.action_distribution(policy, np.zeros((1, 3), dtype=np.float32))
    np.testing.assert_allclose(distribution.std, [[math.exp(-5.0), math.exp(2.0)]], rtol=1e-6)


def test_gaussian_greedy_is_the_mean_and_a_sample_draws_normals_from_each_rows_stream():
    policy = gaussian_policy([0.3, -1.0], [math.log(0.5), math.log(2.0)])
    distribution = actions.action_distribution(policy, np.zeros((2, 3), dtype=np.float32))
    assert distribution.kind == "gaussian" and len(distribution) == 2
    np.testing.assert_allclose(actions.greedy_actions(distribution), [[0.3, -1.0]] * 2, rtol=1e-6)
    sampled = actions.sampled_actions(distribution, [np.random.default_rng(7), np.random.default_rng(8)])
    for row, seed in enumerate((7, 8)):
        z = np.random.default_rng(seed).standard_normal(2)
        np.testing.assert_allclose(sampled[row], [0.3 + 0.5 * z[0], -1.0 + 2.0 * z[1]], rtol=1e-6)
    # acting clips to the Box and casts to its dtype; scoring never does (above)
    box = gym.spaces.Box(-2, 2, (2,))
    step = actions.env_action(np.array([3.5, -0.25]), box)
    assert step.dtype == np.float32 and step.tolist() == [2.0, -0.25]


def test_the_categorical_inverse_cdf_by_hand():
    distribution = actions.ActionDistribution("categorical", logits=(np.log([[0.2, 0.5, 0.3]] * 4),))
    streams = [_Fixed(u) for u in (0.1, 0.25, 0.65, 0.95)]
    assert actions.sampled_actions(distribution, streams).tolist() == [0, 1, 1, 2]
    assert actions.greedy_actions(distribution).tolist() == [1, 1, 1, 1]
    assert actions.env_action(np.int64(2), gym.spaces.Discrete(3)) == 2


def test_multi_categorical_and_bernoulli_by_hand():
    multi = actions.ActionDistribution("multi-categorical", logits=(np.log([[0.7, 0.3]]), np.log([[0.1, 0.1, 0.8]])))
    assert actions.greedy_actions(multi).tolist() == [[0, 2]]
    # uniforms (0.75, 0.15): dimension 0 passes 0.7 -> 1; dimension 1 passes 0.1 -> 1
    assert actions.sampled_actions(multi, [_Fixed([0.75, 0.15])]).tolist() == [[1, 1]]
    bernoulli = actions.ActionDistribution("bernoulli", logits=(np.array([[2.0, -1.0, 0.0]]),))
    assert actions.greedy_actions(bernoulli).tolist() == [[1, 0, 0]]
    # p = (0.881, 0.269, 0.5): u < p
    assert actions.sampled_actions(bernoulli, [_Fixed([0.85, 0.3, 0.49])]).tolist() == [[1, 0, 1]]
    assert actions.env_action(np.array([1, 0, 1]), gym.spaces.MultiBinary(3)).dtype == np.int8


def test_sb3_distributions_of_every_action_space_reach_the_seam():
    obs_space = gym.spaces.Box(-1, 1, (4,))
    for space, kind in ((gym.spaces.Discrete(3), "categorical"), (gym.spaces.Box(-1, 1, (2,)), "gaussian"),
                        (gym.spaces.MultiDiscrete([2, 3]), "multi-categorical"),
                        (gym.spaces.MultiBinary(3), "bernoulli")):
        if isinstance(space, gym.spaces.MultiBinary):  # SB3's own class: the factory refuses MultiBinary for BC
            from stable_baselines3.common.policies import ActorCriticPolicy

            with seeded_globals(0):
                policy = ActorCriticPolicy(obs_space, space, lambda _: 0.0)
        else:
            policy = make_policy("auto", obs_space, space, 0)
        distribution = actions.action_distribution(policy, np.zeros((5, 4), dtype=np.float32))
        assert distribution.kind == kind and len(distribution) == 5
        chosen = actions.sampled_actions(distribution, [np.random.default_rng(i) for i in range(5)])
        for row in chosen:
            assert space.contains(actions.env_action(row, space)) or isinstance(space, gym.spaces.Box)
        # the seam's log-probability is the one torch's distribution gives the same actions
        tensor = th.as_tensor(np.asarray([actions.env_action(row, space) for row in chosen]))
        scored = _log_prob(policy, th.zeros((5, 4)), tensor)
        direct = policy.get_distribution(th.zeros((5, 4))).log_prob(tensor.float() if kind == "bernoulli" else tensor)
        assert scored.shape == (5,)
        np.testing.assert_allclose(scored.detach().numpy(), direct.detach().numpy().reshape(-1), rtol=1e-6)


def test_the_continuous_learner_difficulty_by_hand():
    """log Psi^L of two demonstrations under a fixed Gaussian: the sum of -log p of their steps."""
    policy = gaussian_policy([0.0, 0.0], [0.0, math.log(2.0)])  # sigma (1, 2)
    acts = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, -2.0]], dtype=np.float32)
    obs = np.zeros((3, 3), dtype=np.float32)

    def minus_log_p(a0, a1):
        return 0.5 * (a0**2 + (a1 / 2.0) ** 2) + math.log(2.0) + LOG_2PI

    expected = [minus_log_p(1, 0) + minus_log_p(0, 2), minus_log_p(-1, -2)]  # [5.0646..., 2.8254...]
    got = policy_difficulty(policy, obs, acts, DemonstrationIndex(np.array([2, 1])))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert expected[1] == pytest.approx(1.0 + math.log(2.0) + LOG_2PI)


def test_the_categorical_path_gives_the_numbers_it_gave_before_the_seam():
    """Numbers of ``experiments/dataset_bc/rollouts.py`` and ``difficulty.demonstration_log_likelihoods`` at
    commit cb46525 (the same policy, seeds and generator), exactly."""
    from curteach_teaching.rollouts import evaluate_policy

    def make():
        return gym.make("CartPole-v1", max_episode_steps=60)

    env = make()
    policy = make_policy("mlp", env.observation_space, env.action_space, 3)
    sampled = evaluate_policy(policy, make, range(4), deterministic=False, generator=5)
    assert sampled.returns.tolist() == [16.0, 44.0, 13.0, 42.0]
    assert evaluate_policy(policy, make, range(4)).returns.tolist() == [60.0] * 4
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(7, 4)).astype(np.float32)
    acts = rng.integers(0, 2, 7)
    scores = policy_difficulty(policy, obs, acts, DemonstrationIndex(np.array([3, 4])))
    assert scores.tolist() == [2.0782987475395203, 2.770791471004486]


def test_actions_outside_a_box_are_counted_per_episode():
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    counts = actions.outside_bounds(box, [np.array([[0.0, 1.0], [1.5, -2.0], [0.0, -1.01]]), np.zeros((4, 2))])
    assert counts.tolist() == [2, 0]
    assert actions.outside_bounds(gym.spaces.Discrete(2), [np.array([5])]).tolist() == [0]


def test_what_the_seam_does_not_handle_is_one_line():
    with pytest.raises(ValueError, match="one stream per row"):
        actions.sampled_actions(actions.ActionDistribution("categorical", logits=(np.zeros((2, 3)),)), [])
    with pytest.raises(ValueError, match="kind must be one of"):
        actions.ActionDistribution("beta")
    with pytest.raises(ValueError, match="Tuple space"):
        actions.env_action(np.zeros(1), gym.spaces.Tuple((gym.spaces.Discrete(2),)))
    with pytest.raises(ValueError, match="SB3 policy or a logits callable"):
        actions.action_distribution(42, np.zeros((1, 3)))


class _Fixed:
    """A stand-in stream that returns given uniforms."""

    def __init__(self, values):
        self.values = values

    def random(self, size=None):
        return self.values if size is None else np.asarray(self.values, dtype=np.float64)

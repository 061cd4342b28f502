"""The samples of ``action-variance`` and ``action-likelihood`` (datasets.scores.policy_samples): drawn from the seam's
distribution once per chunk, they are bit for bit the samples of ``M`` calls of the learner's ``act``; a learner that
does not act through the seam is asked ``M`` times; and a fit's second reading draws no sample again."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

pytest.importorskip("imitation")

from curteach_teaching.datasets.scores import fitted_policy, policy_samples  # noqa: E402
from curteach_teaching.datasets.scores.policy_samples import (  # noqa: E402
    row_streams,
    sampled_actions,
    sampled_by_acting,
    sampled_from_seam,
)
from curteach_teaching.learners.dataset_learner import LearnerFactory  # noqa: E402

OBS = spaces.Box(-5, 5, (3,), np.float32)


def test_one_array_of_draws_is_the_draws_one_at_a_time():
    # Why one call per row may replace M: a generator fills an array by consecutive draws.
    one, many = np.random.default_rng(3), np.random.default_rng(3)
    np.testing.assert_array_equal(np.stack([one.standard_normal(4) for _ in range(5)]), many.standard_normal((5, 4)))
    np.testing.assert_array_equal(np.array([one.random() for _ in range(5)]), many.random(5))
    np.testing.assert_array_equal(np.stack([one.random(2) for _ in range(5)]), many.random((5, 2)))


def test_a_rows_stream_is_its_own_seed_sequence():
    streams = row_streams(7, 3)
    expected = np.random.default_rng(np.random.SeedSequence([7, policy_samples.SAMPLE_TAG, 2])).random(4)
    np.testing.assert_array_equal(streams[2].random(4), expected)


@pytest.mark.parametrize("action_space", [spaces.Box(-1, 1, (2,), np.float32), spaces.Discrete(4)],
                         ids=["gaussian", "categorical"])
def test_the_seam_path_equals_acting_sample_by_sample(action_space):
    learner = LearnerFactory("mlp", OBS, action_space)(3)
    obs = np.random.default_rng(0).uniform(-2, 2, size=(11, 3)).astype(np.float32)
    # a chunk below the rows: several forward passes, each row's stream shared across them
    by_acting = sampled_by_acting(learner, obs, 11, 5, seed=4, chunk=4)
    from_seam = sampled_from_seam(learner, obs, 11, 5, seed=4, chunk=4)
    assert from_seam.shape == by_acting.shape == ((5, 11, 2) if action_space.shape else (5, 11))
    assert from_seam.dtype == by_acting.dtype
    np.testing.assert_array_equal(from_seam, by_acting)
    # and laid out as the stacked draws were: sums over the samples' axes (the likelihood's kernel density) follow the
    # layout, and another would move them by an ulp
    assert from_seam.flags.c_contiguous
    assert len(np.unique(by_acting, axis=0)) > 1  # the samples differ: it is not the greedy action five times
    np.testing.assert_array_equal(sampled_actions(learner, obs, 11, 5, seed=4, chunk=4), by_acting)


class Counting:
    """A learner outside the seam whose ``act`` says how often it was called: its action is the call's number."""

    action_space = spaces.Box(-10, 10, (1,), np.float32)

    def __init__(self):
        self.calls = 0

    def act(self, obs, streams=None):
        self.calls += 1
        return np.full((len(obs), 1), float(self.calls))

    def train_step(self, obs, acts, weights):
        return 0.0

    def log_likelihood(self, obs, acts):
        return np.zeros(len(obs))

    def diverged(self):
        return False


def test_another_learner_is_asked_once_per_sample_and_chunk():
    counting = Counting()
    drawn = sampled_actions(counting, np.zeros((5, 3), np.float32), 5, 3, seed=0, chunk=2)
    assert counting.calls == 3 * 3  # 3 samples x 3 chunks, sample m of every row before sample m + 1
    np.testing.assert_array_equal(drawn[:, :, 0], [[1, 1, 2, 2, 3], [4, 4, 5, 5, 6], [7, 7, 8, 8, 9]])


def test_a_second_reading_of_the_fit_draws_no_sample_again():
    import types

    from imitation.data.types import Trajectory

    from curteach_teaching.datasets.scores.registry import trained_score

    built = []

    def factory(seed, *, rng=None, batch_size=64, learning_rate=1e-3):
        built.append(Counting())
        return built[-1]

    factory.action_space = Counting.action_space
    obs = np.arange(8, dtype=np.float32).reshape(4, 2)
    data = types.SimpleNamespace(trajectories=(Trajectory(obs=np.vstack([obs, obs[-1:]]), acts=np.ones((4, 1),
                                 np.float32), infos=None, terminal=True),))
    options = {"policy_steps": 1, "action_samples": 3, "batch_size": 2}
    fitted_policy._TRAINED.clear()
    try:
        trained_score("action-variance", options).fit(data, factory)
        trained_score("action-likelihood", options).fit(data, factory)
        assert len(built) == 1 and built[0].calls == 3  # one policy, its 3 samples drawn once for both scores
        trained_score("action-likelihood", {**options, "action_samples": 4}).fit(data, factory)
        assert len(built) == 1 and built[0].calls == 3 + 4  # another M: drawn again from the same policy
    finally:
        fitted_policy._TRAINED.clear()

"""The vectorised evaluator on BabyAI levels and on a plain Gymnasium environment (the BabyAI bot datasets are a
dataset source: tests/datasets/test_babyai_source.py)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("minigrid")

from curteach_teaching.datasets.sources.babyai_bot import make_policy_env  # noqa: E402
from curteach_teaching.rollouts import evaluate_policy, evaluate_policy_serial  # noqa: E402


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Batches of a few 7x7 views: more threads only wait on each other (and on other tests' processes)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_vectorised_evaluator_equals_the_plain_loop():
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

    policy = BabyAIFiLMPolicy.for_babyai(seed=1)
    seeds = [0, 1, 2, 3]
    for deterministic in (True, False):
        batched = evaluate_policy(policy, lambda: make_policy_env("BabyAI-GoToRedBallGrey-v0"), seeds,
                                  deterministic=deterministic, generator=5, max_envs=3)
        serial = evaluate_policy_serial(policy, lambda: make_policy_env("BabyAI-GoToRedBallGrey-v0"), seeds,
                                        deterministic=deterministic, generator=5)
        for field in ("seeds", "returns", "successes", "lengths"):
            assert np.array_equal(getattr(batched, field), getattr(serial, field)), (deterministic, field)


def test_the_evaluator_is_generic_and_counts_a_positive_terminal_reward_as_success():
    def logits(observations):  # always "right" (2) on FrozenLake: a deterministic walk to the right wall
        return np.tile([0.0, 0.0, 1.0, 0.0], (len(observations), 1))

    def make():
        return gym.make("FrozenLake-v1", is_slippery=False, map_name="4x4")

    greedy = evaluate_policy(logits, make, [0, 1])
    assert greedy.lengths.tolist() == [100, 100] and not greedy.successes.any()  # TimeLimit truncates
    sampled = evaluate_policy(logits, make, range(6), deterministic=False, generator=0)
    again = evaluate_policy_serial(logits, make, range(6), deterministic=False, generator=0)
    assert np.array_equal(sampled.returns, again.returns) and np.array_equal(sampled.successes, sampled.returns > 0)

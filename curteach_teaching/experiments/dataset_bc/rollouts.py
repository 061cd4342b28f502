"""Evaluate a policy with a discrete action space on many seeded episodes at once (any Gymnasium env).

:func:`evaluate_policy` keeps up to ``max_envs`` environments live (default: one per episode), and at each step runs
the policy once on the batch of live observations, then steps each live env; an env whose episode ends starts the
next waiting seed. :func:`evaluate_policy_serial` is the same evaluation one env and one observation at a time; both
give the same numbers (``tests/experiments/test_babyai_data.py`` checks it).

Actions. Greedy: the argmax of the action logits (the first on ties). Sampled: every episode owns a stream of
uniforms, seeded from ``generator`` before the first step (episode ``i`` gets the ``i``-th of ``len(seeds)`` seeds
drawn from it), and takes the action whose cumulative probability first exceeds its next uniform. An episode's
actions therefore depend on its own observations and stream only, not on which other episodes share its batch.

Success of an episode: ``info["success"]`` on its last step when the env reports it; otherwise a positive reward on
a terminating step (BabyAI and Minigrid give a reward only when the mission is accomplished).

The policy is an SB3 ``BasePolicy`` (its ``obs_to_tensor`` and ``get_distribution``; a categorical distribution), or
any callable ``logits(observations) -> (B, A)`` taking a batch of observations as NumPy arrays (a dict of arrays for a
``Dict`` space).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th

__all__ = ["RolloutResults", "evaluate_policy", "evaluate_policy_serial", "policy_logits"]


@dataclass(frozen=True)
class RolloutResults:
    """Per-episode outcomes, in the order of the seeds given.

    Attributes:
        seeds: ``(E,)`` int64 reset seeds.
        returns: ``(E,)`` float64 undiscounted returns.
        successes: ``(E,)`` bool (see the module docstring).
        lengths: ``(E,)`` int64 steps taken.
    """

    seeds: np.ndarray
    returns: np.ndarray
    successes: np.ndarray
    lengths: np.ndarray

    @property
    def success_rate(self) -> float:
        """The fraction of successful episodes."""
        return float(self.successes.mean()) if self.successes.size else float("nan")

    @property
    def mean_return(self) -> float:
        """The mean return."""
        return float(self.returns.mean()) if self.returns.size else float("nan")


def policy_logits(policy: Any) -> Callable[[Any], np.ndarray]:
    """``observations -> (B, A)`` float64 logits of ``policy`` (an SB3 policy, or such a callable, returned as is).

    For an SB3 policy the forward pass runs in evaluation mode under ``torch.no_grad``.
    """
    from stable_baselines3.common.policies import BasePolicy

    if not isinstance(policy, BasePolicy):
        if not callable(policy):
            raise ValueError(f"policy must be an SB3 policy or a logits callable; got {type(policy).__name__}")
        return policy

    def logits(observations: Any) -> np.ndarray:
        tensors, _ = policy.obs_to_tensor(observations)
        was_training = policy.training
        policy.set_training_mode(False)
        try:
            with th.no_grad():
                distribution = policy.get_distribution(tensors)
        finally:
            policy.set_training_mode(was_training)
        inner = getattr(distribution, "distribution", None)
        if not isinstance(inner, th.distributions.Categorical):
            raise ValueError(f"the evaluator needs a categorical policy; got {type(distribution).__name__}")
        return inner.logits.double().cpu().numpy()

    return logits


def _choose(logits: np.ndarray, uniforms: np.ndarray | None) -> np.ndarray:
    """``(B, A)`` logits -> ``(B,)`` actions: argmax, or the inverse CDF at ``uniforms (B,)``."""
    if uniforms is None:
        return logits.argmax(axis=1)
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    cumulative = np.cumsum(shifted / shifted.sum(axis=1, keepdims=True), axis=1)
    actions = (cumulative <= uniforms[:, None]).sum(axis=1)
    return np.minimum(actions, logits.shape[1] - 1)


def _stack(observations: list[Any]) -> Any:
    if isinstance(observations[0], dict):
        return {key: np.stack([o[key] for o in observations]) for key in observations[0]}
    return np.stack(observations)


def _episode_streams(n: int, deterministic: bool, generator: int | th.Generator | None) -> list | None:
    """One NumPy generator per episode, seeded from ``generator``; ``None`` for greedy actions."""
    if deterministic:
        return None
    from curteach_teaching.learners.networks import make_generator

    seeds = th.randint(0, 2**62, (n,), generator=make_generator(generator)).tolist()
    return [np.random.default_rng(seed) for seed in seeds]


def _check_seeds(seeds: Sequence[int]) -> np.ndarray:
    array = np.asarray(list(seeds))
    if array.ndim != 1 or (array.size and (not np.issubdtype(array.dtype, np.integer) or array.min() < 0)):
        raise ValueError(f"seeds must be non-negative integers; got {list(seeds)[:5]}...")
    return array.astype(np.int64)


def _success(info: dict, terminated: bool, reward: float) -> bool:
    if "success" in info:
        return bool(info["success"])
    return bool(terminated and reward > 0)


def evaluate_policy(
    policy: Any,
    make_env: Callable[[], gym.Env],
    seeds: Sequence[int],
    *,
    deterministic: bool = True,
    generator: int | th.Generator | None = None,
    max_envs: int | None = None,
) -> RolloutResults:
    """Roll out one episode per seed, batching the policy's forward pass over the live episodes.

    Args:
        policy: an SB3 policy or a ``logits`` callable (see the module docstring).
        make_env: builds one environment (called ``min(len(seeds), max_envs)`` times); its observations must be
            what the policy takes, and its episodes must end (terminate or truncate).
        seeds: reset seeds, one episode each.
        deterministic: greedy actions; ``False``: sampled from each episode's stream.
        generator: seed or CPU ``torch.Generator`` of the episodes' streams (used only when sampling).
        max_envs: environments live at once (default: one per seed).

    Returns:
        :class:`RolloutResults` in the order of ``seeds``.
    """
    seeds = _check_seeds(seeds)
    n = len(seeds)
    width = n if max_envs is None else int(max_envs)
    if width < 1:
        raise ValueError(f"max_envs must be >= 1; got {max_envs!r}")
    logits_of = policy_logits(policy)
    streams = _episode_streams(n, deterministic, generator)
    returns, lengths = np.zeros(n), np.zeros(n, dtype=np.int64)
    successes = np.zeros(n, dtype=bool)
    envs = [make_env() for _ in range(min(width, n))]
    episode_of: list[int | None] = [None] * len(envs)
    observation_of: list[Any] = [None] * len(envs)
    waiting = iter(range(n))

    def start(slot: int) -> None:
        episode = next(waiting, None)
        episode_of[slot] = episode
        if episode is not None:
            observation_of[slot], _ = envs[slot].reset(seed=int(seeds[episode]))

    try:
        for slot in range(len(envs)):
            start(slot)
        while True:
            live = [slot for slot, episode in enumerate(episode_of) if episode is not None]
            if not live:
                break
            logits = logits_of(_stack([observation_of[slot] for slot in live]))
            uniforms = None if streams is None else np.array([streams[episode_of[s]].random() for s in live])
            for slot, action in zip(live, _choose(np.asarray(logits, dtype=np.float64), uniforms)):
                episode = episode_of[slot]
                observation, reward, terminated, truncated, info = envs[slot].step(int(action))
                returns[episode] += float(reward)
                lengths[episode] += 1
                observation_of[slot] = observation
                if terminated or truncated:
                    successes[episode] = _success(info, terminated, float(reward))
                    start(slot)
    finally:
        for env in envs:
            env.close()
    return RolloutResults(seeds=seeds, returns=returns, successes=successes, lengths=lengths)


def evaluate_policy_serial(
    policy: Any,
    make_env: Callable[[], gym.Env],
    seeds: Sequence[int],
    *,
    deterministic: bool = True,
    generator: int | th.Generator | None = None,
) -> RolloutResults:
    """:func:`evaluate_policy` as a plain loop: one env, one episode after another, one observation per forward
    pass (the reference the vectorised evaluator is tested against)."""
    seeds = _check_seeds(seeds)
    logits_of = policy_logits(policy)
    streams = _episode_streams(len(seeds), deterministic, generator)
    returns, lengths = np.zeros(len(seeds)), np.zeros(len(seeds), dtype=np.int64)
    successes = np.zeros(len(seeds), dtype=bool)
    env = make_env()
    try:
        for episode, seed in enumerate(seeds):
            observation, _ = env.reset(seed=int(seed))
            while True:
                uniforms = None if streams is None else np.array([streams[episode].random()])
                action = _choose(np.asarray(logits_of(_stack([observation])), dtype=np.float64), uniforms)[0]
                observation, reward, terminated, truncated, info = env.step(int(action))
                returns[episode] += float(reward)
                lengths[episode] += 1
                if terminated or truncated:
                    successes[episode] = _success(info, terminated, float(reward))
                    break
    finally:
        env.close()
    return RolloutResults(seeds=seeds, returns=returns, successes=successes, lengths=lengths)

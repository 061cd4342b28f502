"""Evaluate a policy on many seeded episodes of any Gymnasium environment at once: return, success, length.

:func:`evaluate_policy` keeps up to ``max_envs`` environments live (default: one per episode), and at each step runs
the policy once on the batch of live observations, then steps each live env; an env whose episode ends starts the
next waiting seed. :func:`evaluate_policy_serial` is the same evaluation one env and one observation at a time; both
give the same numbers (``tests/bases/test_rollouts.py`` checks it).

Actions come from the action seam (:mod:`curteach_teaching.learners.actions`), so every action space SB3's
distributions cover works: ``Discrete``, ``Box`` (the env receives the action clipped to its bounds), ``MultiDiscrete``
and ``MultiBinary``. Greedy: the distribution's most likely action (the argmax of the logits, the first on ties; the
Gaussian's mean). Sampled: every episode owns a NumPy stream, seeded from ``generator`` before the first step (episode
``i`` gets the ``i``-th of ``len(seeds)`` seeds drawn from it, :func:`~curteach_teaching.learners.seeding.
episode_streams`), and each of its steps draws from that stream only (one uniform for a categorical policy, standard
normals for a Gaussian). An episode's actions therefore depend on its own observations and stream, not on which other
episodes share its batch.

Success of an episode: it succeeds if the env reports success at any of its steps (``info["success"]`` or
``info["is_success"]`` true; Meta-World, robosuite and Gymnasium-Robotics report it at every step). Where the env
never reports either key, an episode succeeds when a step that terminates it has a positive reward (BabyAI and
Minigrid reward only an accomplished mission, on the terminating step; a one-step episode counts like any other).

The policy is a dataset learner (:class:`~curteach_teaching.learners.dataset_learner.DatasetLearner`, which acts
through its own ``act(observations, streams)``), an SB3 ``BasePolicy`` (its ``obs_to_tensor`` and
``get_distribution``), or a callable ``logits(observations) -> (B, A)`` of a categorical policy taking a batch of
NumPy observations (a dict of arrays for a ``Dict`` space). A dataset learner that declares a ``window`` of ``W > 1``
steps (a recurrent policy) acts on windows ``(B, W, *obs_shape)``: each environment keeps the window of its
episode's last ``W`` observations (:class:`~curteach_teaching.learners.windows.WindowRows`), filled with the first
observation when its episode starts and shifted by one at each step. A dataset learner that acts from a state it
carries (``initial_state`` and ``act_step``, :mod:`~curteach_teaching.learners.carried_state`) is handed each live
environment's current observation with that environment's state, one state row per environment, reset when its
episode starts (:class:`~curteach_teaching.learners.carried_state.StateRows`), whatever else shares the batch.

Recording (``record=True``, off by default, when the numbers above are all a caller wants): the results also hold,
per episode, the observations the policy acted on, ``(T_e, *obs_shape)`` (a dict of such arrays for a ``Dict``
space; the newest observation of a recurrent policy's window, the row the window adds at that step) and the actions
the policy chose, ``(T_e, *act_shape)`` (before the action seam's clip to a ``Box``'s bounds, so that a REINFORCE
gradient scores the action the policy drew; a ``Discrete`` action is an int64 scalar per step). Recording copies
what it keeps and changes neither the actions nor the outcomes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["RolloutResults", "evaluate_policy", "evaluate_policy_serial"]

#: the info keys an env reports success under (Gymnasium-Robotics and SB3 use ``is_success``, Meta-World ``success``)
SUCCESS_KEYS = ("success", "is_success")


@dataclass(frozen=True)
class RolloutResults:
    """Per-episode outcomes, in the order of the seeds given.

    Attributes:
        seeds: ``(E,)`` int64 reset seeds.
        returns: ``(E,)`` float64 undiscounted returns.
        successes: ``(E,)`` bool (see the module docstring).
        lengths: ``(E,)`` int64 steps taken.
        reported: ``(E,)`` bool, the env reported ``success`` or ``is_success`` in some step's info of the episode
            (else its success was read off the reward).
        observations: with ``record``, ``E`` arrays ``(T_e, *obs_shape)`` (dicts of them for a ``Dict`` space), the
            observation each action was chosen on; else ``None``.
        actions: with ``record``, ``E`` arrays ``(T_e, *act_shape)``, the actions the policy chose, before the
            action seam's clip to a ``Box``'s bounds (what its log-likelihood scores); else ``None``.
    """

    seeds: np.ndarray
    returns: np.ndarray
    successes: np.ndarray
    lengths: np.ndarray
    reported: np.ndarray
    observations: tuple | None = None
    actions: tuple | None = None

    @property
    def success_rate(self) -> float:
        """The fraction of successful episodes."""
        return float(self.successes.mean()) if self.successes.size else float("nan")

    @property
    def mean_return(self) -> float:
        """The mean return."""
        return float(self.returns.mean()) if self.returns.size else float("nan")


def _stack(observations: list[Any]) -> Any:
    if isinstance(observations[0], dict):
        return {key: np.stack([o[key] for o in observations]) for key in observations[0]}
    return np.stack(observations)


def _check_seeds(seeds: Sequence[int]) -> np.ndarray:
    array = np.asarray(list(seeds))
    if array.ndim != 1 or (array.size and (not np.issubdtype(array.dtype, np.integer) or array.min() < 0)):
        raise ValueError(f"seeds must be non-negative integers; got {list(seeds)[:5]}...")
    return array.astype(np.int64)


def _copied(observation: Any) -> Any:
    """A copy of one observation (an env may reuse its arrays between steps)."""
    if isinstance(observation, dict):
        return {key: np.array(value) for key, value in observation.items()}
    return np.array(observation)


class _Outcomes:
    """The running tallies of ``n`` episodes (returns, lengths, success by info, success by reward), and with
    ``record`` each episode's observations and actions."""

    def __init__(self, seeds: np.ndarray, record: bool = False):
        n = len(seeds)
        self.seeds = seeds
        self.returns, self.lengths = np.zeros(n), np.zeros(n, dtype=np.int64)
        self.by_info = np.zeros(n, dtype=bool)
        self.reported = np.zeros(n, dtype=bool)
        self.by_reward = np.zeros(n, dtype=bool)
        self.seen: list[list] | None = [[] for _ in range(n)] if record else None
        self.taken: list[list] | None = [[] for _ in range(n)] if record else None

    def keep(self, episode: int, observation: Any, action: Any) -> None:
        """Record that ``episode`` took ``action`` on ``observation`` (a no-op unless recording)."""
        if self.seen is not None:
            self.seen[episode].append(_copied(observation))
            self.taken[episode].append(np.array(action))

    def step(self, episode: int, reward: float, terminated: bool, info: dict) -> None:
        self.returns[episode] += float(reward)
        self.lengths[episode] += 1
        for key in SUCCESS_KEYS:
            if key in info:
                self.reported[episode] = True
                self.by_info[episode] |= bool(np.any(info[key]))
        if terminated and float(reward) > 0:
            self.by_reward[episode] = True

    def results(self) -> RolloutResults:
        successes = np.where(self.reported, self.by_info, self.by_reward)
        recorded = {}
        if self.seen is not None:
            recorded = {"observations": tuple(_stack(steps) for steps in self.seen),
                        "actions": tuple(np.stack(steps) for steps in self.taken)}
        return RolloutResults(seeds=self.seeds, returns=self.returns, successes=successes, lengths=self.lengths,
                              reported=self.reported.copy(), **recorded)


def _window_rows(policy: Any, slots: int) -> Any:
    """The windows of ``slots`` environments for a dataset learner reading ``W > 1`` steps, else ``None`` (a policy
    acting on one observation per row, or from a state it carries, is handed the stacked observations as always)."""
    from curteach_teaching.learners.carried_state import carries_state
    from curteach_teaching.learners.dataset_learner import DatasetLearner
    from curteach_teaching.learners.windows import WindowRows, learner_window

    if not isinstance(policy, DatasetLearner) or carries_state(policy):
        return None
    window = learner_window(policy)
    return WindowRows(slots, window) if window > 1 else None


def _state_rows(policy: Any, slots: int) -> Any:
    """The carried states of ``slots`` environments for a dataset learner that acts from one
    (:class:`~curteach_teaching.learners.carried_state.StateRows`), else ``None``."""
    from curteach_teaching.learners.carried_state import StateRows, carries_state
    from curteach_teaching.learners.dataset_learner import DatasetLearner

    return StateRows(policy, slots) if isinstance(policy, DatasetLearner) and carries_state(policy) else None


def _actor(policy: Any, action_space: gym.spaces.Space, n: int, deterministic: bool,
           generator: Any, states: Any = None) -> Callable[[Any, list[int], list[int]], tuple[list, Any]]:
    """``(stacked observations, their episodes, their slots) -> (env actions, the rows chosen)``, greedy or from
    each episode's stream: the learner's own :meth:`act` (its ``act_step`` from the slots' ``states`` where it carries
    one), or the action seam's for a policy; the env's are the chosen rows as the env takes them (a ``Box``'s
    clipped to its bounds)."""
    from curteach_teaching.learners import actions
    from curteach_teaching.learners.dataset_learner import DatasetLearner
    from curteach_teaching.learners.seeding import episode_streams

    streams = None if deterministic else episode_streams(n, generator)

    def chosen_by_policy(observations: Any, mine: list | None) -> Any:
        distribution = actions.action_distribution(policy, observations)
        return actions.greedy_actions(distribution) if mine is None else actions.sampled_actions(distribution, mine)

    choose = policy.act if isinstance(policy, DatasetLearner) else chosen_by_policy

    def act(observations: Any, episodes: list[int], slots: list[int]) -> list:
        mine = None if streams is None else [streams[e] for e in episodes]
        chosen = choose(observations, mine) if states is None else states.act(observations, slots, mine)
        return [actions.env_action(action, action_space) for action in chosen], chosen

    return act


def evaluate_policy(
    policy: Any,
    make_env: Callable[[], gym.Env],
    seeds: Sequence[int],
    *,
    deterministic: bool = True,
    generator: Any = None,
    max_envs: int | None = None,
    record: bool = False,
) -> RolloutResults:
    """Roll out one episode per seed, batching the policy's forward pass over the live episodes.

    Args:
        policy: a dataset learner, an SB3 policy or a ``logits`` callable (see the module docstring).
        make_env: builds one environment (called ``min(len(seeds), max_envs)`` times); its observations must be
            what the policy takes, and its episodes must end (terminate or truncate).
        seeds: ``(E,)`` reset seeds, one episode each.
        deterministic: greedy actions; ``False``: sampled from each episode's stream.
        generator: seed (int) or CPU ``torch.Generator`` of the episodes' streams (used only when sampling).
        max_envs: environments live at once (default: one per seed).
        record: also keep each episode's observations and actions (:attr:`RolloutResults.observations`,
            :attr:`RolloutResults.actions`).

    Returns:
        :class:`RolloutResults` in the order of ``seeds``.

    Raises:
        ValueError: bad seeds or ``max_envs``; a policy or action space the action seam does not handle.
    """
    seeds = _check_seeds(seeds)
    n = len(seeds)
    width = n if max_envs is None else int(max_envs)
    if width < 1:
        raise ValueError(f"max_envs must be >= 1; got {max_envs!r}")
    outcomes = _Outcomes(seeds, record)
    envs = [make_env() for _ in range(min(width, n))]
    episode_of: list[int | None] = [None] * len(envs)
    observation_of: list[Any] = [None] * len(envs)
    waiting = iter(range(n))
    windows = _window_rows(policy, len(envs))
    states = _state_rows(policy, len(envs))

    def start(slot: int) -> None:
        episode = next(waiting, None)
        episode_of[slot] = episode
        if episode is not None:
            observation_of[slot], _ = envs[slot].reset(seed=int(seeds[episode]))
            if windows is not None:
                windows.start(slot, observation_of[slot])
            if states is not None:
                states.start(slot)

    try:
        act = _actor(policy, envs[0].action_space, n, deterministic, generator, states) if envs else None
        for slot in range(len(envs)):
            start(slot)
        while True:
            live = [slot for slot, episode in enumerate(episode_of) if episode is not None]
            if not live:
                break
            batch = _stack([observation_of[slot] for slot in live]) if windows is None else windows.stack(live)
            chosen, rows = act(batch, [episode_of[slot] for slot in live], live)
            for slot, action, row in zip(live, chosen, rows):
                outcomes.keep(episode_of[slot], observation_of[slot], row)
                observation, reward, terminated, truncated, info = envs[slot].step(action)
                outcomes.step(episode_of[slot], reward, terminated, info)
                observation_of[slot] = observation
                if terminated or truncated:
                    start(slot)
                elif windows is not None:
                    windows.push(slot, observation)
    finally:
        for env in envs:
            env.close()
    return outcomes.results()


def evaluate_policy_serial(
    policy: Any,
    make_env: Callable[[], gym.Env],
    seeds: Sequence[int],
    *,
    deterministic: bool = True,
    generator: Any = None,
    record: bool = False,
) -> RolloutResults:
    """:func:`evaluate_policy` as a plain loop: one env, one episode after another, one observation per forward
    pass (the reference the vectorised evaluator is tested against; ``record`` as there)."""
    seeds = _check_seeds(seeds)
    outcomes = _Outcomes(seeds, record)
    env = make_env()
    try:
        states = _state_rows(policy, 1)
        act = _actor(policy, env.action_space, len(seeds), deterministic, generator, states)
        windows = _window_rows(policy, 1)
        for episode, seed in enumerate(seeds):
            observation, _ = env.reset(seed=int(seed))
            if windows is not None:
                windows.start(0, observation)
            if states is not None:
                states.start(0)
            while True:
                chosen, rows = act(_stack([observation]) if windows is None else windows.stack([0]), [episode], [0])
                action = chosen[0]
                outcomes.keep(episode, observation, rows[0])
                observation, reward, terminated, truncated, info = env.step(action)
                outcomes.step(episode, reward, terminated, info)
                if terminated or truncated:
                    break
                if windows is not None:
                    windows.push(0, observation)
    finally:
        env.close()
    return outcomes.results()

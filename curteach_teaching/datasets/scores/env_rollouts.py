"""Rollouts of a fitted dataset learner in the data's own environments, recorded: what the scores that need an
environment (``demo-score``, ``cupid``) learn from.

:func:`roll_out` runs the learner the way ``dataset-bc``'s evaluator does (the library's
:func:`~curteach_teaching.rollouts.evaluate_policy`, in each group's environment, ``gym.make`` of the data's
``env_specs[group]`` wrapped by the codec's ``wrap_env`` so that the learner observes as it was trained), with
``record=True``, and returns one :class:`RecordedEpisode` per rollout: its group and reset seed, the observations the
learner acted on (the codec's encoding), the actions it chose (before a ``Box``'s clip), the return and the success
(the evaluator's: the env's ``success``/``is_success`` info at any step, else a positive reward on the terminating
step).

Reset seeds (:func:`fresh_seeds`): per group, the integers from :data:`ROLLOUT_SEED_BASE` (``10**9``) upward that are
not the reset seed of any of the group's demonstrations. ``dataset-bc`` evaluates on the first ``eval_episodes``
integers from 0 that are not the data's seeds (``held_out_seeds``), so the two never share a seed while fewer than
``10**9`` evaluation episodes are asked for; a score's rollouts thus never replay a demonstration's start nor the
evaluation's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ROLLOUT_SEED_BASE", "RecordedEpisode", "fresh_seeds", "has_environment", "roll_out"]

#: the first reset seed of a score's rollouts (dataset-bc's evaluation counts up from 0)
ROLLOUT_SEED_BASE = 10**9


@dataclass(frozen=True)
class RecordedEpisode:
    """One rollout of a learner.

    Attributes:
        group: the data's group (dataset) whose environment it ran in; seed: its reset seed.
        observations: ``(T, *obs_shape)`` the codec's observations the learner acted on (a dict of such arrays for a
            ``Dict`` space).
        actions: ``(T, *act_shape)`` the actions the learner chose (the env received them clipped to a ``Box``'s
            bounds).
        episode_return: the undiscounted return; success: the evaluator's success (see the module docstring);
        reported: whether the env reported success in its infos (else it was read off the reward).
    """

    group: str
    seed: int
    observations: Any
    actions: np.ndarray
    episode_return: float
    success: bool
    reported: bool

    @property
    def length(self) -> int:
        """``T``, the steps taken."""
        return len(self.actions)


def has_environment(data: Any) -> bool:
    """Whether every group of the prepared ``data`` can be rolled out: a spec per group and no held-out split
    (``dataset-bc`` splits the demonstrations only where it runs without an environment)."""
    specs = getattr(data, "env_specs", {}) or {}
    return (getattr(data, "split", None) is None and bool(specs) and all(specs.get(g) is not None
                                                                         for g in dict.fromkeys(data.groups)))


def fresh_seeds(data: Any, n: int) -> dict[str, np.ndarray]:
    """``group -> (n,)`` int64: the first ``n`` integers from :data:`ROLLOUT_SEED_BASE` upward that are not the reset
    seed of any of the group's episodes (``None`` seeds ignored), per group of ``data`` in its order."""
    groups = np.asarray(data.groups, dtype=object)
    out = {}
    for group in dict.fromkeys(data.groups):
        taken = {int(s) for s, g in zip(data.seeds, groups, strict=True) if g == group and s is not None}
        seeds, candidate = [], ROLLOUT_SEED_BASE
        while len(seeds) < n:
            if candidate not in taken:
                seeds.append(candidate)
            candidate += 1
        out[group] = np.asarray(seeds, dtype=np.int64)
    return out


def roll_out(data: Any, learner: Any, seeds: Mapping[str, Sequence[int]], *, greedy: bool = False,
             generator: int = 0) -> list[RecordedEpisode]:
    """Roll ``learner`` out once per seed in each group's environment, recorded.

    Args:
        data: the :class:`~curteach_teaching.datasets.prepared.PreparedData` (with its codec: prepared for a
            policy) whose environments to run.
        learner: a dataset learner (or any policy :func:`~curteach_teaching.rollouts.evaluate_policy` takes) of the
            codec's observation space.
        seeds: ``group -> reset seeds`` (:func:`fresh_seeds`); groups absent from it are not rolled out.
        greedy: the most likely actions; ``False``: sampled, group ``i``'s episodes from the streams seeded by
            ``SeedSequence([generator, i])`` (``i``: the group's position in the data).
        generator: the seed of the sampled actions' streams.

    Returns:
        The recorded episodes, group by group in the data's order, each group's in the order of its seeds.

    Raises:
        ValueError: data without an environment (:func:`has_environment`) or codec, an unknown group, or a seed
            that is the reset seed of one of the group's demonstrations.
    """
    from curteach_teaching.rollouts import evaluate_policy

    if data.codec is None or not has_environment(data):
        raise ValueError("rollouts need the data's environments (an env spec for every group, no held-out split) "
                         "and a codec (prepare the data for a policy)")
    order = list(dict.fromkeys(data.groups))
    unknown = sorted(set(seeds) - set(order))
    if unknown:
        raise ValueError(f"no group {', '.join(map(repr, unknown))} in the data; groups: {', '.join(order)}")
    episodes: list[RecordedEpisode] = []
    for index, group in enumerate(order):
        if group not in seeds:
            continue
        wanted = [int(s) for s in seeds[group]]
        demonstrated = {int(s) for s, g in zip(data.seeds, data.groups, strict=True) if g == group and s is not None}
        clash = sorted(demonstrated.intersection(wanted))
        if clash:
            raise ValueError(f"rollout seed {clash[0]} of {group!r} is a demonstration's reset seed; use fresh_seeds")
        stream = int(np.random.SeedSequence([int(generator), index]).generate_state(1)[0])
        result = evaluate_policy(learner, lambda g=group: data.codec.wrap_env(data.make_env(g), g), wanted,
                                 deterministic=greedy, generator=None if greedy else stream, record=True)
        for e, seed in enumerate(wanted):
            episodes.append(RecordedEpisode(group=group, seed=seed, observations=result.observations[e],
                                            actions=result.actions[e], episode_return=float(result.returns[e]),
                                            success=bool(result.successes[e]), reported=bool(result.reported[e])))
    return episodes

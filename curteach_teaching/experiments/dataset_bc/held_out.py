"""Curation without an environment: ``dataset-bc`` scored on held-out demonstrations.

Most robot data (every robomimic file and LeRobot dataset; any pool read with ``--env none``) has no environment to
roll a policy out in. Then a seeded share of the episodes is held out (:func:`held_out_split`): never trained on, never
scored by a teacher (the ensemble's scores too are computed on the training part only), and at every evaluation point
the policy is scored on their demonstrated actions (:func:`held_out_metrics`):

* ``nll``: the per-step negative log-likelihood ``-(1/T) sum_t log pi(a_t | s_t)`` over the ``T`` held-out steps pooled
  (a long episode weighs by its steps), the learner's own per-step log-likelihood
  (:meth:`~curteach_teaching.learners.dataset_learner.DatasetLearner.log_likelihood`; for BC's SB3 policies the
  action seam's: a log-probability for discrete actions, a log-density summed over the action's dimensions for a
  ``Box``, so it can be negative). Lower is better;
* ``mse`` (``Box`` actions): the mean over steps and action dimensions of ``(mu(s_t) - a_t)^2``, ``mu`` the
  learner's greedy action (a Gaussian policy's mean, not clipped). Lower is better;
* ``accuracy`` (discrete actions): the share of steps whose greedy action equals the demonstrated one (in every
  dimension, for the multi-spaces). Higher is better;
* with several groups, each also per group (``nll:<group>``).

A learner that declares a ``window`` of ``W > 1`` steps (a recurrent policy) is scored, and acts greedily, on each
held-out step's window ``(W, *obs_shape)`` within its episode (:mod:`~curteach_teaching.learners.windows`), the
input it trains on.

**The split** is by episode and stratified by group: from each group's ``n_g`` candidate episodes (all of them, or
those whose boolean metadata field ``holdout_field`` is true: a trusted subset such as robomimic's ``better``),
``k_g = floor(fraction * n_g + 1/2)`` are held out, at least 1 and leaving at least one training episode in the group
(a group of one episode, or without a candidate, only trains);
which ones is a permutation per group, in the pool's group order, drawn from one generator seeded by the sweep's seed.
So one split per sweep seed: every cell and every run of a sweep trains and is scored on the same episodes, and the
pairs compare on the same held-out data.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["METRICS", "HeldOutEvaluations", "HeldOutSplit", "held_out_metrics", "held_out_split",
           "higher_is_better", "trusted_episodes"]

#: the metrics of a held-out evaluation (``return``: of rollouts in an environment)
METRICS = ("nll", "mse", "accuracy")
#: the split's stream beside the sweep's seed, so that it is no run's stream (runs draw from ``[seed, i]``)
_SPLIT_STREAM = zlib.crc32(b"dataset-bc held-out split")
#: transitions per forward pass of the greedy actions (as ``step_log_probs`` chunks)
_CHUNK = 8192


def higher_is_better(metric: str) -> bool:
    """The direction of a report's metric: ``return`` and ``accuracy`` higher, ``nll`` and ``mse`` lower (per-group
    names ``nll:<group>`` as their metric)."""
    base = metric.partition(":")[0]
    if base not in ("return", *METRICS):
        raise ValueError(f"metric must be one of {('return', *METRICS)}; got {metric!r}")
    return base in ("return", "accuracy")


@dataclass(frozen=True)
class HeldOutSplit:
    """Which episodes of a pool train and which are held out.

    Attributes:
        train: ``(N_train,)`` int64 pool indices, ascending.
        held_out: ``(N_held,)`` int64 pool indices, ascending; disjoint from ``train``, together all ``N``.
    """

    train: np.ndarray
    held_out: np.ndarray


def trusted_episodes(metadata: Sequence[dict], field: str, infos: Sequence[dict] | None = None) -> np.ndarray:
    """``(N,)`` bool: each episode's boolean metadata ``field`` (a robomimic filter key such as ``better``), or, where
    no episode's metadata has it, the flag ``field`` of the step ``infos`` at each episode's last step (``success``
    recorded per step only; :func:`~curteach_teaching.datasets.scores.registry.last_step_flags`).

    Raises:
        ValueError: an episode without the field, or a value that is not a boolean.
    """
    if infos is not None:
        from curteach_teaching.datasets.scores.registry import last_step_flags

        flags = last_step_flags(metadata, infos, field)
        if flags is not None:
            return flags
    values = []
    for i, meta in enumerate(metadata):
        if field not in meta:
            raise ValueError(f"holdout_field must be a boolean metadata field of every episode; episode {i} of the "
                             f"pool has no {field!r}")
        value = meta[field]
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"holdout_field must be a boolean metadata field; {field!r} of episode {i} is "
                             f"{value!r}")
        values.append(bool(value))
    return np.asarray(values, dtype=bool)


def held_out_split(groups: Sequence[str], fraction: float, seed: int,
                   trusted: np.ndarray | None = None) -> HeldOutSplit:
    """The seeded split by episode, stratified by group (see the module docstring).

    Args:
        groups: ``N`` each episode's group.
        fraction: the share of each group's candidates held out, in ``(0, 1)``.
        seed: the sweep's seed (>= 0).
        trusted: ``(N,)`` bool, the candidates (``None``: every episode).

    Raises:
        ValueError: a fraction outside ``(0, 1)``, no candidate at all, or no group that can give one (each of
            fewer than 2 episodes, or without a candidate).
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise ValueError(f"holdout must be a fraction in (0, 1); got {fraction!r}")
    groups = list(groups)
    candidates = np.ones(len(groups), dtype=bool) if trusted is None else np.asarray(trusted, dtype=bool)
    if candidates.shape != (len(groups),):
        raise ValueError(f"trusted must hold one entry per episode ({len(groups)}); got {candidates.shape}")
    if not candidates.any():
        raise ValueError("no episode can be held out: the held-out field is true for none of them")
    rng = np.random.default_rng([seed, _SPLIT_STREAM])
    labels = np.asarray(groups, dtype=object)
    held = []
    for group in dict.fromkeys(groups):
        members = np.flatnonzero(labels == group)
        mine = members[candidates[members]]
        if members.size < 2 or mine.size == 0:
            # a group of one episode (a language-annotated recording's one-off task) or without trusted episodes
            # trains only: nothing would be left to train on beside a held-out one (its per-group scores are absent)
            continue
        k = min(max(1, int(np.floor(fraction * mine.size + 0.5))), mine.size, members.size - 1)
        held.append(rng.permutation(mine)[:k])
    if not held:
        raise ValueError("too few episodes to hold some out: no group has 2 episodes (one to train on, one to score)"
                         + ("" if trusted is None else " of which the held-out field marks one"))
    held_out = np.sort(np.concatenate(held)).astype(np.int64)
    train = np.setdiff1d(np.arange(len(groups), dtype=np.int64), held_out)
    return HeldOutSplit(train=train, held_out=held_out)


def _steps(obs: Any, index: np.ndarray, windows: np.ndarray | None) -> Any:
    """The observations of the flat steps ``index``: ``(n, ...)``, or their windows ``(n, W, ...)``."""
    from imitation.data import types

    from curteach_teaching.difficulty import index_observations
    from curteach_teaching.learners.windows import windowed

    if windows is None:
        return types.maybe_unwrap_dictobs(index_observations(obs, index))
    return windowed(types.maybe_unwrap_dictobs(obs), windows[index])


def _greedy_rows(learner: Any, obs: Any, acts: np.ndarray, continuous: bool,
                 windows: np.ndarray | None = None) -> np.ndarray:
    """``(T,)`` float64 per step: the squared error of the learner's greedy action averaged over the action's
    dimensions (``continuous``), else 1.0 where the greedy action equals the demonstrated one; NaN for a diverged
    learner (every step once its parameters are not finite, a chunk's steps where it cannot act on them).
    ``windows``: ``(T, W)`` each step's window of flat indices, for a learner reading windows."""
    from curteach_teaching.learners.divergence import LearnerDiverged

    T = len(acts)
    rows = np.full(T, np.nan)
    if learner.diverged():
        return rows
    for begin in range(0, T, _CHUNK):
        index = np.arange(begin, min(T, begin + _CHUNK))
        chunk = _steps(obs, index, windows)
        try:
            greedy = np.asarray(learner.act(chunk))
        except LearnerDiverged:
            continue
        given = np.asarray(acts[index])
        if continuous:
            errors = (greedy.reshape(len(index), -1) - given.reshape(len(index), -1).astype(np.float64)) ** 2
            rows[index] = errors.mean(axis=1)
        else:
            rows[index] = (greedy.reshape(len(index), -1) == given.reshape(len(index), -1)).all(axis=1)
    return rows


def held_out_metrics(learner: Any, obs: Any, acts: np.ndarray, step_groups: np.ndarray,
                     action_space: gym.spaces.Space, *, per_group: bool = False,
                     windows: np.ndarray | None = None) -> dict[str, float]:
    """The held-out scores of ``learner`` (see the module docstring) on ``T`` demonstrated steps.

    Args:
        learner: a dataset learner (:class:`~curteach_teaching.learners.dataset_learner.DatasetLearner`: its
            ``log_likelihood`` and greedy ``act``, neither of which trains it).
        obs: ``(T, ...)`` the steps' observations (an array or an imitation ``DictObs``), as the policy reads them.
        acts: ``(T, ...)`` the demonstrated actions, scored as given.
        step_groups: ``(T,)`` each step's group.
        action_space: the pool's; a ``Box`` gives ``mse``, any other space ``accuracy``.
        per_group: also every metric per group (``nll:<group>``), groups in order of first appearance.
        windows: ``(T, W)`` each step's window of flat step indices
            (:func:`~curteach_teaching.learners.windows.episode_windows`), for a learner that reads windows
            (``None``: one observation per step).

    Returns:
        ``{"nll": ..., "mse" or "accuracy": ..., ["nll:<group>": ..., ...]}``, NaN where the network diverged.
    """
    from imitation.data import types

    from curteach_teaching.learners.windows import step_log_likelihoods

    continuous = isinstance(action_space, gym.spaces.Box)
    second = "mse" if continuous else "accuracy"
    # the learner's windows where it reads them (the same chunked call the curricula's learner difficulty makes)
    nll = -step_log_likelihoods(learner, types.maybe_unwrap_dictobs(obs), acts, (), windows)
    greedy = _greedy_rows(learner, obs, acts, continuous, windows)
    point = {"nll": float(nll.mean()), second: float(greedy.mean())}
    if per_group:
        labels = np.asarray(step_groups, dtype=object)
        for group in dict.fromkeys(labels.tolist()):
            mask = labels == group
            point[f"nll:{group}"] = float(nll[mask].mean())
            point[f"{second}:{group}"] = float(greedy[mask].mean())
    return point


class HeldOutEvaluations:
    """The evaluation points of one run scored on the held-out demonstrations (a curriculum callback every
    ``eval_every`` steps; the counterpart of the rollouts' evaluations in
    :mod:`~curteach_teaching.experiments.dataset_bc.run`).

    Args:
        data: the prepared :class:`~curteach_teaching.datasets.prepared.PreparedData` with its held-out
            episodes (``held_out``, ``held_out_groups``).
        learner: the run's dataset learner.
    """

    def __init__(self, data: Any, learner: Any):
        from imitation.data.rollout import flatten_trajectories

        from curteach_teaching.curriculum.metrics import MetricMean
        from curteach_teaching.learners.windows import episode_windows, learner_window

        transitions = flatten_trajectories(list(data.held_out))
        self.obs, self.acts = transitions.obs, transitions.acts
        lengths = [len(t.acts) for t in data.held_out]
        window = learner_window(learner)
        self.windows = episode_windows(lengths, window) if window > 1 else None
        self.step_groups = np.repeat(np.asarray(data.held_out_groups, dtype=object), lengths)
        self.groups = list(dict.fromkeys(data.held_out_groups))
        self.learner, self.action_space = learner, data.action_space
        self.second = "mse" if isinstance(data.action_space, gym.spaces.Box) else "accuracy"
        self.curves: dict[str, list[float]] = {}
        self.batches: list[int] = []
        self.loss = MetricMean("loss")  # the step losses stay on the training device until a point reads them

    @property
    def step_curves(self) -> tuple:
        """The overall metrics, each recorded against the optimizer steps (``records["batches"][name]``)."""
        return ("nll", self.second)

    def loss_of(self, batch: Any) -> None:
        """Keep a training step's loss for the next point's ``train:loss``."""
        self.loss.on_batch(batch)

    def __call__(self, step: int) -> None:
        """Score the policy on the held-out steps after ``step`` optimizer steps (one point of every curve)."""
        point = held_out_metrics(self.learner, self.obs, self.acts, self.step_groups, self.action_space,
                                 per_group=len(self.groups) > 1, windows=self.windows)
        point["train:loss"] = self.loss.close()
        self.batches.append(int(step))
        for name, value in point.items():
            self.curves.setdefault(name, []).append(value)

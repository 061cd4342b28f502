"""Difficulty scores of demonstrations, in log space (docs: ``docs/teaching/difficulty.md``).

For a demonstration ``xi = ((s_0, a_0), ..., (s_{L-1}, a_{L-1}))`` and a policy ``pi``:

* ``log Psi_pi(xi) = -sum_tau log pi(a_tau | s_tau)`` (:func:`log_difficulty`): the negative log-likelihood of the
  demonstrated actions (transitions are not included).
* The curriculum objective of one demonstration is ``log Psi^L(xi) - log Psi^E(xi)`` (large = easy for the teacher,
  hard for the learner).
* Over the pool of demonstrations from one start state the scores are aggregated either by

  - ``"mean"`` (the IRL original's Cur): ``log mean_j exp(x_j)``, computed with a log-sum-exp, or
  - ``"geometric"`` (the BC original, and IRL's Cur-T and Cur-L): ``sum_j x_j``.

The log-likelihood of a demonstration under a tabular policy is :func:`log_likelihood` (an ``(S, A)`` log-policy
table indexed by integer states and actions: the teachers of the car experiments); per-step log-probabilities of any
other policy (e.g. a Stable-Baselines3 policy's, from the action seam
:func:`curteach_teaching.learners.actions.step_log_probs`) are summed per demonstration by
:func:`sum_per_demonstration`. This module needs NumPy alone.

Everything works from log-probabilities (e.g. a soft learner's ``Q - V``), never from probabilities that may
underflow. A log-probability of ``-inf`` (probability exactly 0) is floored at :data:`MIN_LOG_PROB`, so scores stay
finite and never NaN; finite log-probabilities are used as they are. Sums over the steps of a demonstration and over
the pool are sequential (left to right), as in the original, so that equal multisets of per-step terms interleaved
with exact zeros give bit-identical scores and ties resolve to the lowest start index.

The task-specific teacher scores of the navigation tasks are defined in the last section of this module.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = [
    "AGGREGATIONS",
    "MIN_LOG_PROB",
    "log_likelihood",
    "sum_per_demonstration",
    "index_observations",
    "check_aggregation",
    "log_difficulty",
    "aggregate",
    "curriculum_scores",
    "teacher_difficulty_scores",
    "learner_difficulty_scores",
    "shortest_path_teacher_difficulty",
    "tsp_teacher_difficulty",
    "teacher_log_difficulty",
]

AGGREGATIONS = ("mean", "geometric")
#: Floor for log-probabilities: a probability of exactly 0 counts as ``exp(-1e6)``, far below any float64 yet finite.
MIN_LOG_PROB = -1.0e6


def check_aggregation(aggregation: str) -> str:
    """``aggregation`` itself if it is one of :data:`AGGREGATIONS`, else ``ValueError``."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}; got {aggregation!r}")
    return aggregation


def _sequential_sum(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """Left-to-right sum along ``axis`` (``cumsum`` is sequential, unlike NumPy's pairwise ``sum``)."""
    if values.shape[axis] == 0:
        return np.zeros(np.delete(values.shape, axis if axis >= 0 else values.ndim + axis))
    return np.take(np.cumsum(values, axis=axis), -1, axis=axis)


def log_likelihood(log_policy: np.ndarray, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """``sum_tau log pi(a_tau | s_tau)`` of demonstrations (log-probabilities floored at :data:`MIN_LOG_PROB`).

    Args:
        log_policy: ``(S, A)`` log action probabilities.
        states: ``(..., L)`` int states.
        actions: ``(..., L)`` int actions.

    Returns:
        ``(...)`` log-likelihoods.
    """
    log_policy = np.asarray(log_policy, dtype=np.float64)
    states, actions = np.asarray(states), np.asarray(actions)
    if log_policy.ndim != 2:
        raise ValueError(f"log_policy must have shape (S, A); got {log_policy.shape}")
    if states.shape != actions.shape:
        raise ValueError(f"states and actions must have the same shape; got {states.shape} and {actions.shape}")
    if np.isnan(log_policy).any():
        raise ValueError("log_policy contains NaN")
    steps = np.maximum(log_policy[states, actions], MIN_LOG_PROB)
    return _sequential_sum(steps, axis=-1)


def log_difficulty(log_policy: np.ndarray, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """``log Psi_pi(xi) = -sum_tau log pi(a_tau | s_tau)``; shapes as :func:`log_likelihood`, ``(...)`` out."""
    return -log_likelihood(log_policy, states, actions)


def sum_per_demonstration(
    step_log_probs: np.ndarray,
    demo_of_transition: np.ndarray,
    n_demonstrations: int,
    min_log_prob: float = MIN_LOG_PROB,
) -> np.ndarray:
    """Per-demonstration sums of per-step log-probabilities, each step floored at ``min_log_prob`` (NaN too).

    Args:
        step_log_probs: ``(T,)`` ``log pi(a_t | s_t)`` of the flattened transitions of N demonstrations.
        demo_of_transition: ``(T,)`` int, the demonstration each transition belongs to, in ``[0, N)``.
        n_demonstrations: N.
        min_log_prob: floor of each step; a NaN step (e.g. from a diverged network) also counts as the floor.

    Returns:
        ``(N,)`` float64 sums (0 for a demonstration without transitions).
    """
    step_log_probs = np.maximum(np.where(np.isnan(step_log_probs), min_log_prob, step_log_probs), min_log_prob)
    return np.bincount(demo_of_transition, weights=step_log_probs, minlength=n_demonstrations)


def index_observations(obs: Any, index: np.ndarray) -> Any:
    """The rows ``index`` of observations: ``obs[index]`` of an array, or of every array of an imitation ``DictObs``.

    Args:
        obs: ``(T, ...)`` array, or an ``imitation.data.types.DictObs`` of ``(T, ...)`` arrays.
        index: ``(n,)`` int row indices.

    Returns:
        ``(n, ...)`` observations of the same kind.
    """
    # a DictObs can only exist once imitation is imported; so plain arrays never import it (nor torch)
    imitation_types = sys.modules.get("imitation.data.types")
    if imitation_types is not None and isinstance(obs, imitation_types.DictObs):
        return imitation_types.DictObs({key: value[index] for key, value in obs.items()})
    return obs[index]


def aggregate(values: np.ndarray, aggregation: str = "mean") -> np.ndarray:
    """Aggregate per-demonstration log-scores over a pool (the last axis).

    Args:
        values: ``(..., n)`` finite per-demonstration log-scores ``x_j``.
        aggregation: ``"mean"``: ``log((1/n) sum_j exp(x_j))`` by a stable log-sum-exp; ``"geometric"``:
            ``sum_j x_j`` (sequential).

    Returns:
        ``(...)`` aggregated scores.
    """
    check_aggregation(aggregation)
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[-1]
    if n == 0:
        raise ValueError("cannot aggregate an empty pool (n = 0)")
    if aggregation == "geometric":
        return _sequential_sum(values, axis=-1)
    top = values.max(axis=-1)
    return top + np.log(np.exp(values - top[..., None]).sum(axis=-1)) - np.log(n)


def curriculum_scores(
    teacher_log_policy: np.ndarray,
    learner_log_policy: np.ndarray,
    states: np.ndarray,
    actions: np.ndarray,
    aggregation: str = "mean",
) -> np.ndarray:
    """The Cur objective per start: ``aggregate_j(log Psi^L(xi_j) - log Psi^E(xi_j))``.

    With ``"mean"`` this is the log of the IRL original's score ``sum_j prod_tau pi^E / pi^L`` divided by ``n``
    (same ranking); with ``"geometric"`` it is the BC original's ``sum_j sum_tau (log pi^E - log pi^L)``.

    Args:
        teacher_log_policy, learner_log_policy: ``(S, A)`` log action probabilities.
        states, actions: ``(K, n, L)`` the pool (``DemonstrationPool.states`` / ``.actions``).
        aggregation: ``"mean"`` or ``"geometric"``.

    Returns:
        ``(K,)`` scores; larger = preferred.
    """
    teacher = np.maximum(np.asarray(teacher_log_policy, dtype=np.float64), MIN_LOG_PROB)
    learner = np.maximum(np.asarray(learner_log_policy, dtype=np.float64), MIN_LOG_PROB)
    if teacher.shape != learner.shape:
        raise ValueError(f"teacher and learner log-policies differ in shape: {teacher.shape} vs {learner.shape}")
    # per step log pi^E - log pi^L, summed sequentially: exact zeros where both policies agree exactly
    per_step = teacher[states, actions] - learner[states, actions]
    return aggregate(_sequential_sum(per_step, axis=-1), aggregation)


def teacher_difficulty_scores(
    teacher_log_policy: np.ndarray, states: np.ndarray, actions: np.ndarray, aggregation: str = "geometric"
) -> np.ndarray:
    """Cur-T's objective per start: ``aggregate_j(-log Psi^E(xi_j))`` (``Psi^L`` constant); ``(K,)``.

    With ``"geometric"`` (the original) this is ``sum_j sum_tau log pi^E(a|s)``.
    """
    return aggregate(log_likelihood(teacher_log_policy, states, actions), aggregation)


def learner_difficulty_scores(
    learner_log_policy: np.ndarray, states: np.ndarray, actions: np.ndarray, aggregation: str = "geometric"
) -> np.ndarray:
    """Cur-L's objective per start: ``aggregate_j(log Psi^L(xi_j))`` (``Psi^E`` constant); ``(K,)``.

    With ``"geometric"`` (the original) this is ``sum_j sum_tau -log pi^L(a|s)``.
    """
    return aggregate(log_difficulty(learner_log_policy, states, actions), aggregation)


# ======================================================================================================================
# Navigation teacher difficulty (see docs/environments/navigation.md).
#
# The teacher (task-specific) difficulty of a navigation demonstration, as the original code and the paper's Appendix
# ("Teacher's Difficulty Score") define it:
#
# * shortest path: d_i = goals_i * num_optimal_paths_i / (reward_i - min_reward + 1);
# * TSP, the original code: d_i = goals_i / (reward_i - min_reward + 1) (the greedy gap is not used);
# * TSP, the paper: d_i = goals_i / (D_i - min D + 1) with D_i = reward_i - greedy_gap_i
#   (greedy_gap = reward - greedy_reward, so D is the greedy tour's reward).
#
# The denominators are shifted so that their minimum over the reference set (the training split) is 1. Variants:
# "original" (default) min-max normalises over the set, then takes log(d~ + 1e-3), in [log 0.001, log 1.001]; a set
# where every d is equal gets log(1.001) everywhere (the original's uniform teacher value). "paper" is log d without
# normalisation. `reward` is the demonstration's return in the environment (10 - cost); the original stored -cost for
# TSP and added 10 before using it, so the shifted denominators are the same.

__all__ += [
    "DIFFICULTY_VARIANTS",
    "NORMALISATION_EPSILON",
    "shifted_denominator",
    "minmax_log",
]

DIFFICULTY_VARIANTS = ("original", "paper")
NORMALISATION_EPSILON = 1e-3


def _navigation_vector(name: str, values) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return array


def shifted_denominator(values: np.ndarray, reference_min: float | None = None) -> np.ndarray:
    """``(N,)`` ``values - min + 1`` (the paper's "linear transform to make all values >= 1").

    Args:
        values: ``(N,)`` denominators.
        reference_min: the minimum to shift by (e.g. the training split's); defaults to ``values.min()``.

    Raises:
        ValueError: a shifted value is below 1 (a value smaller than ``reference_min``).
    """
    values = _navigation_vector("values", values)
    low = values.min() if reference_min is None else float(reference_min)
    shifted = values - low + 1.0
    if np.any(shifted < 1.0):
        raise ValueError(f"every value must be >= reference_min = {low:g}; the smallest is {values.min():g}")
    return shifted


def minmax_log(difficulty: np.ndarray, epsilon: float = NORMALISATION_EPSILON) -> np.ndarray:
    """``(N,)`` ``log((d - min d) / (max d - min d) + epsilon)``; ``log(1 + epsilon)`` if all ``d`` are equal."""
    d = _navigation_vector("difficulty", difficulty)
    span = d.max() - d.min()
    if span == 0:
        return np.full(d.shape, np.log1p(epsilon))
    return np.log((d - d.min()) / span + epsilon)


def _check_difficulty_variant(variant: str) -> None:
    if variant not in DIFFICULTY_VARIANTS:
        raise ValueError(f"variant must be one of {DIFFICULTY_VARIANTS}; got {variant!r}")


def shortest_path_teacher_difficulty(
    n_goals, num_optimal_paths, reward, variant: str = "original", reference_min_reward: float | None = None
) -> np.ndarray:
    """``(N,)`` log teacher difficulty of shortest-path demonstrations.

    Args:
        n_goals: ``(N,)`` goals of each task (1-2).
        num_optimal_paths: ``(N,)`` the task's number of optimal paths (untruncated, 1-4).
        reward: ``(N,)`` optimal reward (return) of the demonstration.
        variant: ``"original"`` (min-max normalised, ``log(d~ + 1e-3)``) or ``"paper"`` (``log d``).
        reference_min_reward: the minimum reward of the training split (default: of ``reward``).
    """
    _check_difficulty_variant(variant)
    goals = _navigation_vector("n_goals", n_goals)
    paths = _navigation_vector("num_optimal_paths", num_optimal_paths)
    reward = _navigation_vector("reward", reward)
    if not goals.shape == paths.shape == reward.shape:
        raise ValueError(f"inputs must have equal shapes; got {goals.shape}, {paths.shape}, {reward.shape}")
    d = goals * paths / shifted_denominator(reward, reference_min_reward)
    return minmax_log(d) if variant == "original" else np.log(d)


def tsp_teacher_difficulty(
    n_goals,
    reward,
    greedy_reward=None,
    variant: str = "original",
    reference_min: float | None = None,
) -> np.ndarray:
    """``(N,)`` log teacher difficulty of TSP demonstrations.

    Args:
        n_goals: ``(N,)`` goals of each task (2-4).
        reward: ``(N,)`` return of the demonstrated ("optimal") tour.
        greedy_reward: ``(N,)`` return of the greedy tour; needed by ``variant="paper"`` only.
        variant: ``"original"`` (no greedy gap; normalised) or ``"paper"`` (``goals / (reward - greedy_gap)``,
            shifted; ``log d``).
        reference_min: the minimum denominator of the training split (default: of this set).
    """
    _check_difficulty_variant(variant)
    goals = _navigation_vector("n_goals", n_goals)
    reward = _navigation_vector("reward", reward)
    if goals.shape != reward.shape:
        raise ValueError(f"n_goals and reward must have equal shapes; got {goals.shape}, {reward.shape}")
    if variant == "original":
        return minmax_log(goals / shifted_denominator(reward, reference_min))
    if greedy_reward is None:
        raise ValueError("variant='paper' needs greedy_reward")
    greedy = _navigation_vector("greedy_reward", greedy_reward)
    if greedy.shape != reward.shape:
        raise ValueError(f"greedy_reward must have shape {reward.shape}; got {greedy.shape}")
    greedy_gap = reward - greedy
    return np.log(goals / shifted_denominator(reward - greedy_gap, reference_min))


def teacher_log_difficulty(split, variant: str = "original") -> np.ndarray:
    """``(N,)`` log teacher difficulty of every demonstration of a
    :class:`~curteach_envs.navigation.dataset.NavigationSplit` (``variant`` as above)."""
    if split.kind == "shortest_path":
        return shortest_path_teacher_difficulty(split.n_goals, split["num_optimal_paths"], split["reward"], variant)
    return tsp_teacher_difficulty(split.n_goals, split["reward"], split["greedy_reward"], variant)

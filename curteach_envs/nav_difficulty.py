"""Teacher (task-specific) difficulty scores of the navigation experiments, in log space.

``../shared/spec/navigation.md``, Section 4, and the paper's Appendix ("Teacher's Difficulty Score"):

* shortest path: ``d_i = goals_i * num_optimal_paths_i / (reward_i - min_reward + 1)``;
* TSP, the original code: ``d_i = goals_i / (reward_i - min_reward + 1)`` (the greedy gap is not used);
* TSP, the paper: ``d_i = goals_i / (D_i - min D + 1)`` with ``D_i = reward_i - greedy_gap_i``
  (``greedy_gap = reward - greedy_reward``, so ``D`` is the greedy tour's reward).

The denominators are shifted so that their minimum over the reference set (the training split) is 1. Variants:

* ``"original"`` (default): min-max normalise over the set, then ``log(d~ + 1e-3)``, in
  ``[log 0.001, log 1.001]``; a set where every ``d`` is equal gets ``log(1.001)`` everywhere (the original's uniform
  teacher value);
* ``"paper"``: ``log d`` without normalisation.

``reward`` is the demonstration's return in the environment (``10 - cost``); the original stored ``-cost`` for TSP
and added 10 before using it, so the shifted denominators are the same.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

__all__ = [
    "DIFFICULTY_VARIANTS",
    "NORMALISATION_EPSILON",
    "shifted_denominator",
    "minmax_log",
    "shortest_path_teacher_difficulty",
    "tsp_teacher_difficulty",
    "teacher_log_difficulty",
]

DIFFICULTY_VARIANTS = ("original", "paper")
NORMALISATION_EPSILON = 1e-3


def _vector(name: str, values) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return array


def shifted_denominator(values: np.ndarray, reference_min: Optional[float] = None) -> np.ndarray:
    """``(N,)`` ``values - min + 1`` (the paper's "linear transform to make all values >= 1").

    Args:
        values: ``(N,)`` denominators.
        reference_min: the minimum to shift by (e.g. the training split's); defaults to ``values.min()``.

    Raises:
        ValueError: a shifted value is below 1 (a value smaller than ``reference_min``).
    """
    values = _vector("values", values)
    low = values.min() if reference_min is None else float(reference_min)
    shifted = values - low + 1.0
    if np.any(shifted < 1.0):
        raise ValueError(f"every value must be >= reference_min = {low:g}; the smallest is {values.min():g}")
    return shifted


def minmax_log(difficulty: np.ndarray, epsilon: float = NORMALISATION_EPSILON) -> np.ndarray:
    """``(N,)`` ``log((d - min d) / (max d - min d) + epsilon)``; ``log(1 + epsilon)`` if all ``d`` are equal."""
    d = _vector("difficulty", difficulty)
    span = d.max() - d.min()
    if span == 0:
        return np.full(d.shape, np.log1p(epsilon))
    return np.log((d - d.min()) / span + epsilon)


def _check_variant(variant: str) -> None:
    if variant not in DIFFICULTY_VARIANTS:
        raise ValueError(f"variant must be one of {DIFFICULTY_VARIANTS}; got {variant!r}")


def shortest_path_teacher_difficulty(
    n_goals, num_optimal_paths, reward, variant: str = "original", reference_min_reward: Optional[float] = None
) -> np.ndarray:
    """``(N,)`` log teacher difficulty of shortest-path demonstrations.

    Args:
        n_goals: ``(N,)`` goals of each task (1-2).
        num_optimal_paths: ``(N,)`` the task's number of optimal paths (untruncated, 1-4).
        reward: ``(N,)`` optimal reward (return) of the demonstration.
        variant: ``"original"`` (min-max normalised, ``log(d~ + 1e-3)``) or ``"paper"`` (``log d``).
        reference_min_reward: the minimum reward of the training split (default: of ``reward``).
    """
    _check_variant(variant)
    goals = _vector("n_goals", n_goals)
    paths = _vector("num_optimal_paths", num_optimal_paths)
    reward = _vector("reward", reward)
    if not goals.shape == paths.shape == reward.shape:
        raise ValueError(f"inputs must have equal shapes; got {goals.shape}, {paths.shape}, {reward.shape}")
    d = goals * paths / shifted_denominator(reward, reference_min_reward)
    return minmax_log(d) if variant == "original" else np.log(d)


def tsp_teacher_difficulty(
    n_goals,
    reward,
    greedy_reward=None,
    variant: str = "original",
    reference_min: Optional[float] = None,
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
    _check_variant(variant)
    goals = _vector("n_goals", n_goals)
    reward = _vector("reward", reward)
    if goals.shape != reward.shape:
        raise ValueError(f"n_goals and reward must have equal shapes; got {goals.shape}, {reward.shape}")
    if variant == "original":
        return minmax_log(goals / shifted_denominator(reward, reference_min))
    if greedy_reward is None:
        raise ValueError("variant='paper' needs greedy_reward")
    greedy = _vector("greedy_reward", greedy_reward)
    if greedy.shape != reward.shape:
        raise ValueError(f"greedy_reward must have shape {reward.shape}; got {greedy.shape}")
    greedy_gap = reward - greedy
    return np.log(goals / shifted_denominator(reward - greedy_gap, reference_min))


def teacher_log_difficulty(split, variant: str = "original") -> np.ndarray:
    """``(N,)`` log teacher difficulty of every demonstration of a :class:`~curteach_envs.datasets.NavigationSplit`."""
    if split.kind == "shortest_path":
        return shortest_path_teacher_difficulty(split.n_goals, split["num_optimal_paths"], split["reward"], variant)
    return tsp_teacher_difficulty(split.n_goals, split["reward"], split["greedy_reward"], variant)

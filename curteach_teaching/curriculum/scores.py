"""Per-demonstration difficulty scores for the curriculum, from whatever the user has (docs/teaching/curriculum.md).

* the **teacher** difficulty ``log Psi^E(xi_i)``, scored once (:func:`teacher_difficulty`) from per-demonstration
  scores, a teacher policy or a per-step log-probability callable;
* the **learner** difficulty ``log Psi^L(xi_i) = -sum_tau log pi^L(a_tau | s_tau)`` under a trainer's current SB3
  policy (:func:`policy_difficulty`), in batched, no-grad, evaluation-mode passes of the action seam
  (:func:`curteach_teaching.learners.actions.step_log_probs`).

For continuous actions ``log pi`` is a log-density: it can be positive, and its units depend on the action's scale
(rescaling an action dimension by ``c`` shifts every step's log-density by ``-log |c|``), so only differences between
demonstrations of one dataset mean something.

Both work on the flattened transitions of the demonstrations and their
:class:`~curteach_teaching.curriculum.index.DemonstrationIndex`; they know nothing of the trainer that trains.
Every per-step log-probability is floored at ``min_log_prob``, so that a probability of 0 gives a finite score; any
finite value above it (a log-density above 0 too) is used as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.difficulty import MIN_LOG_PROB, sum_per_demonstration

__all__ = ["TeacherDifficulty", "check_min_log_prob", "policy_difficulty", "teacher_difficulty"]

#: What may give the teacher difficulty: ``(N,)`` scores, an SB3 policy, a callable ``(obs, acts) -> log pi^E``, or
#: ``None``.
TeacherDifficulty = None | np.ndarray | Sequence[float] | Any | Callable[[Any, np.ndarray], np.ndarray]


def check_min_log_prob(min_log_prob: float) -> float:
    """``min_log_prob`` as a float if it is a finite number <= 0, else ``ValueError``."""
    if isinstance(min_log_prob, bool) or not isinstance(min_log_prob, (int, float)) or not (
        np.isfinite(min_log_prob) and min_log_prob <= 0
    ):
        raise ValueError(f"min_log_prob must be a finite number <= 0 (a log-prob floor); got {min_log_prob!r}")
    return float(min_log_prob)


def policy_difficulty(
    policy: Any,
    obs: Any,
    acts: np.ndarray,
    index: DemonstrationIndex,
    *,
    chunk_size: int = 8192,
    min_log_prob: float = MIN_LOG_PROB,
) -> np.ndarray:
    """``(N,)`` ``-sum_tau log pi(a_tau | s_tau)`` of every demonstration under an SB3 ``policy`` (anything with
    ``evaluate_actions``): no-grad, evaluation-mode passes of ``chunk_size`` transitions (the mode is restored); a NaN
    step (a diverged network) counts as the floor. Continuous actions are scored as given, never clipped.

    Args:
        policy: the policy.
        obs: ``(T, ...)`` the flattened observations; acts: ``(T,)`` the actions.
        index: their layout (T transitions of N demonstrations).
        chunk_size, min_log_prob: transitions per pass; the per-step floor.
    """
    from curteach_teaching.learners.actions import step_log_probs

    per_step = step_log_probs(policy, obs, acts, chunk_size=chunk_size)
    return -sum_per_demonstration(per_step, index.demo_of_transition, index.n_demonstrations, min_log_prob)


def teacher_difficulty(
    teacher: TeacherDifficulty,
    obs: Any,
    acts: np.ndarray,
    index: DemonstrationIndex,
    *,
    chunk_size: int = 8192,
    min_log_prob: float = MIN_LOG_PROB,
) -> np.ndarray:
    """``(N,)`` ``log Psi^E`` of every demonstration, a new array.

    Args:
        teacher: a ``(N,)`` array of per-demonstration scores (larger = harder for the teacher), e.g. a task-specific
            score; an SB3 policy (anything with ``evaluate_actions``): ``-sum_tau log pi^E(a | s)``; or a callable
            ``(obs (T, ...), acts (T, ...)) -> (T,)`` returning ``log pi^E(a_tau | s_tau)`` (a log-density for
            continuous actions), e.g.
            ``lambda obs, acts: log_pi_E[obs, acts]`` for a tabular teacher.
        obs, acts, index: as :func:`policy_difficulty`.
        chunk_size, min_log_prob: as :func:`policy_difficulty` (a NaN or +inf from a callable is an error, not the
            floor).

    Raises:
        ValueError: scores of another shape or not finite; a callable that returns another shape, NaN or +inf.
    """
    N = index.n_demonstrations
    if hasattr(teacher, "evaluate_actions"):
        return policy_difficulty(teacher, obs, acts, index, chunk_size=chunk_size, min_log_prob=min_log_prob)
    if callable(teacher):
        per_step = np.asarray(teacher(obs, acts), dtype=np.float64).reshape(-1)
        if per_step.shape != (len(acts),):
            raise ValueError(f"the teacher callable must return {len(acts)} log-probabilities; got {per_step.shape}")
        # any finite value is a score (a log-density of a continuous action may be positive); -inf, a probability
        # of 0, counts as the floor; NaN and +inf say nothing
        bad = np.flatnonzero(np.isnan(per_step) | (per_step == np.inf))
        if bad.size:
            raise ValueError(
                f"the teacher callable returned {bad.size} NaN or +inf log-probabilities (first: "
                f"{float(per_step[bad[0]])!r} at transition {bad[0]}); any finite value or -inf is a score"
            )
        return -sum_per_demonstration(per_step, index.demo_of_transition, N, min_log_prob)
    scores = np.asarray(teacher, dtype=np.float64)
    if scores.shape != (N,):
        raise ValueError(f"teacher scores must have shape ({N},), one per demonstration; got {scores.shape}")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValueError(
            f"teacher scores must be finite; {bad.size} are not "
            f"(first: {float(scores[bad[0]])!r} for demonstration {bad[0]})"
        )
    return scores.copy()

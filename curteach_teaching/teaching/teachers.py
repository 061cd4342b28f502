"""The seven teachers of the teacher-centric experiments (docs: ``docs/teaching/teachers.md``).

Every teacher answers one question: *which start state next?* It is built from what it may know (the teacher
policy's demonstration pool, ``theta*``, the true reward, ...) and, at each step, sees the learner only through a
narrow **view**:

* :class:`PolicyView` -- ``action_log_probabilities() -> (S, A)``: all that Cur and Cur-L need. Any learner with a
  tabular policy can offer it, so a user can teach their own learner with Cur.
* :class:`OccupancyView` -- adds ``occupancy_per_start() -> (K, S)``: for BBox.
* :class:`GradientView` -- ``parameters``, ``learning_rate`` and ``gradients_per_start(rho_E) -> (K, p)``: for Omn
  (IMT's omniscient teacher needs the learner's model).

``teacher.select(view, step)`` returns a start state id (an element of ``start_states``). All teachers are greedy,
ties go to the lowest start index (``np.argmax``/``np.argmin`` return the first), and picks are made with replacement
except Cur-T's sweep. Randomised teachers (Agn, Scot after its batch) draw from their own ``numpy.random.Generator``.
A teacher's ``name`` is one of the constants of :mod:`curteach_teaching.names`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from curteach_teaching.demonstrations import DemonstrationPool
from curteach_teaching.difficulty import (
    check_aggregation,
    curriculum_scores,
    learner_difficulty_scores,
    teacher_difficulty_scores,
)
from curteach_teaching.names import AGN, BBOX, CUR, CUR_L, CUR_T, OMN, SCOT, TEACHER_NAMES

__all__ = [
    "PolicyView",
    "OccupancyView",
    "GradientView",
    "Teacher",
    "CurriculumTeacher",
    "TeacherDifficultyTeacher",
    "LearnerDifficultyTeacher",
    "AgnosticTeacher",
    "OmniscientTeacher",
    "BlackBoxTeacher",
    "ScotTeacher",
    "scot_batch",
    "SCOT_VARIANTS",
    "TEACHER_NAMES",
]


@runtime_checkable
class PolicyView(Protocol):
    """What Cur and Cur-L see of a learner."""

    def action_log_probabilities(self) -> np.ndarray:
        """``(S, A)`` log action probabilities of the learner's current policy (``-inf`` allowed)."""


@runtime_checkable
class OccupancyView(Protocol):
    """What BBox sees of a learner."""

    def occupancy_per_start(self) -> np.ndarray:
        """``(K, S)`` the learner's discounted state occupancy from each start state."""


@runtime_checkable
class GradientView(Protocol):
    """What Omn sees of a learner (IMT: the learner's parameters and update rule)."""

    parameters: np.ndarray
    learning_rate: float

    def gradients_per_start(self, expert_occupancy_per_start: np.ndarray) -> np.ndarray:
        """``(K, p)`` the gradient the learner would apply for each start's demonstrations."""


class Teacher:
    """Base class: a teacher picks the next start state from ``start_states``.

    Subclasses implement :meth:`select`. ``last_scores`` holds the ``(K,)`` scores of the last choice (where the
    teacher scores), for inspection and plotting.
    """

    name = "Teacher"

    def __init__(self, start_states: np.ndarray):
        self.start_states = np.asarray(start_states, dtype=np.int64)
        if self.start_states.ndim != 1 or self.start_states.size == 0:
            raise ValueError("start_states must be a non-empty 1-D integer array")
        self.last_scores: np.ndarray | None = None

    def select(self, view, step: int) -> int:
        """The start state (an element of ``start_states``) to demonstrate from at teaching step ``step``."""
        raise NotImplementedError

    def _pick(self, index: int) -> int:
        return int(self.start_states[index])


class CurriculumTeacher(Teacher):
    """Cur: argmax over starts of ``aggregate_j(log Psi^L(xi_j) - log Psi^E(xi_j))`` over the pool.

    Args:
        pool: the fixed demonstration pool (``K`` starts x ``n`` trajectories).
        teacher_log_policy: ``(S, A)`` ``log pi^E``.
        aggregation: ``"mean"`` (the IRL original, default) or ``"geometric"`` (the BC original).
    """

    name = CUR

    def __init__(self, pool: DemonstrationPool, teacher_log_policy: np.ndarray, aggregation: str = "mean"):
        super().__init__(pool.start_states)
        self.pool = pool
        self.teacher_log_policy = np.asarray(teacher_log_policy, dtype=np.float64)
        self.aggregation = check_aggregation(aggregation)

    def scores(self, learner_log_policy: np.ndarray) -> np.ndarray:
        """``(K,)`` Cur scores for a learner log-policy ``(S, A)``."""
        return curriculum_scores(
            self.teacher_log_policy, learner_log_policy, self.pool.states, self.pool.actions, self.aggregation
        )

    def select(self, view: PolicyView, step: int) -> int:
        """The start with the largest Cur score under the view's current log-policy."""
        self.last_scores = self.scores(view.action_log_probabilities())
        return self._pick(int(np.argmax(self.last_scores)))


class TeacherDifficultyTeacher(Teacher):
    """Cur-T: the easiest start for the teacher (``Psi^L`` constant), sweeping all starts without repeats.

    The order is fixed (scores depend only on ``pi^E``): within a sweep, the unused start with the largest
    ``aggregate_j(-log Psi^E(xi_j))``; after all ``K`` starts are used, a new sweep begins (the original's
    ``seen_array``). So Cur-T is a cyclic order of period ``K``.
    """

    name = CUR_T

    def __init__(self, pool: DemonstrationPool, teacher_log_policy: np.ndarray, aggregation: str = "geometric"):
        super().__init__(pool.start_states)
        self.aggregation = check_aggregation(aggregation)
        self.fixed_scores = teacher_difficulty_scores(teacher_log_policy, pool.states, pool.actions, aggregation)
        self.used = np.zeros(self.start_states.size, dtype=bool)

    def select(self, view, step: int) -> int:
        """The unused start that is easiest for the teacher; a new sweep once every start is used."""
        if self.used.all():
            self.used[:] = False
        candidates = np.where(self.used, -np.inf, self.fixed_scores)
        best = np.flatnonzero(~self.used & (candidates == candidates.max()))[0]  # lowest index among the best
        self.used[best] = True
        self.last_scores = self.fixed_scores
        return self._pick(int(best))


class LearnerDifficultyTeacher(Teacher):
    """Cur-L: argmax of ``aggregate_j(log Psi^L(xi_j))`` (``Psi^E`` constant); default ``"geometric"`` (original)."""

    name = CUR_L

    def __init__(self, pool: DemonstrationPool, aggregation: str = "geometric"):
        super().__init__(pool.start_states)
        self.pool = pool
        self.aggregation = check_aggregation(aggregation)

    def select(self, view: PolicyView, step: int) -> int:
        """The start hardest for the learner under the view's current log-policy."""
        self.last_scores = learner_difficulty_scores(
            view.action_log_probabilities(), self.pool.states, self.pool.actions, self.aggregation
        )
        return self._pick(int(np.argmax(self.last_scores)))


class AgnosticTeacher(Teacher):
    """Agn: a uniformly random start state (with replacement), from its own generator."""

    name = AGN

    def __init__(self, start_states: np.ndarray, rng: np.random.Generator):
        super().__init__(start_states)
        self.rng = rng

    def select(self, view, step: int) -> int:
        """A uniformly random start."""
        return self._pick(int(self.rng.integers(self.start_states.size)))


class OmniscientTeacher(Teacher):
    """Omn (IMT): argmin over starts of ``eta^2 ||g_s||^2 - 2 eta <theta_t - theta*, g_s>``.

    Equivalently ``||theta_t - eta g_s - theta*||^2 - ||theta_t - theta*||^2``, the change of the distance to
    ``theta*`` that the learner's next step would make.

    Args:
        start_states: ``(K,)``.
        target_parameters: ``(p,)`` ``theta*``.
        expert_occupancy_per_start: ``(K, S)`` the teacher's exact occupancy from each start.
    """

    name = OMN

    def __init__(self, start_states: np.ndarray, target_parameters: np.ndarray, expert_occupancy_per_start: np.ndarray):
        super().__init__(start_states)
        self.target_parameters = np.asarray(target_parameters, dtype=np.float64)
        self.expert_occupancy_per_start = np.asarray(expert_occupancy_per_start, dtype=np.float64)
        if self.expert_occupancy_per_start.shape[0] != self.start_states.size:
            raise ValueError("expert_occupancy_per_start must have one row per start state")

    def objective(self, view: GradientView) -> np.ndarray:
        """``(K,)`` the IMT objective of every start."""
        g = view.gradients_per_start(self.expert_occupancy_per_start)
        eta = np.float64(view.learning_rate)
        offset = view.parameters - self.target_parameters
        with np.errstate(over="ignore", invalid="ignore"):
            scores = eta**2 * np.einsum("kp,kp->k", g, g) - 2.0 * eta * (g @ offset)
            if not np.all(np.isfinite(scores)):  # eta^2 overflows: the same argmin, divided by eta > 0
                scores = eta * np.einsum("kp,kp->k", g, g) - 2.0 * (g @ offset)
            if not np.all(np.isfinite(scores)):  # eta overflows too: divided by eta^2 (the learner then diverges,
                scores = np.einsum("kp,kp->k", g, g) - 2.0 / eta * (g @ offset)  # which the run reports)
        return scores

    def select(self, view: GradientView, step: int) -> int:
        """The start whose demonstration would bring the learner's parameters closest to ``theta*``."""
        self.last_scores = self.objective(view)
        return self._pick(int(np.argmin(self.last_scores)))


class BlackBoxTeacher(Teacher):
    """BBox: argmax over starts of ``|(rho_L^{(s)} - rho_E^{(s)}) . R_true|``, the gap in true return from ``s``.

    Args:
        start_states: ``(K,)``.
        true_reward: ``(S,)``.
        expert_occupancy_per_start: ``(K, S)``.
    """

    name = BBOX

    def __init__(self, start_states: np.ndarray, true_reward: np.ndarray, expert_occupancy_per_start: np.ndarray):
        super().__init__(start_states)
        self.true_reward = np.asarray(true_reward, dtype=np.float64)
        self.expert_return = np.asarray(expert_occupancy_per_start, dtype=np.float64) @ self.true_reward

    def select(self, view: OccupancyView, step: int) -> int:
        """The start with the largest gap between the learner's and the teacher's true return."""
        learner_return = view.occupancy_per_start() @ self.true_reward
        self.last_scores = np.abs(learner_return - self.expert_return)
        return self._pick(int(np.argmax(self.last_scores)))


#: Scot's variants: the authors' stand-in and the published algorithm (docs/teaching/scot.md)
SCOT_VARIANTS = ("original", "bec")


def scot_batch(feature_expectations: np.ndarray) -> list[int]:
    """The original's Scot batch: greedy cover of the starts by *exactly* equal feature expectations.

    Repeatedly scan the starts not yet in the batch in increasing order, count the still-uncovered starts whose
    ``mu`` equals theirs exactly, take the first with the strictly largest count and remove what it covers.

    Args:
        feature_expectations: ``(K, d)`` the teacher's ``mu`` per start.

    Returns:
        Start indices (into the rows), in teaching order.
    """
    mu = np.asarray(feature_expectations)
    equal = (mu[:, None, :] == mu[None, :, :]).all(axis=2)  # (K, K)
    uncovered = np.ones(mu.shape[0], dtype=bool)
    in_batch = np.zeros(mu.shape[0], dtype=bool)
    batch: list[int] = []
    while uncovered.any():
        counts = np.where(in_batch, -1, (equal & uncovered[None, :]).sum(axis=1))
        best = int(np.argmax(counts))  # first with the largest count
        batch.append(best)
        in_batch[best] = True
        uncovered &= ~equal[best]
    return batch


class ScotTeacher(Teacher):
    """Scot: a batch of start states computed once before teaching, then uniformly random starts.

    ``variant="original"`` (default; it made the paper's figure) takes the stand-in's :func:`scot_batch`.
    ``variant="bec"`` runs the published SCOT (:func:`curteach_teaching.teaching.scot.scot`) with the pool's
    trajectories as
    candidates and teaches each picked trajectory's start, in cover order (a start can appear more than once when
    two of its trajectories are picked).

    Args:
        start_states: ``(K,)``.
        feature_expectations: ``(K, d)`` the teacher's feature expectations from each start (``"original"``).
        rng: the generator for the uniform phase.
        variant: ``"original"`` or ``"bec"``.
        mdp, expert_policy, pool: the MDP, the ``(S, A)`` optimal policy and the demonstration pool (``"bec"``).
        feature_map: the reward class of ``"bec"``, ``"linear"`` or ``"quadratic"``
            (:func:`curteach_teaching.teaching.scot.feature_map`).

    Attributes: ``batch`` (start indices into ``start_states``, in teaching order); ``result`` (the
    :class:`~curteach_teaching.teaching.scot.SCOTResult` of ``"bec"``, else ``None``).
    """

    name = SCOT

    def __init__(
        self,
        start_states: np.ndarray,
        feature_expectations: np.ndarray | None,
        rng: np.random.Generator,
        variant: str = "original",
        *,
        mdp=None,
        expert_policy: np.ndarray | None = None,
        pool: DemonstrationPool | None = None,
        feature_map: str = "linear",
    ):
        super().__init__(start_states)
        if variant not in SCOT_VARIANTS:
            raise ValueError(f"variant must be one of {SCOT_VARIANTS}; got {variant!r}")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
        self.variant = variant
        self.rng = rng
        self.result = None
        if variant == "original":
            if feature_expectations is None:
                raise ValueError("the original Scot needs the feature expectations per start")
            self.batch = scot_batch(feature_expectations)
            return
        from curteach_teaching.teaching.scot import scot

        if mdp is None or expert_policy is None or pool is None:
            raise ValueError("the bec Scot needs mdp, expert_policy and pool")
        if not np.array_equal(pool.start_states, self.start_states):
            raise ValueError("the pool's start states must be start_states")
        K, n, L = pool.actions.shape
        self.result = scot(
            mdp, expert_policy, pool.states.reshape(K * n, L), pool.actions.reshape(K * n, L), kind=feature_map
        )
        self.batch = [pick // n for pick in self.result.picks]

    def select(self, view, step: int) -> int:
        """The next start of the Scot batch, then uniformly random starts."""
        if step < len(self.batch):
            return self._pick(self.batch[step])
        return self._pick(int(self.rng.integers(self.start_states.size)))

"""The teaching loop of the teacher-centric experiments, and what it asks of a learner.

The paper's Algorithm 1: at every step ``t`` the teacher looks at the learner through a view, picks a start state,
and the learner updates on the teacher's demonstration(s) from it. :func:`teach` runs that loop for one or several
*lanes* (a teacher, its own learner and the view the teacher has of it) side by side; ``curteach car-irl``,
``car-irl-observability``, ``car-bc`` and ``curteach teach`` all use it, and so can a user's own teacher or learner.

* A :class:`Learner` offers the views its teachers need (at least
:class:`~curteach_teaching.teaching.teachers.PolicyView`'s
  ``action_log_probabilities``) and ``learn(lesson)``.
* A :class:`Lesson` is everything a teacher can show from one start: the pool's sampled demonstrations and, where
  the experiment has it, the teacher's exact occupancy measure. Each learner uses what its update rule needs
  (MaxEnt-IRL the occupancy, BC the state-action pairs).
* A learner whose update would make it non-finite raises
  :class:`~curteach_teaching.learners.divergence.LearnerDiverged`; its lane stops learning (its curve goes on at the
  last finite parameters) and the step is recorded.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.demonstrations import DemonstrationPool
from curteach_teaching.learners.divergence import LearnerDiverged
from curteach_teaching.registry import PluginError, Registry

__all__ = ["Lesson", "LessonBook", "Learner", "LaneRecord", "LearnerContext", "TeacherContext", "teach", "LEARNERS"]


@dataclass(frozen=True)
class Lesson:
    """The demonstrations a teacher shows from one start state.

    Attributes:
        start_state: the chosen start (a state id).
        start_index: its position ``k`` in the pool's ``start_states``.
        states, actions: ``(n, L)`` the pool's ``n`` demonstrations of ``L`` steps from the start.
        occupancy: ``(S,)`` the teacher's exact discounted state occupancy from the start, or ``None``.
    """

    start_state: int
    start_index: int
    states: np.ndarray
    actions: np.ndarray
    occupancy: np.ndarray | None = None


class LessonBook:
    """The lesson of every start of a pool: ``book(start_state) -> Lesson``.

    Args:
        pool: the demonstration pool (``K`` starts x ``n`` trajectories of ``L`` steps).
        occupancy_per_start: ``(K, S)`` the teacher's exact occupancy from each start, or ``None``.
    """

    def __init__(self, pool: DemonstrationPool, occupancy_per_start: np.ndarray | None = None):
        self.pool = pool
        self.start_index = {int(state): k for k, state in enumerate(pool.start_states)}
        if occupancy_per_start is not None:
            occupancy_per_start = np.asarray(occupancy_per_start)
            if occupancy_per_start.ndim != 2 or occupancy_per_start.shape[0] != pool.n_starts:
                raise ValueError(f"occupancy_per_start must have shape ({pool.n_starts}, S); "
                                 f"got {occupancy_per_start.shape}")
        self.occupancy_per_start = occupancy_per_start

    def __call__(self, start_state: int) -> Lesson:
        """The lesson from ``start_state``.

        Raises:
            ValueError: ``start_state`` is not a start of the pool (a teacher picked a state it may not).
        """
        k = self.start_index.get(int(start_state))
        if k is None:
            raise ValueError(f"state {start_state} is not a start state of the demonstration pool")
        occupancy = None if self.occupancy_per_start is None else self.occupancy_per_start[k]
        return Lesson(int(start_state), k, self.pool.states[k], self.pool.actions[k], occupancy)


@dataclass(frozen=True)
class TeacherContext:
    """What a teacher factory may build a teacher from (``factory(context) -> teacher``).

    A teacher built from it answers ``select(view, step) -> start state`` (an element of ``start_states``).

    Attributes:
        mdp: the environment's :class:`~curteach_envs.tabular.TabularMDP`.
        pool: the teacher's demonstration pool (``K`` starts x ``n`` trajectories).
        expert: the teacher's planning result (``policy``, ``log_policy`` ``(S, A)``, values).
        start_states: ``(K,)`` the starts a teacher may pick (the pool's).
        rng: this teacher's own generator (built-ins: the run's; a plug-in's is derived from its name).
        expert_occupancy_per_start: ``(K, S)`` the teacher's exact occupancy from each start, or ``None``.
        expert_features_per_start: ``(K, d)`` its feature expectations, or ``None``.
        theta_star: the target learner's parameters (what Omn steers to), or ``None`` where the experiment has none.
        options: the experiment's teacher settings by name (e.g. ``cur_aggregation``, ``scot_variant``).
    """

    mdp: Any
    pool: DemonstrationPool
    expert: Any
    start_states: np.ndarray
    rng: np.random.Generator
    expert_occupancy_per_start: np.ndarray | None = None
    expert_features_per_start: np.ndarray | None = None
    theta_star: np.ndarray | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def require(self, what: str, teacher: str) -> Any:
        """``getattr(self, what)``, refusing ``None`` with a message naming the teacher that needs it."""
        value = getattr(self, what)
        if value is None:
            raise ValueError(f"{teacher} needs {what}, which this experiment does not provide")
        return value


@dataclass(frozen=True)
class LearnerContext:
    """What a learner factory builds a learner from (``factory(context) -> learner``, a :class:`Learner`).

    Attributes:
        mdp: the environment's :class:`~curteach_envs.tabular.TabularMDP`.
        start_states: ``(K,)`` the starts lessons come from.
        rng: the learner's own generator.
        learning_rate: the experiment's step size.
    """

    mdp: Any
    start_states: np.ndarray
    rng: np.random.Generator
    learning_rate: float


@runtime_checkable
class Learner(Protocol):
    """What :func:`teach` and the teachers need of a learner.

    A learner may offer more views (``occupancy_per_start`` for BBox; ``parameters``, ``learning_rate`` and
    ``gradients_per_start`` for Omn): a teacher that needs a view the learner lacks fails with an
    ``AttributeError`` naming it.
    """

    def action_log_probabilities(self) -> np.ndarray:
        """``(S, A)`` log-probabilities of the learner's current policy (``-inf`` allowed)."""

    def learn(self, lesson: Lesson) -> None:
        """Update on the lesson; raise ``LearnerDiverged`` (and stay unchanged) if the update is not finite."""


@dataclass(frozen=True)
class LaneRecord:
    """What one lane of :func:`teach` did.

    Attributes:
        curve: ``(T + 1,)`` ``evaluate(learner)`` before the first step and after every step.
        picks: ``(T,)`` the start state picked at each step.
        diverged_at: the step whose update diverged (the lane learnt no more from then), or ``None``.
    """

    curve: np.ndarray
    picks: np.ndarray
    diverged_at: int | None


def _learn_each(learners: Sequence[Any], lessons: Sequence[Lesson]) -> list[int]:
    """The default update: every learner on its own lesson; the positions whose update diverged."""
    lost = []
    for position, (learner, lesson) in enumerate(zip(learners, lessons)):
        try:
            learner.learn(lesson)
        except LearnerDiverged:
            lost.append(position)
    return lost


def _select(teacher: Any, name: str, view: Any, step: int) -> Any:
    """``teacher.select(view, step)``; an exception of the teacher's own is a :class:`PluginError` naming it (its
    traceback kept for the log), a bug of a plug-in not being one of the loop."""
    try:
        return teacher.select(view, step)
    except (PluginError, LearnerDiverged):
        raise
    except Exception as error:
        raise PluginError(f"teacher {name!r} raised {type(error).__name__} in select at step {step}: {error}",
                          traceback.format_exc()) from error


def _pick(name: str, step: int, state: Any) -> int:
    """A teacher's pick as a state id, or an error naming the teacher (a plug-in's bug is not the loop's)."""
    if isinstance(state, bool) or not isinstance(state, (int, np.integer)):
        raise ValueError(f"teacher {name!r} returned {state!r} from select at step {step}; select must return a "
                         "start state (an int from start_states)")
    return int(state)


def _lesson(lessons: Callable[[int], Lesson], name: str, step: int, state: int) -> Lesson:
    try:
        return lessons(state)
    except ValueError as error:
        raise ValueError(f"teacher {name!r} at step {step}: {error}") from error


def teach(
    teachers: Mapping[str, Any],
    learners: Mapping[str, Any],
    steps: int,
    *,
    lessons: Callable[[int], Lesson],
    evaluate: Callable[[Any], float],
    views: Mapping[str, Any] | None = None,
    before_select: Callable[[str, int, Any], None] | None = None,
    learn_many: Callable[[Sequence[Any], Sequence[Lesson]], Sequence[int]] | None = None,
    diverged: Mapping[str, int] | None = None,
) -> dict[str, LaneRecord]:
    """Teach every lane ``name`` for ``steps`` steps: ``teachers[name]`` picks a start through ``views[name]``
    (default: the learner itself), and ``learners[name]`` learns the lesson from it.

    Lanes are independent (each has its own teacher, learner, view and generators), so running them side by side
    gives the same numbers as running them one after another; side by side, ``learn_many`` can update all lanes in
    one vectorised call.

    Args:
        teachers: ``name -> teacher`` with ``select(view, step) -> start state``.
        learners: ``name -> learner`` (a :class:`Learner`), one per teacher, not shared.
        steps: ``T >= 0`` teaching steps.
        lessons: ``start_state -> Lesson`` (e.g. a :class:`LessonBook`).
        evaluate: ``learner -> float``, recorded before the first step and after each step.
        views: ``name -> view`` the teacher sees instead of the learner (e.g. a
            :class:`~curteach_teaching.teaching.observability.ProbedPolicyView`); a view with ``at_step(t)`` is told
            the step
            before the teacher reads it.
        before_select: called as ``before_select(name, t, learner)`` before each pick (an experiment's checks).
        learn_many: ``(learners, lessons) -> positions that diverged``, replacing one ``learn`` call per lane.
        diverged: ``name -> step`` of lanes that diverged before teaching (e.g. in pre-training): taught no more.

    Returns:
        ``name -> LaneRecord``, in the order of ``teachers``.

    Raises:
        ValueError: ``learners`` (or ``views``) do not have exactly the teachers' names, or ``steps < 0``.
    """
    names = list(teachers)
    check_int("steps", steps, 0)
    if set(learners) != set(names):
        raise ValueError(f"learners must have the teachers' names {names}; got {list(learners)}")
    views = {name: learners[name] for name in names} if views is None else dict(views)
    if set(views) != set(names):
        raise ValueError(f"views must have the teachers' names {names}; got {list(views)}")
    update = _learn_each if learn_many is None else learn_many
    curves = {name: np.empty(steps + 1) for name in names}
    picks = {name: np.empty(steps, dtype=np.int64) for name in names}
    lost: dict[str, int] = dict(diverged or {})
    for name in names:
        curves[name][0] = evaluate(learners[name])
    for t in range(steps):
        chosen = {}
        for name in names:
            if before_select is not None:
                before_select(name, t, learners[name])
            view = views[name]
            if hasattr(view, "at_step"):
                view.at_step(t)
            chosen[name] = _pick(name, t, _select(teachers[name], name, view, t))
        active = [name for name in names if name not in lost]
        if active:
            failed = update([learners[name] for name in active], [_lesson(lessons, name, t, chosen[name])
                                                                   for name in active])
            lost.update({active[position]: t for position in failed})
        for name in names:
            curves[name][t + 1] = evaluate(learners[name])
            picks[name][t] = chosen[name]
    return {name: LaneRecord(curves[name], picks[name], lost.get(name)) for name in names}


def _builtin_learner(attr: str) -> Callable[[], Any]:
    def load() -> Any:  # imported on first use: a name can be listed without loading the learner's module
        from curteach_teaching.learners import tabular

        return getattr(tabular, attr)

    return load


#: Learner factories for the teacher-centric experiments (``factory(context) -> Learner``).
LEARNERS = Registry("learner", "curteach.learners")
LEARNERS.add("maxent-irl", _builtin_learner("maxent_irl_learner"))
LEARNERS.add("bc", _builtin_learner("bc_learner"))

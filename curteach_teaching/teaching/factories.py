"""The built-in teachers as factories of a :class:`~curteach_teaching.teaching.loop.TeacherContext`, the form in which
the
registry :data:`TEACHERS` (beside them here) hands every teacher, built-in or plug-in, to an experiment.

Each factory reads only what its teacher may know; a setting it needs comes from ``context.options`` with the
original's default (Cur averages over the pool, Cur-T and Cur-L take geometric means, Scot is the authors' stand-in).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from curteach_teaching.names import AGN, BBOX, CUR, CUR_L, CUR_T, OMN, SCOT
from curteach_teaching.registry import Registry
from curteach_teaching.teaching.loop import TeacherContext
from curteach_teaching.teaching.teachers import (
    AgnosticTeacher,
    BlackBoxTeacher,
    CurriculumTeacher,
    LearnerDifficultyTeacher,
    OmniscientTeacher,
    ScotTeacher,
    TeacherDifficultyTeacher,
)

__all__ = ["agn", "omn", "scot", "cur", "cur_t", "cur_l", "bbox", "BUILTIN_TEACHERS", "TEACHERS", "teacher_specs",
           "make_teachers", "plugin_seed_sequence"]


def agn(context: TeacherContext) -> AgnosticTeacher:
    """Agn: a uniformly random start, from the context's generator."""
    return AgnosticTeacher(context.start_states, context.rng)


def omn(context: TeacherContext) -> OmniscientTeacher:
    """Omn: needs ``theta_star`` and ``expert_occupancy_per_start``."""
    return OmniscientTeacher(context.start_states, context.require("theta_star", OMN),
                             context.require("expert_occupancy_per_start", OMN))


def scot(context: TeacherContext) -> ScotTeacher:
    """Scot (``options``: ``scot_variant``, ``scot_features``): needs ``expert_features_per_start``."""
    return ScotTeacher(
        context.start_states,
        context.require("expert_features_per_start", SCOT),
        context.rng,
        context.options.get("scot_variant", "original"),
        mdp=context.mdp,
        expert_policy=context.expert.policy,
        pool=context.pool,
        feature_map=context.options.get("scot_features", "quadratic"),
    )


def cur(context: TeacherContext) -> CurriculumTeacher:
    """Cur (``options``: ``cur_aggregation``, default ``mean``)."""
    return CurriculumTeacher(context.pool, context.expert.log_policy, context.options.get("cur_aggregation", "mean"))


def cur_t(context: TeacherContext) -> TeacherDifficultyTeacher:
    """Cur-T (``options``: ``cur_t_aggregation``, default ``geometric``)."""
    return TeacherDifficultyTeacher(context.pool, context.expert.log_policy,
                                    context.options.get("cur_t_aggregation", "geometric"))


def cur_l(context: TeacherContext) -> LearnerDifficultyTeacher:
    """Cur-L (``options``: ``cur_l_aggregation``, default ``geometric``)."""
    return LearnerDifficultyTeacher(context.pool, context.options.get("cur_l_aggregation", "geometric"))


def bbox(context: TeacherContext) -> BlackBoxTeacher:
    """BBox: needs ``expert_occupancy_per_start``; scores with the MDP's true reward."""
    occupancy = context.require("expert_occupancy_per_start", BBOX)
    if context.mdp.reward.ndim != 1:
        raise ValueError("BBox scores starts by a state reward (S,); this environment's reward depends on the action")
    return BlackBoxTeacher(context.start_states, context.mdp.reward, occupancy)


#: name -> factory, in the IRL original's order of play
BUILTIN_TEACHERS = {AGN: agn, OMN: omn, SCOT: scot, CUR: cur, CUR_T: cur_t, CUR_L: cur_l, BBOX: bbox}

#: Teacher factories: ``factory(context) -> teacher`` (``teacher.select(view, step) -> start index``); the built-ins
#: in the IRL original's order of play.
TEACHERS = Registry("teacher", "curteach.teachers")
for _name, _factory in BUILTIN_TEACHERS.items():
    TEACHERS.add(_name, lambda factory=_factory: factory)


def teacher_specs(specs: Iterable[str], builtin_order: tuple[str, ...]) -> tuple[str, ...]:
    """The teachers of an experiment in playing order: the built-ins of ``builtin_order`` in that order, then every
    other spec (``module:attr`` or an entry point) in the order given.

    Raises:
        ValueError: none given, a spec that does not load (the registry's message), a built-in the experiment does
            not offer, or two teachers shown under the same name.
    """
    specs = [spec.strip() for spec in specs if isinstance(spec, str) and spec.strip()]
    TEACHERS.load_many(specs)  # refuses unknown names and repeated display names
    chosen = {spec for spec in specs if TEACHERS.is_builtin(spec)}
    refused = sorted(spec for spec in chosen if spec not in builtin_order)
    if refused:
        raise ValueError(f"this experiment offers the built-in teachers {list(builtin_order)}; got {refused}")
    return tuple(name for name in builtin_order if name in chosen) + tuple(s for s in specs if s not in chosen)


def make_teachers(specs: Iterable[str], context_for: Callable[[str], Any]) -> dict[str, Any]:
    """``display name -> teacher`` for each spec, built by its factory from ``context_for(spec)`` (a
    :class:`~curteach_teaching.teaching.loop.TeacherContext`).

    Raises:
        ValueError: a factory raised or returned something without ``select`` (the message names the factory).
    """
    teachers = {}
    for spec in specs:
        name, factory = TEACHERS.load(spec)
        teachers[name] = TEACHERS.call(name, factory, context_for(spec), expect=lambda obj: callable(
            getattr(obj, "select", None)))
    return teachers


def plugin_seed_sequence(seed_sequence: np.random.SeedSequence | None, spec: str) -> np.random.SeedSequence:
    """The seed of plug-in ``spec`` in a run seeded by ``seed_sequence``: a child keyed by a checksum of the spec,
    so that a plug-in's draws depend on the run and its own name only (not on which other teachers play) and the
    built-ins' generators are untouched.

    Raises:
        ValueError: ``seed_sequence`` is ``None`` (a plug-in needs the run's seed).
    """
    if seed_sequence is None:
        raise ValueError(f"plug-in {spec!r} needs the run's seed sequence for its generator")
    key = (*seed_sequence.spawn_key, (1 << 32) + zlib.crc32(spec.encode()))  # above every spawned child's index
    return np.random.SeedSequence(seed_sequence.entropy, spawn_key=key)

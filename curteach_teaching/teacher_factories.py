"""The built-in teachers as factories of a :class:`~curteach_teaching.teach.TeacherContext`, the form in which the
registry (:data:`curteach_teaching.registry.TEACHERS`) hands every teacher, built-in or plug-in, to an experiment.

Each factory reads only what its teacher may know; a setting it needs comes from ``context.options`` with the
original's default (Cur averages over the pool, Cur-T and Cur-L take geometric means, Scot is the authors' stand-in).
"""

from __future__ import annotations

from curteach_teaching.names import AGN, BBOX, CUR, CUR_L, CUR_T, OMN, SCOT
from curteach_teaching.teach import TeacherContext
from curteach_teaching.teachers import (
    AgnosticTeacher,
    BlackBoxTeacher,
    CurriculumTeacher,
    LearnerDifficultyTeacher,
    OmniscientTeacher,
    ScotTeacher,
    TeacherDifficultyTeacher,
)

__all__ = ["agn", "omn", "scot", "cur", "cur_t", "cur_l", "bbox", "BUILTIN_TEACHERS"]


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

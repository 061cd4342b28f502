"""curteach teaching layer: planning, difficulty scores, teachers, learners and experiments.

The public names below are imported lazily on first use, so that ``import curteach_teaching.planning`` (and the CLI,
and the experiment workers) do not pay for importing torch and imitation unless they need them.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    "curteach_teaching.curriculum": ("CurriculumBC",),
    "curteach_teaching.selection": ("CurriculumSelection", "EpochRecord", "FullPacing", "LinearPacing"),
    "curteach_teaching.demonstrations": ("DemonstrationPool", "occupancy_per_start", "sample_demonstrations"),
    "curteach_teaching.difficulty": (
        "aggregate",
        "curriculum_scores",
        "demonstration_log_likelihoods",
        "learner_difficulty_scores",
        "log_likelihood",
        "log_difficulty",
        "shortest_path_teacher_difficulty",
        "teacher_difficulty_scores",
        "teacher_log_difficulty",
        "tsp_teacher_difficulty",
    ),
    "curteach_teaching.learners.maxent_irl": ("MaxEntIRLLearner",),
    "curteach_teaching.learners.bc": ("QuadraticSoftmaxPolicy",),
    "curteach_teaching.learners.bc_car": ("BCCarLearner",),
    "curteach_teaching.learners.tabular": ("LinearMaxEntIRL", "TabularSoftmaxBC"),
    "curteach_teaching.observability": ("ProbedPolicyView",),
    "curteach_teaching.registry": ("CAR_TRAINERS", "CURRICULA", "LEARNERS", "TEACHERS", "TRAINERS"),
    "curteach_teaching.teach": ("Learner", "LearnerContext", "Lesson", "LessonBook", "TeacherContext", "teach"),
    "curteach_teaching.planning": (
        "PlanningResult",
        "expected_return",
        "feature_expectations",
        "hard_value_iteration",
        "occupancy",
        "policy_transition_matrix",
        "soft_value_iteration",
    ),
    "curteach_teaching.teachers": (
        "AgnosticTeacher",
        "BlackBoxTeacher",
        "CurriculumTeacher",
        "GradientView",
        "LearnerDifficultyTeacher",
        "OccupancyView",
        "OmniscientTeacher",
        "PolicyView",
        "ScotTeacher",
        "Teacher",
        "TeacherDifficultyTeacher",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

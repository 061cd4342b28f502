"""curteach teaching layer: what a user needs at the top (the teaching loop, teachers, learners, curricula and the
four trainer adapters, the registries, and the planning and demonstrations to start from); helpers stay in their
modules (docs/api).

The public names below are imported lazily on first use, so that ``import curteach_teaching.planning`` (and the CLI,
and the experiment workers) do not pay for importing torch and imitation unless they need them.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    # Algorithm 1: the teaching loop, its protocols and the registries of teachers and learners
    "curteach_teaching.teaching.loop": (
        "LEARNERS", "Learner", "LearnerContext", "Lesson", "LessonBook", "TeacherContext", "teach",
    ),
    "curteach_teaching.teaching.factories": ("TEACHERS",),
    "curteach_teaching.teaching.teachers": (
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
    "curteach_teaching.teaching.observability": ("ProbedPolicyView",),
    # the learners
    "curteach_teaching.learners.maxent_irl": ("MaxEntIRLLearner",),
    "curteach_teaching.learners.bc": ("QuadraticSoftmaxPolicy",),
    "curteach_teaching.learners.bc_car": ("BCCarLearner",),
    "curteach_teaching.learners.tabular": ("LinearMaxEntIRL", "TabularSoftmaxBC"),
    # Algorithm 2: the curriculum core, its registry and the four trainer adapters
    "curteach_teaching.curriculum.core": ("Curriculum",),
    "curteach_teaching.curriculum.selection": (
        "CURRICULA", "CurriculumSelection", "EpochRecord",
    ),
    "curteach_teaching.curriculum.pacing": ("FullPacing", "LinearPacing"),
    "curteach_teaching.curriculum.adapters.bc": ("CurriculumBC",),
    "curteach_teaching.curriculum.uses": ("Order", "Select", "Weight"),
    "curteach_teaching.datasets.scores.ensemble": ("EnsembleTeacher",),
    "curteach_teaching.curriculum.adapters.dagger": ("CurriculumDAgger",),
    "curteach_teaching.curriculum.adapters.adversarial": ("CurriculumAdversarial",),
    "curteach_teaching.curriculum.adapters.mce_irl": ("CurriculumMCEIRL",),
    # the shared bases a user starts from: an expert, its demonstrations and their difficulty
    "curteach_teaching.planning": (
        "PlanningResult", "expected_return", "feature_expectations", "hard_value_iteration", "occupancy",
        "soft_value_iteration",
    ),
    "curteach_teaching.demonstrations": ("DemonstrationPool", "occupancy_per_start", "sample_demonstrations"),
    "curteach_teaching.difficulty": ("curriculum_scores", "learner_difficulty_scores", "teacher_difficulty_scores"),
    "curteach_teaching.registry": ("Registry",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

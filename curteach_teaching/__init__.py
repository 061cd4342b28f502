"""curteach teaching layer: planning, difficulty scores, teachers, learners and experiments."""

from curteach_teaching.curriculum import CurriculumBC, FullPacing, LinearPacing
from curteach_teaching.demonstrations import DemonstrationPool, occupancy_per_start, sample_demonstrations
from curteach_teaching.difficulty import (
    aggregate,
    curriculum_scores,
    learner_difficulty_scores,
    log_difficulty,
    teacher_difficulty_scores,
)
from curteach_teaching.learners import MaxEntIRLLearner
from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy
from curteach_teaching.observability import ProbedPolicyView
from curteach_teaching.planning import (
    PlanningResult,
    expected_return,
    feature_expectations,
    hard_value_iteration,
    occupancy,
    policy_transition_matrix,
    soft_value_iteration,
)
from curteach_teaching.teachers import (
    AgnosticTeacher,
    BlackBoxTeacher,
    CurriculumTeacher,
    LearnerDifficultyTeacher,
    OmniscientTeacher,
    ScotTeacher,
    Teacher,
    TeacherDifficultyTeacher,
)

__all__ = [
    "CurriculumBC",
    "FullPacing",
    "LinearPacing",
    "QuadraticSoftmaxPolicy",
    "AgnosticTeacher",
    "BlackBoxTeacher",
    "CurriculumTeacher",
    "DemonstrationPool",
    "LearnerDifficultyTeacher",
    "MaxEntIRLLearner",
    "OmniscientTeacher",
    "ProbedPolicyView",
    "ScotTeacher",
    "Teacher",
    "TeacherDifficultyTeacher",
    "aggregate",
    "curriculum_scores",
    "learner_difficulty_scores",
    "log_difficulty",
    "occupancy_per_start",
    "sample_demonstrations",
    "teacher_difficulty_scores",
    "PlanningResult",
    "expected_return",
    "feature_expectations",
    "hard_value_iteration",
    "occupancy",
    "policy_transition_matrix",
    "soft_value_iteration",
]

"""curteach teaching layer: planning, difficulty scores, teachers, learners and experiments."""

from curteach_teaching.planning import (
    PlanningResult,
    expected_return,
    feature_expectations,
    hard_value_iteration,
    occupancy,
    policy_transition_matrix,
    soft_value_iteration,
)

__all__ = [
    "PlanningResult",
    "expected_return",
    "feature_expectations",
    "hard_value_iteration",
    "occupancy",
    "policy_transition_matrix",
    "soft_value_iteration",
]

"""Deprecated: the navigation teacher difficulty moved to :mod:`curteach_teaching.difficulty`.

Importing this module issues a ``DeprecationWarning`` and re-exports the names from there (which needs the
teaching layer installed). ``curteach_envs`` itself never imports this module.
"""

import warnings

warnings.warn(
    "curteach_envs.nav_difficulty moved to curteach_teaching.difficulty; import the teacher difficulty scores from "
    "there",
    DeprecationWarning,
    stacklevel=2,
)

from curteach_teaching.difficulty import (  # noqa: E402
    DIFFICULTY_VARIANTS,
    NORMALISATION_EPSILON,
    minmax_log,
    shifted_denominator,
    shortest_path_teacher_difficulty,
    teacher_log_difficulty,
    tsp_teacher_difficulty,
)

__all__ = [
    "DIFFICULTY_VARIANTS",
    "NORMALISATION_EPSILON",
    "shifted_denominator",
    "minmax_log",
    "shortest_path_teacher_difficulty",
    "tsp_teacher_difficulty",
    "teacher_log_difficulty",
]

"""Old home of the TSP task; kept so that old imports keep working.

Everything lives in :mod:`curteach_envs.navigation.tsp` now (``optimal_return`` in
:mod:`curteach_envs.navigation.search`).
"""

from curteach_envs.navigation.search import optimal_return
from curteach_envs.navigation.tsp import (
    LEAVE_GRID_REWARD,
    TOUR_REWARD,
    TSP_CHANNEL_NAMES,
    TSP_MAX_GOALS,
    TSP_MAX_MUDS,
    TSP_MIN_GOALS,
    TSPSolution,
    TSPTask,
    TSPTeachEnv,
    exact_tour,
    greedy_tour,
    sample_tsp_task,
    solve_tsp,
)

__all__ = [
    "TSPTask",
    "TSPSolution",
    "TSPTeachEnv",
    "TSP_MIN_GOALS",
    "TSP_MAX_GOALS",
    "TSP_MAX_MUDS",
    "TSP_CHANNEL_NAMES",
    "TOUR_REWARD",
    "LEAVE_GRID_REWARD",
    "solve_tsp",
    "greedy_tour",
    "exact_tour",
    "sample_tsp_task",
    "optimal_return",
]

"""Old home of the shortest-path task; kept so that old imports keep working.

Everything lives in :mod:`curteach_envs.navigation.shortest_path` now (``optimal_return`` in
:mod:`curteach_envs.navigation.search`).
"""

from curteach_envs.navigation.search import optimal_return
from curteach_envs.navigation.shortest_path import (
    GOAL_REWARD,
    MIN_GOAL_GAP,
    SP_CHANNEL_NAMES,
    SP_MAX_BOMBS,
    SP_MAX_DEMOS_PER_TASK,
    SP_MAX_GOALS,
    SP_MAX_MUDS,
    TOO_EASY_REWARD,
    ShortestPathSolution,
    ShortestPathTask,
    ShortestPathTeachEnv,
    count_shortest_path_sequences,
    sample_shortest_path_task,
    shortest_path_optimal_sequences,
    shortest_path_rejection,
    solve_shortest_path,
)

__all__ = [
    "ShortestPathTask",
    "ShortestPathSolution",
    "ShortestPathTeachEnv",
    "SP_MAX_GOALS",
    "SP_MAX_MUDS",
    "SP_MAX_BOMBS",
    "SP_MAX_DEMOS_PER_TASK",
    "SP_CHANNEL_NAMES",
    "GOAL_REWARD",
    "TOO_EASY_REWARD",
    "MIN_GOAL_GAP",
    "solve_shortest_path",
    "shortest_path_rejection",
    "sample_shortest_path_task",
    "shortest_path_optimal_sequences",
    "count_shortest_path_sequences",
    "optimal_return",
]

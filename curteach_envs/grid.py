"""Old home of the navigation grid mechanics; kept so that old imports keep working.

The names live in the navigation wing now: geometry, poses and :class:`GridTask` in
:mod:`curteach_envs.navigation.grid`; the original's Dijkstra and the exact solvers in
:mod:`curteach_envs.navigation.search`; :class:`NavigationEnv` and :func:`table_to_tabular` in
:mod:`curteach_envs.navigation.env`; ``check_int`` in :mod:`curteach_envs._util`.
"""

from curteach_envs._util import check_int  # noqa: F401  (old import path)
from curteach_envs.navigation.env import NavigationEnv, table_to_tabular
from curteach_envs.navigation.grid import (
    ACTION_NAMES,
    ARRIVAL_TERMINAL,
    DIRECTION_NAMES,
    HORIZON,
    MOVE,
    N_ACTIONS,
    N_CELLS,
    N_DIRECTIONS,
    N_POSES,
    NEXT_POSE,
    SIZE,
    STEP,
    TURN_LEFT,
    TURN_RIGHT,
    GridTask,
    agent_planes,
    check_cell_list,
)
from curteach_envs.navigation.search import (
    FORBIDDEN_EXIT_REWARD,
    SearchResult,
    count_optimal_sequences,
    dijkstra,
    forbid_exits,
    optimal_action_mask,
    optimal_return,
    optimal_sequences,
    sequences_in_mask,
    solve_table,
)

__all__ = [
    "SIZE",
    "N_CELLS",
    "N_DIRECTIONS",
    "N_POSES",
    "N_ACTIONS",
    "HORIZON",
    "MOVE",
    "TURN_LEFT",
    "TURN_RIGHT",
    "ACTION_NAMES",
    "DIRECTION_NAMES",
    "STEP",
    "NEXT_POSE",
    "ARRIVAL_TERMINAL",
    "SearchResult",
    "dijkstra",
    "solve_table",
    "optimal_action_mask",
    "count_optimal_sequences",
    "optimal_sequences",
    "sequences_in_mask",
    "optimal_return",
    "table_to_tabular",
    "forbid_exits",
    "FORBIDDEN_EXIT_REWARD",
    "agent_planes",
    "check_cell_list",
    "NavigationEnv",
    "GridTask",
]

"""The navigation wing: the grid-world tasks ``ShortestPathTeach-v0`` and ``TSPTeach-v0`` and their datasets.

Modules (in the manner of Minigrid's ``core/``):

* :mod:`~curteach_envs.navigation.grid`: geometry, poses, moves and turns, observation planes, the task base class;
* :mod:`~curteach_envs.navigation.dynamics`: the rules of both tasks as batched array functions
  (:class:`~curteach_envs.navigation.dynamics.TaskBatch`), the one source of the envs' steps, the tasks' tables and
  observations, and the teaching layer's batched evaluation;
* :mod:`~curteach_envs.navigation.search`: the original's Dijkstra, exact solving, counting optimal sequences;
* :mod:`~curteach_envs.navigation.env`: the Gymnasium base class, the table export, replay of an action sequence;
* :mod:`~curteach_envs.navigation.shortest_path`, :mod:`~curteach_envs.navigation.tsp`: task sampling, rejection
  rules, optimal and greedy solutions, the two environments;
* :mod:`~curteach_envs.navigation.dataset`: the dataset types and the one-file format;
  :mod:`~curteach_envs.navigation.generate`: seeded parallel generation;
* :mod:`~curteach_envs.navigation.render`: text and pictures.

See docs/environments/navigation.md.
"""

from curteach_envs.navigation.dataset import (
    COLUMNS,
    SPLITS,
    NavigationDataset,
    NavigationSplit,
    load_dataset,
    save_dataset,
    split_statistics,
)
from curteach_envs.navigation.dynamics import (
    EXIT_REWARD,
    GOAL_REWARD,
    KINDS,
    LEAVE_GRID_REWARD,
    MUD_REWARD,
    SHORTEST_PATH,
    STEP_REWARD,
    TOUR_REWARD,
    TSP,
    TaskBatch,
)
from curteach_envs.navigation.env import NavigationEnv, replay, table_to_tabular
from curteach_envs.navigation.generate import SPLIT_SIZES, generate_dataset
from curteach_envs.navigation.grid import (
    ACTION_NAMES,
    DIRECTION_NAMES,
    HORIZON,
    N_ACTIONS,
    N_CELLS,
    N_DIRECTIONS,
    N_POSES,
    NEXT_POSE,
    SIZE,
    GridTask,
    agent_planes,
)
from curteach_envs.navigation.render import NAV_LEGEND, nav_ansi, nav_rgb
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
from curteach_envs.navigation.shortest_path import (
    ShortestPathSolution,
    ShortestPathTask,
    ShortestPathTeachEnv,
    count_shortest_path_sequences,
    sample_shortest_path_task,
    shortest_path_optimal_sequences,
    shortest_path_rejection,
    solve_shortest_path,
)
from curteach_envs.navigation.tsp import (
    TSPSolution,
    TSPTask,
    TSPTeachEnv,
    exact_tour,
    greedy_tour,
    sample_tsp_task,
    solve_tsp,
)

__all__ = [
    # grid
    "SIZE",
    "N_CELLS",
    "N_DIRECTIONS",
    "N_POSES",
    "N_ACTIONS",
    "HORIZON",
    "ACTION_NAMES",
    "DIRECTION_NAMES",
    "NEXT_POSE",
    "GridTask",
    "agent_planes",
    # rules, batched
    "SHORTEST_PATH",
    "TSP",
    "KINDS",
    "STEP_REWARD",
    "MUD_REWARD",
    "GOAL_REWARD",
    "EXIT_REWARD",
    "TOUR_REWARD",
    "LEAVE_GRID_REWARD",
    "TaskBatch",
    # search
    "SearchResult",
    "dijkstra",
    "solve_table",
    "optimal_action_mask",
    "count_optimal_sequences",
    "optimal_sequences",
    "sequences_in_mask",
    "optimal_return",
    "forbid_exits",
    "FORBIDDEN_EXIT_REWARD",
    # env
    "NavigationEnv",
    "table_to_tabular",
    "replay",
    # tasks
    "ShortestPathTask",
    "ShortestPathSolution",
    "ShortestPathTeachEnv",
    "solve_shortest_path",
    "shortest_path_rejection",
    "sample_shortest_path_task",
    "shortest_path_optimal_sequences",
    "count_shortest_path_sequences",
    "TSPTask",
    "TSPSolution",
    "TSPTeachEnv",
    "solve_tsp",
    "greedy_tour",
    "exact_tour",
    "sample_tsp_task",
    # datasets
    "SPLITS",
    "SPLIT_SIZES",
    "COLUMNS",
    "NavigationSplit",
    "NavigationDataset",
    "generate_dataset",
    "save_dataset",
    "load_dataset",
    "split_statistics",
    # rendering
    "nav_ansi",
    "nav_rgb",
    "NAV_LEGEND",
]

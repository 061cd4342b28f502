"""curteach environments: ``CarTeach-v0``, ``ShortestPathTeach-v0``, ``TSPTeach-v0`` and their tabular export;
``MetaWorldTask-v0`` (:mod:`curteach_envs.metaworld`) where the ``metaworld`` package is installed.

Importing ``gymnasium`` registers the ids (through the ``gymnasium.envs`` entry point); importing this package
registers them as well. The navigation tasks and their datasets live in :mod:`curteach_envs.navigation`. This package
depends on gymnasium, NumPy and SciPy only.
"""

# id -> entry point. Later environments add their line here. Defined before any import of gymnasium: importing
# gymnasium calls register_envs() through the entry point while this package may still be initialising.
_ENTRY_POINTS = {
    "CarTeach-v0": "curteach_envs.car:CarTeachEnv",
    "ShortestPathTeach-v0": "curteach_envs.navigation.shortest_path:ShortestPathTeachEnv",
    "TSPTeach-v0": "curteach_envs.navigation.tsp:TSPTeachEnv",
}
ENV_IDS = tuple(_ENTRY_POINTS)
# Ids whose environments need an optional package (imported when one is built, so registering them costs nothing):
# id -> (entry point, default kwargs, time limit). Not in ENV_IDS: they do not render.
_OPTIONAL_ENTRY_POINTS = {
    "MetaWorldTask-v0": ("curteach_envs.metaworld:MetaWorldTaskEnv", {"task": "reach-v3"}, 500),  # `metaworld` extra
}


def register_envs() -> None:
    """Register every curteach id in Gymnasium's root namespace (idempotent)."""
    from gymnasium.envs.registration import register, registry

    for env_id, entry_point in _ENTRY_POINTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point)
    for env_id, (entry_point, kwargs, max_episode_steps) in _OPTIONAL_ENTRY_POINTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point, kwargs=kwargs, max_episode_steps=max_episode_steps)


from curteach_envs.car import (  # noqa: E402
    CAR_ACTION_NAMES,
    CAR_FEATURE_NAMES,
    CAR_TRUE_WEIGHTS,
    N_TASK_TYPES,
    CarTeachEnv,
    car_reward,
    car_tabular,
    sample_road,
)
from curteach_envs.navigation.shortest_path import (  # noqa: E402
    ShortestPathSolution,
    ShortestPathTask,
    ShortestPathTeachEnv,
    sample_shortest_path_task,
    solve_shortest_path,
)
from curteach_envs.navigation.tsp import (  # noqa: E402
    TSPSolution,
    TSPTask,
    TSPTeachEnv,
    exact_tour,
    greedy_tour,
    sample_tsp_task,
    solve_tsp,
)
from curteach_envs.tabular import TabularMDP  # noqa: E402

__all__ = [
    "CAR_ACTION_NAMES",
    "CAR_FEATURE_NAMES",
    "CAR_TRUE_WEIGHTS",
    "ENV_IDS",
    "N_TASK_TYPES",
    "CarTeachEnv",
    "ShortestPathSolution",
    "ShortestPathTask",
    "ShortestPathTeachEnv",
    "TSPSolution",
    "TSPTask",
    "TSPTeachEnv",
    "TabularMDP",
    "exact_tour",
    "greedy_tour",
    "sample_shortest_path_task",
    "sample_tsp_task",
    "solve_shortest_path",
    "solve_tsp",
    "car_reward",
    "car_tabular",
    "register_envs",
    "sample_road",
]

register_envs()

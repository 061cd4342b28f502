"""Old home of the navigation datasets; kept so that old imports keep working.

The dataset types and the file format live in :mod:`curteach_envs.navigation.dataset`, the seeded parallel
generation in :mod:`curteach_envs.navigation.generate` and :func:`replay` in :mod:`curteach_envs.navigation.env`.
The conversion of a split's demonstrations to imitation ``Trajectory`` objects (formerly
``NavigationSplit.trajectories()``) is ``curteach_teaching.demonstrations.navigation_trajectories(split)``.
"""

from curteach_envs.navigation.dataset import (
    COLUMNS,
    FORMAT,
    KINDS,
    SPLITS,
    VERSION,
    NavigationDataset,
    NavigationSplit,
    load_dataset,
    save_dataset,
    split_statistics,
)
from curteach_envs.navigation.env import replay
from curteach_envs.navigation.generate import SPLIT_SIZES, TSP_CHUNK, generate_dataset

__all__ = [
    "FORMAT",
    "VERSION",
    "KINDS",
    "SPLITS",
    "SPLIT_SIZES",
    "TSP_CHUNK",
    "COLUMNS",
    "NavigationSplit",
    "NavigationDataset",
    "generate_dataset",
    "save_dataset",
    "load_dataset",
    "replay",
    "split_statistics",
]

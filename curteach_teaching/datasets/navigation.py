"""The navigation datasets (``make-dataset shortest-path|tsp``) as Minari datasets.

Each split becomes one dataset, ``curteach/<kind>/<split>-v0`` (kind ``shortest-path`` or ``tsp``), and each
demonstration one episode: its task layout is stored as the episode's reset options,
``{"task": {"start", "direction", "goals", "muds"[, "bombs"]}}`` (cells ``0..35``), and
``env.reset(options=...)`` of ``ShortestPathTeach-v0`` / ``TSPTeach-v0`` rebuilds the task, so the stored actions
replay to the stored observations and rewards. The seed is ``None``: a layout is not a draw of the environment's own
task distribution (generation draws per configuration, with the original's rejection rules), so no reset seed could
give it. Per-episode metadata also holds ``task_index``, ``n_goals`` and the split's demonstration columns
(``reward``, ``turns``, ...; see :data:`~curteach_envs.navigation.dataset.DEMO_COLUMNS`), usable as task scores.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import gymnasium as gym
import numpy as np

from curteach_teaching.datasets.pool import EpisodePool
from curteach_teaching.datasets.writing import write_pool

__all__ = ["NAVIGATION_ENV_IDS", "navigation_dataset_id", "navigation_pool", "write_navigation_dataset",
           "check_minari_out"]

#: The environment of each navigation kind.
NAVIGATION_ENV_IDS = {"shortest_path": "ShortestPathTeach-v0", "tsp": "TSPTeach-v0"}
# per-demonstration columns that are not one number per episode, or are the episode itself
_NOT_METADATA = ("task_index", "lengths", "actions", "greedy_actions")


def navigation_dataset_id(kind: str, split: str, namespace: str = "curteach") -> str:
    """``namespace/<kind with '-'>/<split>-v0``, e.g. ``curteach/shortest-path/train-v0``."""
    return f"{namespace}/{kind.replace('_', '-')}/{split}-v0"


def check_minari_out(out: str | os.PathLike, kind: str, namespace: str = "curteach") -> None:
    """A one-line ValueError before any generation if ``out`` cannot receive the datasets of ``kind`` (a name with
    ``-`` or ``_``): ``out`` is a file, a split's dataset exists there, or the folder cannot be written."""
    from curteach_envs.navigation.dataset import SPLITS

    out = Path(out)
    if not str(out).strip():
        raise ValueError("--out must name a folder")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} exists and is not a folder")
    for split in SPLITS:
        target = out / navigation_dataset_id(kind.replace("-", "_"), split, namespace)
        if target.exists():
            raise ValueError(f"a dataset already exists at {str(target)!r}; remove it or choose another --out")
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"--out {str(out)!r}: cannot write in {str(existing)!r}")


def _layout(task) -> dict:
    fields = ("goals", "muds", "bombs") if hasattr(task, "bombs") else ("goals", "muds")
    return {"start": int(task.start), "direction": int(task.direction),
            **{name: [int(c) for c in getattr(task, name)] for name in fields}}


def navigation_pool(split, *, group: str = "") -> EpisodePool:
    """A navigation split as an :class:`EpisodePool` (see the module docstring for what each episode holds).

    Episode ``i`` (``L_i`` actions): ``obs (L_i + 1, 7, 6, 6)`` float32 as the environment returns them, ``acts
    (L_i,)`` int64, ``rews (L_i,)`` float64, ``terminal=True``; the environment spec is the kind's registered one
    (its ``horizon`` raised to the longest demonstration if that is longer).
    """
    from imitation.data.types import TrajectoryWithRew

    import curteach_envs  # noqa: F401  (registers the environment ids)
    from curteach_envs.navigation.dataset import DEMO_COLUMNS
    from curteach_envs.navigation.env import replay

    columns = [c for c in DEMO_COLUMNS[split.kind] if c not in _NOT_METADATA]
    trajectories, metadata = [], []
    for i in range(split.n_demos):
        task = split.task(i)
        acts = split.actions(i).astype(np.int64)
        poses, masks, rewards, ended = replay(task, acts)
        trajectories.append(TrajectoryWithRew(obs=task.observations(poses, masks).astype(np.float32, copy=False),
                                              acts=acts, infos=None, terminal=bool(ended),
                                              rews=rewards.astype(np.float64)))
        meta = {"options": {"task": _layout(task)}, "task_index": int(split["task_index"][i]),
                "n_goals": int(task.n_goals)}
        meta.update({c: int(split[c][i]) for c in columns})
        metadata.append(meta)
    spec = gym.spec(NAVIGATION_ENV_IDS[split.kind])
    longest = int(split["lengths"].max()) if split.n_demos else 0
    if longest > spec.kwargs.get("horizon", 30):  # the environment would truncate a stored episode
        spec = dataclasses.replace(spec, kwargs={**spec.kwargs, "horizon": longest})
    env = gym.make(spec)
    try:
        observation_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    return EpisodePool.from_trajectories(trajectories, observation_space, action_space, group=group,
                                         metadata=metadata, env_spec=spec)


def write_navigation_dataset(
    dataset, out: str | os.PathLike, *, data_format: str = "hdf5", namespace: str = "curteach"
) -> list[Path]:
    """Write every split of a :class:`~curteach_envs.navigation.dataset.NavigationDataset` as a Minari dataset under
    ``out`` (a datasets folder: ``MINARI_DATASETS_PATH=out`` makes them loadable by id).

    Returns:
        The datasets' folders, one per split, in the dataset's split order.

    Raises:
        ValueError: a dataset of the same id exists under ``out`` (checked for every split before writing any).
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} exists and is not a folder")
    ids = {name: navigation_dataset_id(dataset.kind, name, namespace) for name in dataset.splits}
    for dataset_id in ids.values():
        if (out / dataset_id).exists():
            raise ValueError(f"a dataset already exists at {str(out / dataset_id)!r}; remove it or choose another "
                             "--out")
    paths = []
    for name, split in dataset.splits.items():
        pool = navigation_pool(split, group=ids[name])
        description = (f"curteach {dataset.kind.replace('_', '-')} navigation demonstrations, split {name!r}, "
                       f"generation seed {dataset.meta.get('seed')}: optimal demonstrations on seeded task layouts; "
                       "each episode's reset options hold its task layout")
        paths.append(write_pool(pool, ids[name], root=out, data_format=data_format, author="curteach",
                                algorithm_name=f"curteach {dataset.kind} optimal demonstrations",
                                description=description))
    return paths

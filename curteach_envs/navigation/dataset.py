"""Navigation datasets in memory and on disk: the split and dataset types, validation, the one-file format.

File format (``.npz``, compressed, written atomically): a JSON ``meta`` entry and, per split, arrays named
``<split>.<column>``: the tasks (``start, direction, goals, muds, bombs`` padded with -1, ``tries``) and the
demonstrations (``task_index``, concatenated ``actions`` with ``lengths``, ``reward``, ...). See :data:`COLUMNS`.
Datasets are made by :func:`curteach_envs.navigation.generate.generate_dataset`; see
docs/environments/navigation.md.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from curteach_envs._util import atomic_write
from curteach_envs.navigation.dynamics import KINDS
from curteach_envs.navigation.shortest_path import ShortestPathTask
from curteach_envs.navigation.tsp import TSPTask

__all__ = [
    "FORMAT",
    "VERSION",
    "verify_split",
    "SPLITS",
    "TASK_COLUMNS",
    "DEMO_COLUMNS",
    "COLUMNS",
    "NavigationSplit",
    "NavigationDataset",
    "save_dataset",
    "load_dataset",
    "split_statistics",
]

FORMAT = "curteach-navigation-dataset"
VERSION = 1
# Generation order of the original: train, test, val.
SPLITS = ("train", "test", "val")

#: Stored task columns per kind.
TASK_COLUMNS = {
    "shortest_path": ("start", "direction", "goals", "muds", "bombs", "tries"),
    "tsp": ("start", "direction", "goals", "muds", "tries"),
}
#: Stored demonstration columns per kind.
DEMO_COLUMNS = {
    "shortest_path": ("task_index", "lengths", "actions", "reward", "num_optimal_paths", "turns", "mud_steps",
                      "reachable"),
    "tsp": ("task_index", "lengths", "actions", "reward", "turns", "greedy_reward", "greedy_lengths",
            "greedy_actions", "exact_reward"),
}
#: Stored columns per kind (tasks first, then demonstrations).
COLUMNS = {kind: TASK_COLUMNS[kind] + DEMO_COLUMNS[kind] for kind in KINDS}


@dataclass(frozen=True)
class NavigationSplit:
    """One split: its tasks, its demonstrations and their statistics (validated on construction).

    Attributes:
        kind: ``"shortest_path"`` or ``"tsp"``; name: the split name.
        tasks: ``(T,)`` tuple of :class:`ShortestPathTask` / :class:`TSPTask`.
        columns: the stored arrays (see :data:`COLUMNS`); per-demonstration arrays have length ``N``.
    """

    kind: str
    name: str
    tasks: tuple
    columns: dict

    @classmethod
    def from_columns(cls, kind: str, name: str, columns: Mapping[str, np.ndarray]) -> NavigationSplit:
        """Build and validate a split from its stored arrays (ValueError naming the first problem)."""
        columns = _check_columns(kind, name, columns)
        tasks = _build_tasks(kind, name, columns)
        _check_demonstrations(kind, name, columns, len(tasks))
        return cls(kind=kind, name=name, tasks=tasks, columns=columns)

    # ------------------------------------------------------------------ sizes and columns
    @property
    def n_tasks(self) -> int:
        """Number of tasks T."""
        return len(self.tasks)

    @property
    def n_demos(self) -> int:
        """Number of demonstrations N."""
        return int(self.columns["lengths"].size)

    def __getitem__(self, column: str) -> np.ndarray:
        """A stored column, e.g. ``split["reward"]`` ``(N,)``."""
        return self.columns[column]

    @cached_property
    def offsets(self) -> np.ndarray:
        """``(N + 1,)`` start of each demonstration in the concatenated ``actions``."""
        return np.concatenate([[0], np.cumsum(self.columns["lengths"])])

    def actions(self, i: int) -> np.ndarray:
        """``(L_i,)`` int8 actions of demonstration ``i``."""
        o = self.offsets
        return self.columns["actions"][o[i] : o[i + 1]]

    def greedy_actions(self, i: int) -> np.ndarray:
        """``(L,)`` int8 actions of the greedy tour of TSP demonstration ``i``."""
        if self.kind != "tsp":
            raise ValueError("greedy tours exist only in TSP datasets")
        o = self._greedy_offsets
        return self.columns["greedy_actions"][o[i] : o[i + 1]]

    @cached_property
    def _greedy_offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.columns["greedy_lengths"])])

    def task(self, i: int):
        """The task of demonstration ``i``."""
        return self.tasks[int(self.columns["task_index"][i])]

    @property
    def n_goals(self) -> np.ndarray:
        """``(N,)`` goals of each demonstration's task."""
        per_task = np.array([t.n_goals for t in self.tasks], dtype=np.int64)
        return per_task[self.columns["task_index"]]

    @property
    def greedy_gap(self) -> np.ndarray:
        """``(N,)`` optimal reward minus greedy reward (TSP only)."""
        if self.kind != "tsp":
            raise ValueError("the greedy gap exists only in TSP datasets")
        return self.columns["reward"] - self.columns["greedy_reward"]


@dataclass(frozen=True)
class NavigationDataset:
    """A generated or loaded dataset: ``kind``, ``splits`` (name -> :class:`NavigationSplit`) and ``meta``."""

    kind: str
    splits: dict
    meta: dict

    def __getitem__(self, split: str) -> NavigationSplit:
        if split not in self.splits:
            raise ValueError(f"split must be one of {tuple(self.splits)}; got {split!r}")
        return self.splits[split]

    def statistics(self) -> dict:
        """Per split, the summary of :func:`split_statistics`."""
        return {name: split_statistics(split) for name, split in self.splits.items()}


def split_statistics(split: NavigationSplit) -> dict:
    """Summary of a split: counts and means (plain Python numbers, JSON-ready).

    Keys: ``tasks``, ``demonstrations``, ``mean_length``, ``mean_reward``, ``mean_num_optimal_paths``
    (shortest path), ``mean_greedy_gap``, ``negative_greedy_gap``, ``suboptimal_tours`` (TSP: fractions of tasks),
    ``acceptance_rate`` (accepted tasks / sampled tasks).
    """
    c = split.columns
    stats = {
        "tasks": split.n_tasks,
        "demonstrations": split.n_demos,
        "mean_length": float(c["lengths"].mean()),
        "mean_reward": float(c["reward"].mean()),
    }
    if split.kind == "shortest_path":
        stats["mean_num_optimal_paths"] = float(c["num_optimal_paths"].mean())
    else:
        stats["mean_num_optimal_paths"] = 1.0
        stats["mean_greedy_gap"] = float(split.greedy_gap.mean())
        stats["negative_greedy_gap"] = float((split.greedy_gap < 0).mean())
        stats["suboptimal_tours"] = float((c["reward"] < c["exact_reward"]).mean())
    stats["acceptance_rate"] = float(split.n_tasks / c["tries"].sum())
    return stats


# ------------------------------------------------------------------------------------------------------------------
# Validation of stored arrays.


def _fail(name: str, message: str):
    raise ValueError(f"invalid dataset split {name!r}: {message}")


def _check_columns(kind: str, name: str, columns: Mapping[str, np.ndarray]) -> dict:
    missing = [c for c in COLUMNS[kind] if c not in columns]
    if missing:
        _fail(name, f"missing columns {missing}")
    out = {}
    for c in COLUMNS[kind]:
        value = np.asarray(columns[c])
        if not np.issubdtype(value.dtype, np.integer):
            _fail(name, f"column {c!r} must hold integers; got dtype {value.dtype}")
        out[c] = value
    n_tasks = out["start"].shape[0]
    for c in TASK_COLUMNS[kind]:
        if out[c].shape[0] != n_tasks:
            _fail(name, f"task column {c!r} has {out[c].shape[0]} rows; expected {n_tasks}")
    n_demos = out["lengths"].shape[0]
    for c in DEMO_COLUMNS[kind]:
        if c in ("actions", "greedy_actions"):
            continue
        if out[c].shape != (n_demos,):
            _fail(name, f"demonstration column {c!r} has shape {out[c].shape}; expected ({n_demos},)")
    return out


def _build_tasks(kind: str, name: str, c: dict) -> tuple:
    tasks = []
    try:
        for i in range(c["start"].shape[0]):
            goals = tuple(int(x) for x in c["goals"][i] if x >= 0)
            muds = tuple(int(x) for x in c["muds"][i] if x >= 0)
            if kind == "shortest_path":
                bombs = tuple(int(x) for x in c["bombs"][i] if x >= 0)
                tasks.append(ShortestPathTask(int(c["start"][i]), int(c["direction"][i]), goals, muds, bombs))
            else:
                tasks.append(TSPTask(int(c["start"][i]), int(c["direction"][i]), goals, muds))
    except ValueError as error:
        _fail(name, f"task {len(tasks)}: {error}")
    if np.any(c["tries"] < 1):
        _fail(name, "column 'tries' must be >= 1")
    return tuple(tasks)


def _check_demonstrations(kind: str, name: str, c: dict, n_tasks: int) -> None:
    if c["task_index"].size and (c["task_index"].min() < 0 or c["task_index"].max() >= n_tasks):
        _fail(name, f"task_index must be in [0, {n_tasks - 1}]")
    for lengths, actions in (("lengths", "actions"), ("greedy_lengths", "greedy_actions")):
        if lengths not in c:
            continue
        if np.any(c[lengths] < 1):
            _fail(name, f"column {lengths!r} must be >= 1")
        if c[actions].ndim != 1 or c[actions].size != int(c[lengths].sum()):
            _fail(name, f"column {actions!r} must hold sum({lengths}) = {int(c[lengths].sum())} actions")
        if c[actions].size and (c[actions].min() < 0 or c[actions].max() > 2):
            _fail(name, f"column {actions!r} must hold actions in {{0, 1, 2}}")
    if kind == "shortest_path":
        if np.any((c["num_optimal_paths"] < 1) | (c["num_optimal_paths"] > 4)):
            _fail(name, "num_optimal_paths must be in [1, 4]")
        if np.any(c["reward"] >= 7):
            _fail(name, "reward must be < 7 (the rejection rule)")


# ------------------------------------------------------------------------------------------------------------------
# Files.


def save_dataset(dataset: NavigationDataset, path: str | os.PathLike) -> Path:
    """Write ``dataset`` to one compressed ``.npz`` file, atomically (temporary file, then ``os.replace``).

    Returns:
        the path written.
    """
    path = Path(path)
    arrays = {"meta": np.array(json.dumps(dataset.meta | {"splits": list(dataset.splits)}))}
    for split_name, split in dataset.splits.items():
        for column, value in split.columns.items():
            arrays[f"{split_name}.{column}"] = value
    atomic_write(path, lambda stream: np.savez_compressed(stream, **arrays), binary=True)
    return path


def load_dataset(path: str | os.PathLike, verify: bool = False) -> NavigationDataset:
    """Load and validate a dataset written by :func:`save_dataset`.

    Args:
        path: the ``.npz`` file.
        verify: also replay every demonstration and check its stored reward and length (:func:`verify_split`).

    Raises:
        ValueError: the file is missing, not an ``.npz`` archive, damaged, of another format or version, a split
            fails validation, or (``verify``) a demonstration does not replay to its stored reward; the message
            names the file and the problem.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no dataset file at {str(path)!r}")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"cannot read dataset {str(path)!r}: not an .npz (zip) archive")
    try:
        with np.load(path, allow_pickle=False) as archive:
            files = set(archive.files)
            meta = json.loads(str(archive["meta"])) if "meta" in files else None
            arrays = {name: archive[name] for name in files if name != "meta"}
    except Exception as error:  # a damaged archive fails in zlib, zipfile, the .npy header parser, ...: all alike
        raise ValueError(f"cannot read dataset {str(path)!r} (damaged?): {type(error).__name__}: {error}") from None
    if meta is None:
        raise ValueError(f"{str(path)!r} is not a curteach navigation dataset (no 'meta' entry)")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{str(path)!r} is not a curteach navigation dataset (format {meta!r})")
    if meta.get("version") != VERSION:
        raise ValueError(f"{str(path)!r} has dataset version {meta.get('version')!r}; this library reads {VERSION}")
    kind = meta.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{str(path)!r}: kind must be one of {KINDS}; got {kind!r}")
    split_names = meta.get("splits")
    if not isinstance(split_names, list) or not split_names or any(s not in SPLITS for s in split_names):
        raise ValueError(f"{str(path)!r}: meta 'splits' must be a non-empty list among {SPLITS}; got {split_names!r}")
    splits = {}
    for split_name in split_names:
        columns = {c: arrays[f"{split_name}.{c}"] for c in COLUMNS[kind] if f"{split_name}.{c}" in arrays}
        try:
            splits[split_name] = NavigationSplit.from_columns(kind, split_name, columns)
        except ValueError as error:
            raise ValueError(f"{str(path)!r}: {error}") from None
        except Exception as error:  # arrays of a wrong type or shape that passed the archive's own checks
            raise ValueError(f"{str(path)!r}: split {split_name!r} is malformed ({type(error).__name__}: {error})") \
                from None
    meta = {k: v for k, v in meta.items() if k != "splits"}
    dataset = NavigationDataset(kind=kind, splits=splits, meta=meta)
    if verify:
        for split in splits.values():
            bad = verify_split(split)
            if bad:
                raise ValueError(f"{str(path)!r}: {len(bad)} demonstration(s) of split {split.name!r} do not replay to "
                                 f"their stored reward and length (first: {bad[0]})")
    return dataset


def verify_split(split: NavigationSplit) -> list[int]:
    """Replay every demonstration of ``split`` in its task's dynamics (:func:`~curteach_envs.navigation.env.replay`)
    and return the indices of those that do not end the episode exactly at their last action with their stored
    ``reward``. One replay per demonstration, a fraction of a millisecond each."""
    from curteach_envs.navigation.env import replay

    bad = []
    for i in range(split.n_demos):
        try:
            _, _, rewards, ended = replay(split.task(i), split.actions(i))
        except ValueError:  # an action after the end of the episode
            bad.append(i)
            continue
        if not ended or int(rewards.sum()) != int(split["reward"][i]):
            bad.append(i)
    return bad

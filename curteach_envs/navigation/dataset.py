"""Task datasets for the navigation experiments: generation (parallel, seeded), one compressed file, loading.

The counts follow the authors' generators (``../shared/spec/navigation.md``, Sections 1.6 and 2.5):

* **Shortest path**: for every configuration ``G in {1, 2}``, ``M in 0..12`` muds, ``B in 0..12`` bombs (338 of
  them), tasks are drawn until the configuration holds at least ``n`` demonstrations, ``n`` = 50 (train), 15 (test),
  5 (val). Each accepted task contributes its first 3 optimal paths, so a configuration can overshoot by 2.
* **TSP**: for every ``G in {2, 3, 4}``, ``n`` tasks = 2000 (train), 500 (test), 100 (val), one tour each.

Seeding: chunk ``c`` of split ``s`` draws from ``SeedSequence(seed, spawn_key=(kind, s, c))``. A chunk is one
shortest-path configuration, or 50 TSP tasks of one G, so the result does not depend on the number of workers.

File format (``.npz``, compressed, written atomically): a JSON ``meta`` entry and, per split, arrays named
``<split>.<column>``: the tasks (``start, direction, goals, muds, bombs`` padded with -1, ``tries``) and the
demonstrations (``task_index``, concatenated ``actions`` with ``lengths``, ``reward``, ...). See :data:`COLUMNS`.
"""

from __future__ import annotations

import json
import os
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Mapping, Optional, Union

import numpy as np

from curteach_envs.files import atomic_write
from curteach_envs.grid import NEXT_POSE, check_int
from curteach_envs.shortest_path import (
    SP_MAX_BOMBS,
    SP_MAX_GOALS,
    SP_MAX_MUDS,
    ShortestPathTask,
    sample_shortest_path_task,
)
from curteach_envs.tsp import TSP_MAX_GOALS, TSP_MAX_MUDS, TSP_MIN_GOALS, TSPTask, exact_tour, sample_tsp_task

__all__ = [
    "KINDS",
    "SPLITS",
    "SPLIT_SIZES",
    "COLUMNS",
    "NavigationSplit",
    "NavigationDataset",
    "generate_dataset",
    "save_dataset",
    "load_dataset",
    "replay",
    "split_statistics",
]

FORMAT = "curteach-navigation-dataset"
VERSION = 1
KINDS = ("shortest_path", "tsp")
# Generation order of the original: train, test, val.
SPLITS = ("train", "test", "val")
#: Per split: demonstrations per configuration (shortest path) or tasks per goal count (TSP).
SPLIT_SIZES = {
    "shortest_path": {
        "paper": {"train": 50, "test": 15, "val": 5},
        "small": {"train": 2, "test": 1, "val": 1},
    },
    "tsp": {
        "paper": {"train": 2000, "test": 500, "val": 100},
        "small": {"train": 20, "test": 5, "val": 5},
    },
}
TSP_CHUNK = 50

_TASK_COLUMNS = {
    "shortest_path": ("start", "direction", "goals", "muds", "bombs", "tries"),
    "tsp": ("start", "direction", "goals", "muds", "tries"),
}
_DEMO_COLUMNS = {
    "shortest_path": ("task_index", "lengths", "actions", "reward", "num_optimal_paths", "turns", "mud_steps",
                      "reachable"),
    "tsp": ("task_index", "lengths", "actions", "reward", "turns", "greedy_reward", "greedy_lengths",
            "greedy_actions", "exact_reward"),
}
#: Stored columns per kind (tasks first, then demonstrations).
COLUMNS = {kind: _TASK_COLUMNS[kind] + _DEMO_COLUMNS[kind] for kind in KINDS}
_PAD = {"goals": SP_MAX_GOALS, "muds": SP_MAX_MUDS, "bombs": SP_MAX_BOMBS}
_TSP_PAD = {"goals": TSP_MAX_GOALS, "muds": TSP_MAX_MUDS}


def _padded(cells, width: int) -> np.ndarray:
    out = np.full(width, -1, dtype=np.int8)
    out[: len(cells)] = cells
    return out


# ------------------------------------------------------------------------------------------------------------------
# Generation, one chunk at a time (a pure function of its seed, run in worker processes).


def _sp_chunk(seed_key: tuple, n_goals: int, n_muds: int, n_bombs: int, n_demos: int) -> dict:
    """Tasks of one configuration until it holds >= ``n_demos`` demonstrations (the original's loop)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed_key[0], spawn_key=seed_key[1:]))
    tasks, demos = [], []
    count = 0
    while count < n_demos:
        task, solution, tries = sample_shortest_path_task(rng, n_goals, n_muds, n_bombs)
        t = len(tasks)
        tasks.append((task.start, task.direction, _padded(task.goals, _PAD["goals"]),
                      _padded(task.muds, _PAD["muds"]), _padded(task.bombs, _PAD["bombs"]), tries))
        for k, path in enumerate(solution.demonstrations):
            demos.append((t, path, solution.reward, solution.num_optimal_paths, solution.turns[k],
                          solution.mud_steps[k], solution.reachable))
            count += 1
    out = {name: np.array([row[i] for row in tasks]) for i, name in enumerate(_TASK_COLUMNS["shortest_path"])}
    out["task_index"] = np.array([d[0] for d in demos], dtype=np.int64)
    out["lengths"] = np.array([len(d[1]) for d in demos], dtype=np.int64)
    out["actions"] = np.concatenate([d[1] for d in demos]).astype(np.int8)
    for i, name in enumerate(("reward", "num_optimal_paths", "turns", "mud_steps", "reachable"), start=2):
        out[name] = np.array([d[i] for d in demos], dtype=np.int64)
    return out


def _tsp_chunk(seed_key: tuple, n_goals: int, n_tasks: int) -> dict:
    """``n_tasks`` accepted TSP tasks with ``n_goals`` goals, with original, greedy and exact tours."""
    rng = np.random.default_rng(np.random.SeedSequence(seed_key[0], spawn_key=seed_key[1:]))
    rows = []
    for _ in range(n_tasks):
        task, solution, tries = sample_tsp_task(rng, n_goals)
        exact_reward, _ = exact_tour(task)
        rows.append((task, solution, tries, exact_reward))
    out = {
        "start": np.array([r[0].start for r in rows], dtype=np.int64),
        "direction": np.array([r[0].direction for r in rows], dtype=np.int64),
        "goals": np.array([_padded(r[0].goals, _TSP_PAD["goals"]) for r in rows]),
        "muds": np.array([_padded(r[0].muds, _TSP_PAD["muds"]) for r in rows]),
        "tries": np.array([r[2] for r in rows], dtype=np.int64),
        "task_index": np.arange(len(rows), dtype=np.int64),
        "lengths": np.array([len(r[1].actions) for r in rows], dtype=np.int64),
        "actions": np.concatenate([r[1].actions for r in rows]).astype(np.int8),
        "reward": np.array([r[1].reward for r in rows], dtype=np.int64),
        "turns": np.array([r[1].turns for r in rows], dtype=np.int64),
        "greedy_reward": np.array([r[1].greedy_reward for r in rows], dtype=np.int64),
        "greedy_lengths": np.array([len(r[1].greedy_actions) for r in rows], dtype=np.int64),
        "greedy_actions": np.concatenate([r[1].greedy_actions for r in rows]).astype(np.int8),
        "exact_reward": np.array([r[3] for r in rows], dtype=np.int64),
    }
    return out


def _run_chunk(job: tuple) -> dict:
    function, args = job
    return {"_sp": _sp_chunk, "_tsp": _tsp_chunk}[function](*args)


def _resolve_sizes(kind: str, split_sizes) -> dict:
    if isinstance(split_sizes, str):
        if split_sizes not in SPLIT_SIZES[kind]:
            raise ValueError(f"split_sizes must be one of {sorted(SPLIT_SIZES[kind])} or a dict; got {split_sizes!r}")
        return dict(SPLIT_SIZES[kind][split_sizes])
    if not isinstance(split_sizes, Mapping) or not split_sizes:
        raise ValueError(f"split_sizes must be 'paper', 'small' or a non-empty dict {{split: size}}; got {split_sizes!r}")
    sizes = {}
    for split, size in split_sizes.items():
        if split not in SPLITS:
            raise ValueError(f"split names must be among {SPLITS}; got {split!r}")
        sizes[split] = check_int(f"split size of {split!r}", size, 1, 1_000_000)
    return {s: sizes[s] for s in SPLITS if s in sizes}


def _jobs(kind: str, sizes: dict, seed: int) -> list[tuple[str, list]]:
    """Per split, the list of chunk jobs in their fixed order."""
    kind_id = KINDS.index(kind)
    plan = []
    for split_id, split in enumerate(SPLITS):
        if split not in sizes:
            continue
        jobs = []
        if kind == "shortest_path":
            configs = [(g, m, b) for g in range(1, SP_MAX_GOALS + 1) for m in range(SP_MAX_MUDS + 1)
                       for b in range(SP_MAX_BOMBS + 1)]
            for c, (g, m, b) in enumerate(configs):
                jobs.append(("_sp", ((seed, kind_id, split_id, c), g, m, b, sizes[split])))
        else:
            c = 0
            for g in range(TSP_MIN_GOALS, TSP_MAX_GOALS + 1):
                for first in range(0, sizes[split], TSP_CHUNK):
                    n = min(TSP_CHUNK, sizes[split] - first)
                    jobs.append(("_tsp", ((seed, kind_id, split_id, c), g, n)))
                    c += 1
        plan.append((split, jobs))
    return plan


def _merge(kind: str, chunks: list[dict]) -> dict:
    task_offset = 0
    parts: dict[str, list] = {name: [] for name in COLUMNS[kind]}
    for chunk in chunks:
        for name in COLUMNS[kind]:
            value = chunk[name]
            if name == "task_index":
                value = value + task_offset
            parts[name].append(value)
        task_offset += len(chunk["start"])
    return {name: np.concatenate(values) for name, values in parts.items()}


def generate_dataset(
    kind: str,
    split_sizes: Union[str, Mapping[str, int]] = "paper",
    seed: int = 0,
    workers: Optional[int] = None,
    progress: bool = True,
) -> "NavigationDataset":
    """Generate a navigation dataset with the original's procedure, in parallel and reproducibly.

    Args:
        kind: ``"shortest_path"`` or ``"tsp"``.
        split_sizes: ``"paper"`` (the original's counts), ``"small"`` (a quick test set) or a dict
            ``{split: n}`` over ``train``, ``test``, ``val`` (demonstrations per configuration for shortest path,
            tasks per goal count for TSP).
        seed: non-negative master seed; the same seed gives the same dataset for any ``workers``.
        workers: processes (default ``os.cpu_count()``); 1 runs in this process.
        progress: show a tqdm progress bar (on stderr).

    Returns:
        :class:`NavigationDataset`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    if workers is None:
        workers = os.cpu_count() or 1
    workers = check_int("workers", workers, 1, 256)
    sizes = _resolve_sizes(kind, split_sizes)
    plan = _jobs(kind, sizes, int(seed))
    all_jobs = [job for _, jobs in plan for job in jobs]
    results: list[Optional[dict]] = [None] * len(all_jobs)

    from tqdm import tqdm

    bar = tqdm(total=len(all_jobs), desc=f"{kind} dataset", unit="chunk", disable=not progress)
    if workers == 1:
        for i, job in enumerate(all_jobs):
            results[i] = _run_chunk(job)
            bar.update(1)
    else:
        import multiprocessing

        # Heavy chunks first (TSP with 4 goals) for a balanced finish; results are placed by index, so the
        # dataset does not depend on the scheduling.
        order = sorted(range(len(all_jobs)), key=lambda i: -all_jobs[i][1][1])
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {pool.submit(_run_chunk, all_jobs[i]): i for i in order}
            from concurrent.futures import as_completed

            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update(1)
    bar.close()
    splits = {}
    position = 0
    for split, jobs in plan:
        columns = _merge(kind, results[position : position + len(jobs)])
        position += len(jobs)
        splits[split] = NavigationSplit.from_columns(kind, split, columns)
    meta = {"format": FORMAT, "version": VERSION, "kind": kind, "seed": int(seed), "split_sizes": sizes}
    return NavigationDataset(kind=kind, splits=splits, meta=meta)


# ------------------------------------------------------------------------------------------------------------------
# The in-memory dataset.


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
    def from_columns(cls, kind: str, name: str, columns: Mapping[str, np.ndarray]) -> "NavigationSplit":
        """Build and validate a split from its stored arrays (ValueError naming the first problem)."""
        columns = _check_columns(kind, name, columns)
        tasks = _build_tasks(kind, name, columns)
        _check_demonstrations(kind, name, columns, len(tasks))
        return cls(kind=kind, name=name, tasks=tasks, columns=columns)

    # ------------------------------------------------------------------ sizes and columns
    @property
    def n_tasks(self) -> int:
        return len(self.tasks)

    @property
    def n_demos(self) -> int:
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

    # ------------------------------------------------------------------ demonstrations
    def trajectories(self, dtype=np.float32) -> list:
        """The demonstrations as imitation ``Trajectory`` objects with their observations.

        Each has ``obs (L + 1, 7, 6, 6)`` (the last one after the final action, as the environment returns it),
        ``acts (L,)`` int64, ``infos=None`` and ``terminal=True``.
        """
        from imitation.data.types import Trajectory

        out = []
        for i in range(self.n_demos):
            task = self.task(i)
            acts = self.actions(i).astype(np.int64)
            poses, masks, _, _ = replay(task, acts)
            obs = task.observations(poses, masks).astype(dtype, copy=False)
            out.append(Trajectory(obs=obs, acts=acts, infos=None, terminal=True))
        return out


def replay(task, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Play ``actions`` in the task's dynamics (no horizon).

    Returns:
        ``poses (L + 1,)`` (``-1`` once off the grid), ``masks (L + 1,)`` visited-goal masks, ``rewards (L,)`` and
        whether the last action ended the episode.

    Raises:
        ValueError: an action is not in ``{0, 1, 2}`` or follows the end of the episode.
    """
    nxt, reward = task.dynamics()
    actions = np.asarray(actions)
    if actions.size and (actions.min() < 0 or actions.max() > 2):
        raise ValueError("actions must be in {0, 1, 2}")
    state = task.start_state
    poses = np.empty(actions.size + 1, dtype=np.int64)
    masks = np.zeros(actions.size + 1, dtype=np.int64)
    rewards = np.empty(actions.size, dtype=np.int64)
    poses[0], masks[0] = task.decode(state)
    ended = False
    for t, a in enumerate(actions.tolist()):
        if ended:
            raise ValueError(f"action {t} follows the end of the episode")
        rewards[t] = reward[state, a]
        following = int(nxt[state, a])
        if following < 0:
            ended = True
            poses[t + 1], masks[t + 1] = NEXT_POSE[poses[t], a], masks[t]
        else:
            state = following
            poses[t + 1], masks[t + 1] = task.decode(state)
    return poses, masks, rewards, ended


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
    for c in _TASK_COLUMNS[kind]:
        if out[c].shape[0] != n_tasks:
            _fail(name, f"task column {c!r} has {out[c].shape[0]} rows; expected {n_tasks}")
    n_demos = out["lengths"].shape[0]
    for c in _DEMO_COLUMNS[kind]:
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


def save_dataset(dataset: NavigationDataset, path: Union[str, os.PathLike]) -> Path:
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


def load_dataset(path: Union[str, os.PathLike]) -> NavigationDataset:
    """Load and validate a dataset written by :func:`save_dataset`.

    Raises:
        ValueError: the file is missing, not an ``.npz`` archive, corrupt, of another format or version, or a split
            fails validation (the message names the problem).
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
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, KeyError) as error:
        raise ValueError(f"cannot read dataset {str(path)!r}: {type(error).__name__}: {error}") from error
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
        splits[split_name] = NavigationSplit.from_columns(kind, split_name, columns)
    meta = {k: v for k, v in meta.items() if k != "splits"}
    return NavigationDataset(kind=kind, splits=splits, meta=meta)

"""Seeded, parallel generation of the navigation datasets with the original's procedure.

The counts follow the authors' generators (see docs/environments/navigation.md):

* **Shortest path**: for every configuration ``G in {1, 2}``, ``M in 0..12`` muds, ``B in 0..12`` bombs (338 of
  them), tasks are drawn until the configuration holds at least ``n`` demonstrations, ``n`` = 50 (train), 15 (test),
  5 (val). Each accepted task contributes its first 3 optimal paths, so a configuration can overshoot by 2.
* **TSP**: for every ``G in {2, 3, 4}``, ``n`` tasks = 2000 (train), 500 (test), 100 (val), one tour each.

Seeding: chunk ``c`` of split ``s`` draws from ``SeedSequence(seed, spawn_key=(kind, s, c))``. A chunk is one
shortest-path configuration, or 50 TSP tasks of one G, so the result does not depend on the number of workers.
Chunks run in worker processes (``spawn``); each is a pure function of its seed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from curteach_envs._util import atomic_write, check_int, spawned_pool
from curteach_envs.navigation.dataset import (
    COLUMNS,
    FORMAT,
    SPLITS,
    TASK_COLUMNS,
    VERSION,
    NavigationDataset,
    NavigationSplit,
)
from curteach_envs.navigation.dynamics import KINDS
from curteach_envs.navigation.shortest_path import SP_MAX_BOMBS, SP_MAX_GOALS, SP_MAX_MUDS, sample_shortest_path_task
from curteach_envs.navigation.tsp import TSP_MAX_GOALS, TSP_MAX_MUDS, TSP_MIN_GOALS, exact_tour, sample_tsp_task

__all__ = ["SPLIT_SIZES", "TSP_CHUNK", "generate_dataset"]

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
#: TSP tasks per chunk (one seed each).
TSP_CHUNK = 50

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
    out = {name: np.array([row[i] for row in tasks]) for i, name in enumerate(TASK_COLUMNS["shortest_path"])}
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


def _run_indexed_chunk(item: tuple) -> tuple:
    index, job = item
    return index, _run_chunk(job)



def _chunk_path(chunk_dir: Path, kind: str, job: tuple) -> Path:
    """A finished chunk's file, named by a hash of everything it depends on (format version, kind, job)."""
    key = json.dumps([FORMAT, VERSION, kind, job], default=int)
    return chunk_dir / f"chunk-{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz"


def _save_chunk(chunk_dir: Path, kind: str, job: tuple, chunk: dict) -> None:
    atomic_write(_chunk_path(chunk_dir, kind, job), lambda stream: np.savez(stream, **chunk), binary=True)


def _load_chunk(chunk_dir: Path, kind: str, job: tuple) -> dict | None:
    """A saved chunk, or ``None`` if it is missing or unreadable (then it is generated again)."""
    path = _chunk_path(chunk_dir, kind, job)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except Exception:  # a damaged cache entry costs a recomputation, nothing more
        return None


def _resolve_sizes(kind: str, split_sizes) -> dict:
    if isinstance(split_sizes, str):
        if split_sizes not in SPLIT_SIZES[kind]:
            raise ValueError(f"split_sizes must be one of {sorted(SPLIT_SIZES[kind])} or a dict; got {split_sizes!r}")
        return dict(SPLIT_SIZES[kind][split_sizes])
    if not isinstance(split_sizes, Mapping) or not split_sizes:
        raise ValueError(
            f"split_sizes must be 'paper', 'small' or a non-empty dict {{split: size}}; got {split_sizes!r}"
        )
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
    split_sizes: str | Mapping[str, int] = "paper",
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
    chunk_dir: str | os.PathLike | None = None,
) -> NavigationDataset:
    """Generate a navigation dataset with the original's procedure, in parallel and reproducibly.

    Args:
        kind: ``"shortest_path"`` or ``"tsp"``.
        split_sizes: ``"paper"`` (the original's counts), ``"small"`` (a quick test set) or a dict
            ``{split: n}`` over ``train``, ``test``, ``val`` (demonstrations per configuration for shortest path,
            tasks per goal count for TSP).
        seed: non-negative master seed; the same seed gives the same dataset for any ``workers``.
        workers: processes (default ``os.cpu_count()``); 1 runs in this process.
        progress: show a tqdm progress bar (on stderr).
        chunk_dir: if given, every finished chunk is saved there as it arrives and chunks saved by an earlier,
            interrupted call with the same arguments are loaded instead of generated again (the result is the
            same). The caller removes the folder once the dataset is saved.

    Returns:
        :class:`~curteach_envs.navigation.dataset.NavigationDataset`.
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
    results: list[dict | None] = [None] * len(all_jobs)

    from tqdm import tqdm

    cached = 0
    if chunk_dir is not None:
        chunk_dir = Path(chunk_dir)
        for i, job in enumerate(all_jobs):
            results[i] = _load_chunk(chunk_dir, kind, job)
        cached = sum(r is not None for r in results)
    todo = [i for i, r in enumerate(results) if r is None]

    def keep(i: int, chunk: dict) -> None:
        results[i] = chunk
        if chunk_dir is not None:
            _save_chunk(chunk_dir, kind, all_jobs[i], chunk)
        bar.update(1)

    bar = tqdm(total=len(all_jobs), initial=cached, desc=f"{kind} dataset", unit="chunk", disable=not progress)
    try:
        if workers == 1 or len(todo) <= 1:
            for i in todo:
                keep(i, _run_chunk(all_jobs[i]))
        else:
            # Heavy chunks first (TSP with 4 goals) for a balanced finish; results are placed by index, so the
            # dataset does not depend on the scheduling.
            order = sorted(todo, key=lambda i: -all_jobs[i][1][1])
            # workers ignore Ctrl-C: the driver stops them (terminate) and keeps the chunks it has
            with spawned_pool(min(workers, len(todo))) as pool:
                for i, chunk in pool.imap_unordered(_run_indexed_chunk, [(i, all_jobs[i]) for i in order]):
                    keep(i, chunk)
    finally:
        bar.close()
    splits = {}
    position = 0
    for split, jobs in plan:
        columns = _merge(kind, results[position : position + len(jobs)])
        position += len(jobs)
        splits[split] = NavigationSplit.from_columns(kind, split, columns)
    meta = {"format": FORMAT, "version": VERSION, "kind": kind, "seed": int(seed), "split_sizes": sizes}
    return NavigationDataset(kind=kind, splits=splits, meta=meta)

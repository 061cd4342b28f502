"""What the navigation experiment prepares once per dataset and process: demonstrations, scores, features.

A worker process that runs several (curriculum, run) units of one dataset loads and converts it once
(:func:`prepare`, cached by the file's path and SHA-256). A command that has just loaded and hashed the file itself
hands it over (:func:`hand_over`), so runs computed in its own process neither load nor hash it again.

**Demonstration order.** A dataset file stores its demonstrations in generation order (by goal, mud and bomb counts).
The curricula rank demonstrations with ties broken by position, and Cur-T's teacher scores tie often, so in file
order its ties would favour the configurations generated first (fewer muds and bombs). The original broke ties with
NumPy's unstable sort: an order fixed for a dataset but unrelated to the tasks. :func:`prepare` therefore puts the
training demonstrations in one fixed random order (:data:`TRAINING_ORDER_SEED`), the same for every run and
curriculum, before anything else sees them.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curteach_envs.navigation.dataset import NavigationDataset, NavigationSplit, load_dataset

__all__ = [
    "DEMO_SPLIT_SIZES",
    "FEATURES",
    "NAV_TASKS",
    "PAPER_WINDOW",
    "TRAINING_ORDER_SEED",
    "PreparedDataset",
    "cached_dataset",
    "check_split_sizes",
    "demonstration_features",
    "file_digest",
    "hand_over",
    "prepare",
]

#: Seed of the fixed random order of the training demonstrations (see the module docstring).
TRAINING_ORDER_SEED = 20211206

#: ``--task`` names -> dataset kinds.
NAV_TASKS = {"shortest-path": "shortest_path", "tsp": "tsp"}
#: The batches the paper's Figs. 6, 7 show (the original plots its evaluations 10..110 or 10..60, one per 100 batches;
#: docs/experiments/nav.md).
PAPER_WINDOW = {"shortest_path": (1000, 11000), "tsp": (1000, 6000)}
#: The demo dataset (shortest path, ``curteach nav --scale demo``): demonstrations per configuration in each split
#: (docs/experiments/nav.md#a-demo-that-learns).
DEMO_SPLIT_SIZES = {"train": 10, "val": 1, "test": 1}
#: The features of the appendix's curriculum visualisations (shortest path, TSP), in plotting order.
FEATURES = {
    "shortest_path": ("goals", "muds on the path", "bombs", "optimal reward", "optimal paths"),
    "tsp": ("goals", "greedy gap", "optimal reward"),
}


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_split_sizes(split_sizes: str, kind: str) -> None:
    """``ValueError`` for the demo dataset's sizes with TSP tasks: they are made and measured for shortest path."""
    if split_sizes == "demo" and kind != "shortest_path":
        raise ValueError("--scale demo is made and measured for --task shortest-path; for tsp use small or paper")


def cached_dataset(folder: Path, kind: str, split_sizes: str, seed: int, *, given: Path | None = None,
                   workers: int | None = None, progress: bool = False) -> tuple[Path, NavigationDataset]:
    """``(path, dataset)``: the file ``given``, or else the dataset of ``kind`` tasks, ``split_sizes`` (a name of
    :data:`~curteach_envs.navigation.generate.SPLIT_SIZES` or ``"demo"``: :data:`DEMO_SPLIT_SIZES`) and ``seed``
    cached in ``folder``, generated (by ``workers`` processes) when it is not there; loaded once and checked to hold
    ``kind`` tasks.

    A cache that cannot be read is generated again, with a note on stderr: the same seed gives the same file, so its
    digest is unchanged. A ``given`` file is never replaced.

    Raises:
        ValueError: the demo sizes with TSP, a ``given`` file that cannot be read, a dataset of other tasks.
    """
    from curteach_envs.navigation.dataset import save_dataset
    from curteach_envs.navigation.generate import generate_dataset

    if given is not None:
        path, dataset = given, load_dataset(given)
    else:
        check_split_sizes(split_sizes, kind)
        path, dataset = folder / f"dataset-{kind}-{split_sizes}-seed{seed}.npz", None
        if path.exists():
            try:
                dataset = load_dataset(path)
            except ValueError as error:
                print(f"note: {error}; it is this folder's cache of the generated dataset: generating it again",
                      file=sys.stderr)
        if dataset is None:
            print(f"generating the {split_sizes} {kind} dataset (seed {seed}) into {path}")
            sizes = DEMO_SPLIT_SIZES if split_sizes == "demo" else split_sizes
            save_dataset(generate_dataset(kind, sizes, seed=seed, workers=workers, progress=progress), path)
            dataset = load_dataset(path)
    if dataset.kind != kind:
        raise ValueError(f"dataset {str(path)!r} holds {dataset.kind} tasks, not {kind} (--task)")
    return path, dataset


def demonstration_features(split: NavigationSplit) -> tuple[tuple, np.ndarray]:
    """The curriculum-figure features of every demonstration, each min-max normalised to [0, 1] over the split.

    Returns:
        ``(names, values)``: the feature names (:data:`FEATURES`) and ``(N, F)`` float64 values (a constant feature
        becomes 0).
    """
    if split.kind == "shortest_path":
        bombs = np.array([len(task.bombs) for task in split.tasks], dtype=np.float64)[split["task_index"]]
        raw = [split.n_goals, split["mud_steps"], bombs, split["reward"], split["num_optimal_paths"]]
    else:
        raw = [split.n_goals, split.greedy_gap, split["reward"]]
    values = np.stack([np.asarray(column, dtype=np.float64) for column in raw], axis=1)
    low, high = values.min(axis=0), values.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return FEATURES[split.kind], (values - low) / span


@dataclass
class PreparedDataset:
    """A dataset ready for training: its splits, the training demonstrations as ``Trajectory`` objects, the teacher
    scores per variant and the curriculum-figure features.

    Attributes:
        kind: ``"shortest_path"`` or ``"tsp"``.
        train, val, test: the splits (as stored).
        order: ``(N,)`` the training demonstrations' positions in ``train``, in training order: demonstration ``j``
            of ``trajectories``, ``teacher`` and ``features`` is ``train``'s demonstration ``order[j]``.
        trajectories: ``N`` imitation ``Trajectory`` objects of the training demonstrations.
        teacher: variant (``"original"``, ``"paper"``) -> ``(N,)`` log teacher difficulty.
        feature_names: the names of ``features``' columns; features: ``(N, F)`` in [0, 1].
    """

    kind: str
    train: NavigationSplit
    val: NavigationSplit
    test: NavigationSplit
    order: np.ndarray
    trajectories: list
    teacher: dict
    feature_names: tuple
    features: np.ndarray


_CACHE: dict = {}
#: (resolved path, SHA-256) -> the NavigationDataset a command loaded from that file (see :func:`hand_over`)
_LOADED: dict = {}


def hand_over(path: str | Path, digest: str, dataset) -> None:
    """Give :func:`prepare` in this process the ``dataset`` just loaded from ``path``, whose SHA-256 the caller
    computed as ``digest``: the first :func:`prepare` of that file and digest takes it instead of hashing and loading
    the file again (one dataset at a time)."""
    _LOADED.clear()
    _LOADED[(str(Path(path).resolve()), digest)] = dataset


def prepare(path: str | Path, digest: str) -> PreparedDataset:
    """Load, check and convert the dataset at ``path`` (cached per process by path and digest).

    Raises:
        ValueError: the file is missing, damaged, not a dataset, or its SHA-256 is not ``digest`` (it changed since
            the sweep started).
    """
    from curteach_teaching.demonstrations import navigation_trajectories
    from curteach_teaching.difficulty import teacher_log_difficulty

    key = (str(Path(path).resolve()), digest)
    if key in _CACHE:
        return _CACHE[key]
    dataset = _LOADED.pop(key, None)  # loaded and hashed by the command in this process
    if dataset is None:
        if not Path(path).is_file():
            raise ValueError(f"no dataset file at {str(path)!r}")
        if file_digest(path) != digest:
            raise ValueError(f"dataset {str(path)!r} changed since the sweep started (its SHA-256 differs)")
        dataset = load_dataset(path)
    missing = [name for name in ("train", "val", "test") if name not in dataset.splits]
    if missing:
        raise ValueError(f"dataset {str(path)!r} has no {', '.join(missing)} split")
    train = dataset["train"]
    names, features = demonstration_features(train)
    order = np.random.default_rng(TRAINING_ORDER_SEED).permutation(train.n_demos)
    trajectories = navigation_trajectories(train)
    prepared = PreparedDataset(
        kind=dataset.kind,
        train=train,
        val=dataset["val"],
        test=dataset["test"],
        order=order,
        trajectories=[trajectories[i] for i in order],
        teacher={variant: teacher_log_difficulty(train, variant)[order] for variant in ("original", "paper")},
        feature_names=names,
        features=features[order],
    )
    _CACHE.clear()  # one dataset at a time per process
    _CACHE[key] = prepared
    return prepared

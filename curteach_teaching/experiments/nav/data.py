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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curteach_envs.navigation.dataset import NavigationSplit, load_dataset

__all__ = [
    "FEATURES",
    "NAV_TASKS",
    "PAPER_WINDOW",
    "TRAINING_ORDER_SEED",
    "PreparedDataset",
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

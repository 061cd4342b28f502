"""Minari's reader: local Minari datasets into an :class:`~curteach_teaching.datasets.pool.EpisodePool`; never
downloads. (The format itself, detection and the kept subset, is :mod:`~curteach_teaching.datasets.formats.minari`.)

A source is a dataset id (looked up under ``MINARI_DATASETS_PATH``, default ``~/.minari/datasets``, as
``<root>/<id>/data``), a dataset's folder (its root or its ``data/`` folder), or a folder holding several datasets
(every ``data/`` folder with a ``metadata.json`` below it); each dataset's episodes form one task group, the
dataset's id. Every storage format Minari writes (``hdf5``, ``arrow``, ``parquet``) is read through Minari's own
storage classes; Minari's download functions are never called.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.pool import EpisodePool
from curteach_teaching.datasets.spaces import check_space, to_trajectory_values

__all__ = ["datasets_root", "find_datasets", "read_minari"]

#: Minari's dataset id: ``(namespace/)name(-vN)``; the version may be left out here (then the newest local one).
_ID = re.compile(r"^(?:[-_\w][-_\w/]*[-_\w]+/)?[-_\w]+?(?:-v\d+)?$")
_VERSION = re.compile(r"-v(\d+)$")
_METADATA = "metadata.json"


def datasets_root() -> Path:
    """Where dataset ids are looked up: ``MINARI_DATASETS_PATH``, else ``~/.minari/datasets`` (not created)."""
    root = os.environ.get("MINARI_DATASETS_PATH")
    return Path(root) if root else Path.home() / ".minari" / "datasets"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _is_data_folder(path: Path) -> bool:
    return path.name == "data" and (path / _METADATA).is_file()


def _datasets_below(top: Path) -> list[Path]:
    """Every dataset ``data/`` folder below ``top``, sorted; a dataset's own folders are not searched."""
    found = []
    for directory, subdirectories, _ in os.walk(top):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        if "data" in subdirectories and _is_data_folder(Path(directory) / "data"):
            found.append(Path(directory) / "data")
            subdirectories.clear()  # an episode folder of an Arrow dataset is not a dataset
    return found


def _by_id(dataset_id: str) -> Path:
    root = datasets_root()
    path = root / dataset_id / "data"
    if _VERSION.search(dataset_id) is None:  # no version: the newest local one
        parent, name = (root / dataset_id).parent, Path(dataset_id).name
        versions = [] if not parent.is_dir() else [
            (int(m.group(1)), d) for d in parent.iterdir()
            if (m := re.fullmatch(re.escape(name) + r"-v(\d+)", d.name)) and _is_data_folder(d / "data")
        ]
        if versions:
            return max(versions)[1] / "data"
    if not _is_data_folder(path):
        where = "MINARI_DATASETS_PATH" if os.environ.get("MINARI_DATASETS_PATH") else "Minari's default folder: " \
            "MINARI_DATASETS_PATH is unset"
        raise ValueError(f"no local Minari dataset {dataset_id!r} under {str(root)!r} ({where}), and no "
                         "file or folder of that name (a LeRobot dataset or a robomimic file is given by its path); "
                         "curteach never downloads: fetch a Minari dataset with `minari download` first"
                         + _repo_id_hint(dataset_id))
    return path


def _lerobot_home() -> Path:
    """Where lerobot keeps a dataset it downloaded, ``<this>/<repo_id>`` (lerobot's ``utils/constants.py``:
    ``HF_LEROBOT_HOME``, else ``$HF_HOME/lerobot``, else ``~/.cache/huggingface/lerobot``)."""
    if os.environ.get("HF_LEROBOT_HOME"):
        return Path(os.environ["HF_LEROBOT_HOME"]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser()
    return Path(os.environ.get("HF_HOME", cache / "huggingface")).expanduser() / "lerobot"


def _repo_id_hint(source: str) -> str:
    """For ``owner/name`` without a Minari version (a Hugging Face repo id such as ``lerobot/pusht``): where lerobot
    would have put it; else ``""``."""
    if source.count("/") != 1 or _VERSION.search(source):
        return ""
    local = _lerobot_home() / source
    if (local / "meta" / "info.json").is_file():
        return f"; lerobot keeps the Hugging Face dataset {source!r} at {str(local)!r}: give that folder"
    return (f"; for the Hugging Face dataset {source!r}, give its local folder (lerobot downloads it to "
            f"{str(local)!r})")


def _lerobot_hint(path: Path) -> str:
    """``"; did you mean ...?"`` naming the LeRobot dataset ``path`` lies in (its ``data/``, ``meta/``, a file
    there) or those one or two levels below it; ``""`` when there is none."""
    from curteach_teaching.datasets.formats.lerobot_read import is_lerobot_folder

    above = next((parent for parent in list(path.parents)[:3] if is_lerobot_folder(parent)), None)
    if above is not None:
        return f"; did you mean the LeRobot dataset {str(above)!r}?"
    found, level = [], [path]
    for _ in range(2):  # a folder of datasets, or lerobot's cache folder with its owner/name layout
        below = []
        for folder in level:
            try:
                children = sorted(c for c in folder.iterdir() if c.is_dir() and not c.name.startswith("."))
            except OSError:
                continue
            for child in children:
                (found if is_lerobot_folder(child) else below).append(child)
        level = below
    if not found:
        return ""
    if len(found) == 1:
        return f"; did you mean the LeRobot dataset {str(found[0])!r}?"
    named = ", ".join(repr(str(f)) for f in found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return f"; it holds LeRobot datasets, read one at a time: {named}"


def find_datasets(source: str | os.PathLike) -> list[Path]:
    """The ``data/`` folders a source names (see the module docstring). A string naming an existing path is a path,
    else a dataset id; a ``pathlib.Path`` is always a path.

    Raises:
        ValueError: nothing exists at the path, no local dataset has the id, or the folder holds no Minari dataset.
    """
    if isinstance(source, str) and not Path(source).expanduser().exists():
        if _ID.match(source) and not source.startswith(("/", ".", "~")):
            return [_by_id(source)]
        raise ValueError(f"no dataset at {source!r}: neither a file, a folder nor a Minari dataset id")
    path = Path(source).expanduser()
    if not path.exists():
        raise ValueError(f"no dataset at {str(path)!r}: the path does not exist")
    if not path.is_dir():
        raise ValueError(f"{str(path)!r} is a file, not a dataset curteach reads: a Minari or a LeRobot dataset is a "
                         "folder, a robomimic file ends in .hdf5 or .h5" + _lerobot_hint(path))
    if _is_data_folder(path):
        return [path]
    if _is_data_folder(path / "data"):
        return [path / "data"]
    found = _datasets_below(path)
    if not found:
        raise ValueError(f"{str(path)!r} is not a dataset curteach reads: not a Minari dataset (no data/{_METADATA} "
                         "in it or below it) nor a LeRobot dataset (no meta/info.json), and a robomimic dataset is a "
                         ".hdf5/.h5 file" + _lerobot_hint(path))
    return found


def _plain(value):
    """Episode metadata with NumPy values made plain Python (HDF5 hands back arrays and NumPy scalars)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.dtype == object else value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value


def read_minari(data_path: Path) -> EpisodePool:
    """The episodes of the dataset whose ``data/`` folder is ``data_path`` (one of :func:`find_datasets`), in id
    order, one group (the dataset's id); see :func:`~curteach_teaching.datasets.reading.read_pool` for the shapes.

    Raises:
        ValueError (one line): damaged files or metadata, an unsupported space, no episodes, values that do not fit
            the spaces.
    """
    import minari
    from imitation.data.types import TrajectoryWithRew

    where = str(data_path.parent)
    try:
        with open(data_path / _METADATA) as file:
            raw = json.load(file)
        if not isinstance(raw, dict) or "data_format" not in raw:
            raise ValueError(f"{_METADATA} is not a Minari dataset's metadata")
        dataset = minari.MinariDataset(data_path)
    except Exception as error:  # JSON, HDF5, Arrow and Minari's own checks fail each in their own way: all alike
        raise ValueError(f"cannot read Minari dataset at {where!r} (damaged?): {type(error).__name__}: "
                         f"{_one_line(error)}") from None
    name = dataset.id
    try:
        check_space(dataset.observation_space, "observation")
        check_space(dataset.action_space, "action")
    except ValueError as error:
        raise ValueError(f"Minari dataset {name!r}: {error}") from None
    if dataset.total_episodes == 0:
        raise ValueError(f"Minari dataset {name!r} at {where!r} holds no episodes")
    trajectories, seeds, metadata, infos = [], [], [], []
    try:
        metas = [_plain(m) for m in dataset.storage.get_episode_metadata(dataset.episode_indices.tolist())]
        for episode, meta in zip(dataset.iterate_episodes(), metas):
            n = len(episode.rewards)
            what = f"episode {episode.id}"
            if int(meta.get("total_steps", n)) != n:
                raise ValueError(f"{what} holds {n} steps; its metadata says {meta.get('total_steps')}")
            rewards = np.asarray(episode.rewards)
            obs_space, act_space = dataset.observation_space, dataset.action_space
            trajectories.append(TrajectoryWithRew(
                obs=to_trajectory_values(obs_space, episode.observations, n + 1, f"{what} observations"),
                acts=to_trajectory_values(act_space, episode.actions, n, f"{what} actions"),
                infos=None,
                terminal=bool(np.asarray(episode.terminations)[-1]) if n else False,
                rews=rewards if rewards.dtype.kind == "f" else rewards.astype(np.float64),
            ))
            seed = meta.get("seed")
            seeds.append(None if seed is None else int(seed))
            metadata.append(meta)
            infos.append(dict(episode.infos or {}))
    except Exception as error:
        if type(error) is ValueError:  # values that do not fit the spaces (pyarrow's errors subclass ValueError)
            raise ValueError(f"Minari dataset {name!r}: {_one_line(error)}") from None
        raise ValueError(f"cannot read Minari dataset {name!r} at {where!r} (damaged?): {type(error).__name__}: "
                         f"{_one_line(error)}") from None
    if len(trajectories) != dataset.total_episodes:
        raise ValueError(f"cannot read Minari dataset {name!r} at {where!r} (damaged?): {len(trajectories)} of "
                         f"{dataset.total_episodes} episodes found")
    return EpisodePool(
        trajectories=tuple(trajectories),
        episode_ids=dataset.episode_indices.astype(np.int64),
        seeds=tuple(seeds),
        groups=(name,) * len(trajectories),
        metadata=tuple(metadata),
        infos=tuple(infos),
        observation_space=dataset.observation_space,
        action_space=dataset.action_space,
        env_specs={name: dataset.env_spec},
    )

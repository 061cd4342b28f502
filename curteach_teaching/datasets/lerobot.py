"""Read a LeRobot dataset from a local folder (format v3.0, and v2.1/v2.0) into an
:class:`~curteach_teaching.datasets.pool.EpisodePool`, with pyarrow only: nothing is downloaded (huggingface_hub is
never imported, so ``HF_HUB_OFFLINE`` has nothing to guard) and no video is decoded.

The layout (lerobot's ``datasets/utils.py``, ``io_utils.py`` and ``scripts/convert_dataset_v21_to_v30.py``):

* ``meta/info.json``: ``codebase_version``, ``fps`` and ``features`` (``name -> {dtype, shape, names}``; ``image``
  and ``video`` features are camera streams);
* v3.0: ``meta/episodes/chunk-*/file-*.parquet`` (one row per episode: ``episode_index``, ``tasks``, ``length``,
  offsets and ``stats/*``), ``meta/tasks.parquet`` (``task``, ``task_index``), ``data/chunk-*/file-*.parquet`` (many
  episodes per file);
* v2.x: ``meta/episodes.jsonl`` (``{"episode_index", "tasks", "length"}`` per line), ``meta/tasks.jsonl``,
  ``data/chunk-*/episode_*.parquet`` (one episode per file).

Every data file has one row per frame: the features as columns, with ``episode_index`` and ``frame_index``. Episode
``e`` of ``L`` frames becomes observations ``(L + 1, D)`` (the chosen keys concatenated, default
``observation.state``; LeRobot records no observation after the last action, so the last one stands in for it, a row
behavioural cloning never reads), actions ``(L, A)`` (``action``), rewards ``next.reward`` where the dataset has them
(else plain ``Trajectory`` objects) and ``terminal`` the last ``next.done``. Its id is ``e``, its group its task
(several tasks joined by `` | ``), its metadata ``{"episode_index", "length", "tasks"}`` and every other plain
per-episode column of the episodes table (not ``stats/``, ``data/``, ``videos/``, ``meta/`` nor the frame offsets).
Spaces are unbounded ``Box`` es: LeRobot stores no bounds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.pool import EpisodePool

__all__ = ["is_lerobot_folder", "read_lerobot"]

_VISUAL = ("image", "video")
_BOOKKEEPING = ("stats/", "data/", "videos/", "meta/")
_OFFSETS = ("dataset_from_index", "dataset_to_index")


def is_lerobot_folder(source) -> bool:
    """Whether ``source`` is a folder with ``meta/info.json`` (a LeRobot dataset's root)."""
    return isinstance(source, (str, os.PathLike)) and (Path(source).expanduser() / "meta" / "info.json").is_file()


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.parquet
    except ModuleNotFoundError:
        raise ValueError("reading LeRobot datasets needs pyarrow: pip install 'curteach[datasets]'") from None
    return pyarrow


def _choose_keys(features: dict, obs_keys: Sequence[str] | None) -> list[str]:
    visual = [key for key, ft in features.items() if ft.get("dtype") in _VISUAL]
    low = [key for key in features if key.startswith("observation.") and key not in visual]
    if obs_keys is None:
        if "observation.state" not in features:
            raise ValueError("no 'observation.state' feature; name the observation keys with --obs-keys, from: "
                             f"{', '.join(low) or '(none)'}" + (f" (image/video keys {', '.join(visual)} cannot be "
                                                                "read)" if visual else ""))
        return ["observation.state"]
    keys = list(obs_keys)
    if not keys or len(set(keys)) != len(keys):
        raise ValueError(f"obs keys must be distinct and at least one; got {keys}")
    for key in keys:
        if key not in features:
            raise ValueError(f"no feature {key!r} in meta/info.json; observation features: {', '.join(low)}")
    named = [key for key in keys if key in visual]
    if named:
        raise ValueError(f"image/video keys {', '.join(named)} cannot be read (low-dimensional data only); name "
                         "low-dimensional keys only")
    return keys


def _width(features: dict, key: str) -> int:
    shape = features[key].get("shape")
    if not isinstance(shape, (list, tuple)) or len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 1:
        raise ValueError(f"feature {key!r} has shape {shape}; only one axis per frame can be read")
    return shape[0]


def _column(pa, table, key: str, width: int) -> np.ndarray:
    """``(rows, width)`` of a scalar or list column (ValueError on nulls or lists of another length)."""
    column = table.column(key).combine_chunks()
    if column.null_count:
        raise ValueError(f"column {key!r} has {column.null_count} missing values")
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type) or pa.types.is_fixed_size_list(
            column.type):
        lengths = pa.compute.list_value_length(column).to_numpy(zero_copy_only=False)
        if lengths.size and (lengths.min() != width or lengths.max() != width):
            bad = int(np.flatnonzero(lengths != width)[0])
            raise ValueError(f"column {key!r} holds {int(lengths[bad])} values in row {bad}; meta/info.json says "
                             f"{width} (ragged)")
        values = pa.compute.list_flatten(column).to_numpy(zero_copy_only=False)
    else:
        if width != 1:
            raise ValueError(f"column {key!r} holds one value per frame; meta/info.json says {width}")
        values = column.to_numpy(zero_copy_only=False)
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise ValueError(f"column {key!r} holds {values.dtype}, not numbers")
    return values.reshape(len(column), width)


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise ValueError(f"no {path.parent.name}/{path.name}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _episodes(pa, root: Path, v3: bool) -> dict[int, dict]:
    """``episode_index -> {"length", "tasks", other plain columns}`` from the episodes table."""
    if v3:
        files = sorted((root / "meta" / "episodes").glob("*/*.parquet"))
        if not files:
            raise ValueError("no meta/episodes/chunk-*/file-*.parquet")
        wanted = [[n for n in pa.parquet.read_schema(f).names if not n.startswith(_BOOKKEEPING)] for f in files]
        table = pa.concat_tables([pa.parquet.read_table(f, columns=c) for f, c in zip(files, wanted)],
                                 promote_options="default")  # per-episode stats are never read
        rows = table.to_pylist()
    else:
        rows = _jsonl(root / "meta" / "episodes.jsonl")
    episodes = {}
    for row in rows:
        if "episode_index" not in row or "length" not in row:
            raise ValueError("an episodes entry has no episode_index or length")
        keep = {k: _plain(v) for k, v in row.items()
                if not k.startswith(_BOOKKEEPING) and k not in _OFFSETS and not isinstance(v, dict)}
        index = int(keep["episode_index"])
        if index in episodes:
            raise ValueError(f"episode {index} appears twice in the episodes table")
        keep["tasks"] = [str(t) for t in (keep.get("tasks") or [])]
        episodes[index] = keep
    return episodes


def _tasks(pa, root: Path, v3: bool) -> dict[int, str]:
    """``task_index -> task`` (empty when the dataset has no tasks file)."""
    if v3:
        path = root / "meta" / "tasks.parquet"
        if not path.is_file():
            return {}
        rows = pa.parquet.read_table(path).to_pylist()
        name = "task" if rows and "task" in rows[0] else "__index_level_0__"  # pandas keeps the index as a column
        return {int(r["task_index"]): str(r[name]) for r in rows}
    path = root / "meta" / "tasks.jsonl"
    return {int(r["task_index"]): str(r["task"]) for r in _jsonl(path)} if path.is_file() else {}


def read_lerobot(path: str | os.PathLike, obs_keys: Sequence[str] | None = None) -> EpisodePool:
    """Read the LeRobot dataset whose root is the folder ``path`` (see the module docstring).

    Args:
        path: the dataset's root (with ``meta/info.json``).
        obs_keys: the low-dimensional features to observe, concatenated in this order (default
            ``["observation.state"]``).

    Returns:
        The pool: episodes in ``episode_index`` order, observations ``(L_i + 1, D)``, actions ``(L_i, A)``.

    Raises:
        ValueError (one line): a missing file or feature, an unknown format version, image/video keys, ragged values,
        frames that do not match the episodes table.
    """
    from gymnasium import spaces
    from imitation.data.types import Trajectory, TrajectoryWithRew

    pa = _pyarrow()
    root = Path(path).expanduser()
    where = f"LeRobot dataset {str(root)!r}"
    try:
        info = json.loads((root / "meta" / "info.json").read_text())
        version = str(info.get("codebase_version", ""))
        if not version.startswith(("v2.", "v3.")):
            raise ValueError(f"codebase_version {version or '(none)'} is not one curteach reads (v2.0, v2.1, v3.0)")
        v3 = version.startswith("v3.")
        features = info.get("features")
        if not isinstance(features, dict) or "action" not in features:
            raise ValueError("meta/info.json has no 'action' feature")
        keys = _choose_keys(features, obs_keys)
        widths = {key: _width(features, key) for key in [*keys, "action"]}
        extras = [key for key in ("next.reward", "next.done", "task_index") if key in features]
        files = sorted((root / "data").glob("*/*.parquet"))
        if not files:
            raise ValueError("no data/chunk-*/*.parquet files")
        columns = list(dict.fromkeys([*keys, "action", *extras, "episode_index", "frame_index"]))
        tables = []
        for file in files:
            names = pa.parquet.read_schema(file).names
            missing = [c for c in columns if c not in names]
            if missing:
                raise ValueError(f"{file.relative_to(root)} has no column {missing[0]!r}")
            tables.append(pa.parquet.read_table(file, columns=columns))
        table = pa.concat_tables(tables, promote_options="default")
        episode_of = _column(pa, table, "episode_index", 1)[:, 0].astype(np.int64)
        frame = _column(pa, table, "frame_index", 1)[:, 0].astype(np.int64)
        values = {key: _column(pa, table, key, widths.get(key, 1)) for key in dict.fromkeys([*keys, "action", *extras])}
        episodes, tasks = _episodes(pa, root, v3), _tasks(pa, root, v3)
    except (OSError, json.JSONDecodeError, pa.ArrowException) as error:
        raise ValueError(f"cannot read {where} (damaged?): {type(error).__name__}: {' '.join(str(error).split())}") \
            from None
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    order = np.lexsort((frame, episode_of))
    found, starts = np.unique(episode_of[order], return_index=True)
    unlisted = sorted(set(found.tolist()) - set(episodes))
    if unlisted or len(found) != len(episodes):
        what = (f"frames of episode {unlisted[0]}, which the episodes table does not list" if unlisted else
                f"no frames of episode {sorted(set(episodes) - set(found.tolist()))[0]}")
        raise ValueError(f"{where}: the data files hold {what}")
    if not len(found):
        raise ValueError(f"{where} holds no episodes")
    obs_dtype = np.result_type(np.float32, *(values[k].dtype for k in keys))
    act_dtype = np.result_type(np.float32, values["action"].dtype)
    trajectories, metadata, groups = [], [], []
    for index, start, stop in zip(found.tolist(), starts.tolist(), [*starts[1:].tolist(), len(order)]):
        rows = order[start:stop]
        meta = episodes[index]
        if not np.array_equal(frame[rows], np.arange(len(rows))) or int(meta["length"]) != len(rows):
            raise ValueError(f"{where}: episode {index} has frames {len(rows)} (frame_index "
                             f"{frame[rows][:3].tolist()}...); the episodes table says length {meta['length']}")
        obs = np.concatenate([values[k][rows] for k in keys], axis=1).astype(obs_dtype)
        obs = np.concatenate([obs, obs[-1:]])  # no observation after the last action: the last one stands in
        acts = values["action"][rows].astype(act_dtype)
        done = values["next.done"][rows, 0] if "next.done" in values else None
        terminal = bool(done[-1]) if done is not None else False
        if "next.reward" in values:
            rews = values["next.reward"][rows, 0].astype(np.float64)
            trajectories.append(TrajectoryWithRew(obs=obs, acts=acts, infos=None, terminal=terminal, rews=rews))
        else:
            trajectories.append(Trajectory(obs=obs, acts=acts, infos=None, terminal=terminal))
        names = meta["tasks"]
        if not names and "task_index" in values:  # an episodes table without tasks: the frames' own
            names = [tasks.get(int(i), str(int(i))) for i in dict.fromkeys(values["task_index"][rows, 0].tolist())]
        groups.append(" | ".join(names))
        metadata.append(meta)
    width = sum(widths[key] for key in keys)
    return EpisodePool(
        trajectories=tuple(trajectories),
        episode_ids=found.astype(np.int64),
        seeds=(None,) * len(found),
        groups=tuple(groups),
        metadata=tuple(metadata),
        infos=({},) * len(found),
        observation_space=spaces.Box(-np.inf, np.inf, (width,), obs_dtype),
        action_space=spaces.Box(-np.inf, np.inf, (widths["action"],), act_dtype),
        env_specs={},
    )

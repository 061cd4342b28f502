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
(several tasks joined by `` | ``), its metadata ``{"episode_index", "length", "tasks"}`` (``tasks`` the group's
string) and every other plain per-episode column of the episodes table (not ``stats/``, ``data/``, ``videos/``,
``meta/`` nor the frame offsets). Every other per-frame scalar ``next.X`` (bool or number: pusht's ``next.success``)
is the step info ``X``, ``(L + 1,)`` as Minari holds step infos (the first step's value stands in for the reset's,
which LeRobot does not record), and the episode field ``X``, its value at the last frame (unless the episodes table
has a column ``X``): ``success``, as in a Minari dataset with a ``success`` step info and curteach's Meta-World
datasets. Spaces are unbounded ``Box`` es: LeRobot stores no bounds.

The ids are ``episode_index`` values; lerobot 0.4+ (format v3.0) takes ``LeRobotDataset(episodes=...)`` as rows of
its episodes table and ignores ids ``>= total_episodes`` (``datasets/utils.py`` ``resolve_episode_indices``,
``dataset_reader.py``; 0.4.0 refused them), so an episode list is read right only where the ids are ``0 .. N-1``:
:func:`episode_indices_note` says when they are not.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.pool import EpisodePool

__all__ = ["episode_indices_note", "is_lerobot_folder", "read_lerobot"]

_VISUAL = ("image", "video")
_BOOKKEEPING = ("stats/", "data/", "videos/", "meta/")
_OFFSETS = ("dataset_from_index", "dataset_to_index")
_HOME = ("data/chunk_index", "data/file_index")  # v3.0's episodes table: the data file of an episode's frames
#: per-frame features that are no observation: the answer (``action``) and LeRobot's bookkeeping; every ``next.*``
#: outcome too. Read as observations, they would show the policy what it is asked to predict.
_NOT_OBSERVED = ("action", "timestamp", "frame_index", "episode_index", "index", "task_index")
_NEXT = "next."
_STEP = ("next.reward", "next.done")  # the rewards and the terminal flag; any other scalar next.X is a step info


class _Damaged(Exception):
    """A file of the dataset that cannot be read: ``"PATH: Error: message"``, PATH relative to the root."""


def is_lerobot_folder(source) -> bool:
    """Whether ``source`` is a folder with ``meta/info.json`` (a LeRobot dataset's root)."""
    return isinstance(source, (str, os.PathLike)) and (Path(source).expanduser() / "meta" / "info.json").is_file()


def episode_indices_note(pool) -> str:
    """``""`` when the episode ids of ``pool`` (an :class:`EpisodePool` read from one LeRobot dataset, or its ``(N,)``
    ids) are ``0 .. N-1`` in some order, else one line saying why a list of them misleads ``LeRobotDataset(...,
    episodes=...)``: lerobot 0.4+ looks each id up as a row of its episodes table (an id ``>= N`` is ignored, or
    refused by the first 0.4 releases)."""
    ids = np.sort(np.asarray(getattr(pool, "episode_ids", pool), dtype=np.int64).reshape(-1))
    n = ids.size
    if np.array_equal(ids, np.arange(n)):
        return ""
    dropped = int(np.sum(ids >= n))
    return (f"the {n} episode_index values run {int(ids[0])}..{int(ids[-1])}, not 0..{n - 1}: lerobot 0.4+ looks "
            f"LeRobotDataset(episodes=...) up by row of its episodes table and ignores or refuses ids >= {n} "
            f"({dropped} of these), so the list would select other episodes; renumber the episodes 0..{n - 1} first")


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.parquet
    except ModuleNotFoundError:
        raise ValueError("reading LeRobot datasets needs pyarrow: pip install 'curteach[datasets]'") from None
    return pyarrow


def _observable(features: dict) -> list[str]:
    """The features ``--obs-keys`` may name: not a camera, the action, a ``next.*`` outcome nor bookkeeping (a state
    feature without the ``observation.`` prefix is one)."""
    return [key for key, ft in features.items() if ft.get("dtype") not in _VISUAL and key not in _NOT_OBSERVED
            and not key.startswith(_NEXT)]


def _choose_keys(features: dict, obs_keys: Sequence[str] | None) -> list[str]:
    visual = [key for key, ft in features.items() if ft.get("dtype") in _VISUAL]
    listed = ", ".join(_observable(features)) or "(none)"
    if obs_keys is None:
        if "observation.state" not in features:
            cameras = f" (image/video keys {', '.join(visual)} cannot be read)" if visual else ""
            raise ValueError(f"no 'observation.state' feature; name the observation keys with --obs-keys, from: "
                             f"{listed}{cameras}")
        return ["observation.state"]
    keys = list(obs_keys)
    if not keys or len(set(keys)) != len(keys):
        raise ValueError(f"obs keys must be distinct and at least one; got {keys}")
    for key in keys:
        if key not in features:
            raise ValueError(f"no feature {key!r} in meta/info.json; observation features: {listed}")
        if key in _NOT_OBSERVED or key.startswith(_NEXT):
            raise ValueError(f"{key!r} is not an observation (the action, an outcome or bookkeeping would show the "
                             f"policy the answer); observation features: {listed}")
    named = [key for key in keys if key in visual]
    if named:
        raise ValueError(f"image/video keys {', '.join(named)} cannot be read (low-dimensional data only); name "
                         "low-dimensional keys only")
    return keys


def _info_keys(features: dict) -> list[str]:
    """The per-frame scalar ``next.*`` features (bool or number, shape ``[1]``) other than the reward and done."""
    def scalar(ft: dict) -> bool:
        dtype = str(ft.get("dtype", ""))
        return (dtype == "bool" or dtype.startswith(("int", "uint", "float"))) and ft.get("shape") in ([1], [])

    return [key for key, ft in features.items() if key.startswith(_NEXT) and key not in _STEP and scalar(ft)]


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


def _damaged(path: Path, root: Path, error: Exception) -> _Damaged:
    return _Damaged(f"{path.relative_to(root)}: {type(error).__name__}: {' '.join(str(error).split())}")


def _json(path: Path, root: Path, lines: bool = False):
    """The JSON file ``path`` (a list of its lines' objects with ``lines``); _Damaged naming it when it does not
    parse."""
    if not path.is_file():
        raise ValueError(f"no {path.relative_to(root)}")
    try:
        text = path.read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()] if lines else json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _damaged(path, root, error) from None


def _parquet(pa, path: Path, root: Path, columns: list[str] | None = None, schema: bool = False):
    """The table (or with ``schema`` its column names) of the parquet file ``path``; _Damaged naming it."""
    try:
        return pa.parquet.read_schema(path).names if schema else pa.parquet.read_table(path, columns=columns)
    except (OSError, pa.ArrowException) as error:
        raise _damaged(path, root, error) from None


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _episodes(pa, root: Path, v3: bool) -> tuple[dict[int, dict], dict[int, tuple[int, int]]]:
    """``(episodes, homes)``: ``episode_index -> {"length", "tasks", other plain columns}`` from the episodes table,
    and (v3.0) ``episode_index -> (data/chunk_index, data/file_index)``, the data file the table says holds the
    episode's frames (empty where it has no such columns, and for v2.x)."""
    homes: dict[int, tuple[int, int]] = {}
    if v3:
        files = sorted((root / "meta" / "episodes").glob("*/*.parquet"))
        if not files:
            raise ValueError("no meta/episodes/chunk-*/file-*.parquet")
        wanted = [[n for n in _parquet(pa, f, root, schema=True) if not n.startswith(_BOOKKEEPING)
                   or n in _HOME] for f in files]
        table = pa.concat_tables([_parquet(pa, f, root, c) for f, c in zip(files, wanted)],
                                 promote_options="default")  # per-episode stats are never read
        rows = table.to_pylist()
        homes = {int(r["episode_index"]): (int(r[_HOME[0]]), int(r[_HOME[1]])) for r in rows
                 if r.get("episode_index") is not None and all(r.get(k) is not None for k in _HOME)}
    else:
        rows = _json(root / "meta" / "episodes.jsonl", root, lines=True)
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
    return episodes, homes


def _data_file(info: dict, index: int, homes: dict[int, tuple[int, int]], v3: bool) -> str | None:
    """The data file, relative to the root, that should hold episode ``index``'s frames: ``info.json``'s
    ``data_path`` filled in with the episodes table's chunk and file (v3.0) or the episode's chunk (v2.x: one file per
    episode, ``chunks_size`` episodes per chunk); ``None`` where the dataset does not say."""
    template, size = info.get("data_path"), info.get("chunks_size")
    if not isinstance(template, str):
        return None
    try:
        if v3:
            if index not in homes:
                return None
            return template.format(chunk_index=homes[index][0], file_index=homes[index][1])
        if not isinstance(size, int) or size < 1:
            return None
        return template.format(episode_chunk=index // size, episode_index=index)
    except (KeyError, IndexError, ValueError):  # a template with other fields: the dataset does not say, here
        return None


def _tasks(pa, root: Path, v3: bool) -> dict[int, str]:
    """``task_index -> task``. The tasks file is required although the episodes table names each episode's tasks:
    lerobot reads it whenever it loads a dataset (``load_tasks``), so a folder without it is one
    ``LeRobotDataset`` cannot load, and a kept list of its episodes would be of no use."""
    path = root / "meta" / ("tasks.parquet" if v3 else "tasks.jsonl")
    if not path.is_file():
        raise ValueError(f"no {path.relative_to(root)} (the tasks file; LeRobotDataset cannot load the dataset "
                         "without it)")
    if v3:
        rows = _parquet(pa, path, root).to_pylist()
        name = "task" if rows and "task" in rows[0] else "__index_level_0__"  # pandas keeps the index as a column
        return {int(r["task_index"]): str(r[name]) for r in rows}
    return {int(r["task_index"]): str(r["task"]) for r in _json(path, root, lines=True)}


def read_lerobot(path: str | os.PathLike, obs_keys: Sequence[str] | None = None) -> EpisodePool:
    """Read the LeRobot dataset whose root is the folder ``path`` (see the module docstring).

    Args:
        path: the dataset's root (with ``meta/info.json``).
        obs_keys: the low-dimensional features to observe, concatenated in this order (default
            ``["observation.state"]``); any feature but a camera, the action, a ``next.*`` outcome and LeRobot's
            bookkeeping columns (a state feature without the ``observation.`` prefix is one).

    Returns:
        The pool: episodes in ``episode_index`` order, observations ``(L_i + 1, D)``, actions ``(L_i, A)``, infos
        ``{X: (L_i + 1,)}`` and the metadata field ``X`` (the last frame's) of each per-frame scalar ``next.X``
        beside ``next.reward`` and ``next.done``.

    Raises:
        ValueError (one line): a missing file or feature, a file that does not parse (named), an unknown format
        version, image/video keys or keys that are no observation (``action``, ``next.*``, ``timestamp``,
        ``frame_index``, ``episode_index``, ``index``, ``task_index``), ragged values, frames that do not match the
        episodes table.
    """
    from gymnasium import spaces
    from imitation.data.types import Trajectory, TrajectoryWithRew

    pa = _pyarrow()
    root = Path(path).expanduser()
    where = f"LeRobot dataset {str(root)!r}"
    try:
        info = _json(root / "meta" / "info.json", root)
        if not isinstance(info, dict):
            raise ValueError("meta/info.json is not a JSON object")
        version = str(info.get("codebase_version", ""))
        if not version.startswith(("v2.", "v3.")):
            raise ValueError(f"codebase_version {version or '(none)'} is not one curteach reads (v2.0, v2.1, v3.0)")
        v3 = version.startswith("v3.")
        features = info.get("features")
        if not isinstance(features, dict) or "action" not in features:
            raise ValueError("meta/info.json has no 'action' feature")
        keys = _choose_keys(features, obs_keys)
        widths = {key: _width(features, key) for key in [*keys, "action"]}
        info_keys = _info_keys(features)
        extras = [key for key in (*_STEP, "task_index", *info_keys) if key in features]
        files = sorted((root / "data").glob("*/*.parquet"))
        if not files:
            raise ValueError("no data/chunk-*/*.parquet files")
        columns = list(dict.fromkeys([*keys, "action", *extras, "episode_index", "frame_index"]))
        tables = []
        for file in files:
            names = _parquet(pa, file, root, schema=True)
            missing = [c for c in columns if c not in names]
            if missing:
                raise ValueError(f"{file.relative_to(root)} has no column {missing[0]!r}")
            tables.append(_parquet(pa, file, root, columns))
        table = pa.concat_tables(tables, promote_options="default")
        episode_of = _column(pa, table, "episode_index", 1)[:, 0].astype(np.int64)
        frame = _column(pa, table, "frame_index", 1)[:, 0].astype(np.int64)
        values = {key: _column(pa, table, key, widths.get(key, 1)) for key in dict.fromkeys([*keys, "action", *extras])}
        (episodes, homes), tasks = _episodes(pa, root, v3), _tasks(pa, root, v3)
    except _Damaged as error:  # a file that does not parse, named
        raise ValueError(f"cannot read {where} (damaged?): {error}") from None
    except (OSError, pa.ArrowException) as error:
        raise ValueError(f"cannot read {where} (damaged?): {type(error).__name__}: {' '.join(str(error).split())}") \
            from None
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    order = np.lexsort((frame, episode_of))
    found, starts = np.unique(episode_of[order], return_index=True)
    unlisted = sorted(set(found.tolist()) - set(episodes))
    if unlisted:
        raise ValueError(f"{where}: the data files hold frames of episode {unlisted[0]}, which the episodes table "
                         "does not list")
    if len(found) != len(episodes):
        absent = sorted(set(episodes) - set(found.tolist()))
        home = _data_file(info, absent[0], homes, v3)
        if home is not None and not (root / home).is_file():  # the file itself is gone: name it
            raise ValueError(f"{where}: no {home}, the data file that the episodes table says holds the frames of "
                             f"episode {absent[0]}" + (f" ({len(absent)} episodes without frames in all)"
                                                       if len(absent) > 1 else ""))
        held = f" (the episodes table puts them in {home})" if home is not None else ""
        raise ValueError(f"{where}: the data files hold no frames of episode {absent[0]}{held}")
    if not len(found):
        raise ValueError(f"{where} holds no episodes")
    obs_dtype = np.result_type(np.float32, *(values[k].dtype for k in keys))
    act_dtype = np.result_type(np.float32, values["action"].dtype)
    trajectories, metadata, groups, infos = [], [], [], []
    for index, start, stop in zip(found.tolist(), starts.tolist(), [*starts[1:].tolist(), len(order)]):
        rows = order[start:stop]
        meta = dict(episodes[index])
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
        meta["tasks"] = groups[-1]  # a string, as the group: a field to group by, printed as it reads
        step_infos = {}
        for key in info_keys:
            steps = values[key][rows, 0]
            step_infos[key[len(_NEXT):]] = np.concatenate([steps[:1], steps])  # the reset's stand-in, then each step
            meta.setdefault(key[len(_NEXT):], _plain(steps[-1]))  # the episode's outcome, unless the table has one
        infos.append(step_infos)
        metadata.append(meta)
    width = sum(widths[key] for key in keys)
    return EpisodePool(
        trajectories=tuple(trajectories),
        episode_ids=found.astype(np.int64),
        seeds=(None,) * len(found),
        groups=tuple(groups),
        metadata=tuple(metadata),
        infos=tuple(infos),
        observation_space=spaces.Box(-np.inf, np.inf, (width,), obs_dtype),
        action_space=spaces.Box(-np.inf, np.inf, (widths["action"],), act_dtype),
        env_specs={},
    )

"""Read a robomimic-format HDF5 file (robomimic, MimicGen, LIBERO, RoboCasa) into an
:class:`~curteach_teaching.datasets.pool.EpisodePool`, with h5py only; nothing is replayed or downloaded.

The layout (robomimic's ``utils/dataset.py`` and ``utils/file_utils.py``): a group ``data`` whose attribute
``env_args`` is the simulator's settings as JSON; one group ``data/demo_<i>`` per demonstration holding ``actions``
``(T, A)``, ``rewards`` ``(T,)``, ``dones`` ``(T,)``, ``obs/<key>`` ``(T, ...)`` and ``next_obs/<key>``; a group
``mask`` of filter keys, each an array of demonstration names as byte strings (``train``/``valid``, and in the
multi-human datasets the operators' quality ``better``/``okay``/``worse``).

What the pool holds, for demonstration ``demo_<i>`` of ``T`` steps:

* episode id ``i`` (demonstrations in the order of their integer, as robomimic sorts them), group the file's stem;
* observations ``(T + 1, D)``: the chosen low-dimensional keys concatenated in the order given, one row per step, then
  the last step's ``next_obs`` (when the file has no ``next_obs``, the last observation stands in for it: behavioural
  cloning never reads that row); actions ``(T, A)``; rewards ``(T,)`` when every demonstration has them (else plain
  ``Trajectory`` objects); ``terminal`` the last ``dones`` entry;
* metadata ``{"demo": "demo_<i>", "num_samples": T, "env_args": ..., <filter key>: bool, ...}``: every filter key of
  ``mask/`` becomes a boolean per episode, so that ``worse`` can be a bad-episode field, a task score or a group.

The environment is unknown (``env_specs`` ``None``) except for the one robomimic Gym environment curteach itself
writes (``make-dataset metaworld --format robomimic``): ``env_args`` of type 2 naming ``MetaWorldTask-v0`` give that
environment's spec with the file's ``env_kwargs`` (task and step limit), and each demonstration's ``seed`` attribute,
when all have one, becomes the pool's reset seed. Other environments' settings stay metadata only.

Both spaces are unbounded ``Box`` es (the file does not store the environment's bounds), float32 unless a key is
float64. Image keys (``*_image``, ``*_depth``, or more than one axis per step) are refused unless only
low-dimensional keys are named.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.pool import EpisodePool

__all__ = ["SUFFIXES", "demo_names", "is_robomimic_file", "read_filter_keys", "read_robomimic", "require_h5py",
           "robomimic_files"]

#: File name endings read as robomimic files.
SUFFIXES = (".hdf5", ".h5")
_DEMO = re.compile(r"^demo_(\d+)$")


def is_robomimic_file(source) -> bool:
    """Whether ``source`` (a path) names a robomimic-format file by its ending (``.hdf5``/``.h5``)."""
    return isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() in SUFFIXES


#: HDF5's messages (H5FD sec2 driver, 1.10 and later): a lock held by another process, and a file shorter than its
#: superblock says
_LOCKED = re.compile(r"\bunable to lock file\b", re.IGNORECASE)
_TRUNCATED = re.compile(r"\btruncated file\b", re.IGNORECASE)


def robomimic_files(source) -> list[Path]:
    """The robomimic files ``source`` names: the file itself, or, for a folder that directly holds ``.hdf5``/``.h5``
    files (a LIBERO suite: one file per task), those files in name order; ``[]`` for anything else (a Minari
    dataset's folder holds its HDF5 file one level down, in ``data/``)."""
    if not isinstance(source, (str, os.PathLike)):
        return []
    path = Path(source).expanduser()
    if is_robomimic_file(path):
        return [path]
    if not path.is_dir() or (path / "meta" / "info.json").is_file():
        return []
    return sorted(child for child in path.iterdir() if child.is_file() and is_robomimic_file(child))


def require_h5py():
    """The h5py module (ValueError naming the extra that installs it when it is missing)."""
    try:
        import h5py
    except ModuleNotFoundError:
        raise ValueError("reading robomimic files needs h5py: pip install 'curteach[datasets]'") from None
    return h5py


def demo_names(file) -> list[str]:
    """The ``demo_<i>`` groups of an open file's ``data``, sorted by ``i`` (ValueError when there are none)."""
    data = file.get("data")
    if data is None or not hasattr(data, "keys"):
        raise ValueError("no group 'data' (not a robomimic-format file)")
    names = [name for name in data.keys() if _DEMO.match(name)]
    if not names:
        raise ValueError("no demonstrations: 'data' holds no demo_<i> groups")
    return sorted(names, key=lambda name: int(_DEMO.match(name).group(1)))


def hdf5_open_error(path: Path, error: OSError) -> str:
    """The one line for a file h5py could not open: locked by a process writing it (HDF5's file locking), cut short
    (HDF5's ``truncated file: eof = ...``), or otherwise not readable as HDF5.

    HDF5's own phrases are matched whole: its truncated-file message holds ``sblock`` (the superblock), so a search for
    "lock" alone would call a damaged file locked and send the user after a process that does not exist."""
    text = " ".join(str(error).split())
    if _LOCKED.search(text):
        return (f"cannot read {str(path)!r}: another process has it open for writing (HDF5 locks such a file); close "
                f"that process or wait for it ({text})")
    if _TRUNCATED.search(text):
        return (f"cannot read {str(path)!r}: the file is damaged, cut short (a copy or download that did not finish?); "
                f"copy it again ({text})")
    return f"cannot read {str(path)!r} as HDF5 (damaged, or not an HDF5 file?): {text}"


def read_filter_keys(file, names: Sequence[str]) -> dict[str, frozenset]:
    """``filter key -> demonstration names`` of an open file's ``mask`` group (empty without one).

    Raises:
        ValueError: a filter key that is not an array of names, or names a demonstration ``names`` does not hold.
    """
    mask = file.get("mask")
    if mask is None:
        return {}
    known, keys = set(names), {}
    for key in mask.keys():
        item = mask[key]
        if not hasattr(item, "dtype") or item.ndim != 1 or item.dtype.kind not in "SOU":
            raise ValueError(f"mask/{key} is not a list of demonstration names")
        members = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in item[()].tolist()]
        missing = sorted(set(members) - known, key=lambda n: (len(n), n))
        if missing:
            raise ValueError(f"mask/{key} names {missing[0]}, which is not in data/"
                             + (f" ({len(missing)} missing in all)" if len(missing) > 1 else "")
                             + f"; rewrite or delete mask/{key} (robomimic fails on it too)")
        keys[key] = frozenset(members)
    return keys


def _is_image(key: str, dataset) -> bool:
    return key.endswith(("image", "depth")) or dataset.ndim > 2


def _choose_keys(obs, obs_keys: Sequence[str] | None) -> list[str]:
    """The low-dimensional keys to read from the first demonstration's ``obs`` group."""
    available = list(obs.keys())
    images = [key for key in available if _is_image(key, obs[key])]
    if obs_keys is None:
        if images:
            low = [key for key in available if key not in images]
            raise ValueError(f"image observation keys {', '.join(images)} cannot be read (low-dimensional data only); "
                             f"name the keys to use with --obs-keys, from: {', '.join(low) or '(none)'}")
        return sorted(available)
    keys = list(obs_keys)
    if not keys or len(set(keys)) != len(keys):
        raise ValueError(f"obs keys must be distinct and at least one; got {keys}")
    unknown = [key for key in keys if key not in available]
    if unknown:
        raise ValueError(f"no observation key {unknown[0]!r} in the file; available: {', '.join(available)}")
    named_images = [key for key in keys if key in images]
    if named_images:
        raise ValueError(f"image observation keys {', '.join(named_images)} cannot be read (low-dimensional data "
                         "only); name low-dimensional keys only")
    return keys


def _rows(dataset, steps: int, where: str) -> np.ndarray:
    """``(steps, d)`` of a ``(steps,)`` or ``(steps, d)`` dataset (ValueError on another shape)."""
    array = dataset[()]
    if array.ndim not in (1, 2) or len(array) != steps:
        raise ValueError(f"{where} has shape {array.shape}; expected ({steps}, ...) (ragged demonstration?)")
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{where} holds {array.dtype}, not numbers")
    return array.reshape(steps, -1)


def _env_args(data):
    raw = data.attrs.get("env_args")
    if raw is None:
        return None
    text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # kept as written: some writers store plain text


def _env_spec(env_args):
    """The ``EnvSpec`` of ``env_args`` when they name ``MetaWorldTask-v0`` as robomimic's Gym type (2), else ``None``
    (robosuite's and other environments: curteach does not build them from a file)."""
    import dataclasses

    import gymnasium as gym

    from curteach_envs.metaworld import METAWORLD_ENV_ID

    if not (isinstance(env_args, dict) and env_args.get("env_name") == METAWORLD_ENV_ID and env_args.get("type") == 2):
        return None
    kwargs = dict(env_args.get("env_kwargs") or {})
    base = gym.spec(METAWORLD_ENV_ID)
    steps = kwargs.pop("max_episode_steps", base.max_episode_steps)
    return dataclasses.replace(base, kwargs={**base.kwargs, **kwargs}, max_episode_steps=steps)


def _reset_seeds(data, names: Sequence[str]) -> tuple:
    """Each demonstration's integer ``seed`` attribute, or all ``None`` when one lacks it."""
    seeds = [data[name].attrs.get("seed") for name in names]
    if any(seed is None or np.asarray(seed).dtype.kind not in "iu" for seed in seeds):
        return (None,) * len(names)
    return tuple(int(seed) for seed in seeds)


def _read_demo(group, name: str, keys: list[str], widths: dict) -> tuple:
    """``(obs (T + 1, D) list of parts, acts (T, A), rews (T,) or None, terminal)`` of one demonstration."""
    where = f"data/{name}"
    if "actions" not in group:
        raise ValueError(f"{where} has no 'actions'")
    acts = group["actions"][()]
    if acts.ndim != 2 or acts.dtype.kind not in "biuf" or len(acts) < 1:
        raise ValueError(f"{where}/actions has shape {acts.shape} and dtype {acts.dtype}; expected (T >= 1, A) numbers")
    steps = len(acts)
    recorded = group.attrs.get("num_samples")
    if recorded is not None and int(recorded) != steps:
        raise ValueError(f"{where} holds {steps} actions; its num_samples says {int(recorded)}")
    if acts.dtype.kind == "f" and not np.isfinite(acts).all():  # named here, where the file's path is known
        step = int(np.argwhere(~np.isfinite(acts))[0, 0])
        raise ValueError(f"{where}/actions holds NaN or infinite values (step {step})")
    widths.setdefault("actions", acts.shape[1])
    if acts.shape[1] != widths["actions"]:
        raise ValueError(f"{where}/actions has {acts.shape[1]} dimensions; earlier demonstrations {widths['actions']}")
    parts = []
    for key in keys:
        if "obs" not in group or key not in group["obs"]:
            raise ValueError(f"{where} has no obs/{key}")
        rows = _rows(group["obs"][key], steps, f"{where}/obs/{key}")
        if "next_obs" in group and key in group["next_obs"]:
            last = _rows(group["next_obs"][key], steps, f"{where}/next_obs/{key}")[-1:]
        else:
            last = rows[-1:]  # no next observation recorded: BC never reads the final row
        for kind, values in (("obs", rows), ("next_obs", last)):
            if values.dtype.kind == "f" and not np.isfinite(values).all():
                step = int(np.argwhere(~np.isfinite(values))[0, 0]) + (steps - 1 if kind == "next_obs" else 0)
                raise ValueError(f"{where}/{kind}/{key} holds NaN or infinite values (step {step}); a demonstration's "
                                 "observations must be finite")
        widths.setdefault(key, rows.shape[1])
        if rows.shape[1] != widths[key]:
            raise ValueError(f"{where}/obs/{key} has {rows.shape[1]} values per step; earlier demonstrations "
                             f"{widths[key]}")
        parts.append(np.concatenate([rows, last]))
    rews = None
    if "rewards" in group:
        rews = group["rewards"][()].astype(np.float64)
        if rews.shape != (steps,):
            raise ValueError(f"{where}/rewards has shape {rews.shape}; expected ({steps},)")
    terminal = False
    if "dones" in group:
        dones = group["dones"][()]
        if dones.shape != (steps,):
            raise ValueError(f"{where}/dones has shape {dones.shape}; expected ({steps},)")
        terminal = bool(dones[-1])
    return parts, acts, rews, terminal


def read_robomimic(path: str | os.PathLike, obs_keys: Sequence[str] | None = None) -> EpisodePool:
    """Read the robomimic-format file ``path`` (see the module docstring).

    Args:
        path: the ``.hdf5``/``.h5`` file.
        obs_keys: the low-dimensional ``obs/<key>`` to use, concatenated in this order (default: every key, sorted,
            when the file has no image keys).

    Returns:
        The pool: ``N`` demonstrations, observations ``(T_i + 1, D)``, actions ``(T_i, A)``.

    Raises:
        ValueError (one line): no such file, not HDF5, no ``data/demo_*``, a missing key, ragged shapes (a key whose
        length or width differs), a filter key naming a missing demonstration, image keys.
    """
    from gymnasium import spaces
    from imitation.data.types import Trajectory, TrajectoryWithRew

    h5py = require_h5py()
    file_path = Path(path).expanduser()
    if not file_path.is_file():
        raise ValueError(f"no robomimic file at {str(file_path)!r}")
    try:
        file = h5py.File(file_path, "r")
    except OSError as error:
        raise ValueError(hdf5_open_error(file_path, error)) from None
    try:
        with file:
            names = demo_names(file)
            masks = read_filter_keys(file, names)
            first = file["data"][names[0]]
            if "obs" not in first:
                raise ValueError(f"data/{names[0]} has no obs group")
            keys = _choose_keys(first["obs"], obs_keys)
            env_args = _env_args(file["data"])
            env_spec = _env_spec(env_args)
            seeds = (None,) * len(names) if env_spec is None else _reset_seeds(file["data"], names)
            widths: dict = {}
            read = [_read_demo(file["data"][name], name, keys, widths) for name in names]
    except ValueError as error:
        raise ValueError(f"robomimic file {str(file_path)!r}: {error}") from None
    except (OSError, KeyError, TypeError) as error:  # h5py's errors on damaged data
        raise ValueError(f"cannot read robomimic file {str(file_path)!r} (damaged?): {type(error).__name__}: "
                         f"{' '.join(str(error).split())}") from None
    obs_dtype = np.result_type(np.float32, *(part.dtype for parts, *_ in read for part in parts))
    act_dtype = np.result_type(np.float32, *(acts.dtype for _, acts, *_ in read))
    with_rewards = all(rews is not None for *_, rews, _ in read)
    trajectories, metadata = [], []
    for name, (parts, acts, rews, terminal) in zip(names, read):
        obs = np.concatenate(parts, axis=1).astype(obs_dtype)
        acts = acts.astype(act_dtype)
        if with_rewards:
            trajectories.append(TrajectoryWithRew(obs=obs, acts=acts, infos=None, terminal=terminal, rews=rews))
        else:
            trajectories.append(Trajectory(obs=obs, acts=acts, infos=None, terminal=terminal))
        meta = {"demo": name, "num_samples": len(acts)}
        if env_args is not None:  # absent from some writers' files
            meta["env_args"] = env_args
        metadata.append({**meta, **{key: name in members for key, members in masks.items()}})
    group = file_path.stem
    width = sum(widths[key] for key in keys)
    return EpisodePool(
        trajectories=tuple(trajectories),
        episode_ids=np.array([int(_DEMO.match(n).group(1)) for n in names], dtype=np.int64),
        seeds=seeds,
        groups=(group,) * len(names),
        metadata=tuple(metadata),
        infos=({},) * len(names),
        observation_space=spaces.Box(-np.inf, np.inf, (width,), obs_dtype),
        action_space=spaces.Box(-np.inf, np.inf, (widths["actions"],), act_dtype),
        env_specs={group: env_spec},
    )

"""Write an :class:`~curteach_teaching.datasets.pool.EpisodePool` as a Minari dataset, in any storage format.

The dataset is made by Minari itself (``minari.create_dataset_from_buffers`` with one ``EpisodeBuffer`` per episode,
built from whole arrays: ``EpisodeBuffer.add_step_data`` needs jax) under ``root/<dataset_id>/``, so that
``MINARI_DATASETS_PATH=root`` makes it loadable by ``minari.load_dataset(dataset_id)``. Each episode's seed and reset
``options`` go where Minari keeps them; the rest of its metadata is stored with
``storage.update_episode_metadata``. Reading it back with :func:`~curteach_teaching.datasets.reading.read_pool` gives
the same arrays, dtypes, seeds, metadata and infos (episode ids become ``0 .. N-1``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.formats.minari_read import datasets_root
from curteach_teaching.datasets.pool import EpisodePool
from curteach_teaching.datasets.spaces import check_space, describe_space, env_space_matches, to_minari_values

__all__ = ["write_pool", "DATA_FORMATS", "RESERVED_METADATA", "minari_root"]

#: Storage formats Minari 0.5 writes.
DATA_FORMATS = ("hdf5", "arrow", "parquet")
#: Episode metadata keys Minari manages itself (``options`` is passed to the episode buffer).
RESERVED_METADATA = ("id", "total_steps", "seed", "options")

# Minari warns about every descriptive field left unset; a pool does not know its author or code, so unless the caller
# gives them these warnings say nothing useful.
_UNSET_WARNINGS = r"`(code_permalink|author|author_email|algorithm_name|description|eval_env)` is set to None|" \
                  r"env_spec is None"


def _storable(value, where: str):
    """``value`` as plain Python that both HDF5 attributes and JSON keep exactly (ValueError otherwise)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key or "/" in key:
                raise ValueError(f"{where}: metadata keys must be non-empty strings without '/'; got {key!r}")
            out[key] = _storable(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        items = [_storable(v, where) for v in value]
        if any(isinstance(v, (dict, list)) for v in items) or len({type(v) for v in items}) > 1:
            raise ValueError(f"{where}: lists in metadata must hold numbers, booleans or strings of one kind")
        return items
    raise ValueError(f"{where}: metadata values must be numbers, booleans, strings, lists or dicts; got "
                     f"{type(value).__name__}")


def _flatten(metadata: dict, prefix: str = "") -> dict:
    """Nested dicts as ``a/b`` keys: HDF5 attributes are flat, and Minari unflattens ``/`` when reading."""
    flat = {}
    for key, value in metadata.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _infos(infos: dict, length: int, where: str, data_format: str) -> dict:
    out = {}
    for key, value in infos.items():
        if isinstance(value, dict):
            out[key] = _infos(value, length, f"{where}[{key!r}]", data_format)
            continue
        array = np.asarray(value)
        if array.ndim == 0 or len(array) != length:
            raise ValueError(f"{where}[{key!r}] must have {length} entries (the reset's info, then one per step); "
                             f"got shape {array.shape}")
        # Minari 0.5.4's Arrow reader fails on one-dimensional info arrays but reads lists of scalars back as arrays
        out[key] = array.tolist() if data_format != "hdf5" and array.ndim == 1 else array
    return out


def _buffers(pool: EpisodePool, data_format: str) -> tuple[list, list]:
    """One ``EpisodeBuffer`` and one dict of extra metadata per episode, all checked before anything is written."""
    from minari.data_collector.episode_buffer import EpisodeBuffer

    buffers, extras = [], []
    for i, trajectory in enumerate(pool.trajectories):
        n = len(trajectory.acts)
        where = f"episode {i} ({pool.groups[i]!r}, id {int(pool.episode_ids[i])})"
        terminations = np.zeros(n, dtype=bool)
        truncations = np.zeros(n, dtype=bool)
        if n:
            terminations[-1], truncations[-1] = trajectory.terminal, not trajectory.terminal
        meta = _storable(dict(pool.metadata[i]), f"{where} metadata")
        options = meta.get("options")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"{where} metadata: 'options' must be a dict of reset options; got {options!r}")
        buffers.append(EpisodeBuffer(
            id=i,
            seed=None if pool.seeds[i] is None else int(pool.seeds[i]),
            options=options,
            observations=to_minari_values(pool.observation_space, trajectory.obs, n + 1, f"{where} observations"),
            actions=to_minari_values(pool.action_space, trajectory.acts, n, f"{where} actions"),
            rewards=np.asarray(trajectory.rews),
            terminations=terminations,
            truncations=truncations,
            infos=_infos(dict(pool.infos[i]), n + 1, f"{where} infos", data_format) or None,
        ))
        extra = {k: v for k, v in meta.items() if k not in RESERVED_METADATA}
        extras.append(_flatten(extra) if data_format == "hdf5" else extra)
    return buffers, extras


def _check_env(spec, pool: EpisodePool) -> None:
    """ValueError unless the spec's environment can be made and has the pool's spaces (Minari stores both)."""
    import gymnasium as gym

    try:
        env = gym.make(spec)
    except Exception as error:
        raise ValueError(f"cannot make the pool's environment {spec.id!r}: {type(error).__name__}: {error}") from None
    try:
        for kind in ("observation", "action"):
            ours, theirs = getattr(pool, f"{kind}_space"), getattr(env, f"{kind}_space")
            if not env_space_matches(ours, theirs):
                raise ValueError(f"the {kind} space of environment {spec.id!r}, {describe_space(theirs)}, does not "
                                 f"match the pool's, {describe_space(ours)}")
    finally:
        env.close()


@contextlib.contextmanager
def minari_root(root: str | os.PathLike):
    """``MINARI_DATASETS_PATH`` set to ``root`` (made absolute) for the block: Minari's writer writes only there, and
    Minari 0.5.4 sizes a dataset by joining its folder to paths that already hold it, which only an absolute folder
    survives. Not thread-safe (it is the process's environment)."""
    old = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = os.path.abspath(root)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = old


def write_pool(
    pool: EpisodePool,
    dataset_id: str,
    *,
    root: str | os.PathLike | None = None,
    data_format: str = "hdf5",
    jpeg_encoding: bool = False,
    author: str | None = None,
    author_email: str | None = None,
    code_permalink: str | None = None,
    algorithm_name: str | None = None,
    description: str | None = None,
    requirements: list[str] | None = None,
) -> Path:
    """Write ``pool`` as the Minari dataset ``dataset_id`` under ``root``.

    Args:
        pool: ``N >= 1`` episodes with rewards (``TrajectoryWithRew``); its metadata values must be numbers,
            booleans, strings, flat lists of one kind or dicts of those (``options`` is stored as Minari's reset
            options); its infos ``name -> (L_i + 1, ...)`` arrays.
        dataset_id: ``(namespace/)name-vN`` (Minari's rule).
        root: the datasets folder (default: ``MINARI_DATASETS_PATH``, else ``~/.minari/datasets``); the dataset goes
            to ``root/dataset_id/``, which must not exist.
        data_format: ``"hdf5"``, ``"arrow"`` or ``"parquet"``.
        jpeg_encoding: Minari's lossy JPEG storage of images (uint8 Box observations of at least 32 x 32 with bounds
            0-255). Off by default, so that reading back gives exactly what was written.
        author, author_email, code_permalink, algorithm_name, description: stored in the dataset's metadata when
            given (Minari's warnings about unset ones are silenced); the description defaults to a line naming the
            pool's size.
        requirements: the packages (``pip`` specifiers) the environment needs, stored for Minari's
            ``recover_environment``.

    Returns:
        The dataset's folder ``root/dataset_id``.

    Raises:
        ValueError: a malformed id, an unknown format, an existing dataset, an empty pool or one without rewards, an
            unsupported space, or an episode whose values or metadata do not fit; nothing is written then. If Minari
            fails part-way, the partial dataset folder is removed.
    """
    import minari
    from minari.dataset.minari_dataset import parse_dataset_id

    if data_format not in DATA_FORMATS:
        raise ValueError(f"data_format must be one of {DATA_FORMATS}; got {data_format!r}")
    try:
        parse_dataset_id(dataset_id)
    except Exception:
        raise ValueError(f"malformed dataset id {dataset_id!r}: Minari ids look like namespace/name-v0") from None
    if len(pool) == 0:
        raise ValueError("the pool holds no episodes; there is nothing to write")
    if not pool.has_rewards:
        raise ValueError("Minari datasets store rewards: give the pool TrajectoryWithRew episodes")
    check_space(pool.observation_space, "observation")
    check_space(pool.action_space, "action")
    # absolute: Minari 0.5.4 measures a dataset's size by joining its data path with paths that already include it
    root = (Path(root) if root is not None else datasets_root()).expanduser().absolute()
    target = root / dataset_id
    if target.exists():
        raise ValueError(f"a dataset already exists at {str(target)!r}; remove it or choose another id")
    buffers, extras = _buffers(pool, data_format)
    spec = pool.env_spec
    if spec is not None:
        _check_env(spec, pool)
    if description is None:
        description = (f"{len(pool)} demonstrations ({int(pool.lengths.sum())} steps) written by curteach from "
                       f"{', '.join(g or 'memory' for g in pool.group_names)}")
    root.mkdir(parents=True, exist_ok=True)
    try:
        with minari_root(root), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_UNSET_WARNINGS, category=UserWarning)
            dataset = minari.create_dataset_from_buffers(
                dataset_id, buffers, env=spec, eval_env=spec, algorithm_name=algorithm_name, author=author,
                author_email=author_email, code_permalink=code_permalink, description=description,
                observation_space=pool.observation_space, action_space=pool.action_space, data_format=data_format,
                jpeg_encoding=jpeg_encoding, **({} if requirements is None else {"requirements": list(requirements)}),
            )
            if any(extras):
                dataset.storage.update_episode_metadata(extras, range(len(extras)))
    except Exception as error:
        shutil.rmtree(target, ignore_errors=True)
        message = " ".join(str(error).split())
        raise ValueError(f"Minari could not write {dataset_id!r}: {type(error).__name__}: {message}") from None
    return target

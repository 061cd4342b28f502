"""Read demonstration datasets into one :class:`~curteach_teaching.datasets.pool.EpisodePool`, whatever their format;
never download.

Each source is offered to the registered formats (:data:`~curteach_teaching.datasets.formats.FORMATS`; built-ins: a
``.hdf5``/``.h5`` file or a folder of them is robomimic's, a folder with ``meta/info.json`` LeRobot's, anything else
a Minari dataset id or folder), and the format that claims it reads it; several sources become one pool, each
dataset's episodes one task group. With ``env_id``, the pool's spaces are checked against that environment's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import gymnasium as gym

from curteach_teaching.datasets.pool import EpisodePool
from curteach_teaching.datasets.spaces import describe_space, env_space_matches

__all__ = ["read_pool", "source_format"]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _use_env(pool: EpisodePool, env_id: str) -> EpisodePool:
    """The pool with ``env_id``'s spec for every group, after checking the env's spaces against the dataset's; an id
    of a package that registers on import is found without naming it (:func:`~.env_ids.check_env_id`)."""
    from curteach_teaching.datasets.env_ids import check_env_id

    check_env_id(env_id)
    try:
        env = gym.make(env_id)
    except Exception as error:
        raise ValueError(f"cannot make environment {env_id!r}: {type(error).__name__}: {_one_line(error)}") from None
    try:
        for kind in ("observation", "action"):
            ours, theirs = getattr(pool, f"{kind}_space"), getattr(env, f"{kind}_space")
            if not env_space_matches(ours, theirs):
                raise ValueError(f"the {kind} space of environment {env_id!r}, {describe_space(theirs)}, does not "
                                 f"match the dataset's ({', '.join(pool.group_names)}), {describe_space(ours)}")
        spec = env.spec
    finally:
        env.close()
    return EpisodePool(
        trajectories=pool.trajectories, episode_ids=pool.episode_ids, seeds=pool.seeds, groups=pool.groups,
        metadata=pool.metadata, infos=pool.infos, observation_space=pool.observation_space,
        action_space=pool.action_space, env_specs={group: spec for group in pool.group_names},
    )


def source_format(source: str | os.PathLike) -> str:
    """The name of the format that reads ``source`` (:func:`~curteach_teaching.datasets.formats.format_of`): the
    built-ins give ``"robomimic"`` (a ``.hdf5``/``.h5`` file, or a folder holding such files: a LIBERO suite),
    ``"lerobot"`` (a folder with ``meta/info.json``) or ``"minari"`` (anything else: a Minari id or folder)."""
    from curteach_teaching.datasets.formats import format_of

    return format_of(source).name


def read_pool(
    source: str | os.PathLike | Sequence[str | os.PathLike], *, env_id: str | None = None,
    obs_keys: Sequence[str] | None = None,
) -> EpisodePool:
    """Read one or several local datasets, of any registered format, as one :class:`EpisodePool`.

    Args:
        source: a Minari dataset id, a dataset folder (a Minari dataset's root or ``data/``, a LeRobot dataset), a
            folder holding several Minari datasets, a robomimic file or a folder of them, or a list of those. Ids are
            looked up under ``MINARI_DATASETS_PATH`` only; nothing is ever downloaded.
        env_id: the environment to evaluate in, instead of the one recovered from each dataset's spec; its
            observation and action spaces must match the datasets' (a dataset ``Text`` matches a string space such as
            Minigrid's ``MissionSpace``).
        obs_keys: the low-dimensional observation keys of a robomimic file or a LeRobot dataset (see
            :func:`~curteach_teaching.datasets.formats.robomimic_read.read_robomimic`,
            :func:`~curteach_teaching.datasets.formats.lerobot_read.read_lerobot`); each source is read by the format
            that claims it (:func:`~curteach_teaching.datasets.formats.format_of`).

    Returns:
        The pool: datasets in the order given (found folders sorted), episodes in id order; each episode's group is
        its dataset's id, its seed and metadata come from ``dataset.storage.get_episode_metadata``. Episode ``i`` of
        ``L_i`` steps has ``obs (L_i + 1, ...)``, ``acts (L_i, ...)`` and ``rews (L_i,)``; see :class:`EpisodePool`.

    Raises:
        ValueError (one line, nothing written): a missing dataset (id or path), a folder that is not a Minari
        dataset, a damaged data file, an empty dataset, an unsupported space, datasets whose spaces differ, or
        ``env_id``'s spaces not matching.
    """
    from curteach_teaching.datasets.formats import format_of

    sources = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not sources:
        raise ValueError("no dataset given")
    pools = [pool for item in sources for pool in format_of(item).read(item, obs_keys)]
    pool = EpisodePool.concatenate(pools)
    return pool if env_id is None else _use_env(pool, env_id)

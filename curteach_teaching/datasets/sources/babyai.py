"""``make-dataset babyai``: one Minari dataset of ``BabyAIBot`` demonstrations per BabyAI level.

Layout: level ``BabyAI-GoToLocal-v0`` becomes the Minari dataset ``babyai-GoToLocal-v0`` in
``OUT/babyai-GoToLocal-v0/`` (``MINARI_DATASETS_PATH=OUT`` finds it by id;
:func:`~curteach_teaching.datasets.reading.read_pool` reads it, or all of ``OUT`` at once). Every level is first
written under a hidden temporary folder in ``OUT`` and moved into place when complete.

Each dataset is an :class:`~curteach_teaching.datasets.pool.EpisodePool` written by
:func:`~curteach_teaching.datasets.writing.write_pool`: the environment spec (``recover_environment()`` rebuilds the
level), observations as ``Dict(direction=Discrete(4), image=Box(0, 255, (7, 7, 3), uint8), mission=Text(...))``
(Minigrid's ``MissionSpace`` cannot be serialised), each episode's reset seed as its Minari ``seed``, and per-episode
metadata (:meth:`~curteach_teaching.datasets.sources.babyai_bot.BotEpisode.metadata`: level, noisy, noise
probability and share, bot_gave_up, success). Storage: HDF5 by default, one file per dataset, written in time
linear in the episodes (GoToLocal: 2.1 s for 250 episodes, 2.7 s for 500) and read at about 4 ms per episode.
Minari 0.5.4's Arrow storage (``--minari-storage arrow``) reads faster (0.2 s for 500 episodes) but its writing
grows quadratically (3.7 s for 250, 10.3 s for 500; 2,000 episodes took minutes): after every episode it recomputes
the dataset's size by walking its whole folder. Images are stored raw, so reading gives back exactly what was
written.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.sources.base import DatasetSource, check_out_folder, write_staged

__all__ = ["DATA_FORMATS", "BabyAISource", "bot_pool", "dataset_id", "write_babyai_datasets"]

#: Minari storage formats a BabyAI dataset may be written in (the first is the default).
DATA_FORMATS = ("hdf5", "arrow")


def dataset_id(level: str) -> str:
    """The Minari dataset id of a level's bot dataset: ``BabyAI-GoToLocal-v0`` -> ``babyai-GoToLocal-v0``."""
    from curteach_teaching.datasets.sources.babyai_bot import short_name

    return f"babyai-{short_name(level)}-v0"


def _observation_space():
    import gymnasium as gym

    from curteach_teaching.learners.babyai_vocab import IMAGE_SHAPE, N_DIRECTIONS, mission_text_space

    return gym.spaces.Dict({
        "direction": gym.spaces.Discrete(N_DIRECTIONS),
        "image": gym.spaces.Box(0, 255, shape=IMAGE_SHAPE, dtype=np.uint8),
        "mission": mission_text_space(),
    })


def bot_pool(level: str, episodes: Sequence) -> object:
    """One level's generated episodes (:class:`~curteach_teaching.datasets.sources.babyai_bot.BotEpisode`, in
    their plans' order) as an :class:`~curteach_teaching.datasets.pool.EpisodePool` of the group
    :func:`dataset_id` of ``level``, with the level's environment spec."""
    import gymnasium as gym
    from imitation.data.types import DictObs, TrajectoryWithRew

    from curteach_teaching.datasets.pool import EpisodePool
    from curteach_teaching.datasets.sources.babyai_bot import babyai_level_ids

    babyai_level_ids()  # registers the levels
    spec = gym.spec(level)
    trajectories = []
    for episode in episodes:
        missions = np.empty(episode.length + 1, dtype=object)
        missions[:] = [episode.mission] * (episode.length + 1)
        trajectories.append(TrajectoryWithRew(
            obs=DictObs({"direction": episode.directions, "image": episode.images, "mission": missions}),
            acts=episode.actions, infos=None, terminal=bool(episode.terminated), rews=episode.rewards))
    group = dataset_id(level)
    return EpisodePool(
        trajectories=tuple(trajectories),
        episode_ids=np.asarray([episode.plan.index for episode in episodes], dtype=np.int64),
        seeds=tuple(int(episode.plan.seed) for episode in episodes),
        groups=(group,) * len(trajectories),
        metadata=tuple(episode.metadata() for episode in episodes),
        infos=tuple({} for _ in episodes),
        observation_space=_observation_space(),
        action_space=gym.spaces.Discrete(7),
        env_specs={group: spec},
    )


def _targets(out: str | os.PathLike, levels, overwrite: bool) -> tuple[list[str], dict]:
    """The level ids and ``level -> OUT/babyai-<Level>-v0``, after the checks that need no generation."""
    from curteach_teaching.datasets.sources.babyai_bot import resolve_levels

    level_ids = resolve_levels(levels)
    out = check_out_folder(out)
    targets = {level: out / dataset_id(level) for level in level_ids}
    existing = [str(path) for path in targets.values() if path.exists()]
    if existing and not overwrite:
        raise ValueError(f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
                         "pass --overwrite to replace")
    return level_ids, targets


def write_babyai_datasets(
    out: str | os.PathLike,
    levels: str | Sequence[str],
    episodes: int,
    seed: int,
    *,
    noise: float = 0.0,
    workers: int | None = 1,
    progress: bool | None = None,
    data_format: str = DATA_FORMATS[0],
    overwrite: bool = False,
) -> dict[str, Path]:
    """Generate ``episodes`` bot episodes per level and write one Minari dataset per level under ``out``.

    Args:
        out: the output folder (created if missing).
        levels: BabyAI levels, Gymnasium ids or short names (a list or a comma-separated string).
        episodes, seed, noise: see :func:`~curteach_teaching.datasets.sources.babyai_bot.plan_episodes`.
        workers: processes (``None``: all cores); the datasets do not depend on it.
        progress: a progress bar on stderr (``None``: when stderr is a terminal).
        data_format: one of :data:`DATA_FORMATS`.
        overwrite: replace existing datasets of the same levels; otherwise they are refused before any work.

    Returns:
        Level id -> the dataset's folder (``out/babyai-<Level>-v0``).

    Raises:
        ValueError: bad levels, counts, noise or format, or an existing dataset without ``overwrite``.
    """
    import importlib.metadata

    from curteach_teaching.datasets.sources.babyai_bot import (
        NOISE_STEP_PROBABILITY,
        generate_bot_episodes,
        plan_episodes,
    )
    from curteach_teaching.datasets.writing import write_pool

    if data_format not in DATA_FORMATS:
        raise ValueError(f"data_format must be one of {', '.join(DATA_FORMATS)}; got {data_format!r}")
    level_ids, targets = _targets(out, levels, overwrite)
    out = Path(out)
    plans = plan_episodes(level_ids, episodes, seed, noise)
    generated = generate_bot_episodes(plans, workers=workers, progress=progress)
    requirements = [f"minigrid=={importlib.metadata.version('minigrid')}"]

    def write(level: str, staging: Path) -> None:
        mine = [e for e in generated if e.plan.level == level]
        description = (f"BabyAIBot (minigrid.utils.baby_ai_bot) demonstrations on {level}: {len(mine)} episodes, "
                       f"seed {seed}, noise share {noise} (random action with probability {NOISE_STEP_PROBABILITY} "
                       "per step in noisy episodes); written by `curteach make-dataset babyai`.")
        write_pool(bot_pool(level, mine), dataset_id(level), root=staging, data_format=data_format,
                   author="curteach", algorithm_name="BabyAIBot", description=description, requirements=requirements)

    write_staged(out, "babyai", targets, write)
    return targets


class BabyAISource(DatasetSource):
    """``make-dataset babyai``: see the module docstring."""

    name = "babyai"
    summary = "BabyAI bot demonstrations, one Minari dataset per level (needs minigrid)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--levels``, ``--episodes``, ``--noise`` and ``--minari-storage``."""
        parser.add_argument("--levels", required=True,
                            help="comma-separated BabyAI levels, Gymnasium ids or short names (GoToLocal)")
        parser.add_argument("--episodes", type=int, required=True, help="bot episodes per level")
        parser.add_argument("--noise", type=float, default=0.0,
                            help="share of the episodes that take a random action with probability 0.5 per step "
                            "(default 0)")
        parser.add_argument("--minari-storage", choices=DATA_FORMATS, default=DATA_FORMATS[0],
                            help="Minari's storage format (default: hdf5; arrow reads faster, writes slower)")

    def check(self, args: argparse.Namespace) -> None:
        """The levels, the output folder and its existing datasets, the counts and the noise, before any episode."""
        from curteach_teaching.datasets.sources.babyai_bot import check_settings

        _targets(args.out, args.levels, args.overwrite)
        check_settings(args.episodes, args.seed, args.noise, args.workers)

    def generate(self, args: argparse.Namespace, *, progress: bool) -> list[str]:
        """:func:`write_babyai_datasets`; returns the datasets' folders."""
        written = write_babyai_datasets(args.out, args.levels, args.episodes, args.seed, noise=args.noise,
                                        workers=args.workers, progress=progress, data_format=args.minari_storage,
                                        overwrite=args.overwrite)
        return [str(path) for path in written.values()]

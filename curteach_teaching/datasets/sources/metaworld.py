"""``curteach make-dataset metaworld``: one Minari dataset of Meta-World scripted-expert episodes per task.

Layout: task ``push-v3`` becomes the Minari dataset ``metaworld-push-v0`` in ``OUT/metaworld-push-v0/`` (with
``MINARI_DATASETS_PATH=OUT``, ``minari.load_dataset("metaworld-push-v0")`` finds it; ``dataset-bc --dataset OUT``
reads every task as one pool whose groups are the datasets). Every task is first written under a hidden folder in
``OUT`` and moved into place when complete.

Each dataset stores the environment spec ``MetaWorldTask-v0`` with ``task`` and the step limit (so
``dataset.recover_environment()`` rebuilds the task), the 39-d state observations, the actions taken, Meta-World's
rewards, each episode's reset seed as its Minari ``seed`` (``reset(seed=...)`` and the stored actions replay it),
``info["success"]`` per step, and per-episode metadata: ``task``, ``noisy``, ``noise`` (the action noise's standard
deviation), ``success``, ``success_step`` (the step of the first success, -1 if none) and ``max_steps``. The one-hot
task id of Meta-World's multi-task convention is not stored: it is over the tasks a learner is trained on, which the
learner's observation codec knows and a dataset does not (docs/experiments/metaworld.md). How episodes are drawn, and
where they end: :mod:`~curteach_teaching.datasets.sources.metaworld_episodes`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from curteach_teaching.datasets.sources.base import DatasetSource, write_staged
from curteach_teaching.datasets.sources.metaworld_episodes import (
    ExpertEpisode,
    generate_expert_episodes,
    plan_episodes,
)

__all__ = ["MetaWorldSource", "dataset_id", "expert_pool", "write_metaworld_datasets"]

#: the flag of each setting of :func:`plan_episodes`, to name it in an error
_FLAGS = {"episodes": "--episodes", "seed": "--seed", "noise": "--noise", "noise_share": "--noise-share",
          "max_steps": "--max-steps", "workers": "--workers", "operators": "--operators"}
#: the file formats of ``--format``: one Minari dataset per task, or one robomimic HDF5 file per task
FILE_FORMATS = ("minari", "robomimic")


def dataset_id(task: str) -> str:
    """The Minari dataset id of a task's expert dataset: ``push-v3`` -> ``metaworld-push-v0``."""
    return f"metaworld-{task.removesuffix('-v3')}-v0"


def expert_pool(task: str, episodes: Sequence[ExpertEpisode], max_steps: int):
    """One task's generated episodes as an :class:`~curteach_teaching.datasets.pool.EpisodePool` (group: the dataset
    id; seeds, metadata, ``infos["success"]`` of shape ``(T + 1,)``, the environment spec of ``MetaWorldTask-v0``
    with ``task`` and ``max_steps``)."""
    import gymnasium as gym
    from imitation.data.types import TrajectoryWithRew

    from curteach_envs.metaworld import METAWORLD_ENV_ID
    from curteach_teaching.datasets.pool import EpisodePool

    env = gym.make(METAWORLD_ENV_ID, task=task, max_episode_steps=max_steps)
    try:
        spec, observation_space, action_space = env.spec, env.observation_space, env.action_space
    finally:
        env.close()
    trajectories = [TrajectoryWithRew(obs=e.observations, acts=e.actions, infos=None, terminal=e.terminated,
                                      rews=e.rewards) for e in episodes]
    return EpisodePool.from_trajectories(
        trajectories, observation_space, action_space, group=dataset_id(task),
        seeds=[e.plan.seed for e in episodes], metadata=[e.metadata() for e in episodes],
        infos=[{"success": e.successes} for e in episodes], env_spec=spec)


def _targets(out: Path, tasks: Sequence[str], overwrite: bool, suffix: str = "") -> dict[str, Path]:
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} exists and is not a folder")
    targets = {task: out / (dataset_id(task) + suffix) for task in tasks}
    existing = [str(path) for path in targets.values() if path.exists()]
    if existing and not overwrite:
        raise ValueError(f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
                         "pass --overwrite to replace")
    return targets


def write_metaworld_datasets(
    out: str | os.PathLike,
    tasks: str | Sequence[str],
    episodes: int,
    seed: int,
    *,
    noise: float = 0.0,
    noise_share: float = 1.0,
    max_steps: int = 500,
    workers: int | None = 1,
    progress: bool = False,
    overwrite: bool = False,
    data_format: str = "hdf5",
    operators: str | None = None,
    file_format: str = "minari",
) -> dict[str, Path]:
    """Generate ``episodes`` expert episodes per task and write one Minari dataset per task under ``out``.

    Args:
        out: the output folder (created if missing).
        tasks, episodes, seed, noise, noise_share, max_steps, operators: see
            :func:`~curteach_teaching.datasets.sources.metaworld_episodes.plan_episodes`.
        workers: processes (``None``: all cores); the datasets do not depend on it.
        progress: a tqdm bar on stderr.
        overwrite: replace existing datasets of the same tasks; otherwise they are refused before any work.
        data_format: Minari's storage, ``"hdf5"`` (default), ``"arrow"`` or ``"parquet"``.
        file_format: ``"minari"`` (default) or ``"robomimic"``: one robomimic file per task,
            ``out/metaworld-<task>-v0.hdf5`` (:mod:`~curteach_teaching.datasets.sources.metaworld_robomimic`).

    Returns:
        Task -> the dataset's folder (``out/metaworld-<task>-v0``) or file.

    Raises:
        ValueError: bad tasks, counts, noise or format, or an existing dataset without ``overwrite``.
    """
    from curteach_teaching.datasets.writing import DATA_FORMATS, write_pool

    if data_format not in DATA_FORMATS:
        raise ValueError(f"data_format must be one of {', '.join(DATA_FORMATS)}; got {data_format!r}")
    if file_format not in FILE_FORMATS:
        raise ValueError(f"file_format must be one of {', '.join(FILE_FORMATS)}; got {file_format!r}")
    plans = plan_episodes(tasks, episodes, seed, noise=noise, noise_share=noise_share, max_steps=max_steps,
                          **({} if operators is None else {"operators": operators}))
    task_names = list(dict.fromkeys(plan.task for plan in plans))
    out = Path(out)
    targets = _targets(out, task_names, overwrite, ".hdf5" if file_format == "robomimic" else "")
    generated = generate_expert_episodes(plans, workers=workers, progress=progress)
    if file_format == "robomimic":
        from curteach_teaching.datasets.sources.metaworld_robomimic import write_task_files

        write_task_files(targets, generated, max_steps)
        return targets

    def write(task: str, staging: Path) -> None:
        mine = [e for e in generated if e.plan.task == task]
        noisy = sum(e.plan.noise > 0 for e in mine)
        how = (f"{noisy} with Gaussian action noise of std {noise:g}" if operators is None
               else "operator styles " + ", ".join(f"{style} {sum(e.plan.operator == style for e in mine)}"
                                                  for style in dict.fromkeys(e.plan.operator for e in mine)))
        description = (f"Meta-World {task}: {len(mine)} scripted-expert episodes (metaworld.policies), seed {seed}, "
                       f"{how}; episodes end at the first success or "
                       f"after {max_steps} steps; written by `curteach make-dataset metaworld`.")
        write_pool(expert_pool(task, mine, max_steps), dataset_id(task), root=staging, data_format=data_format,
                   author="curteach", algorithm_name="Meta-World scripted expert", description=description)

    write_staged(out, "metaworld", targets, write)
    return targets


class MetaWorldSource(DatasetSource):
    """``make-dataset metaworld``: reads ``--tasks``, ``--episodes``, ``--noise``, ``--noise-share``, ``--max-steps``,
    ``--operators``, ``--format`` and the command's ``--seed``, ``--workers``, ``--out``, ``--overwrite`` (and
    ``--minari-storage`` if present)."""

    name = "metaworld"
    summary = "Meta-World scripted-expert episodes, one Minari dataset per task (needs the metaworld extra)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--tasks``, ``--episodes``, ``--noise``, ``--noise-share``, ``--max-steps``, ``--operators``,
        ``--format``."""
        group = parser.add_argument_group("metaworld",
                                          "flags of `make-dataset metaworld` (one Minari dataset per task)")
        group.add_argument("--tasks", default=None,
                           help="comma-separated Meta-World tasks, with or without -v3 (reach,push,pick-place)")
        group.add_argument("--episodes", type=int, default=None, help="expert episodes per task")
        group.add_argument("--noise", type=float, default=0.0,
                           help="standard deviation of the Gaussian noise added to the noisy episodes' actions "
                                "(default 0: none)")
        group.add_argument("--noise-share", type=float, default=1.0,
                           help="fraction of each task's episodes that are noisy, chosen by the seed (default 1)")
        group.add_argument("--max-steps", type=int, default=500,
                           help="step limit of an episode, at most Meta-World's 500 (default 500); episodes end "
                                "earlier at their first success")
        group.add_argument("--operators", default=None, metavar="STYLE:SHARE,...",
                           help="operator styles and their shares of each task's episodes, summing to 1, e.g. "
                                "careful:0.3,hasty:0.4,hesitant:0.3 (styles: careful, hesitant, hasty, noisy; noisy "
                                "takes its std from --noise); per-episode metadata operator, tier "
                                "(better/okay/worse) and worse. Default: the plain expert (noisy by --noise-share)")
        group.add_argument("--format", dest="file_format", choices=FILE_FORMATS, default="minari",
                           help="minari (default): one Minari dataset per task; robomimic: one robomimic HDF5 file "
                                "per task, OUT/metaworld-<task>-v0.hdf5, with filter keys per operator and per tier")

    def _settings(self, args: argparse.Namespace) -> dict:
        settings = {"tasks": args.tasks, "episodes": args.episodes, "seed": args.seed, "noise": args.noise,
                    "noise_share": args.noise_share, "max_steps": args.max_steps}
        if getattr(args, "operators", None) is not None:  # absent: the call the code made before the flag existed
            settings["operators"] = args.operators
        return settings

    def check(self, args: argparse.Namespace) -> None:
        """One-line ``ValueError`` for missing or bad flags, an unknown task, or existing datasets without
        ``--overwrite``; nothing is written."""
        try:
            from curteach_envs.metaworld import metaworld_task_names

            metaworld_task_names()
        except ImportError as error:
            raise ValueError(str(error)) from None
        if not args.tasks or args.episodes is None:
            raise ValueError("make-dataset metaworld needs --tasks and --episodes")
        workers = getattr(args, "workers", None)
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise ValueError(f"--workers must be an integer >= 1; got {workers!r}")
        try:
            plans = plan_episodes(**self._settings(args))
        except ValueError as error:
            message = str(error)
            name = message.split(" must ", 1)[0]
            raise ValueError(_FLAGS[name] + message[len(name):] if name in _FLAGS else message) from None
        if args.noise == 0 and args.noise_share != 1.0:  # else every episode would be clean, silently
            raise ValueError("--noise-share chooses which episodes are noisy: give --noise too (the standard deviation "
                             "of their action noise, e.g. --noise 1.0)")
        robomimic = getattr(args, "file_format", "minari") == "robomimic"
        if robomimic and getattr(args, "minari_storage", None) is not None:
            raise ValueError("--minari-storage applies to --format minari only")
        _targets(Path(args.out), list(dict.fromkeys(plan.task for plan in plans)), bool(args.overwrite),
                 ".hdf5" if robomimic else "")

    def generate(self, args: argparse.Namespace, *, progress: bool) -> list[str]:
        """Check, generate and write; the datasets' folders."""
        self.check(args)
        written = write_metaworld_datasets(args.out, workers=args.workers, progress=progress,
                                           overwrite=bool(args.overwrite),
                                           data_format=getattr(args, "minari_storage", None) or "hdf5",
                                           file_format=getattr(args, "file_format", "minari"),
                                           **self._settings(args))
        return [str(path) for path in written.values()]


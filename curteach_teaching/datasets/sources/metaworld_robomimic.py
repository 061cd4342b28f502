"""``make-dataset metaworld --format robomimic``: each task's expert episodes as one robomimic-format HDF5 file.

What a file ``metaworld-<task>-v0.hdf5`` holds (the layout: :mod:`~curteach_teaching.datasets.formats.robomimic_write`):

* ``data/demo_<i>``: episode ``i`` of the task (the Minari dataset's episode ``i`` under ``--format minari``):
  ``obs/flat`` and ``next_obs/flat`` the 39-d state (robomimic's key for a Gym environment's flat observation),
  ``actions`` ``(T, 4)`` float32 as taken, ``rewards`` Meta-World's, ``dones`` 1 only at a last step that solved the
  task (an episode cut by the step limit or by a hasty operator's budget ends without one); attributes
  ``num_samples``, ``seed`` (the reset seed: ``MetaWorldTask-v0``'s ``reset(seed=...)`` and the stored actions replay
  the episode) and the episode's metadata as under ``--format minari`` (``task``, ``noisy``, ``noise``, ``success``,
  ``success_step``, ``max_steps``; with operators ``operator``, ``tier``, ``worse``);
* ``data.attrs["env_args"]``: ``{"env_name": "MetaWorldTask-v0", "type": 2, "env_kwargs": {"task": ...,
  "max_episode_steps": ...}}``: robomimic's Gym type, which it builds with ``gym.make(env_name, **env_kwargs)``;
  curteach's reader turns it into the environment spec, and the ``seed`` attributes into the pool's seeds;
* filter keys ``mask/<style>`` per operator style and ``mask/better``, ``mask/okay``, ``mask/worse`` per tier (with
  operators), ``mask/noisy`` (without operators, when some episodes are noisy), and ``mask/success``; a key no
  episode belongs to is not written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.sources.metaworld_episodes import ExpertEpisode
from curteach_teaching.datasets.sources.metaworld_operators import STYLES, TIERS

__all__ = ["OBS_KEY", "env_args", "task_masks", "write_task_files"]

#: the observation key (robomimic's name for a Gym environment's flat observation)
OBS_KEY = "flat"


def env_args(task: str, max_steps: int) -> dict:
    """robomimic's ``env_args`` of a task's file (Gym type 2, curteach's ``MetaWorldTask-v0``)."""
    from curteach_envs.metaworld import METAWORLD_ENV_ID

    return {"env_name": METAWORLD_ENV_ID, "type": 2, "env_kwargs": {"task": task, "max_episode_steps": int(max_steps)}}


def task_masks(episodes: Sequence[ExpertEpisode]) -> dict[str, list[int]]:
    """Filter key -> the positions of its episodes: each operator style present, each tier (with operators), ``noisy``
    (without operators), ``success``."""
    masks: dict[str, list[int]] = {}
    operators = [e.plan.operator for e in episodes]
    if any(op is not None for op in operators):
        for style in STYLES:
            masks[style] = [i for i, op in enumerate(operators) if op == style]
        for tier in TIERS:
            masks[tier] = [i for i, op in enumerate(operators) if op is not None and STYLES[op] == tier]
    else:
        masks["noisy"] = [i for i, e in enumerate(episodes) if e.plan.noise > 0]
    masks["success"] = [i for i, e in enumerate(episodes) if e.success]
    return masks


def write_task_files(targets: Mapping[str, Path], generated: Sequence[ExpertEpisode], max_steps: int) -> None:
    """Write each task's episodes of ``generated`` into its file of ``targets`` (``task -> .hdf5 path``); a file is
    moved into place only when complete, and the tasks are written in order."""
    from curteach_teaching.datasets.formats.robomimic_write import RobomimicDemo, write_robomimic

    for task, path in targets.items():
        mine = [e for e in generated if e.plan.task == task]
        demos = [RobomimicDemo(observations={OBS_KEY: e.observations}, actions=e.actions, rewards=e.rewards,
                               terminated=e.terminated,
                               attrs={"seed": np.int64(e.plan.seed), **e.metadata()}) for e in mine]
        path.parent.mkdir(parents=True, exist_ok=True)
        write_robomimic(path, demos, env_args(task, max_steps), task_masks(mine))

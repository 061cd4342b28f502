"""A task one-hot appended to flat observations: Meta-World's MT convention, and any multi-task pool on request.

Meta-World's MT10/MT50 policies see the 39-d state followed by a one-hot vector over the benchmark's tasks. Here the
tasks are those of the pool a learner trains on (a ladder of any subset of the 50), so the one-hot is the learner's,
not the data's: a dataset stores the 39-d state, and :class:`TaskOneHotCodec` appends the one-hot to the pool's
trajectories and to the evaluation environment's observations. Two ways to a one-hot:

* **Meta-World** (always, as before): every group's environment is ``MetaWorldTask-v0`` and there are at least two
  tasks; the tasks are taken from the environment specs (``task``) and sorted by name, so a task's position does not
  depend on the order the datasets are given in (the ladder's order); an evaluation environment says its own task.
* **By the pool's groups** (only when asked, ``task_one_hot=True``: ``dataset-bc --task-one-hot``): any other pool of
  flat observations with at least two groups (a folder of robomimic files, a LeRobot dataset's tasks, several
  Minari datasets), each group a task, sorted by name; an evaluation environment is told its group. Off by default,
  so that the runs and caches of such pools made before stay as they were.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from curteach_teaching.datasets.codecs.codec import Codec

__all__ = ["TaskOneHot", "TaskOneHotCodec", "append_one_hot", "group_tasks", "metaworld_group_tasks",
           "one_hot_space"]

_ENTRY_POINT = "curteach_envs.metaworld:MetaWorldTaskEnv"


def _task_name(task: str) -> str:
    return task if task.endswith("-v3") else f"{task}-v3"


def metaworld_group_tasks(env_specs: Mapping, space: gym.spaces.Space) -> dict[str, str] | None:
    """``group -> Meta-World task`` when every group's environment is ``MetaWorldTask-v0``, the observations are
    a flat ``Box`` and there are at least two tasks; ``None`` otherwise (no one-hot)."""
    if not env_specs or not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
        return None
    tasks = {}
    for group, spec in env_specs.items():
        if spec is None or spec.entry_point != _ENTRY_POINT:
            return None
        tasks[group] = _task_name(str(spec.kwargs.get("task", "reach-v3")))
    return tasks if len(set(tasks.values())) >= 2 else None


def group_tasks(groups: Sequence[str], space: gym.spaces.Space) -> dict[str, str] | None:
    """``group -> group`` (each group its own task) for flat ``Box`` observations and at least two groups, else
    ``None``."""
    names = list(dict.fromkeys(groups))
    if len(names) < 2 or not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
        return None
    return {name: str(name) for name in names}


def one_hot_space(space: gym.spaces.Box, n_tasks: int) -> gym.spaces.Box:
    """``space`` (shape ``(D,)``) with ``n_tasks`` entries in ``[0, 1]`` appended: shape ``(D + n_tasks,)``."""
    low = np.concatenate([space.low, np.zeros(n_tasks, dtype=space.dtype)])
    high = np.concatenate([space.high, np.ones(n_tasks, dtype=space.dtype)])
    return gym.spaces.Box(low, high, dtype=space.dtype)


def append_one_hot(observations: np.ndarray, index: int, n_tasks: int) -> np.ndarray:
    """``(..., D)`` observations -> ``(..., D + n_tasks)``, entry ``D + index`` 1 and the other new ones 0."""
    observations = np.asarray(observations)
    one_hot = np.zeros((*observations.shape[:-1], n_tasks), dtype=observations.dtype)
    one_hot[..., index] = 1
    return np.concatenate([observations, one_hot], axis=-1)


def one_hot_trajectories(trajectories: Sequence, groups: Sequence[str], group_tasks: Mapping[str, str],
                         tasks: Sequence[str]) -> list:
    """Each trajectory with its group's task's one-hot appended to every observation (``(L + 1, D + T)``)."""
    if len(groups) != len(trajectories):
        raise ValueError(f"groups must have one entry per trajectory ({len(trajectories)}); got {len(groups)}")
    index = {task: i for i, task in enumerate(tasks)}
    return [dataclasses.replace(t, obs=append_one_hot(t.obs, index[group_tasks[g]], len(tasks)))
            for t, g in zip(trajectories, groups, strict=True)]


class TaskOneHot(gym.ObservationWrapper):
    """An env observed with its task's one-hot over ``tasks`` appended: the task is ``task`` where given (a pool
    group's), else the one a ``MetaWorldTask-v0`` env says.

    Raises:
        ValueError: the task is not one of ``tasks``.
    """

    def __init__(self, env: gym.Env, tasks: Sequence[str], task: str | None = None):
        super().__init__(env)
        self.tasks = tuple(tasks)
        if task is None:
            task = _task_name(str(getattr(env.unwrapped, "task", "")))
        if task not in self.tasks:
            raise ValueError(f"the environment's task {task!r} is not one of the learner's: {', '.join(self.tasks)}")
        self.index = self.tasks.index(task)
        self.observation_space = one_hot_space(env.observation_space, len(self.tasks))

    def observation(self, observation):
        """``(D,)`` -> ``(D + T,)``."""
        return append_one_hot(observation, self.index, len(self.tasks))


@dataclass(frozen=True)
class TaskOneHotCodec(Codec):
    """Flat observations with a one-hot over the pool's tasks appended.

    Attributes:
        tasks: the tasks, in the one-hot's order (sorted names).
        group_tasks: each pool group's task.
        by_group: the tasks are the pool's groups (asked for), not Meta-World's: an evaluation environment is told
            its group's task instead of saying its own.
    """

    name: ClassVar[str] = "task-one-hot"
    tasks: tuple = ()
    group_tasks: Mapping = field(default_factory=dict)
    by_group: bool = False

    @classmethod
    def detect(cls, space: gym.spaces.Space, env_specs: Mapping, groups: Sequence[str], *,
               task_one_hot: bool = False) -> TaskOneHotCodec | None:
        """This codec for a Meta-World pool of two tasks or more, or (``task_one_hot``) for any pool of flat
        observations with two groups or more; else ``None``."""
        found, by_group = metaworld_group_tasks(env_specs or {}, space), False
        if found is None and task_one_hot:
            found, by_group = group_tasks(groups, space), True
        if found is None:
            return None
        tasks = tuple(sorted(set(found.values())))
        return cls(one_hot_space(space, len(tasks)), tasks, dict(found), by_group)

    def trajectories(self, trajectories: Sequence[Any], groups: Sequence[str] | None = None) -> list:
        """Each trajectory with its group's task's one-hot appended; needs each trajectory's group."""
        if groups is None:
            raise ValueError("the task-one-hot codec needs each trajectory's group (pool.groups)")
        return one_hot_trajectories(trajectories, groups, self.group_tasks, self.tasks)

    def wrap_env(self, env: gym.Env, group: str | None = None) -> gym.Env:
        """``env`` observed with its task's one-hot (by the pool's groups: ``group``'s task, which must be given)."""
        if self.by_group:
            if group is None:
                raise ValueError("a task one-hot over the pool's groups needs the group an environment evaluates")
            return TaskOneHot(env, self.tasks, self.group_tasks[group])
        return TaskOneHot(env, self.tasks)

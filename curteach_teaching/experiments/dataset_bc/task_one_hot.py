"""The multi-task observation of Meta-World's MT benchmarks: the state with a one-hot task id appended.

Meta-World's MT10/MT50 policies see the 39-d state followed by a one-hot vector over the benchmark's tasks. Here the
tasks are those of the pool a learner trains on (a ladder of any subset of the 50), so the one-hot is the learner's,
not the data's: a dataset stores the 39-d state, and :class:`~curteach_teaching.experiments.dataset_bc.observations.
Codec` appends the one-hot to the pool's trajectories and to the evaluation environment's observations. The tasks are
taken from the pool's environment specs (``MetaWorldTask-v0`` and its ``task``) and sorted by name, so a task's
position in the one-hot does not depend on the order the datasets are given in (the ladder's order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import gymnasium as gym
import numpy as np

__all__ = ["TaskOneHot", "append_one_hot", "metaworld_group_tasks", "one_hot_space"]

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
    """A ``MetaWorldTask-v0`` env observed with its task's one-hot over ``tasks`` appended.

    Raises:
        ValueError: the env's task is not one of ``tasks``.
    """

    def __init__(self, env: gym.Env, tasks: Sequence[str]):
        super().__init__(env)
        self.tasks = tuple(tasks)
        task = _task_name(str(getattr(env.unwrapped, "task", "")))
        if task not in self.tasks:
            raise ValueError(f"the environment's task {task!r} is not one of the learner's: {', '.join(self.tasks)}")
        self.index = self.tasks.index(task)
        self.observation_space = one_hot_space(env.observation_space, len(self.tasks))

    def observation(self, observation):
        """``(D,)`` -> ``(D + T,)``."""
        return append_one_hot(observation, self.index, len(self.tasks))

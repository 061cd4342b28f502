"""What a dataset's observations become for the learner: as they are, (Minigrid/BabyAI) with the mission text as
token ids, or (Meta-World, several tasks) with a one-hot task id appended.

A :class:`Codec` turns the pool's trajectories and the evaluation environment's observations into the policy's, the
same way for both, and names the policy's observation space. :func:`codec_for` picks one from the pool's space: a
``Dict`` with a ``Text`` ``mission`` beside an ``image`` and a ``direction`` is BabyAI's
(:mod:`curteach_teaching.learners.babyai_vocab`); a flat ``Box`` whose groups' environments are all
``MetaWorldTask-v0`` with at least two tasks gets the one-hot over those tasks
(:mod:`~curteach_teaching.experiments.dataset_bc.task_one_hot`, Meta-World's MT convention); images stored
channels-last (``(H, W, C)``, alone or in a ``Dict``: camera frames of robot datasets) are turned channels-first for
SB3's CNNs (:mod:`~curteach_teaching.experiments.dataset_bc.channels_first`); every other space is used as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = ["CODECS", "Codec", "codec_for"]

#: the codecs by name
CODECS = ("identity", "babyai", "task-one-hot", "channels-first")


def _is_babyai(space: gym.spaces.Space) -> bool:
    return (isinstance(space, gym.spaces.Dict) and isinstance(space.spaces.get("mission"), gym.spaces.Text)
            and {"image", "direction"} <= set(space.spaces))


@dataclass(frozen=True)
class Codec:
    """The learner's view of a dataset's observations.

    Attributes:
        name: one of :data:`CODECS`.
        observation_space: the space the policy is built for.
        tasks: ``task-one-hot``: the tasks, in the one-hot's order (sorted names).
        group_tasks: ``task-one-hot``: each pool group's task.
        image_keys: ``channels-first``: the channels-last images (``("",)``: the observation itself).
    """

    name: str
    observation_space: gym.spaces.Space
    tasks: tuple = ()
    group_tasks: Mapping = field(default_factory=dict)
    image_keys: tuple = ()

    def trajectories(self, trajectories: Sequence[Any], groups: Sequence[str] | None = None) -> list:
        """The pool's imitation trajectories with the policy's observations (the same objects for ``identity``);
        ``task-one-hot`` needs each trajectory's group (``pool.groups``)."""
        if self.name == "identity":
            return list(trajectories)
        if self.name == "task-one-hot":
            from curteach_teaching.experiments.dataset_bc.task_one_hot import one_hot_trajectories

            if groups is None:
                raise ValueError("the task-one-hot codec needs each trajectory's group (pool.groups)")
            return one_hot_trajectories(trajectories, groups, self.group_tasks, self.tasks)
        if self.name == "channels-first":
            from curteach_teaching.experiments.dataset_bc.channels_first import channels_first_trajectories

            return channels_first_trajectories(trajectories, self.image_keys)
        import dataclasses

        from imitation.data.types import DictObs

        from curteach_teaching.learners.babyai_vocab import encode_observations

        converted = []
        for trajectory in trajectories:
            obs = trajectory.obs
            arrays = {key: obs.get(key) for key in obs.keys()}
            converted.append(dataclasses.replace(trajectory, obs=DictObs(encode_observations(arrays))))
        return converted

    def wrap_env(self, env: gym.Env) -> gym.Env:
        """``env`` observed as the policy observes (BabyAI: missions as token ids, layout sampling kept quiet)."""
        if self.name == "identity":
            return env
        if self.name == "task-one-hot":
            from curteach_teaching.experiments.dataset_bc.task_one_hot import TaskOneHot

            return TaskOneHot(env, self.tasks)
        if self.name == "channels-first":
            from curteach_teaching.experiments.dataset_bc.channels_first import ChannelsFirst

            return ChannelsFirst(env, self.image_keys)
        from curteach_teaching.datasets.sources.babyai_bot import quiet_reset
        from curteach_teaching.learners.babyai_vocab import MissionTokens

        return MissionTokens(quiet_reset(env))


def codec_for(space: gym.spaces.Space, env_specs: Mapping | None = None) -> Codec:
    """The codec of a pool's observation space and its groups' environment specs (``pool.env_specs``; see the module
    docstring).

    Raises:
        ValueError: a ``Text`` observation that is not BabyAI's mission (no policy for free text here: give one with
            ``--policy module:attr`` and a space it reads).
    """
    if _is_babyai(space):
        from curteach_teaching.learners.babyai_vocab import policy_observation_space

        return Codec("babyai", policy_observation_space())
    from curteach_teaching.experiments.dataset_bc.task_one_hot import metaworld_group_tasks, one_hot_space

    group_tasks = metaworld_group_tasks(env_specs or {}, space)
    if group_tasks is not None:
        tasks = tuple(sorted(set(group_tasks.values())))
        return Codec("task-one-hot", one_hot_space(space, len(tasks)), tasks, dict(group_tasks))
    texts = [space] if isinstance(space, gym.spaces.Text) else (
        [s for s in space.spaces.values() if isinstance(s, gym.spaces.Text)] if isinstance(space, gym.spaces.Dict)
        else [])
    if texts:
        raise ValueError("dataset-bc reads Text observations only as a BabyAI mission beside an image and a "
                         f"direction; got {space}")
    from curteach_teaching.experiments.dataset_bc.channels_first import channels_first_space, channels_last_keys

    keys = channels_last_keys(space)
    if keys is not None:
        return Codec("channels-first", channels_first_space(space, keys), image_keys=keys)
    return Codec("identity", space)

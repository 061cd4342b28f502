"""BabyAI's observations for the learner: the mission text as token ids beside the image and the direction
(:mod:`curteach_teaching.learners.babyai_vocab`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym

from curteach_teaching.datasets.codecs.codec import Codec

__all__ = ["BabyAICodec", "is_babyai"]


def is_babyai(space: gym.spaces.Space) -> bool:
    """A ``Dict`` with a ``Text`` ``mission`` beside an ``image`` and a ``direction``: BabyAI's (Minigrid's)."""
    return (isinstance(space, gym.spaces.Dict) and isinstance(space.spaces.get("mission"), gym.spaces.Text)
            and {"image", "direction"} <= set(space.spaces))


@dataclass(frozen=True)
class BabyAICodec(Codec):
    """Missions as token ids (:func:`~curteach_teaching.learners.babyai_vocab.encode_observations`)."""

    name: ClassVar[str] = "babyai"

    @classmethod
    def detect(cls, space: gym.spaces.Space, env_specs: Mapping, groups: Sequence[str], *,
               task_one_hot: bool = False) -> BabyAICodec | None:
        """This codec for BabyAI's observation space, else ``None``."""
        if not is_babyai(space):
            return None
        from curteach_teaching.learners.babyai_vocab import policy_observation_space

        return cls(policy_observation_space())

    def trajectories(self, trajectories: Sequence[Any], groups: Sequence[str] | None = None) -> list:
        """Each trajectory's ``Dict`` observations with the missions as token ids."""
        from imitation.data.types import DictObs

        from curteach_teaching.learners.babyai_vocab import encode_observations

        converted = []
        for trajectory in trajectories:
            obs = trajectory.obs
            arrays = {key: obs.get(key) for key in obs.keys()}
            converted.append(dataclasses.replace(trajectory, obs=DictObs(encode_observations(arrays))))
        return converted

    def wrap_env(self, env: gym.Env, group: str | None = None) -> gym.Env:
        """``env`` with its missions as token ids and its layout sampling kept quiet."""
        from curteach_teaching.datasets.sources.babyai_bot import quiet_reset
        from curteach_teaching.learners.babyai_vocab import MissionTokens

        return MissionTokens(quiet_reset(env))

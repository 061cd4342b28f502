"""Images stored channels-last, as robot datasets store camera frames (robomimic's ``agentview_image`` is
``(84, 84, 3)``), seen channels-first by the learner.

SB3's CNNs (Nature CNN, and the one inside its multi-input extractor for each image key) read ``(C, H, W)``: its
environments are wrapped in ``VecTransposeImage`` for that, which a dataset never passes through. An ``(H, W, C)``
image would be read as ``H`` channels of ``W x C`` pixels, and the first convolution fails or learns nothing. The
codec moves the channel axis first, in the demonstrations and in the evaluation environment alike (a ``Box`` image,
or each image of a ``Dict``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from curteach_teaching.datasets.codecs.codec import Codec

__all__ = ["ChannelsFirst", "ChannelsFirstCodec", "channels_last_keys", "channels_first_space",
           "channels_first_trajectories"]


def _channels_last(space: gym.spaces.Space) -> bool:
    """An SB3 image (a ``uint8`` 3-d ``Box``, sides >= 36) whose smallest side is the last: ``(H, W, C)``."""
    from stable_baselines3.common.preprocessing import is_image_space

    # sides under 36 are no image for the Nature CNN (its first kernels span 8 and 4 pixels): grids such as
    # Minigrid's 7 x 7 x 3 stay as they are
    return (isinstance(space, gym.spaces.Box) and is_image_space(space, check_channels=False)
            and int(np.argmin(space.shape)) == 2 and min(space.shape[:2]) >= 36)


def channels_last_keys(space: gym.spaces.Space) -> tuple | None:
    """``("",)`` for a channels-last ``Box`` image, the keys of a ``Dict``'s channels-last images, or ``None``
    where there is none."""
    if _channels_last(space):
        return ("",)
    if isinstance(space, gym.spaces.Dict):
        keys = tuple(key for key, sub in space.spaces.items() if _channels_last(sub))
        return keys or None
    return None


def _transposed_box(box: gym.spaces.Box) -> gym.spaces.Box:
    return gym.spaces.Box(np.moveaxis(box.low, -1, 0), np.moveaxis(box.high, -1, 0), dtype=box.dtype)


def channels_first_space(space: gym.spaces.Space, keys: Sequence[str]) -> gym.spaces.Space:
    """``space`` with the images ``keys`` (``("",)``: the space itself) channels-first."""
    if tuple(keys) == ("",):
        return _transposed_box(space)
    return gym.spaces.Dict({key: _transposed_box(sub) if key in keys else sub for key, sub in space.spaces.items()})


def _moved(obs: Any, keys: Sequence[str], axis: int) -> Any:
    """Observations with the channel axis of ``keys`` moved from last to ``axis`` (0 for one observation, 1 for a
    trajectory's ``(T + 1, H, W, C)``)."""
    if tuple(keys) == ("",):
        return np.ascontiguousarray(np.moveaxis(obs, -1, axis))
    if isinstance(obs, Mapping):
        return {key: np.ascontiguousarray(np.moveaxis(value, -1, axis)) if key in keys else value
                for key, value in obs.items()}
    from imitation.data.types import DictObs

    return DictObs({key: np.ascontiguousarray(np.moveaxis(obs.get(key), -1, axis)) if key in keys else obs.get(key)
                    for key in obs.keys()})


def channels_first_trajectories(trajectories: Sequence[Any], keys: Sequence[str]) -> list:
    """The trajectories with their images ``keys`` channels-first: ``(T + 1, H, W, C)`` -> ``(T + 1, C, H, W)``."""
    import dataclasses

    return [dataclasses.replace(t, obs=_moved(t.obs, keys, 1)) for t in trajectories]


class ChannelsFirst(gym.ObservationWrapper):
    """An environment whose channels-last images (``keys``) are observed channels-first."""

    def __init__(self, env: gym.Env, keys: Sequence[str]):
        super().__init__(env)
        self.keys = tuple(keys)
        self.observation_space = channels_first_space(env.observation_space, self.keys)

    def observation(self, observation: Any) -> Any:
        """One observation with its images channels-first: ``(H, W, C)`` -> ``(C, H, W)``."""
        return _moved(observation, self.keys, 0)


@dataclass(frozen=True)
class ChannelsFirstCodec(Codec):
    """Channels-last images seen channels-first.

    Attributes:
        image_keys: the channels-last images (``("",)``: the observation itself).
    """

    name: ClassVar[str] = "channels-first"
    image_keys: tuple = ()

    @classmethod
    def detect(cls, space: gym.spaces.Space, env_specs: Mapping, groups: Sequence[str], *,
               task_one_hot: bool = False) -> ChannelsFirstCodec | None:
        """This codec where ``space`` holds channels-last images, else ``None``."""
        keys = channels_last_keys(space)
        return None if keys is None else cls(channels_first_space(space, keys), image_keys=keys)

    def trajectories(self, trajectories: Sequence[Any], groups: Sequence[str] | None = None) -> list:
        """The trajectories with their images channels-first."""
        return channels_first_trajectories(trajectories, self.image_keys)

    def wrap_env(self, env: gym.Env, group: str | None = None) -> gym.Env:
        """``env`` observed with its images channels-first."""
        return ChannelsFirst(env, self.image_keys)

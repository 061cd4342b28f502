"""The observation codecs by name, and the one choice of a pool's codec (:func:`codec_for`).

:data:`CODECS` is a :class:`~curteach_teaching.registry.Registry` of :class:`~curteach_teaching.datasets.codecs.codec.
Codec` subclasses: the built-ins ``babyai`` (missions as token ids), ``task-one-hot`` (Meta-World's MT one-hot, or
one over any pool's groups on request), ``channels-first`` (camera frames for SB3's CNNs) and ``identity``, and the
entry points of the group ``curteach.codecs``. :func:`codec_for` asks each in that order (identity last: it applies
everywhere), so a new kind of observation is one file with a ``detect``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import gymnasium as gym

from curteach_teaching.registry import Registry

__all__ = ["CODECS", "codec_for"]

#: the observation codecs by name (``codec.name``)
CODECS = Registry("observation codec", "curteach.codecs")


def _babyai():
    from curteach_teaching.datasets.codecs.babyai import BabyAICodec

    return BabyAICodec


def _task_one_hot():
    from curteach_teaching.datasets.codecs.task_one_hot import TaskOneHotCodec

    return TaskOneHotCodec


def _channels_first():
    from curteach_teaching.datasets.codecs.channels_first import ChannelsFirstCodec

    return ChannelsFirstCodec


def _identity():
    from curteach_teaching.datasets.codecs.codec import Codec

    return Codec


for _name, _loader in (("babyai", _babyai), ("task-one-hot", _task_one_hot), ("channels-first", _channels_first),
                       ("identity", _identity)):
    CODECS.add(_name, _loader)


def _texts(space: gym.spaces.Space) -> list:
    if isinstance(space, gym.spaces.Text):
        return [space]
    if isinstance(space, gym.spaces.Dict):
        return [s for s in space.spaces.values() if isinstance(s, gym.spaces.Text)]
    return []


def codec_for(space: gym.spaces.Space, env_specs: Mapping | None = None, groups: Sequence[str] = (), *,
              task_one_hot: bool = False):
    """The codec of a pool: its observation space, its groups' environment specs (``pool.env_specs``) and its
    episodes' groups (``pool.groups``; read only for ``task_one_hot``, a one-hot over the groups asked for).

    Raises:
        ValueError: a ``Text`` observation that no codec reads (no policy for free text here: give one with
            ``--policy module:attr`` and a space it reads).
    """
    for name in CODECS.names():
        if name == "identity":
            continue
        found = CODECS.load(name)[1].detect(space, env_specs or {}, tuple(groups), task_one_hot=task_one_hot)
        if found is not None:
            return found
    if _texts(space):
        raise ValueError("dataset-bc reads Text observations only as a BabyAI mission beside an image and a "
                         f"direction; got {space}")
    return CODECS.load("identity")[1](space)

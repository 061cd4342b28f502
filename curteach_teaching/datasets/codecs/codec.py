"""The observation codec's protocol: what a dataset's observations become for the learner, the same way in the
demonstrations and in the evaluation environment.

A codec is a frozen dataclass that names the policy's observation space and converts both sides: the pool's
imitation trajectories (:meth:`Codec.trajectories`) and an environment's observations (:meth:`Codec.wrap_env`). Each
kind is a subclass with a ``name`` and a :meth:`Codec.detect` that says whether it applies to a pool; the registry
(:mod:`~curteach_teaching.datasets.codecs.registry`) asks the kinds in order. This base class is the last of them,
``identity``: observations as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym

__all__ = ["Codec"]


@dataclass(frozen=True)
class Codec:
    """The learner's view of a dataset's observations (this base class: as they are).

    Attributes:
        name: the kind's registered name (a class attribute).
        observation_space: the space the policy is built for.
    """

    name: ClassVar[str] = "identity"
    observation_space: gym.spaces.Space

    @classmethod
    def detect(cls, space: gym.spaces.Space, env_specs: Mapping, groups: Sequence[str], *,
               task_one_hot: bool = False) -> Codec | None:
        """The codec of this kind for a pool with observation ``space``, ``group -> EnvSpec`` ``env_specs`` and
        episode ``groups`` (``task_one_hot``: the user asked for a task one-hot over the groups), or ``None`` where
        the kind does not apply. Identity applies everywhere."""
        return cls(space)

    def trajectories(self, trajectories: Sequence[Any], groups: Sequence[str] | None = None) -> list:
        """The pool's imitation trajectories with the policy's observations (identity: the same objects); a kind
        that conditions on the task reads each trajectory's group (``pool.groups``)."""
        return list(trajectories)

    def wrap_env(self, env: gym.Env, group: str | None = None) -> gym.Env:
        """``env`` observed as the policy observes; ``group``: the pool group it evaluates (a kind that conditions
        on the task reads it)."""
        return env

"""The learner's policy for a dataset's spaces, seeded from the run: BabyAI's FiLM network, SB3's MLP, CNN or
multi-input policy, or the user's own.

``kind="auto"`` (default) picks by the policy's observation space (after the :mod:`observations` codec):

* BabyAI's (image, direction, mission tokens): :class:`~curteach_teaching.learners.babyai.BabyAIFiLMPolicy`;
* an image (a ``uint8`` ``Box`` of shape ``(H, W, C)`` or ``(C, H, W)`` with sides >= 36): SB3's
  ``ActorCriticCnnPolicy`` (Nature CNN);
* a ``Dict``: SB3's ``MultiInputActorCriticPolicy``;
* anything else (vectors, ``Discrete``, ``MultiDiscrete``): SB3's ``ActorCriticPolicy``, an MLP of two layers of
  64 units (imitation's ``BC`` trains only its action head; the value head stays unused).

A user's policy is ``module:attr``: ``factory(observation_space, action_space, seed) -> SB3 policy``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

__all__ = ["POLICY_KINDS", "make_policy"]

#: the built-in kinds; anything else must be ``module:attr``
POLICY_KINDS = ("auto", "babyai-film", "mlp", "cnn", "multi-input")


def _constant(_: float) -> float:
    return 0.0  # imitation's BC builds its own optimizer; SB3's schedule is never used


def _auto_kind(space: gym.spaces.Space) -> str:
    from stable_baselines3.common.preprocessing import is_image_space

    if isinstance(space, gym.spaces.Dict):
        keys = set(space.spaces)
        return "babyai-film" if keys == {"image", "direction", "mission"} else "multi-input"
    if isinstance(space, gym.spaces.Box) and is_image_space(space, check_channels=False):
        return "cnn"
    return "mlp"


def make_policy(kind: str, observation_space: gym.spaces.Space, action_space: gym.spaces.Space, seed: int) -> Any:
    """A fresh policy whose weights come from ``seed`` alone (global generators are restored after).

    Raises:
        ValueError: an unknown kind, a ``module:attr`` that does not load or whose factory fails, a non-discrete
            action space (the evaluator and the learner's difficulty need discrete actions).
    """
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"dataset-bc learns discrete actions; the dataset's action space is {action_space}")
    if ":" in kind:
        from curteach_teaching.registry import Registry

        policies = Registry("policy", "curteach.policies")
        name, factory = policies.load(kind)
        return policies.call(name, factory, observation_space, action_space, seed,
                             expect=lambda p: callable(getattr(p, "evaluate_actions", None)))
    if kind not in POLICY_KINDS:
        raise ValueError(f"policy must be one of {POLICY_KINDS} or module:attr; got {kind!r}")
    if kind == "auto":
        kind = _auto_kind(observation_space)
    if kind == "babyai-film":
        from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

        return BabyAIFiLMPolicy(observation_space, action_space, seed=int(seed))
    from stable_baselines3.common import policies

    from curteach_teaching.learners.seeding import seeded_globals

    cls = {"mlp": policies.ActorCriticPolicy, "cnn": policies.ActorCriticCnnPolicy,
           "multi-input": policies.MultiInputActorCriticPolicy}[kind]
    with seeded_globals(int(seed)):
        return cls(observation_space, action_space, _constant)

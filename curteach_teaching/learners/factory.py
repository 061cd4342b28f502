"""The learner for a dataset's spaces, and imitation's ``BC`` that trains it: one policy factory, one trainer factory.

:func:`make_policy` builds a fresh policy seeded from a run's seed, by the observation and action spaces.
``kind="auto"`` (default) picks by the observation space (after the experiment's observation codec):

* BabyAI's encoded observations (what :meth:`~curteach_teaching.learners.babyai.BabyAIFiLMPolicy.accepts`):
  :class:`~curteach_teaching.learners.babyai.BabyAIFiLMPolicy`;
* an image (a ``uint8`` ``Box`` of shape ``(C, H, W)`` with sides >= 36): SB3's ``ActorCriticCnnPolicy`` (Nature
  CNN), which reads channels first (``dataset-bc``'s observation codec turns ``(H, W, C)`` frames so first:
  :mod:`~curteach_teaching.datasets.codecs.channels_first`);
* a ``Dict``: SB3's ``MultiInputActorCriticPolicy``;
* anything else (vectors, ``Discrete``, ``MultiDiscrete``): SB3's ``ActorCriticPolicy``, an MLP of two layers of
  64 units (imitation's ``BC`` trains only its action head; the value head stays unused).

``kind="mlp-256"`` (never picked by ``auto``) is the wider MLP of the Meta-World ladder: the action head has two
layers of 256 units (the width of the BC baselines trained on Meta-World's scripted demonstrations; the default 64
is too narrow for ten tasks behind a one-hot id) and the value head none (a linear value on the features, which
imitation's ``BC`` computes and never trains, so it costs nothing); activations SB3's default ``tanh``.

Actions: ``Discrete`` (categorical), ``MultiDiscrete`` (one categorical per dimension) and ``Box`` (a diagonal
Gaussian with a state-independent log standard deviation, clamped to ``[-5, 2]``:
:mod:`curteach_teaching.learners.gaussian` says why). For ``Box`` actions the SB3 classes above are replaced by their
bounded twins; every other space keeps SB3's classes as they are. ``MultiBinary`` is refused: SB3's Bernoulli
scores float actions only, datasets store them as integers, and imitation's ``BC`` hands them over as stored (its
first step fails); the action seam itself handles Bernoulli policies.

A user's policy is ``module:attr``: ``factory(observation_space, action_space, seed) -> SB3 policy``.

:func:`make_bc_trainer` builds imitation's ``BC`` for such a policy on an explicit device (never imitation's
``device="auto"``, which would put every process of a sweep on the first GPU).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from curteach_teaching.learners.policy_kinds import POLICY_KINDS

__all__ = ["ACTION_SPACES", "make_bc_trainer", "make_policy"]

#: the layers of ``mlp-256``: two of 256 units for the action, none for the unused value
WIDE_NET_ARCH = {"pi": [256, 256], "vf": []}
#: the action spaces a built-in policy learns through imitation's ``BC``
ACTION_SPACES = (gym.spaces.Discrete, gym.spaces.Box, gym.spaces.MultiDiscrete)


def _constant(_: float) -> float:
    return 0.0  # imitation's BC builds its own optimizer; SB3's schedule is never used


def _is_image(space: gym.spaces.Space) -> bool:
    from stable_baselines3.common.preprocessing import is_image_space

    return isinstance(space, gym.spaces.Box) and is_image_space(space, check_channels=False)


def _auto_kind(space: gym.spaces.Space) -> str:
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

    if BabyAIFiLMPolicy.accepts(space):
        return "babyai-film"
    if isinstance(space, gym.spaces.Dict):
        return "multi-input"
    return "cnn" if _is_image(space) else "mlp"


def _check_fits(kind: str, observation_space: gym.spaces.Space) -> None:
    """A one-line ``ValueError`` when the built-in ``kind`` cannot read ``observation_space``."""
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

    fits = {
        "babyai-film": BabyAIFiLMPolicy.accepts(observation_space),
        "cnn": _is_image(observation_space),
        "multi-input": isinstance(observation_space, gym.spaces.Dict),
        "mlp": not isinstance(observation_space, gym.spaces.Dict),
        "mlp-256": not isinstance(observation_space, gym.spaces.Dict),
    }[kind]
    if not fits:
        needs = {"babyai-film": "BabyAI's encoded observations (image, direction, mission tokens)",
                 "cnn": "image observations (a uint8 Box of shape (H, W, C) or (C, H, W), sides >= 36)",
                 "multi-input": "Dict observations", "mlp": "observations that are not a Dict",
                 "mlp-256": "observations that are not a Dict"}[kind]
        raise ValueError(f"policy {kind!r} needs {needs}; the dataset's observation space is {observation_space}")


def make_policy(kind: str, observation_space: gym.spaces.Space, action_space: gym.spaces.Space, seed: int, *,
                device: Any = "cpu") -> Any:
    """A fresh policy whose weights come from ``seed`` alone (global generators are restored after), on ``device``.

    Args:
        kind: one of :data:`~curteach_teaching.learners.policy_kinds.POLICY_KINDS` or ``module:attr`` (see the
            module docstring).
        observation_space, action_space: the policy's spaces.
        seed: the seed of the weights.
        device: where the policy lives (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a ``torch.device``); weights are drawn
            on the CPU first, so the same seed gives the same weights on every device.

    Raises:
        ValueError: an unknown kind, a kind that does not fit the observation space, an action space other than
            :data:`ACTION_SPACES`, a ``module:attr`` that does not load or whose factory fails.
    """
    if ":" in kind:
        from curteach_teaching.registry import Registry

        policies = Registry("policy", "curteach.policies")
        name, factory = policies.load(kind)
        if callable(getattr(factory, "check", None)):  # a dataset learner kind has its own way of learning
            raise ValueError(f"policy {kind!r} is a dataset learner, not an SB3 policy factory; the ensemble teacher "
                             "and rank train SB3 policies by BC (give them a built-in --policy)")
        policy = policies.call(name, factory, observation_space, action_space, seed,
                               expect=lambda p: callable(getattr(p, "evaluate_actions", None)))
        return policy.to(device) if hasattr(policy, "to") else policy
    if kind not in POLICY_KINDS:
        raise ValueError(f"policy must be one of {POLICY_KINDS} or module:attr; got {kind!r}")
    if not isinstance(action_space, ACTION_SPACES):
        raise ValueError(f"the built-in policies learn Discrete, Box or MultiDiscrete actions (imitation's BC cannot "
                         f"train MultiBinary actions stored as integers); the dataset's action space is {action_space}")
    if kind == "auto":
        kind = _auto_kind(observation_space)
    _check_fits(kind, observation_space)
    if kind == "babyai-film":
        from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

        policy = BabyAIFiLMPolicy(observation_space, action_space, seed=int(seed))
        return policy.to(device)
    from stable_baselines3.common import policies

    from curteach_teaching.learners import gaussian
    from curteach_teaching.learners.seeding import seeded_globals

    extra = {}
    if kind == "mlp-256":  # the same classes as mlp, wider (the arguments of mlp stay SB3's defaults, untouched)
        kind, extra = "mlp", {"net_arch": WIDE_NET_ARCH}
    if isinstance(action_space, gym.spaces.Box):
        cls = {"mlp": gaussian.BoundedActorCriticPolicy, "cnn": gaussian.BoundedActorCriticCnnPolicy,
               "multi-input": gaussian.BoundedMultiInputActorCriticPolicy}[kind]
    else:
        cls = {"mlp": policies.ActorCriticPolicy, "cnn": policies.ActorCriticCnnPolicy,
               "multi-input": policies.MultiInputActorCriticPolicy}[kind]
    with seeded_globals(int(seed)):
        policy = cls(observation_space, action_space, _constant, **extra)
    return policy.to(device)


def make_bc_trainer(policy: Any, observation_space: gym.spaces.Space, action_space: gym.spaces.Space, *,
                    batch_size: int, learning_rate: float, rng: np.random.Generator, device: Any = "cpu",
                    optimizer: str = "adam", ent_weight: float = 1e-3, l2_weight: float = 0.0,
                    logger: Any = None) -> Any:
    """imitation's ``BC`` training ``policy`` on ``device``, silent unless given a ``logger``.

    Args:
        policy: the SB3 policy to train (moved to ``device``).
        observation_space, action_space: the policy's spaces.
        batch_size: transitions per optimizer step; learning_rate: the optimizer's rate.
        rng: BC's generator (the order of its own batches; a curriculum adapter supplies its own).
        device: where the policy trains (explicit: imitation's ``"auto"`` is never used).
        optimizer: ``"adam"`` (``torch.optim.Adam``'s defaults besides the rate) or ``"sgd"`` (plain, no momentum).
        ent_weight, l2_weight: BC's entropy bonus and L2 penalty (imitation's defaults 1e-3 and 0).
        logger: an imitation ``HierarchicalLogger`` (default: one that writes nothing).

    Raises:
        ValueError: an unknown optimizer.
    """
    import torch as th
    from imitation.algorithms.bc import BC

    from curteach_teaching.learners.quiet_logger import silent_logger

    optimizers = {"adam": th.optim.Adam, "sgd": th.optim.SGD}
    if optimizer not in optimizers:
        raise ValueError(f"optimizer must be one of {tuple(optimizers)}; got {optimizer!r}")
    kwargs = {"lr": learning_rate}
    if optimizer == "adam":
        # foreach: each of Adam's operations on all parameters in one call, where torch's CPU default loops over
        # them in Python; the same elementwise arithmetic in the same order (the same parameters to the bit), about
        # a tenth less CPU per step of a small network; torch's default on CUDA already
        kwargs["foreach"] = True
    return BC(observation_space=observation_space, action_space=action_space, policy=policy, rng=rng,
              batch_size=batch_size, optimizer_cls=optimizers[optimizer], optimizer_kwargs=kwargs,
              ent_weight=ent_weight, l2_weight=l2_weight, device=device,
              custom_logger=logger if logger is not None else silent_logger())

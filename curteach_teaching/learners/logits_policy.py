"""One base for the library's SB3 policies that are a categorical distribution over action logits.

:class:`LogitsPolicy` is a Stable-Baselines3 ``ActorCriticPolicy`` whose only model is ``action_logits(obs) -> (B,
A)``: ``pi(. | s) = softmax(logits(s))``, no value function (values are zeros ``(B, 1)``; imitation's ``BC`` never
reads them). A subclass builds its parameters in its own ``__init__`` after ``super().__init__`` and then calls
:meth:`LogitsPolicy.make_optimizer`; it implements :meth:`~LogitsPolicy.action_logits` and
:meth:`~LogitsPolicy.n_observations`.

Why not SB3's ``BaseFeaturesExtractor`` seam: an ``ActorCriticPolicy`` puts its own ``action_net`` (a linear layer
drawn from torch's global RNG) and ``value_net`` after the features extractor, so the logits would not be the
model's own and building a policy would read the global RNG. Here SB3's ``_build`` is a no-op and every parameter is
the subclass's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch as th
from stable_baselines3.common.distributions import CategoricalDistribution
from stable_baselines3.common.policies import ActorCriticPolicy

__all__ = ["LogitsPolicy"]


class LogitsPolicy(ActorCriticPolicy):
    """An SB3 policy given by action logits, without a value function (see the module docstring).

    Args:
        observation_space, action_space: the spaces (a ``Discrete`` action space).
        lr_schedule: SB3's schedule for ``policy.optimizer`` (imitation's BC builds its own optimizer).
        optimizer_class, optimizer_kwargs: SB3's ``policy.optimizer`` (made by :meth:`make_optimizer`).
    """

    def __init__(
        self,
        observation_space: gym.spaces.Space,
        action_space: gym.spaces.Space,
        lr_schedule: Callable[[float], float],
        *,
        optimizer_class: type[th.optim.Optimizer] = th.optim.SGD,
        optimizer_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            net_arch=[],
            ortho_init=False,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs or {},
        )

    # SB3 calls _build from its constructor; the subclass makes its parameters and the optimizer after it.
    def _build(self, lr_schedule: Callable[[float], float]) -> None:
        pass

    def make_optimizer(self, lr_schedule: Callable[[float], float]) -> None:
        """SB3's ``policy.optimizer`` over the parameters made so far, at ``lr_schedule(1)``."""
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return dict(
            observation_space=self.observation_space,
            action_space=self.action_space,
            optimizer_class=self.optimizer_class,
            optimizer_kwargs=self.optimizer_kwargs,
        )

    # ------------------------------------------------------------------ model
    def action_logits(self, obs: Any) -> th.Tensor:
        """``(B, A)`` logits of a batch of observations (differentiable)."""
        raise NotImplementedError

    def n_observations(self, obs: Any) -> int:
        """B, the number of observations in ``obs``."""
        raise NotImplementedError

    def log_policy(self, obs: Any) -> th.Tensor:
        """``(B, A)`` ``log pi(. | s)``, the log-softmax of the logits (never overflows)."""
        return th.log_softmax(self.action_logits(obs), dim=-1)

    def distribution_logits(self, obs: Any) -> th.Tensor:
        """``(B, A)`` what :meth:`get_distribution` hands to the categorical distribution (the logits)."""
        return self.action_logits(obs)

    # -------------------------------------------------------------- SB3 views
    def get_distribution(self, obs: th.Tensor) -> CategoricalDistribution:
        """The categorical distribution ``pi(. | s)`` of each observation."""
        return self.action_dist.proba_distribution(action_logits=self.distribution_logits(obs))

    def forward(self, obs: th.Tensor, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """``(actions (B,), values (B, 1) zeros, log pi(actions | s) (B,))``; sampled from torch's global RNG."""
        distribution = self.get_distribution(obs)
        actions = distribution.get_actions(deterministic=deterministic)
        log_prob = distribution.log_prob(actions)
        return actions, th.zeros((actions.shape[0], 1), device=log_prob.device, dtype=log_prob.dtype), log_prob

    def evaluate_actions(self, obs: th.Tensor, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """``(values (B, 1) zeros, log pi(a | s) (B,), entropy (B,))``; what imitation's BC loss reads.

        Raises:
            ValueError: actions outside ``[0, A)`` or not one per observation.
        """
        log_prob, entropy = self.score_actions(obs, actions)
        return th.zeros((log_prob.shape[0], 1), dtype=log_prob.dtype, device=log_prob.device), log_prob, entropy

    def score_actions(self, obs: Any, actions: Any, *, entropy: bool = True,
                      check_range: bool = True) -> tuple[th.Tensor, th.Tensor | None]:
        """``(log pi(a | s) (B,), entropy (B,) or None)``: :meth:`evaluate_actions`'s, without the values; the
        training step skips the entropy where no one needs it, and the range check (which reads the actions from
        the device) where the actions were checked before.

        Raises:
            ValueError: actions not one per observation, or (``check_range``) outside ``[0, A)``.
        """
        log_policy = self.log_policy(obs)
        actions = th.as_tensor(actions, device=log_policy.device).reshape(-1).long()
        if actions.shape[0] != log_policy.shape[0]:
            raise ValueError(f"need one action per observation; got {actions.shape[0]} for {log_policy.shape[0]}")
        n_actions = log_policy.shape[1]
        if check_range and actions.numel() and (int(actions.min()) < 0 or int(actions.max()) >= n_actions):
            raise ValueError(f"actions must lie in [0, {n_actions - 1}]")
        log_prob = log_policy.gather(1, actions[:, None])[:, 0]
        if not entropy:
            return log_prob, None
        return log_prob, -(log_policy.exp() * log_policy).sum(dim=1)

    def _predict(self, observation: th.Tensor, deterministic: bool = False) -> th.Tensor:
        return self.get_distribution(observation).get_actions(deterministic=deterministic)

    def predict_values(self, obs: th.Tensor) -> th.Tensor:
        """``(B, 1)`` zeros (in the parameters' dtype): the policy has no value function."""
        parameter = next(self.parameters())
        return th.zeros((self.n_observations(obs), 1), dtype=parameter.dtype, device=parameter.device)

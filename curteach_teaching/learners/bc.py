"""CrossEnt-BC on a tabular MDP: a quadratic softmax policy for imitation's ``BC``, and the original's SGD rule.

The paper's BC learner (docs: ``docs/teaching/learners.md``) scores action ``a`` in state ``s`` by

    H_theta(s, a) = theta[:d] . psi(s, a) + (theta[d:] . psi(s, a))^2,

where ``psi(s, a) = sum_s' T(s, a, s') phi(s')`` is the expected feature vector of the next state (``d = 8`` on the
car), and acts with ``pi_theta(a | s) = softmax_a H_theta(s, a)``; ``theta`` starts at all ones.

:class:`QuadraticSoftmaxPolicy` is that policy as a Stable-Baselines3 ``ActorCriticPolicy``, so it can be the
``policy`` of ``imitation.algorithms.bc.BC`` (its observation is the state index). Its log-probabilities come from a
max-subtracted log-softmax and never overflow (the original exponentiated raw scores; ``docs/deviations.md``).

:func:`sequential_sgd` is the original's update, a direct NumPy implementation: one plain SGD step on
``log pi_theta(a | s)`` per demonstrated pair, in order, for several independent learners at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th

from curteach_envs.tabular import TabularMDP
from curteach_teaching.learners.logits_policy import LogitsPolicy

__all__ = [
    "QuadraticSoftmaxPolicy",
    "action_features",
    "quadratic_scores",
    "quadratic_log_policy",
    "sequential_sgd",
]


def action_features(mdp: TabularMDP) -> np.ndarray:
    """``psi(s, a) = sum_s' T(s, a, s') phi(s')``, the expected next-state features.

    Args:
        mdp: the MDP; its absorbing states (the car's sink) carry zero features, so their ``psi`` is zero.

    Returns:
        ``(S, A, d)`` float64 array.
    """
    S, A = mdp.n_states, mdp.n_actions
    return np.asarray(mdp.transitions @ mdp.features, dtype=np.float64).reshape(S, A, mdp.n_features)


def _check_features(features: np.ndarray) -> np.ndarray:
    features = np.asarray(features, dtype=np.float64)
    if features.ndim != 3 or min(features.shape) < 1:
        raise ValueError(f"action_features must have shape (S, A, d) with S, A, d >= 1; got {features.shape}")
    if not np.all(np.isfinite(features)):
        raise ValueError("action_features must be finite")
    return features


def quadratic_scores(theta: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``H_theta(s, a) = theta[:d] . psi + (theta[d:] . psi)^2``.

    Args:
        theta: ``(2d,)`` or ``(K, 2d)`` parameters (K learners).
        features: ``(..., A, d)`` action features, e.g. ``(S, A, d)``.

    Returns:
        ``(..., A)`` scores, or ``(K, ..., A)`` for ``(K, 2d)`` parameters.
    """
    theta = np.asarray(theta, dtype=np.float64)
    d = features.shape[-1]
    if theta.shape[-1] != 2 * d:
        raise ValueError(f"theta must have 2 * d = {2 * d} entries in its last axis; got shape {theta.shape}")
    if theta.ndim == 1:
        return features @ theta[:d] + (features @ theta[d:]) ** 2
    linear = np.einsum("...ad,kd->k...a", features, theta[:, :d])
    quadratic = np.einsum("...ad,kd->k...a", features, theta[:, d:])
    return linear + quadratic**2


def quadratic_log_policy(theta: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``log pi_theta(a | s)`` by a max-subtracted log-softmax of :func:`quadratic_scores` (never overflows).

    Args:
        theta: ``(2d,)`` or ``(K, 2d)``.
        features: ``(S, A, d)``.

    Returns:
        ``(S, A)`` or ``(K, S, A)`` log-probabilities.
    """
    scores = quadratic_scores(theta, features)
    top = scores.max(axis=-1, keepdims=True)
    shifted = scores - top
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def sequential_sgd(
    theta: np.ndarray,
    features: np.ndarray,
    states: np.ndarray,
    actions: np.ndarray,
    learning_rate: float = 0.01,
) -> np.ndarray:
    """The original BC update: one SGD step on ``log pi(a | s)`` per pair, in order, for K learners in lockstep.

    For each pair ``(s, a)`` in order, with ``theta0`` the current parameters and
    ``grad H(s, b) = [psi(s, b), 2 (theta0[d:] . psi(s, b)) psi(s, b)]``:
    ``theta <- theta0 + lr * (grad H(s, a) - sum_b pi_theta0(b | s) grad H(s, b))``.
    The learners are independent; vectorising over them only saves interpreter time.

    Args:
        theta: ``(2d,)`` or ``(K, 2d)`` parameters (not modified).
        features: ``(S, A, d)`` action features ``psi``.
        states: ``(n,)`` or ``(K, n)`` int states, the pairs of learner k in order.
        actions: same shape, int actions in ``[0, A)``.
        learning_rate: the step size (the original: 0.01).

    Returns:
        The updated parameters, shaped like ``theta``.
    """
    features = _check_features(features)
    S, A, d = features.shape
    theta = np.array(theta, dtype=np.float64)
    single = theta.ndim == 1
    theta = np.atleast_2d(theta)
    states = np.atleast_2d(np.asarray(states))
    actions = np.atleast_2d(np.asarray(actions))
    K = theta.shape[0]
    if theta.shape != (K, 2 * d):
        raise ValueError(f"theta must have shape ({2 * d},) or (K, {2 * d}); got {theta.shape}")
    if states.shape != actions.shape or states.shape[0] != K:
        raise ValueError(f"states and actions must both have shape ({K}, n); got {states.shape} and {actions.shape}")
    _check_pairs(states, actions, S, A)
    if not np.isfinite(learning_rate):
        raise ValueError(f"learning_rate must be finite; got {learning_rate!r}")
    params = theta.reshape(K, 2, d)  # rows: linear and quadratic weights
    rows = np.arange(K)
    # a step where every learner's pair has psi = 0 has exactly zero gradient (e.g. the car's last row): skip it
    active = np.flatnonzero(np.any(features[states] != 0.0, axis=(0, 2, 3)))
    for t in active:
        psi = features[states[:, t]]  # (K, A, d)
        projections = params @ psi.transpose(0, 2, 1)  # (K, 2, A): theta[:d].psi and theta[d:].psi per action
        scores = projections[:, 0] + projections[:, 1] ** 2
        scores -= scores.max(axis=1, keepdims=True)
        prob = np.exp(scores)
        prob /= prob.sum(axis=1, keepdims=True)
        weight = -prob
        weight[rows, actions[:, t]] += 1.0  # indicator(b = a) - pi(b | s)
        coefficients = np.stack([weight, 2.0 * weight * projections[:, 1]], axis=1)  # (K, 2, A)
        params += learning_rate * (coefficients @ psi)
    out = params.reshape(K, 2 * d)
    return out[0] if single else out


def _check_pairs(states: np.ndarray, actions: np.ndarray, n_states: int, n_actions: int) -> None:
    if states.size == 0:
        return
    if not (np.issubdtype(states.dtype, np.integer) and np.issubdtype(actions.dtype, np.integer)):
        raise ValueError(f"states and actions must be integers; got {states.dtype} and {actions.dtype}")
    if states.min() < 0 or states.max() >= n_states:
        raise ValueError(f"states must lie in [0, {n_states - 1}]; got values in [{states.min()}, {states.max()}]")
    if actions.min() < 0 or actions.max() >= n_actions:
        raise ValueError(f"actions must lie in [0, {n_actions - 1}]; got values in [{actions.min()}, {actions.max()}]")


def _constant_schedule(_: float) -> float:
    # imitation's BC uses its own optimizer; this one (SB3's ``policy.optimizer``) is only built for completeness
    return 0.0


class QuadraticSoftmaxPolicy(LogitsPolicy):
    """The quadratic softmax policy over expected next-state features, as an SB3 policy
    (:class:`~curteach_teaching.learners.logits_policy.LogitsPolicy`).

    ``log pi(a | s) = log_softmax_a(theta[:d] . psi(s, a) + (theta[d:] . psi(s, a))^2)``; the one parameter is
    ``theta`` (``(2d,)``, initialised to ``theta_init``). Observations are state indices (``Discrete(S)``); one-hot
    observations ``(N, S)`` are accepted as well. It has no value function: ``predict_values`` returns zeros and
    imitation's BC never reads values.

    Args:
        observation_space: ``Discrete(S)``.
        action_space: ``Discrete(A)``.
        lr_schedule: SB3's learning-rate schedule for ``policy.optimizer`` (imitation's BC builds its own optimizer
            and ignores this one); default a constant 0.
        action_features: ``(S, A, d)`` the ``psi(s, a)`` (see :func:`action_features`).
        theta_init: initial value of every entry of ``theta`` (the original: 1).
        dtype: ``torch.float64`` (default; the original's precision) or ``torch.float32``.

    Sampling actions (``predict(..., deterministic=False)``, ``forward``) draws from torch's global RNG, as every
    SB3 policy does; training with BC and :meth:`log_policy_table` draw nothing.
    """

    def __init__(
        self,
        observation_space: gym.spaces.Space,
        action_space: gym.spaces.Space,
        lr_schedule: Callable[[float], float] = _constant_schedule,
        *,
        action_features: np.ndarray,
        theta_init: float = 1.0,
        dtype: th.dtype = th.float64,
        optimizer_class: type[th.optim.Optimizer] = th.optim.SGD,
        optimizer_kwargs: dict[str, Any] | None = None,
        **unused: Any,
    ):
        features = _check_features(action_features)
        S, A, d = features.shape
        if not isinstance(observation_space, gym.spaces.Discrete) or observation_space.n != S:
            raise ValueError(
                f"observation_space must be Discrete({S}) (one observation per state); got {observation_space}"
            )
        if not isinstance(action_space, gym.spaces.Discrete) or action_space.n != A:
            raise ValueError(f"action_space must be Discrete({A}); got {action_space}")
        if dtype not in (th.float32, th.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64; got {dtype}")
        if not np.isfinite(theta_init):
            raise ValueError(f"theta_init must be finite; got {theta_init!r}")
        super().__init__(observation_space, action_space, lr_schedule, optimizer_class=optimizer_class,
                         optimizer_kwargs=optimizer_kwargs)
        self.theta_init = float(theta_init)
        self.dtype = dtype
        self.theta = th.nn.Parameter(th.full((2 * d,), self.theta_init, dtype=dtype))
        self.register_buffer("psi", th.as_tensor(features, dtype=dtype))
        self.make_optimizer(lr_schedule)

    @classmethod
    def from_mdp(cls, mdp: TabularMDP, **kwargs: Any) -> QuadraticSoftmaxPolicy:
        """The policy for ``mdp`` (observations ``Discrete(S)``, actions ``Discrete(A)``, ``psi`` from ``mdp``)."""
        return cls(
            gym.spaces.Discrete(mdp.n_states),
            gym.spaces.Discrete(mdp.n_actions),
            action_features=action_features(mdp),
            **kwargs,
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return dict(
            super()._get_constructor_parameters(),
            lr_schedule=_constant_schedule,
            action_features=self.psi.detach().cpu().numpy(),
            theta_init=self.theta_init,
            dtype=self.dtype,
        )

    @property
    def n_features(self) -> int:
        """d, the number of state features."""
        return int(self.psi.shape[-1])

    def _states(self, obs: th.Tensor) -> th.Tensor:
        """``(N,)`` long state indices from ``(N,)``/``(N, 1)`` indices or ``(N, S)`` one-hot observations."""
        obs = th.as_tensor(obs, device=self.psi.device)
        S = self.psi.shape[0]
        if obs.ndim == 2 and obs.shape[1] == S and S > 1:
            return obs.argmax(dim=1)
        states = obs.reshape(-1).long()
        if states.numel() and (int(states.min()) < 0 or int(states.max()) >= S):
            raise ValueError(f"observations must be state indices in [0, {S - 1}]")
        return states

    def n_observations(self, obs: Any) -> int:
        """N, the observed states."""
        return int(self._states(obs).shape[0])

    def scores(self, obs: th.Tensor) -> th.Tensor:
        """``(N, A)`` scores ``H_theta(s, a)`` of the observed states (differentiable in ``theta``)."""
        psi = self.psi[self._states(obs)]  # (N, A, d)
        d = self.n_features
        return psi @ self.theta[:d] + (psi @ self.theta[d:]) ** 2

    def action_logits(self, obs: Any) -> th.Tensor:
        """``(N, A)`` the scores ``H_theta(s, a)`` (the logits of the softmax)."""
        return self.scores(obs)

    def distribution_logits(self, obs: Any) -> th.Tensor:
        """``(N, A)`` the log-probabilities: the distribution is built from the normalised scores."""
        return self.log_policy(obs)

    def theta_numpy(self) -> np.ndarray:
        """``(2d,)`` float64 copy of ``theta``."""
        return self.theta.detach().cpu().numpy().astype(np.float64)

    def set_theta(self, theta: np.ndarray) -> None:
        """Overwrite ``theta`` (``(2d,)``) in place, keeping the parameter object (and any optimizer's reference)."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != tuple(self.theta.shape) or not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must be a finite array of shape {tuple(self.theta.shape)}; got {theta.shape}")
        with th.no_grad():
            self.theta.copy_(th.as_tensor(theta, dtype=self.dtype, device=self.theta.device))

    def log_policy_table(self) -> np.ndarray:
        """``(S, A)`` float64 log-probabilities of every state (NumPy, no gradient)."""
        return quadratic_log_policy(self.theta_numpy(), self.psi.detach().cpu().numpy().astype(np.float64))

"""The action seam: acting and scoring for every action distribution of a Stable-Baselines3 policy.

Nothing else in the library asks whether actions are categorical or Gaussian. From a policy and a batch of ``B``
observations, :func:`action_distribution` gives the distributions' parameters as float64 NumPy arrays
(:class:`ActionDistribution`); then

* :func:`greedy_actions`: the most likely action: the argmax of the logits (the first on ties; per dimension for
  ``MultiDiscrete``), the mean of a Gaussian, ``p > 0.5`` per dimension of a Bernoulli (``MultiBinary``);
* :func:`sampled_actions`: one draw per row from that row's own NumPy generator, so that an episode's actions depend
  on its observations and its stream only, never on which other episodes share the batch. Categorical: the action
  whose cumulative probability first exceeds one uniform (the inverse CDF); multi-categorical: the same per dimension
  with one uniform each; Gaussian: ``mean + std * z`` with ``z`` standard normals; Bernoulli: ``u < p``;
* :func:`env_action`: one row as the environment takes it: an ``int`` for ``Discrete``, the action clipped to the
  ``Box`` (acting only: a sampled Gaussian action can leave the bounds), integer arrays for the multi-spaces.

Scoring goes through the policy's ``evaluate_actions``, the same log-probability that imitation's ``BC`` trains:
:func:`log_prob` (``(B,)``) and :func:`step_log_probs` (``(T,)`` over many transitions, in chunks). For a ``Box`` it
is a log-density, summed over the action's dimensions, and can be positive; the given actions are scored as they
are, never clipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from curteach_envs._util import CPU_PIECE_ROWS, row_pieces
from curteach_teaching.difficulty import index_observations
from curteach_teaching.learners.divergence import parameters_finite

__all__ = [
    "KINDS",
    "ActionDistribution",
    "action_distribution",
    "env_action",
    "greedy_actions",
    "log_prob",
    "log_prob_and_entropy",
    "outside_bounds",
    "sampled_actions",
    "step_log_probs",
]

#: the distributions of the seam (SB3's ``Categorical``, ``DiagGaussian``, ``MultiCategorical``, ``Bernoulli``)
KINDS = ("categorical", "gaussian", "multi-categorical", "bernoulli")


@dataclass(frozen=True)
class ActionDistribution:
    """``B`` action distributions, float64 on the CPU.

    Attributes:
        kind: one of :data:`KINDS`.
        logits: categorical: one ``(B, A)`` array (torch's normalised logits, log-probabilities); multi-categorical:
            one ``(B, A_j)`` array per action dimension; bernoulli: one ``(B, D)`` array of log-odds; gaussian: empty.
        mean, std: gaussian only: ``(B, D)`` each (``D`` the flattened action size).
    """

    kind: str
    logits: tuple = ()
    mean: np.ndarray | None = None
    std: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {self.kind!r}")

    def __len__(self) -> int:
        return int((self.mean if self.kind == "gaussian" else self.logits[0]).shape[0])


def _from_sb3(distribution: Any) -> ActionDistribution:
    """The parameters of an SB3 ``Distribution`` (after ``proba_distribution``)."""
    from stable_baselines3.common import distributions as d

    def array(tensor: Any) -> np.ndarray:
        return tensor.double().cpu().numpy()

    if isinstance(distribution, (d.SquashedDiagGaussianDistribution, d.StateDependentNoiseDistribution)):
        raise ValueError(f"the action seam does not handle {type(distribution).__name__} (squashed or "
                         "state-dependent noise); use a policy with a plain diagonal Gaussian")
    if isinstance(distribution, d.CategoricalDistribution):
        return ActionDistribution("categorical", logits=(array(distribution.distribution.logits),))
    if isinstance(distribution, d.DiagGaussianDistribution):
        normal = distribution.distribution
        return ActionDistribution("gaussian", mean=array(normal.loc), std=array(normal.scale))
    if isinstance(distribution, d.MultiCategoricalDistribution):
        return ActionDistribution("multi-categorical", logits=tuple(array(c.logits) for c in distribution.distribution))
    if isinstance(distribution, d.BernoulliDistribution):
        return ActionDistribution("bernoulli", logits=(array(distribution.distribution.logits),))
    raise ValueError(f"the action seam handles SB3's categorical, diagonal Gaussian, multi-categorical and Bernoulli "
                     f"distributions; got {type(distribution).__name__}")


def action_distribution(policy: Any, observations: Any) -> ActionDistribution:
    """The action distributions of ``policy`` at a batch of ``B`` observations.

    Args:
        policy: an SB3 ``BasePolicy`` (``obs_to_tensor`` and ``get_distribution``; run in evaluation mode, without
            gradients, its mode restored), or a callable ``observations -> (B, A)`` logits of a categorical policy.
        observations: ``(B, ...)`` NumPy observations (a dict of such arrays for a ``Dict`` space).

    Returns:
        :class:`ActionDistribution` of ``B`` rows.

    Raises:
        ValueError: a policy of another type, or a distribution the seam does not handle.
    """
    import torch as th
    from stable_baselines3.common.policies import BasePolicy

    if not isinstance(policy, BasePolicy):
        if not callable(policy):
            raise ValueError(f"policy must be an SB3 policy or a logits callable; got {type(policy).__name__}")
        return ActionDistribution("categorical", logits=(np.asarray(policy(observations), dtype=np.float64),))
    tensors, _ = policy.obs_to_tensor(observations)
    was_training = policy.training
    policy.set_training_mode(False)
    try:
        with th.no_grad():
            distribution = policy.get_distribution(tensors)
    finally:
        policy.set_training_mode(was_training)
    return _from_sb3(distribution)


def _inverse_cdf(logits: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """``(B, A)`` logits and ``(B,)`` uniforms -> ``(B,)`` the first action whose cumulative probability exceeds its
    uniform (the last action if rounding leaves the sum below it)."""
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    cumulative = np.cumsum(shifted / shifted.sum(axis=1, keepdims=True), axis=1)
    actions = (cumulative <= uniforms[:, None]).sum(axis=1)
    return np.minimum(actions, logits.shape[1] - 1)


def _probabilities(log_odds: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * log_odds))  # the logistic function, without overflow for large |x|


def greedy_actions(distribution: ActionDistribution) -> np.ndarray:
    """The most likely action of every row (see the module docstring).

    Returns:
        categorical ``(B,)`` int64; multi-categorical ``(B, J)`` int64; bernoulli ``(B, D)`` int64; gaussian
        ``(B, D)`` float64 (the mean, not clipped).
    """
    if distribution.kind == "categorical":
        return distribution.logits[0].argmax(axis=1)
    if distribution.kind == "gaussian":
        return distribution.mean.copy()
    if distribution.kind == "multi-categorical":
        return np.stack([logits.argmax(axis=1) for logits in distribution.logits], axis=1)
    return (distribution.logits[0] > 0).astype(np.int64)


def sampled_actions(distribution: ActionDistribution, streams: Sequence[np.random.Generator]) -> np.ndarray:
    """One sampled action per row, row ``b`` drawing from ``streams[b]`` only (see the module docstring): one uniform
    (categorical), one per dimension (multi-categorical, bernoulli) or ``D`` standard normals (gaussian).

    Returns:
        shapes and dtypes as :func:`greedy_actions`.

    Raises:
        ValueError: not one stream per row.
    """
    if len(streams) != len(distribution):
        raise ValueError(f"need one stream per row ({len(distribution)}); got {len(streams)}")
    if distribution.kind == "categorical":
        return _inverse_cdf(distribution.logits[0], np.array([stream.random() for stream in streams]))
    if distribution.kind == "gaussian":
        width = distribution.mean.shape[1]
        normals = np.stack([stream.standard_normal(width) for stream in streams]).reshape(distribution.mean.shape)
        return distribution.mean + distribution.std * normals
    width = len(distribution.logits) if distribution.kind == "multi-categorical" else distribution.logits[0].shape[1]
    uniforms = np.stack([stream.random(width) for stream in streams]).reshape(len(streams), width)
    if distribution.kind == "multi-categorical":
        return np.stack([_inverse_cdf(logits, uniforms[:, j]) for j, logits in enumerate(distribution.logits)], axis=1)
    return (uniforms < _probabilities(distribution.logits[0])).astype(np.int64)


def env_action(action: np.ndarray, space: gym.spaces.Space) -> Any:
    """One row of :func:`greedy_actions` / :func:`sampled_actions` as ``env.step`` takes it in ``space``: an ``int``
    (``Discrete``), the action reshaped to the space and clipped to its bounds in its dtype (``Box``), int64
    (``MultiDiscrete``) or int8 (``MultiBinary``) arrays.

    Raises:
        ValueError: another action space.
    """
    if isinstance(space, gym.spaces.Discrete):
        return int(action)
    if isinstance(space, gym.spaces.Box):
        return np.clip(np.asarray(action, dtype=np.float64).reshape(space.shape), space.low, space.high).astype(
            space.dtype)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return np.asarray(action, dtype=np.int64).reshape(space.shape)
    if isinstance(space, gym.spaces.MultiBinary):
        return np.asarray(action, dtype=np.int8).reshape(space.shape)
    raise ValueError(f"actions of a {type(space).__name__} space are not supported; give Discrete, Box, "
                     "MultiDiscrete or MultiBinary")


def outside_bounds(space: gym.spaces.Space, actions: Sequence[np.ndarray]) -> np.ndarray:
    """``(N,)`` int64: how many actions of each of ``N`` demonstrations lie outside a ``Box``'s bounds (a step counts
    once however many of its dimensions do); zeros for every other space.

    The one rule for such actions: they are trained on and scored as given, never clipped (a clipped action would be
    another action than the one demonstrated, and its density at the bound another number).

    Args:
        space: the action space.
        actions: ``N`` arrays ``(L_i, *space.shape)``.
    """
    counts = np.zeros(len(actions), dtype=np.int64)
    if not isinstance(space, gym.spaces.Box):
        return counts
    for i, acts in enumerate(actions):
        flat = np.asarray(acts, dtype=np.float64).reshape(len(acts), -1)
        low, high = space.low.reshape(1, -1), space.high.reshape(1, -1)
        counts[i] = int(((flat < low) | (flat > high)).any(axis=1).sum())
    return counts


def log_prob_and_entropy(policy: Any, obs: Any, actions: Any) -> tuple[Any, Any]:
    """``(log pi(a | s) (B,), entropy (B,) or None)`` of given actions, as the policy's ``evaluate_actions`` gives
    them, without the value head where that is safe to skip.

    SB3's ``ActorCriticPolicy.evaluate_actions`` also runs the critic (its value network and, unshared, its own
    features extractor), which nothing here trains or reads: imitation's ``BC`` loss ignores the values, so their
    parameters never get a gradient. For such a policy (one that does not override ``evaluate_actions``) the actor's
    own path, ``get_distribution(obs)``, runs the same operations on the same inputs, so the log-probabilities, the
    entropies and every gradient are the same to the bit, at about half the cost for an MLP. Any other policy (the
    logits policies, a user's) is asked through its ``evaluate_actions``.

    Args:
        policy: anything with ``evaluate_actions(obs, actions) -> (values, log_prob, entropy)``.
        obs: ``(B, ...)`` observation tensors (a dict of tensors for a ``Dict`` space) on the policy's device.
        actions: ``(B, ...)`` action tensor on the policy's device, scored as given.
    """
    from stable_baselines3.common.policies import ActorCriticPolicy

    if isinstance(policy, ActorCriticPolicy) and type(policy).evaluate_actions is ActorCriticPolicy.evaluate_actions:
        distribution = policy.get_distribution(obs)
        return distribution.log_prob(actions), distribution.entropy()
    _, log_probability, entropy = policy.evaluate_actions(obs, actions)
    return log_probability, entropy


def log_prob(policy: Any, obs: Any, actions: Any) -> Any:
    """``(B,)`` ``log pi(a | s)`` of given actions under an SB3 ``policy`` (:func:`log_prob_and_entropy`, the
    quantity imitation's ``BC`` trains): a log-probability, or for a ``Box`` a log-density summed over the action's
    dimensions (possibly > 0). The actions are scored as given, never clipped. Gradients flow as the caller's mode
    allows.

    Args:
        policy: anything with ``evaluate_actions(obs, actions) -> (values, log_prob, entropy)``.
        obs: ``(B, ...)`` observation tensors (a dict of tensors for a ``Dict`` space) on the policy's device.
        actions: ``(B, ...)`` action tensor on the policy's device.
    """
    from stable_baselines3.common.distributions import BernoulliDistribution

    if isinstance(getattr(policy, "action_dist", None), BernoulliDistribution) and not actions.is_floating_point():
        actions = actions.float()  # torch's Bernoulli scores float outcomes only (a MultiBinary dataset holds ints)
    log_probability, _ = log_prob_and_entropy(policy, obs, actions)
    return log_probability.reshape(-1)


def step_log_probs(policy: Any, obs: Any, acts: np.ndarray, *, chunk_size: int = 8192) -> np.ndarray:
    """``(T,)`` float64 :func:`log_prob` of every transition, NaN where the policy has diverged.

    Batched in chunks of transitions, without gradients, with the policy in evaluation mode (restored afterwards). A
    NaN marks a step of a diverged network: every step when a parameter is not finite, and the steps of a chunk whose
    outputs torch's distributions refuse (``Expected parameter ...``: finite weights whose outputs overflowed). On the
    CPU each chunk is forwarded in pieces of 1024 to 2047 rows (``curteach_envs._util.row_pieces``), whose
    activations stay in the cache: the same numbers in less time.

    Args:
        policy: an SB3 policy (``evaluate_actions``, ``device``, ``training``, ``set_training_mode``).
        obs: ``(T, ...)`` observations (an array or an imitation ``DictObs``).
        acts: ``(T, ...)`` actions, scored as given.
        chunk_size: transitions per chunk (per forward pass off the CPU).
    """
    import torch as th
    from imitation.data import types
    from imitation.util import util

    T = len(acts)
    log_probs = np.empty(T, dtype=np.float64)
    if not parameters_finite(policy):
        log_probs.fill(np.nan)
        return log_probs
    was_training = policy.training
    on_cpu = th.device(policy.device).type == "cpu"
    policy.set_training_mode(False)
    try:
        with th.no_grad():
            for begin in range(0, T, chunk_size):
                end = min(T, begin + chunk_size)
                for start, stop in row_pieces(begin, end, CPU_PIECE_ROWS if on_cpu else None):
                    index = np.arange(start, stop)
                    chunk = types.maybe_unwrap_dictobs(index_observations(obs, index))
                    obs_tensor = types.map_maybe_dict(lambda x: util.safe_to_tensor(x, device=policy.device), chunk)
                    acts_tensor = util.safe_to_tensor(acts[index], device=policy.device)
                    try:
                        scored = log_prob(policy, obs_tensor, acts_tensor)
                    except ValueError as error:
                        if "Expected parameter" not in str(error):
                            raise
                        log_probs[index] = np.nan
                        continue
                    log_probs[index] = scored.detach().cpu().numpy().astype(np.float64).reshape(-1)
    finally:
        policy.set_training_mode(was_training)
    return log_probs

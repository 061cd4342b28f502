"""The first dataset learner: an SB3 policy trained by imitation's ``BC`` (every built-in name of ``--policy``).

:class:`BCLearner` is the policy of :func:`~curteach_teaching.learners.factory.make_policy` and the ``BC`` trainer
of :func:`~curteach_teaching.learners.factory.make_bc_trainer` around it, built by the same calls in the same order
as ``dataset-bc`` has always built them, so a run's numbers do not depend on going through the learner. A curriculum
trains it through imitation's own step (the curriculum layer's ``CurriculumBC`` over :attr:`BCLearner.bc_trainer`,
with BC's arithmetic to the bit); :meth:`BCLearner.train_step` is the same loss for one batch handed over directly.

Scoring and acting go through the action seam (:mod:`~curteach_teaching.learners.actions`): the log-likelihood is
the policy's ``log pi(a | s)`` (a log-density summed over the action's dimensions for a ``Box``), greedy acting the
most likely action (the Gaussian's mean), sampled acting one draw per row from that row's stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_teaching.learners.divergence import LearnerDiverged

__all__ = ["BCLearner", "BCLearnerKind"]


@dataclass(frozen=True)
class BCLearnerKind:
    """The learner kind of one ``--policy`` value trained by BC: a built-in name or ``module:attr`` of an SB3 policy
    factory (:func:`~curteach_teaching.learners.factory.make_policy`)."""

    policy: str

    def check(self, observation_space: Any, action_space: Any) -> None:
        """Raise a one-line ``ValueError`` when the policy cannot read these spaces: ``make_policy`` with seed 0,
        the check ``dataset-bc`` has always made (the global generators are restored after it)."""
        from curteach_teaching.learners.factory import make_policy

        make_policy(self.policy, observation_space, action_space, 0)

    def __call__(self, observation_space: Any, action_space: Any, *, seed: int, device: Any, batch_size: int,
                 learning_rate: float, rng: np.random.Generator) -> BCLearner:
        """A fresh :class:`BCLearner` of this policy (the arguments as :class:`BCLearner` takes them)."""
        return BCLearner(self.policy, observation_space, action_space, seed=seed, device=device,
                         batch_size=batch_size, learning_rate=learning_rate, rng=rng)


class BCLearner:
    """An SB3 policy and imitation's ``BC`` (Adam at ``learning_rate``, BC's entropy weight 1e-3, no L2).

    Args:
        policy: a name of :data:`~curteach_teaching.learners.policy_kinds.POLICY_KINDS` or ``module:attr``.
        observation_space, action_space: the spaces it learns.
        seed: the weights' seed; device: where it trains.
        batch_size: BC's batch size; learning_rate: Adam's rate.
        rng: BC's own generator (its batch order; a curriculum draws from its own).

    Attributes:
        policy: the SB3 policy; bc_trainer: imitation's ``BC`` training it (what ``CurriculumBC`` steps).
    """

    def __init__(self, policy: str, observation_space: Any, action_space: Any, *, seed: int, device: Any,
                 batch_size: int, learning_rate: float, rng: np.random.Generator):
        from curteach_teaching.learners.factory import make_bc_trainer, make_policy

        self.observation_space, self.action_space = observation_space, action_space
        self.policy = make_policy(policy, observation_space, action_space, seed, device=device)
        self.bc_trainer = make_bc_trainer(self.policy, observation_space, action_space, batch_size=batch_size,
                                          learning_rate=learning_rate, rng=rng, device=device)

    def train_step(self, obs: Any, acts: Any, weights: Any | None) -> Any:
        """One Adam step on BC's loss of a batch of ``B`` steps: ``mean_t w_t (-log pi(a_t | s_t)) - ent_weight *
        mean_t w_t H(pi(. | s_t)) + l2_weight ||theta||^2 / 2`` (BC's own loss when ``weights`` is ``None``).

        Args:
            obs: ``(B, ...)`` observations; acts: ``(B, ...)`` actions; weights: ``(B,)`` or ``None``.

        Returns:
            the loss, a 0-d tensor on the policy's device.
        """
        import torch as th
        from imitation.data import types
        from imitation.util import util

        from curteach_teaching.learners.actions import log_prob_and_entropy

        device = self.policy.device
        obs_tensor = types.map_maybe_dict(lambda x: util.safe_to_tensor(x, device=device),
                                          types.maybe_unwrap_dictobs(obs))
        acts_tensor = util.safe_to_tensor(np.asarray(acts), device=device)
        calculator = self.bc_trainer.loss_calculator
        self.policy.set_training_mode(True)
        if weights is None:
            loss = calculator(self.policy, obs_tensor, acts_tensor).loss
        else:
            w = th.as_tensor(np.asarray(weights, dtype=np.float32), device=device)
            log_prob, entropy = log_prob_and_entropy(self.policy, obs_tensor, acts_tensor)
            l2 = sum(th.sum(th.square(p)) for p in self.policy.parameters()) / 2
            loss = (-(w * log_prob).mean() - calculator.ent_weight * (w * entropy).mean()
                    + calculator.l2_weight * l2)
        optimizer = self.bc_trainer.optimizer
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    def log_likelihood(self, obs: Any, acts: Any, *, chunk_size: int = 8192) -> np.ndarray:
        """``(T,)`` float64 ``log pi(a_t | s_t)``
        (:func:`~curteach_teaching.learners.actions.step_log_probs`), NaN where the policy diverged."""
        from imitation.data import types

        from curteach_teaching.learners.actions import step_log_probs

        if isinstance(obs, dict):
            obs = types.DictObs(obs)  # the seam indexes a dict's arrays through imitation's DictObs
        return step_log_probs(self.policy, obs, acts, chunk_size=chunk_size)

    def diverged(self) -> bool:
        """Whether a parameter of the policy is no longer finite."""
        from curteach_teaching.learners.divergence import parameters_finite

        return not parameters_finite(self.policy)

    def act(self, obs: Any, streams: Sequence[np.random.Generator] | None = None) -> np.ndarray:
        """``(B, ...)`` the greedy actions (``streams=None``) or one sampled per row from its stream
        (:func:`~curteach_teaching.learners.actions.greedy_actions`,
        :func:`~curteach_teaching.learners.actions.sampled_actions`), unclipped.

        Raises:
            LearnerDiverged: torch's distributions refuse the policy's outputs (finite weights whose outputs
                overflowed).
        """
        from curteach_teaching.learners import actions

        try:
            distribution = actions.action_distribution(self.policy, obs)
        except ValueError as error:
            if "Expected parameter" not in str(error):
                raise
            raise LearnerDiverged(str(error).splitlines()[0]) from error
        if streams is None:
            return actions.greedy_actions(distribution)
        return actions.sampled_actions(distribution, streams)

"""A learner's per-step training loss as a differentiable function of its parameters: what influence functions
(:mod:`~curteach_teaching.datasets.influence`) differentiate, one step at a time.

The learner protocol's :meth:`~curteach_teaching.learners.dataset_learner.DatasetLearner.log_likelihood` answers
in NumPy, without gradients; CUPID needs the gradient of each step's loss with respect to the weights.
:func:`step_loss` gives, for a built-in learner, a :class:`StepLoss`:

* ``module``: the ``torch.nn.Module`` whose parameters are differentiated (BC: the SB3 policy; ``diffusion``: the
  denoiser);
* ``tensors(obs, acts)``: the steps as the tensors the loss reads (``(B, ...)`` each, on the learner's device);
* ``loss(obs_t, acts_t)``: ``(B,)`` the per-step loss, computed by the learner's own code through ``module``, so
  that ``torch.func.functional_call`` on ``module`` swaps the weights it reads. It is minus the learner's
  ``log_likelihood`` of the same steps: BC's ``-log pi(a | s)`` (its training loss without the entropy bonus and the
  weight decay, which are not per step) and ``diffusion``'s denoising loss averaged over its ``K`` seeded
  (timestep, noise) pairs (:meth:`~curteach_teaching.learners.diffusion.DiffusionLearner.score_pairs`: the same
  pairs for every step, so a step's gradient is a deterministic function of the step and the weights).

``bc-rnn`` and plug-in learners have none yet (a one-line ``ValueError``): BC-RNN's mixture is read through
NumPy windows, which a per-sample ``vmap`` cannot pass through.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["StepLoss", "step_loss"]


@dataclass(frozen=True)
class StepLoss:
    """A learner's per-step loss (see the module docstring).

    Attributes:
        module: the network whose parameters are differentiated.
        tensors: ``(obs, acts) -> (obs_t, acts_t)``, NumPy steps to the loss's input tensors.
        loss: ``(obs_t (B, ...), acts_t (B, ...)) -> (B,)`` the per-step loss, through ``module``.
    """

    module: Any
    tensors: Callable[[Any, Any], tuple[Any, Any]]
    loss: Callable[[Any, Any], Any]


def _bc(learner: Any) -> StepLoss:
    from imitation.data import types
    from imitation.util import util

    from curteach_teaching.learners.actions import log_prob

    policy = learner.policy

    def tensors(obs: Any, acts: Any) -> tuple[Any, Any]:
        device = policy.device
        obs_t = types.map_maybe_dict(lambda x: util.safe_to_tensor(np.asarray(x), device=device),
                                     types.maybe_unwrap_dictobs(obs))
        acts_t = util.safe_to_tensor(np.asarray(acts), device=device)
        return obs_t, acts_t  # log_prob casts a MultiBinary dataset's ints for torch's Bernoulli

    def loss(obs_t: Any, acts_t: Any) -> Any:
        return -log_prob(policy, obs_t, acts_t)

    return StepLoss(policy, tensors, loss)


def _diffusion(learner: Any) -> StepLoss:
    import torch

    timesteps, noise = learner.score_pairs()

    def loss(obs_t: Any, acts_t: Any) -> Any:
        rows = acts_t.shape[0]
        total = torch.zeros(rows, dtype=acts_t.dtype, device=acts_t.device)
        for k in range(learner.score_draws):  # the K pairs of log_likelihood, in its order
            total = total + learner._per_step_loss(obs_t, acts_t, timesteps[k].expand(rows),
                                                   noise[k].expand(rows, -1))
        return total / learner.score_draws

    return StepLoss(learner.denoiser, learner._tensors, loss)


def step_loss(learner: Any) -> StepLoss:
    """The differentiable per-step loss of ``learner`` (a trained dataset learner; see the module docstring).

    Raises:
        ValueError: a learner without one (one line, naming those with one).
    """
    from curteach_teaching.learners.bc_learner import BCLearner

    if isinstance(learner, BCLearner):
        return _bc(learner)
    from curteach_teaching.learners.diffusion import DiffusionLearner

    if isinstance(learner, DiffusionLearner):
        return _diffusion(learner)
    raise ValueError(f"per-step loss gradients are defined for the BC policies and diffusion; the learner "
                     f"{type(learner).__name__} has none")

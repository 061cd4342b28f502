"""``policy-loss`` in the score registry: CUPID's "policy loss" baseline (Agia et al., 2025, arXiv 2506.19121,
``eval_policy_loss_diffusion.py``): a demonstration's mean per-step training loss under one policy trained on every
demonstration, larger = dropped first.

The loss is the learner's own per-step score, negated: ``-log pi(a_t | s_t)`` for BC (its training loss without the
entropy bonus and the weight decay, which are not per step), the denoising loss averaged over the learner's seeded
(timestep, noise) pairs for ``diffusion`` (CUPID averages 64 fresh draws; the learner's ``score_draws`` stratified
pairs here, the same for every step, so two steps are compared on the same draws). The policy is
:mod:`~curteach_teaching.datasets.scores.fitted_policy`'s, shared with ``action-likelihood`` and ``action-variance``.
In-sample: the policy saw every demonstration it scores (the ensemble's ``ensemble`` is the held-out reading).
"""

from __future__ import annotations

import numpy as np

from curteach_teaching.datasets.scores.fitted_policy import POLICY_STEPS, PolicyScore, per_demonstration_mean

__all__ = ["PolicyLossScore"]


class PolicyLossScore(PolicyScore):
    """``policy-loss``: minus a demonstration's mean per-step log-likelihood under the policy trained on all."""

    summary = ("fitted: one policy trained on every demonstration; a demonstration's mean training loss under it "
               "(CUPID's baseline)")
    options = (POLICY_STEPS,)

    def reduce(self, outputs: dict, lengths: np.ndarray) -> np.ndarray:
        """``(N,)`` ``-(1 / L_i) sum_t log_likelihood[t]`` over demonstration ``i``'s steps."""
        return -per_demonstration_mean(outputs["log_likelihood"], lengths)

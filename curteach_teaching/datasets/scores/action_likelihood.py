"""``action-likelihood`` in the score registry: CUPID's "action likelihood" baseline (Agia et al., 2025, arXiv
2506.19121, ``eval_action_likelihood_diffusion.py``): how likely the demonstrated actions are among the actions the
policy trained on every demonstration samples at the same states, larger (less likely) = dropped first.

Per step, ``M`` actions are sampled from the policy at the demonstrated state and the demonstrated action's
log-density under a Gaussian kernel density estimate on them is taken (bandwidth ``likelihood_bandwidth``; discrete
actions: the add-one smoothed share of samples equal to it); a demonstration's score is minus its steps' mean
(:mod:`~curteach_teaching.datasets.scores.fitted_policy`). CUPID uses 64 samples and averages per demonstration as
here.

How it differs from ``policy-loss``: ``policy-loss`` reads the learner's own per-step score (BC's exact
``log pi(a | s)``; diffusion's denoising loss); ``action-likelihood`` only the policy's sampled actions, the same
estimate for every learner. For a Gaussian BC policy the two agree as the bandwidth and ``1 / M`` go to 0 (the
kernel estimate tends to the policy's density), and differ by the kernel's smoothing and the sampling error
otherwise; for a diffusion learner, whose per-step score is a loss and not a likelihood, only this one is a
likelihood. In-sample, like ``policy-loss`` (the ensemble is the held-out reading).
"""

from __future__ import annotations

import numpy as np

from curteach_teaching.datasets.scores.fitted_policy import (
    ACTION_SAMPLES,
    BANDWIDTH,
    POLICY_STEPS,
    PolicyScore,
    per_demonstration_mean,
)

__all__ = ["ActionLikelihoodScore"]


class ActionLikelihoodScore(PolicyScore):
    """``action-likelihood``: minus a demonstration's mean kernel log-density of its actions among the policy's
    sampled ones."""

    summary = ("fitted: minus the mean log-density of the demonstrated actions among actions sampled from one "
               "policy trained on every demonstration (CUPID's baseline)")
    options = (POLICY_STEPS, ACTION_SAMPLES, BANDWIDTH)
    reads = ("log_density",)

    def reduce(self, outputs: dict, lengths: np.ndarray) -> np.ndarray:
        """``(N,)`` ``-(1 / L_i) sum_t log_density[t]``."""
        return -per_demonstration_mean(outputs["log_density"], lengths)

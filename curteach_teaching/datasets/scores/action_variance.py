"""``action-variance`` in the score registry: CUPID's "action diversity" baseline (Agia et al., 2025, arXiv
2506.19121, ``eval_action_variance_diffusion.py``): the spread of the actions one policy trained on every
demonstration samples at a demonstration's states.

Per step, ``M`` actions are sampled at the demonstrated state; their variance over the samples, averaged over the
action's dimensions (discrete actions: ``1 -`` the share of the most frequent one), is averaged over the
demonstration's steps (:mod:`~curteach_teaching.datasets.scores.fitted_policy`). The sign is CUPID's: its curation
keeps the demonstrations of largest spread ("action diversity", weight ``+1``), so the score is MINUS the mean
spread (the demonstrations on whose states the policy is most certain are dropped first).

A BC policy of SB3 with Gaussian actions learns one standard deviation for all states (``log_std`` is a parameter,
not an output), so its spread is the same at every state up to the sampling error: the score carries information
for policies whose spread depends on the state (``diffusion``, categorical actions), as CUPID's diffusion policies.
"""

from __future__ import annotations

import numpy as np

from curteach_teaching.datasets.scores.fitted_policy import (
    ACTION_SAMPLES,
    POLICY_STEPS,
    PolicyScore,
    per_demonstration_mean,
)

__all__ = ["ActionVarianceScore"]


class ActionVarianceScore(PolicyScore):
    """``action-variance``: minus the mean spread of the policy's sampled actions at a demonstration's states."""

    summary = ("fitted: minus the mean spread of actions sampled at a demonstration's states from one policy trained "
               "on every demonstration (CUPID's action diversity: the least diverse dropped first)")
    options = (POLICY_STEPS, ACTION_SAMPLES)
    reads = ("spread",)

    def reduce(self, outputs: dict, lengths: np.ndarray) -> np.ndarray:
        """``(N,)`` ``-(1 / L_i) sum_t spread[t]``."""
        return -per_demonstration_mean(outputs["spread"], lengths)

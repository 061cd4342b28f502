"""Divergence of a learner: a step that would leave its parameters or its policy non-finite.

A teaching or learning rate that is too large for the learner (Theorems 1 and 2 of the paper assume
``eta ||g||^2 << 2 |<theta* - theta, g>|``) drives the parameters to infinity or NaN within a few steps. The car
learners check every step: such a step raises :class:`LearnerDiverged` and leaves the learner exactly as it was
before the step, with its last finite parameters and policy. The car experiments record the step and keep that
last finite learner for the rest of the run (docs/teaching/learners.md#divergence). A dataset learner's scores
(the action seam's log-likelihoods, held-out scoring) are NaN once :func:`parameters_finite` is false.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["LearnerDiverged", "all_finite", "parameters_finite"]


class LearnerDiverged(ArithmeticError):
    """A learner step would have made the parameters or the policy non-finite; the learner is unchanged."""


def all_finite(*values) -> bool:
    """Whether every number in every array or scalar of ``values`` is finite."""
    return all(bool(np.all(np.isfinite(value))) for value in values)


def parameters_finite(module: Any) -> bool:
    """Whether every parameter of a torch ``module`` is finite (``True`` for an object without ``parameters``, such
    as a logits callable); one check per tensor, each read from its device."""
    if not hasattr(module, "parameters"):
        return True
    import torch as th

    return all(bool(th.isfinite(p).all()) for p in module.parameters())

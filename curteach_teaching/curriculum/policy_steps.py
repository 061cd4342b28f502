"""The half of a :class:`~curteach_teaching.curriculum.core.StepTrainer` that every trainer with an SB3 policy at
``trainer.policy`` shares (imitation's BC, DAgger's BC, GAIL, AIRL): the learner's difficulty under that policy and
the restoring of its training mode around callbacks.

An adapter for another such trainer subclasses :class:`PolicyStepTrainer` and writes only ``train_batches`` (and
optionally ``step_metrics``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np

from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.scores import policy_difficulty
from curteach_teaching.difficulty import MIN_LOG_PROB

__all__ = ["PolicyStepTrainer", "training_mode_restored"]


@contextmanager
def training_mode_restored(policy: Any):
    """A context that restores ``policy``'s training mode (SB3's ``predict`` leaves it in evaluation mode); a
    policy without one (e.g. imitation's ``TabularPolicy`` has no parameters to train) is left alone."""
    was_training = getattr(policy, "training", None)
    try:
        yield
    finally:
        if was_training is not None and hasattr(policy, "set_training_mode"):
            policy.set_training_mode(was_training)


class PolicyStepTrainer:
    """Learner difficulty and hook context of a trainer whose learner is the SB3 policy ``trainer.policy``.

    Args:
        trainer: the imitation trainer (only ``trainer.policy`` is read here, afresh at every call, so a trainer
            that replaces its policy object is followed).
        transitions: the flattened demonstrations (``rollout.flatten_trajectories``), laid out as ``index`` says.
        index: their :class:`~curteach_teaching.curriculum.index.DemonstrationIndex`.
        chunk_size, min_log_prob: of the learner-difficulty passes
            (:func:`~curteach_teaching.curriculum.scores.policy_difficulty`).
    """

    def __init__(self, trainer: Any, transitions: Any, index: DemonstrationIndex, *, chunk_size: int = 8192,
                 min_log_prob: float = MIN_LOG_PROB):
        self.trainer = trainer
        self.transitions = transitions
        self.index = index
        self.chunk_size = chunk_size
        self.min_log_prob = min_log_prob

    def learner_difficulty(self) -> np.ndarray:
        """``(N,)`` ``log Psi^L`` of every demonstration under the trainer's current policy."""
        return policy_difficulty(self.trainer.policy, self.transitions.obs, self.transitions.acts, self.index,
                                 chunk_size=self.chunk_size, min_log_prob=self.min_log_prob)

    def around_hooks(self) -> AbstractContextManager:
        """Restore the policy's training mode after the callbacks (an evaluation through SB3's
        ``predict`` leaves it in evaluation mode, and the next optimizer step must not train with dropout or
        batch-norm statistics frozen)."""
        return training_mode_restored(self.trainer.policy)

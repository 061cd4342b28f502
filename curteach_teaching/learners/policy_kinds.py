"""The built-in names of ``--policy``, in one place: the SB3 policies imitation's ``BC`` trains
(:mod:`~curteach_teaching.learners.factory` builds them, :data:`~curteach_teaching.learners.dataset_learner.
DATASET_LEARNERS` registers them, the commands list them in their help). A module of its own so that building the
command-line parser imports no learner."""

from __future__ import annotations

__all__ = ["POLICY_KINDS"]

#: the built-in kinds, in the order the help lists them; anything else is a registered learner or ``module:attr``
POLICY_KINDS = ("auto", "babyai-film", "mlp", "mlp-256", "cnn", "multi-input")

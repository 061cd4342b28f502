"""Learners taught by the teachers of :mod:`curteach_teaching.teachers`.

``maxent_irl`` needs only NumPy; ``bc`` needs torch and imitation and is imported on first use of its names.
"""

from __future__ import annotations

from curteach_teaching import _lazy_getattr
from curteach_teaching.learners.maxent_irl import (
    REWARD_MODELS,
    MaxEntIRLLearner,
    TaskDecomposition,
    pretraining_learning_rate,
)

_LAZY = {"QuadraticSoftmaxPolicy": "curteach_teaching.learners.bc", "sequential_sgd": "curteach_teaching.learners.bc"}
__all__ = ["QuadraticSoftmaxPolicy", "sequential_sgd", "MaxEntIRLLearner", "REWARD_MODELS", "TaskDecomposition", "pretraining_learning_rate"]


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())

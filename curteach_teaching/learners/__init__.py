"""Learners taught by the teachers of :mod:`curteach_teaching.teachers`."""

from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy, sequential_sgd
from curteach_teaching.learners.maxent_irl import (
    REWARD_MODELS,
    MaxEntIRLLearner,
    TaskDecomposition,
    pretraining_learning_rate,
)

__all__ = ["QuadraticSoftmaxPolicy", "sequential_sgd", "MaxEntIRLLearner", "REWARD_MODELS", "TaskDecomposition", "pretraining_learning_rate"]

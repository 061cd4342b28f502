"""Learners taught by the teachers of :mod:`curteach_teaching.teaching.teachers`.

``maxent_irl`` needs only NumPy; ``bc`` (the quadratic softmax policy) and ``bc_car`` (the car's BC learner and its
trainer) need torch and imitation and are imported on first use of their names.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr
from curteach_teaching.learners.maxent_irl import (
    REWARD_MODELS,
    MaxEntIRLLearner,
    TaskDecomposition,
    pretraining_learning_rate,
)

_LAZY = {
    "QuadraticSoftmaxPolicy": "curteach_teaching.learners.bc",
    "sequential_sgd": "curteach_teaching.learners.bc",
    "BCCarLearner": "curteach_teaching.learners.bc_car",
    "make_bc_trainer": "curteach_teaching.learners.bc_car",
    "step_many": "curteach_teaching.learners.bc_car",
    "NavigationCNNPolicy": "curteach_teaching.learners.networks",
    "BabyAIFiLMPolicy": "curteach_teaching.learners.babyai",
    "BabyAIFiLMNet": "curteach_teaching.learners.babyai",
    "MissionTokens": "curteach_teaching.learners.babyai_vocab",
    "encode_observations": "curteach_teaching.learners.babyai_vocab",
}
__all__ = [
    "BabyAIFiLMNet",
    "BabyAIFiLMPolicy",
    "MissionTokens",
    "encode_observations",
    "QuadraticSoftmaxPolicy",
    "sequential_sgd",
    "BCCarLearner",
    "make_bc_trainer",
    "step_many",
    "MaxEntIRLLearner",
    "REWARD_MODELS",
    "TaskDecomposition",
    "pretraining_learning_rate",
]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())

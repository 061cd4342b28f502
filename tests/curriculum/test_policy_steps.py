"""PolicyStepTrainer, the shared half of the SB3-policy step trainers: the learner difficulty by hand, a replaced
policy followed, the training mode restored around hooks."""

from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("imitation")

from imitation.data import rollout  # noqa: E402
from imitation.data.types import Trajectory  # noqa: E402

from curteach_teaching.curriculum import PolicyStepTrainer, training_mode_restored  # noqa: E402
from curteach_teaching.curriculum.index import DemonstrationIndex  # noqa: E402
from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy  # noqa: E402

# two states, three actions, d = 2; state 1 has no features, so its policy is uniform
PSI = np.array([[[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]])
DEMOS = [
    Trajectory(obs=np.array([0, 1]), acts=np.array([1]), infos=None, terminal=True),
    Trajectory(obs=np.array([0, 1, 0]), acts=np.array([0, 2]), infos=None, terminal=True),
]


def policy(theta):
    made = QuadraticSoftmaxPolicy(gym.spaces.Discrete(2), gym.spaces.Discrete(3), action_features=PSI)
    made.set_theta(np.asarray(theta, dtype=float))
    return made


def step_trainer(trainer):
    return PolicyStepTrainer(trainer, rollout.flatten_trajectories(DEMOS), DemonstrationIndex.from_trajectories(DEMOS))


def test_learner_difficulty_by_hand_and_a_replaced_policy_is_followed():
    trainer = types.SimpleNamespace(policy=policy(np.ones(4)))
    steps = step_trainer(trainer)
    # theta = 1 in state 0: H = theta1.psi + (theta2.psi)^2 = [2, 6, 0]
    log_pi0 = np.array([2.0, 6.0, 0.0]) - np.log(np.exp(2.0) + np.exp(6.0) + 1.0)
    expected = [-log_pi0[1], -(log_pi0[0] + np.log(1 / 3))]
    np.testing.assert_allclose(steps.learner_difficulty(), expected, rtol=1e-12)
    trainer.policy = policy(np.zeros(4))  # a trainer that swaps its policy object: uniform everywhere
    np.testing.assert_allclose(steps.learner_difficulty(), [np.log(3), 2 * np.log(3)], rtol=1e-12)


def test_around_hooks_restores_the_training_mode_even_after_an_error():
    trainer = types.SimpleNamespace(policy=policy(np.ones(4)))
    steps = step_trainer(trainer)
    trainer.policy.set_training_mode(True)
    with steps.around_hooks():
        trainer.policy.predict(np.array([0]))  # SB3's predict leaves the policy in evaluation mode
        assert not trainer.policy.training
    assert trainer.policy.training
    with pytest.raises(RuntimeError, match="hook failed"), steps.around_hooks():
        trainer.policy.set_training_mode(False)
        raise RuntimeError("hook failed")
    assert trainer.policy.training
    trainer.policy.set_training_mode(False)  # an evaluation-mode policy stays so
    with steps.around_hooks():
        trainer.policy.set_training_mode(True)
    assert not trainer.policy.training


def test_a_policy_without_a_training_mode_is_left_alone():
    table = types.SimpleNamespace(pi=np.full((2, 3), 1 / 3))  # like imitation's TabularPolicy: nothing to train
    with training_mode_restored(table):
        pass
    assert vars(table).keys() == {"pi"}

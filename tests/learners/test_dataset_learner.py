"""Dataset learners: the registry behind ``--policy`` (curteach_teaching.learners.dataset_learner), the BC learner
(curteach_teaching.learners.bc_learner) against the calls dataset-bc made before it, the curriculum adapter of any
other learner, and the evaluator acting through a learner."""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

th = pytest.importorskip("torch")
pytest.importorskip("imitation")

from imitation.data import types  # noqa: E402

from curteach_teaching.curriculum.adapters.learner import LearnerSteps, learner_curriculum  # noqa: E402
from curteach_teaching.learners import actions  # noqa: E402
from curteach_teaching.learners.bc_learner import BCLearner, BCLearnerKind  # noqa: E402
from curteach_teaching.learners.dataset_learner import (  # noqa: E402
    DATASET_LEARNERS,
    DatasetLearner,
    check_learner,
    learner_kind,
    make_learner,
)
from curteach_teaching.learners.divergence import parameters_finite  # noqa: E402
from curteach_teaching.learners.factory import make_bc_trainer, make_policy  # noqa: E402
from curteach_teaching.learners.policy_kinds import POLICY_KINDS  # noqa: E402
from curteach_teaching.learners.seeding import episode_streams  # noqa: E402
from curteach_teaching.rollouts import evaluate_policy  # noqa: E402

VECTORS = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
BOX = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
PLUGINS = Path(__file__).resolve().parents[2] / "examples" / "plugins"


@pytest.fixture
def example_learner(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    yield "mypkg.dataset_learners:LinearGaussian"
    for name in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
        del sys.modules[name]


def _learner(policy="mlp", obs_space=VECTORS, act_space=BOX, seed=3):
    return make_learner(policy, obs_space, act_space, seed=seed, device="cpu", batch_size=8, learning_rate=1e-2,
                        rng=np.random.default_rng(4))


def _trajectories(n=6, length=5, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        obs = rng.normal(size=(length + i % 3 + 1, 3)).astype(np.float32)
        acts = np.clip(obs[:-1, :1] * 0.5, -2, 2).astype(np.float32)
        out.append(types.Trajectory(obs=obs, acts=acts, infos=None, terminal=True))
    return out


def test_every_policy_kind_is_the_bc_learner_and_the_help_lists_them():
    assert DATASET_LEARNERS.names()[: len(POLICY_KINDS)] == POLICY_KINDS
    for kind in POLICY_KINDS:
        assert learner_kind(kind) == (kind, BCLearnerKind(kind))
    # an SB3 policy factory as module:attr (no check): trained by BC, as before
    assert learner_kind("curteach_teaching.learners.factory:make_policy")[1] == BCLearnerKind(
        "curteach_teaching.learners.factory:make_policy")
    with pytest.raises(ValueError, match="unknown dataset learner 'transformer'"):
        learner_kind("transformer")


def test_the_bc_learner_is_the_policy_and_trainer_dataset_bc_built_before():
    learner = _learner(seed=11)
    assert isinstance(learner, BCLearner) and isinstance(learner, DatasetLearner)
    policy = make_policy("mlp", VECTORS, BOX, 11)
    for (name, a), (_, b) in zip(policy.state_dict().items(), learner.policy.state_dict().items(), strict=True):
        assert th.equal(a, b), name
    trainer = make_bc_trainer(policy, VECTORS, BOX, batch_size=8, learning_rate=1e-2, rng=np.random.default_rng(4))
    assert learner.bc_trainer.batch_size == trainer.batch_size
    assert learner.bc_trainer.optimizer.defaults == trainer.optimizer.defaults
    # scores and acts through the action seam, to the bit
    obs = np.random.default_rng(1).normal(size=(7, 3)).astype(np.float32)
    acts = np.linspace(-1, 1, 7, dtype=np.float32).reshape(7, 1)
    assert np.array_equal(learner.log_likelihood(obs, acts), actions.step_log_probs(policy, obs, acts))
    distribution = actions.action_distribution(policy, obs)
    assert np.array_equal(learner.act(obs), actions.greedy_actions(distribution))
    streams, again = episode_streams(7, 5), episode_streams(7, 5)
    assert np.array_equal(learner.act(obs, streams), actions.sampled_actions(distribution, again))
    assert not learner.diverged()


def test_the_bc_learners_weighted_step_with_unit_weights_is_bcs_step():
    plain, weighted = _learner(seed=2), _learner(seed=2)
    obs = np.random.default_rng(3).normal(size=(8, 3)).astype(np.float32)
    acts = np.random.default_rng(4).uniform(-1, 1, (8, 1)).astype(np.float32)
    loss_plain = plain.train_step(obs, acts, None)
    loss_weighted = weighted.train_step(obs, acts, np.ones(8))
    assert float(loss_weighted) == pytest.approx(float(loss_plain), rel=1e-6)
    for a, b in zip(plain.policy.parameters(), weighted.policy.parameters(), strict=True):
        assert th.allclose(a, b, atol=1e-7)
    # weights (2, 2, 2, 2, 0, 0, 0, 0), which average 1: the loss of the first four steps alone
    weighted, alone = _learner(seed=2), _learner(seed=2)
    loss = weighted.train_step(obs, acts, np.r_[np.full(4, 2.0), np.zeros(4)])
    assert float(loss) == pytest.approx(float(alone.train_step(obs[:4], acts[:4], None)), rel=1e-6)


def test_a_kind_that_cannot_fit_the_data_is_one_line(example_learner):
    with pytest.raises(ValueError, match=r"policy 'cnn' needs image observations"):
        check_learner("cnn", VECTORS, BOX)
    with pytest.raises(ValueError, match=r"^linear-gaussian learns continuous \(Box\) actions; the dataset's are "
                                         r"Discrete\(2\)$"):
        check_learner(example_learner, VECTORS, gym.spaces.Discrete(2))
    check_learner(example_learner, VECTORS, BOX)
    # what still trains SB3 policies by BC (the ensemble teacher, rank) says it cannot take a dataset learner
    with pytest.raises(ValueError, match="is a dataset learner, not an SB3 policy factory"):
        make_policy(example_learner, VECTORS, BOX, 0)


def test_a_plug_in_that_breaks_the_protocol_is_named(tmp_path, monkeypatch):
    (tmp_path / "broken_learners.py").write_text(
        "class NotALearner:\n"
        "    @classmethod\n"
        "    def check(cls, observation_space, action_space):\n"
        "        pass\n"
        "    def __init__(self, observation_space, action_space, **settings):\n"
        "        pass\n"
        "class Crashes(NotALearner):\n"
        "    @classmethod\n"
        "    def check(cls, observation_space, action_space):\n"
        "        raise KeyError('shape')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="dataset learner factory 'NotALearner' returned NotALearner, which is not a "
                                         "dataset learner"):
        _learner("broken_learners:NotALearner")
    with pytest.raises(ValueError, match="dataset learner 'Crashes': check raised KeyError: 'shape'"):
        check_learner("broken_learners:Crashes", VECTORS, BOX)
    del sys.modules["broken_learners"]


def test_divergence_is_read_from_the_parameters():
    learner = _learner()
    assert parameters_finite(learner.policy) and parameters_finite(lambda x: x)
    with th.no_grad():
        next(learner.policy.parameters()).view(-1)[0] = float("inf")
    assert learner.diverged() and np.isnan(learner.log_likelihood(np.zeros((2, 3), np.float32),
                                                                  np.zeros((2, 1), np.float32))).all()


def test_another_learner_trains_under_a_curriculum_through_its_own_steps(example_learner):
    demos = _trajectories()
    learner = _learner(example_learner)
    start = learner.weights.copy()
    teacher = np.arange(len(demos), dtype=np.float64)
    curriculum = learner_curriculum(learner, demos, batch_size=8, steps_per_epoch=5, variant="Cur",
                                    teacher=teacher, rng=np.random.default_rng(0), log=False, use="weight")
    assert isinstance(curriculum.step_trainer, LearnerSteps)
    curriculum.train(3)
    assert curriculum.step == 15 and not np.array_equal(learner.weights, start)
    difficulty = curriculum.step_trainer.learner_difficulty()
    assert difficulty.shape == (len(demos),) and np.isfinite(difficulty).all()
    # the per-demonstration sums of the learner's own per-step log-likelihoods
    flat = np.concatenate([t.obs[:-1] for t in demos]), np.concatenate([t.acts for t in demos])
    per_step = learner.log_likelihood(*flat)
    lengths = [len(t.acts) for t in demos]
    assert np.allclose(difficulty, -np.add.reduceat(per_step, np.r_[0, np.cumsum(lengths)[:-1]]))
    # a BC learner's curriculum is imitation's BC step (CurriculumBC over its trainer)
    from curteach_teaching.curriculum.adapters.bc import CurriculumBC

    bc = _learner()
    assert isinstance(learner_curriculum(bc, demos, batch_size=8, variant="Agn", log=False), CurriculumBC)


def test_the_evaluator_acts_through_a_learner_as_through_its_policy():
    env_id = "CartPole-v1"
    space = gym.make(env_id).observation_space
    learner = _learner("mlp", space, gym.spaces.Discrete(2), seed=1)
    for greedy in (True, False):
        through = evaluate_policy(learner, lambda: gym.make(env_id), [0, 1, 2], deterministic=greedy, generator=7)
        direct = evaluate_policy(learner.policy, lambda: gym.make(env_id), [0, 1, 2], deterministic=greedy,
                                 generator=7)
        assert np.array_equal(through.returns, direct.returns) and np.array_equal(through.lengths, direct.lengths)


def test_the_evaluator_rolls_out_a_learner_that_is_no_sb3_policy(example_learner):
    env = gym.make("Pendulum-v1")
    learner = _learner(example_learner, env.observation_space, env.action_space)
    greedy = evaluate_policy(learner, lambda: gym.make("Pendulum-v1"), [0, 1])
    sampled = evaluate_policy(learner, lambda: gym.make("Pendulum-v1"), [0, 1], deterministic=False, generator=3)
    assert np.isfinite(greedy.returns).all() and (greedy.lengths == 200).all()
    assert not np.array_equal(greedy.returns, sampled.returns)

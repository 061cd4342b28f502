"""The ensemble teacher: halves, held-out scores by hand, bad demonstrations ranked last, the cache, the seed."""

import gymnasium as gym
import numpy as np
import pytest
from imitation.data.types import Trajectory

from curteach_teaching.datasets.scores.ensemble import EnsembleTeacher, _held_out_difficulty
from curteach_teaching.learners.dataset_learner import LearnerFactory


def test_held_out_difficulty_by_hand():
    log_likelihood = np.array([[-1.0, -2.0, -3.0], [-5.0, -4.0, -6.0]])
    in_bag = np.array([[True, False, True], [False, False, True]])
    # demo 0: held out from member 1 only -> 5; demo 1: from both -> 3; demo 2: in both halves -> all members, 4.5
    np.testing.assert_allclose(_held_out_difficulty(log_likelihood, in_bag), [5.0, 3.0, 4.5])


def test_halves_are_seeded_halves():
    teacher = EnsembleTeacher(size=4, seed=3)
    halves = teacher.halves(9)
    assert halves.shape == (4, 9) and (halves.sum(axis=1) == 5).all()
    np.testing.assert_array_equal(halves, EnsembleTeacher(size=4, seed=3).halves(9))
    assert not np.array_equal(halves, EnsembleTeacher(size=4, seed=4).halves(9))
    for bad, message in (({"size": 1}, "ensemble size"), ({"batches": 0}, "ensemble batches"),
                         ({"learning_rate": -1.0}, "learning_rate")):
        with pytest.raises(ValueError, match=message):
            EnsembleTeacher(**bad)


def _cartpole_with_bad_ones(n=24, bad=(3, 9, 14, 20), horizon=40):
    """A scripted CartPole controller's episodes (push toward the pole's lean); the ``bad`` ones act at random."""
    env = gym.make("CartPole-v1", max_episode_steps=horizon)
    rng = np.random.default_rng(7)
    demos = []
    for i in range(n):
        obs, _ = env.reset(seed=i)
        observations, actions, done = [obs], [], False
        while not done:
            action = int(rng.integers(2)) if i in bad else int(obs[2] + 0.5 * obs[3] > 0)
            obs, _, terminated, truncated, _ = env.step(action)
            observations.append(obs), actions.append(action)
            done = terminated or truncated
        demos.append(Trajectory(obs=np.array(observations), acts=np.array(actions), infos=None, terminal=True))
    return env, demos, np.array(bad)


def test_the_ensemble_ranks_bad_demonstrations_last_and_caches(tmp_path):
    env, demos, bad = _cartpole_with_bad_ones()
    made = []
    learners = LearnerFactory("mlp", env.observation_space, env.action_space)

    def make(seed, **given):
        made.append(seed)
        return learners(seed, **given)

    teacher = EnsembleTeacher(size=3, batches=60, batch_size=32, learning_rate=1e-2, seed=0)
    scores = teacher.scores(demos, make, cache=tmp_path)
    assert scores.difficulty.shape == (24,) and scores.log_likelihood.shape == (3, 24)
    assert set(np.argsort(-scores.difficulty)[: bad.size]) == set(bad)  # the hardest are the bad ones
    assert len(made) == 3 and len(list(tmp_path.glob("ensemble-*.npz"))) == 1
    again = teacher.scores(demos, make, cache=tmp_path)
    assert len(made) == 3  # read from the cache: no member fitted again
    np.testing.assert_array_equal(again.difficulty, scores.difficulty)
    one = EnsembleTeacher(size=2, batches=5, seed=1)
    first = one.scores(demos, make, cache=tmp_path)
    assert len(list(tmp_path.glob("ensemble-*.npz"))) == 2  # another seed is another entry
    np.testing.assert_array_equal(one.scores(demos, make).log_likelihood, first.log_likelihood)  # seeded
    with pytest.raises(ValueError, match="at least 2"):
        teacher.scores(demos[:1], make)


def test_the_batched_fit_keys_its_own_cache_and_agrees_with_the_sequential_one(tmp_path):
    env, demos, bad = _cartpole_with_bad_ones()
    learners = LearnerFactory("mlp", env.observation_space, env.action_space)
    settings = dict(size=3, batches=40, batch_size=32, learning_rate=1e-2, seed=0)
    sequential = EnsembleTeacher(**settings)
    batched = EnsembleTeacher(**settings, fit="batched")
    # the sequential fit keeps the key every cache before the batched fit was written under; the batched its own
    assert sequential.cache_path(tmp_path, "d") == EnsembleTeacher(**settings).cache_path(tmp_path, "d")
    assert batched.cache_path(tmp_path, "d") != sequential.cache_path(tmp_path, "d")
    one, two = sequential.scores(demos, learners).difficulty, batched.scores(demos, learners).difficulty
    np.testing.assert_allclose(two, one, rtol=1e-4, atol=1e-5)  # the same members, summed in another order
    np.testing.assert_array_equal(batched.scores(demos, learners).difficulty, two)  # seeded, deterministic
    with pytest.raises(ValueError, match="ensemble fit must be one of sequential, batched; got 'fast'"):
        EnsembleTeacher(fit="fast")


def test_the_ensemble_score_says_its_fit_only_away_from_the_sequential_default():
    from curteach_teaching.datasets.scores.registry import trained_score

    plain = trained_score("ensemble", {"ensemble_size": 3, "ensemble_batches": 10})
    assert plain.settings() == {"ensemble_size": 3, "ensemble_batches": 10}  # the fingerprints of earlier sweeps
    fast = trained_score("ensemble", {"ensemble_size": 3, "ensemble_batches": 10, "ensemble_fit": "batched"})
    assert fast.settings() == {"ensemble_size": 3, "ensemble_batches": 10, "ensemble_fit": "batched"}
    assert fast.teacher(2).fit == "batched" and fast.describe()["fit"] == "batched"


def test_members_of_another_learner_kind_train_one_after_another(tmp_path):
    pytest.importorskip("diffusers")
    rng = np.random.default_rng(0)
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    demos = []
    for i in range(6):
        obs = rng.normal(size=(9, 3)).astype(np.float32)
        acts = np.clip(obs[:-1, :2] * 0.5 + (rng.normal(size=(8, 2)) if i % 3 == 0 else 0.0), -1, 1)
        demos.append(Trajectory(obs=obs, acts=acts.astype(np.float32), infos=None, terminal=True))
    said = []
    teacher = EnsembleTeacher(size=2, batches=5, batch_size=16, fit="batched")
    scores = teacher.scores(demos, LearnerFactory("diffusion", obs_space, box), say=said.append)
    assert scores.difficulty.shape == (6,) and np.isfinite(scores.log_likelihood).all()
    assert any("one after another (the learner is not BC on an SB3 policy)" in line for line in said)


def test_members_that_read_windows_are_scored_on_each_steps_window():
    rng = np.random.default_rng(1)
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    demos = [Trajectory(obs=rng.normal(size=(7, 3)).astype(np.float32),
                        acts=rng.uniform(-1, 1, size=(6, 2)).astype(np.float32), infos=None, terminal=True)
             for _ in range(4)]
    scores = EnsembleTeacher(size=2, batches=3, batch_size=8).scores(demos, LearnerFactory("bc-rnn", obs_space, box))
    assert scores.log_likelihood.shape == (2, 4) and np.isfinite(scores.log_likelihood).all()

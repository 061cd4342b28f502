"""The scores that need no environment beside the ensemble (issue 53): ``deminf`` and CUPID's offline baselines
``policy-loss``, ``action-likelihood``, ``action-variance``. Their formulas by hand on a learner whose outputs the
test controls, the one policy shared between them, their caches, determinism, and that they rank the noisy
demonstrations of the reaching fixture last."""

from __future__ import annotations

import types

import numpy as np
import pytest
from gymnasium import spaces

pytest.importorskip("imitation")

from imitation.data.types import Trajectory  # noqa: E402

from curteach_teaching.datasets.scores import fitted_policy  # noqa: E402
from curteach_teaching.datasets.scores.action_likelihood import ActionLikelihoodScore  # noqa: E402
from curteach_teaching.datasets.scores.action_variance import ActionVarianceScore  # noqa: E402
from curteach_teaching.datasets.scores.deminf import DemInfScore, flat_steps  # noqa: E402
from curteach_teaching.datasets.scores.fitted_policy import kde_log_density, sample_statistics  # noqa: E402
from curteach_teaching.datasets.scores.policy_loss import PolicyLossScore  # noqa: E402
from curteach_teaching.datasets.scores.registry import TASK_SCORES, trained_names, trained_score  # noqa: E402


class Controlled:
    """A learner whose outputs the test knows: it learns nothing, ``log pi(a_t | s_t) = -s_t[0]`` and its k-th call
    of ``act`` gives ``s_t[0] + (-1)^k s_t[1]`` (two samples: ``s0 +- s1``, variance ``s1^2`` exactly)."""

    observation_space = spaces.Box(-10, 10, (2,), np.float32)
    action_space = spaces.Box(-10, 10, (1,), np.float32)
    built = 0

    def __init__(self):
        self.calls = 0
        Controlled.built += 1

    def train_step(self, obs, acts, weights):
        return 0.0

    def log_likelihood(self, obs, acts):
        return -np.asarray(obs, dtype=np.float64)[:, 0]

    def diverged(self):
        return False

    def act(self, obs, streams=None):
        obs = np.asarray(obs, dtype=np.float64)
        sign = 1.0 if self.calls % 2 == 0 else -1.0
        self.calls += 1
        return (obs[:, 0] + sign * obs[:, 1])[:, None]


def _factory(seed, *, rng=None, batch_size=64, learning_rate=1e-3):
    return Controlled()


_factory.action_space = Controlled.action_space


def _data(rows):
    """Trajectories of ``rows``: a list of ``(obs (L, 2), acts (L,))`` (the final observation repeats the last)."""
    trajectories = [Trajectory(obs=np.vstack([o, o[-1:]]).astype(np.float32), acts=np.asarray(a, dtype=np.float32)
                               .reshape(-1, 1), infos=None, terminal=True) for o, a in rows]
    return types.SimpleNamespace(trajectories=tuple(trajectories))


ROWS = [(np.array([[0.5, 1.0], [1.5, 2.0]]), [0.0, 1.0]),
        (np.array([[2.0, 0.5], [3.0, 0.5], [4.0, 1.0]]), [2.5, 2.0, 4.0])]


@pytest.fixture(autouse=True)
def _forget_policies():
    fitted_policy._TRAINED.clear()
    yield
    fitted_policy._TRAINED.clear()


def _gauss(x, mean, h):
    return np.exp(-0.5 * ((x - mean) / h) ** 2) / np.sqrt(2 * np.pi * h**2)


def test_formulas_by_hand_and_one_policy_for_three_scores(tmp_path):
    data = _data(ROWS)
    options = {"policy_steps": 2, "action_samples": 2, "likelihood_bandwidth": 0.5, "batch_size": 2}
    Controlled.built = 0
    loss = trained_score("policy-loss", options).fit(data, _factory, cache=tmp_path, label="x")
    likelihood = trained_score("action-likelihood", options).fit(data, _factory, cache=tmp_path, label="x")
    variance = trained_score("action-variance", options).fit(data, _factory, cache=tmp_path, label="x")
    assert Controlled.built == 1  # one policy, read by all three
    # policy-loss: minus the mean log-likelihood, -(-s0) averaged per demonstration
    np.testing.assert_allclose(loss, [(0.5 + 1.5) / 2, (2.0 + 3.0 + 4.0) / 3])
    # action-variance: minus the mean variance of {s0 + s1, s0 - s1}, which is s1^2
    np.testing.assert_allclose(variance, [-(1.0 + 4.0) / 2, -(0.25 + 0.25 + 1.0) / 3])
    # action-likelihood: minus the mean log of the kernel estimate on the two samples at the demonstrated action
    per_step = [np.log(0.5 * _gauss(a, s0 + s1, 0.5) + 0.5 * _gauss(a, s0 - s1, 0.5))
                for obs, acts in ROWS for (s0, s1), a in zip(obs, acts, strict=True)]
    np.testing.assert_allclose(likelihood, [-np.mean(per_step[:2]), -np.mean(per_step[2:])], rtol=1e-12)
    # policy-loss and action-likelihood read the same policy differently: they are not the same numbers
    assert not np.allclose(loss, likelihood)
    # read back from the cache without a policy: nothing is trained, the same values
    fitted_policy._TRAINED.clear()
    assert len(list(tmp_path.glob("policy-*.npz"))) == 3  # the log-likelihoods, the spread, the log-density
    again = trained_score("action-likelihood", options).fit(data, _factory, cache=tmp_path, label="x")
    assert Controlled.built == 1 and np.array_equal(again, likelihood)
    # a damaged file is said and computed again
    for path in tmp_path.glob("policy-*.npz"):
        path.write_bytes(b"not a zip")
    said = []
    assert np.array_equal(trained_score("policy-loss", options).fit(data, _factory, cache=tmp_path, label="x",
                                                                    say=said.append), loss)
    assert any("damaged" in line for line in said) and Controlled.built == 2


def test_sample_statistics_of_discrete_actions():
    # 4 samples at 2 states over 3 actions: counts [3, 1, 0] and [1, 1, 2]; the demonstrated actions 1 and 2
    samples = np.array([[0, 0], [0, 1], [1, 2], [0, 2]])
    spread, log_density = sample_statistics(samples, np.array([1, 2]), spaces.Discrete(3), 1.0)
    np.testing.assert_allclose(spread, [1 - 3 / 4, 1 - 2 / 4])
    np.testing.assert_allclose(log_density, np.log([(1 + 1) / (4 + 3), (2 + 1) / (4 + 3)]))
    # a continuous case of two dimensions: the kernel is the product of the dimensions'
    x = np.array([[[0.0, 1.0]], [[1.0, -1.0]]])
    target = np.array([[0.5, 0.0]])
    expected = np.log(0.5 * _gauss(0.5, 0.0, 2.0) * _gauss(0.0, 1.0, 2.0) + 0.5 * _gauss(0.5, 1.0, 2.0)
                      * _gauss(0.0, -1.0, 2.0))
    np.testing.assert_allclose(kde_log_density(x, target, 2.0), [expected])


def test_deminf_score_is_the_estimator_on_the_flat_steps_and_caches(tmp_path):
    from curteach_teaching.datasets.deminf import deminf_scores

    rng = np.random.default_rng(0)
    rows = [(rng.normal(size=(n, 2)), rng.normal(size=n)) for n in (12, 9, 15, 10)]
    data = _data(rows)
    obs, acts, episodes = flat_steps(data.trajectories)
    assert obs.shape == (46, 2) and acts.shape == (46, 1) and episodes.tolist() == sum(
        ([i] * n for i, n in enumerate((12, 9, 15, 10))), [])
    score = trained_score("deminf", {"deminf_k": 3, "deminf_state_latent": 2, "deminf_action_latent": 1})
    values = score.fit(data, None, seed=1, cache=tmp_path, label="x")
    np.testing.assert_array_equal(values, deminf_scores(obs, acts, episodes, k=3, state_latent=2, action_latent=1,
                                                        seed=1))
    assert score.settings() == {"deminf_k": 3, "deminf_encoder": "pca", "deminf_state_latent": 2,
                                "deminf_action_latent": 1, "deminf_vae_steps": 2000}
    (path,) = tmp_path.glob("deminf-*.npz")
    said = []
    assert np.array_equal(score.fit(data, None, seed=1, cache=tmp_path, label="x", say=said.append), values)
    assert said[-1] == "deminf ready (read from the cache)"
    path.write_bytes(path.read_bytes()[:20])
    said.clear()
    assert np.array_equal(score.fit(data, None, seed=1, cache=tmp_path, label="x", say=said.append), values)
    assert any("damaged" in line for line in said)
    assert len(list(tmp_path.glob("deminf-*.npz"))) == 1
    score.fit(data, None, seed=1, cache=tmp_path, label="other")  # the label keys the cache
    assert len(list(tmp_path.glob("deminf-*.npz"))) == 2


@pytest.mark.parametrize(("options", "message"), [
    ({"deminf_k": 0}, "deminf_k must be"), ({"deminf_encoder": "umap"}, "deminf_encoder must be one of vae, pca"),
    ({"policy_steps": 0}, "policy_steps must be"), ({"action_samples": 1}, "action_samples must be"),
    ({"likelihood_bandwidth": 0.0}, "likelihood_bandwidth must be a finite number > 0")])
def test_bad_options_are_refused_when_built(options, message):
    names = {"deminf_k": "deminf", "deminf_encoder": "deminf", "policy_steps": "policy-loss",
             "action_samples": "action-variance", "likelihood_bandwidth": "action-likelihood"}
    with pytest.raises(ValueError, match=message):
        trained_score(names[next(iter(options))], options)


def test_registered_with_their_options():
    assert trained_names() == ("ensemble", "deminf", "policy-loss", "action-likelihood", "action-variance",
                               "demo-score", "cupid")
    assert TASK_SCORES.load("policy-loss")[1] is PolicyLossScore
    assert [o.name for o in ActionLikelihoodScore.options] == ["policy_steps", "action_samples",
                                                               "likelihood_bandwidth"]
    assert [o.name for o in ActionVarianceScore.options] == ["policy_steps", "action_samples"]
    assert DemInfScore.options[0].name == "deminf_k"
    # policy_steps: the caller's max_batches where not given, as the ensemble's batches
    assert trained_score("policy-loss", {"max_batches": 40}).policy.steps == 40
    assert trained_score("policy-loss", {}).policy.steps == fitted_policy.DEFAULT_STEPS


def _auroc(scores, bad):
    """The probability that a bad demonstration scores above a good one (ties count half)."""
    bad_scores, good_scores = scores[bad][:, None], scores[~bad][None, :]
    return float(((bad_scores > good_scores) + 0.5 * (bad_scores == good_scores)).mean())


def test_noisy_demonstrations_score_worse_and_deterministically(robot_files, tmp_path):
    from curteach_teaching.datasets import read_robomimic
    from curteach_teaching.datasets.prepare import learner_factory, prepare

    episodes = robot_files.reaching_episodes(30, seed=0)
    pool = read_robomimic(robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes), ["object", "robot0_eef_pos"])
    data = prepare(pool, ["policy-loss"], policy="auto")
    learner = learner_factory("auto", data)
    worse = np.array([ep["quality"] == "worse" for ep in episodes])
    options = {"policy_steps": 300, "action_samples": 4}
    loss = trained_score("policy-loss", options).fit(data, learner, seed=0)
    deminf = trained_score("deminf", options).fit(data, learner, seed=0)
    assert _auroc(loss, worse) > 0.8 and _auroc(deminf, worse) > 0.8, (_auroc(loss, worse), _auroc(deminf, worse))
    fitted_policy._TRAINED.clear()  # trained again from nothing: the same numbers
    assert np.array_equal(trained_score("policy-loss", options).fit(data, learner, seed=0), loss)
    variance = trained_score("action-variance", options).fit(data, learner, seed=0)
    fitted_policy._TRAINED.clear()
    assert np.array_equal(trained_score("action-variance", options).fit(data, learner, seed=0), variance)
    assert np.array_equal(trained_score("deminf", options).fit(data, learner, seed=0), deminf)

"""The fitted-policy scores (``policy-loss``, ``action-likelihood``, ``action-variance``) through ``curteach rank``
with ``--policy bc-rnn``, a learner that reads windows of observations (each step's own window within its
demonstration), and with ``--policy diffusion``; and the fitted policy's per-step outputs against the learner's own
windowed scoring and sampling."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("h5py")
pytest.importorskip("imitation")
pytest.importorskip("torch")

from curteach_teaching.cli import main  # noqa: E402

KEYS = "object,robot0_eef_pos"
TINY = ["--policy-steps", "3", "--action-samples", "2", "--no-progress"]
SMALL = {"bc-rnn": ["--rnn-hidden", "8", "--rnn-layers", "1", "--rnn-window", "4"],
         "diffusion": ["--denoiser-width", "16", "--denoiser-depth", "1", "--ddim-steps", "2"]}


def _scores(out):
    return [float(row["score"]) for row in csv.DictReader(open(out / "scores.csv"))]


@pytest.mark.parametrize("policy", ["bc-rnn", "diffusion"])
@pytest.mark.parametrize("score", ["policy-loss", "action-likelihood", "action-variance"])
def test_rank_with_a_windowed_and_a_diffusion_policy(score, policy, robot_files, tmp_path):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(6, seed=5))
    out = tmp_path / "out"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", score, "--policy", policy,
                 *SMALL[policy], "--keep", "0.5", *TINY, "--out", str(out)]) == 0
    scores = _scores(out)
    assert len(scores) == 6 and np.isfinite(scores).all() and len(set(scores)) > 1
    assert json.loads((out / "rank.json").read_text())[score]["policy"] == policy


def test_the_fitted_bc_rnn_scores_and_samples_each_steps_window(robot_files, tmp_path):
    from curteach_teaching.datasets import read_robomimic
    from curteach_teaching.datasets.scores.fitted_policy import FittedPolicy, sample_statistics
    from curteach_teaching.datasets.scores.policy_samples import SAMPLE_TAG
    from curteach_teaching.learners.bc_rnn import BCRNNLearner
    from curteach_teaching.learners.windows import episode_windows, windowed

    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", robot_files.reaching_episodes(3, seed=2))
    pool = read_robomimic(path, KEYS.split(","))
    demonstrations, act_space = list(pool.trajectories), pool.action_space

    def learner(seed, **kwargs):
        return BCRNNLearner(pool.observation_space, act_space, seed=seed, hidden_size=8, layers=1, window=3,
                            **kwargs)

    fitted = FittedPolicy(steps=2, batch_size=8, samples=3)
    outputs = fitted.outputs(demonstrations, learner, seed=1, names=("log_likelihood", "spread", "log_density"))
    policy = fitted.train(demonstrations, learner, 1)  # seeded: the same weights again
    obs = np.concatenate([d.obs[:-1] for d in demonstrations])
    acts = np.concatenate([d.acts for d in demonstrations])
    lengths = [len(d.acts) for d in demonstrations]
    windows = windowed(obs, episode_windows(lengths, 3))
    # step t's score is its own window's, not the bare observation's
    np.testing.assert_allclose(outputs["log_likelihood"], policy.log_likelihood(windows, acts), rtol=1e-6)
    streams = [np.random.default_rng(np.random.SeedSequence([1, SAMPLE_TAG, t])) for t in range(len(acts))]
    samples = np.stack([policy.act(windows, streams) for _ in range(3)])
    spread, density = sample_statistics(samples, acts, act_space, 1.0)
    np.testing.assert_allclose(outputs["spread"], spread, rtol=1e-6)
    np.testing.assert_allclose(outputs["log_density"], density, rtol=1e-6)

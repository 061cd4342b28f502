"""benchmarks/learners.py's bare loops compute the learners' own losses (so its ratios compare the same arithmetic),
its windows are the adapter's, and a bad flag is refused before any work (the timings themselves are run by hand:
``python benchmarks/learners.py --quick``)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as th

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import learners
    finally:
        sys.path.pop(0)
    return learners


@pytest.fixture(scope="module")
def batch(bench):
    pool = bench.make_pool(3, 40, seed=5)
    obs, acts, windows = bench.pool_tensors(pool)
    return pool, obs, acts, windows


def test_the_windows_are_the_adapters(bench, batch):
    from curteach_teaching.learners.windows import episode_windows

    pool, obs, _, windows = batch
    assert windows.shape == (120, 10)
    np.testing.assert_array_equal(windows.numpy(), episode_windows([40, 40, 40], 10))
    assert windows[41].tolist() == [40] * 9 + [41]  # the second demonstration's first step repeated
    np.testing.assert_array_equal(obs[45].numpy(), pool[1].obs[5].astype(np.float32))


def test_the_gaussian_loss_is_bcs(bench, batch):
    _, obs, acts, _ = batch
    learner = bench.build_learner("mlp-256")
    expected = learner.bc_trainer.loss_calculator(learner.policy, obs, acts).loss
    assert bench.gaussian_bc_loss(learner.policy, obs, acts).item() == pytest.approx(expected.item(), rel=1e-6)


def test_the_epsilon_loss_is_the_diffusion_learners(bench, batch):
    _, obs, acts, _ = batch
    learner = bench.build_learner("diffusion")
    generator = th.Generator().manual_seed(3)
    timesteps = th.randint(learner.train_timesteps, (len(acts),), generator=generator)
    noise = th.randn((len(acts), 4), generator=generator)
    expected = learner._per_step_loss(obs, acts, timesteps, noise).mean()  # actions in [-1, 1]: normalised as they are
    got = bench.epsilon_loss(learner.denoiser, learner.noise_scheduler, obs, acts, timesteps, noise)
    assert got.item() == pytest.approx(expected.item(), rel=1e-6)


def test_the_mixture_nll_is_the_bc_rnn_learners(bench, batch):
    _, obs, acts, windows = batch
    learner = bench.build_learner("bc-rnn")
    net = learner.network
    expected = -learner._step_log_density(obs[windows].numpy(), acts.numpy()).mean()
    got = bench.mixture_nll(net.lstm, (net.logits, net.means, net.stds), obs[windows], acts, learner.min_std)
    assert got.item() == pytest.approx(expected.item(), rel=1e-5)


def test_the_mixture_nll_by_hand(bench):
    """Heads of zeros: K equal weights, every mean tanh(0) = 0, every deviation softplus(0) + min_std = log 2 +
    min_std, so the mixture is one Gaussian N(0, s^2) per dimension whatever the LSTM says."""
    lstm = th.nn.LSTM(3, 5, batch_first=True)
    heads = th.nn.Linear(5, 2), th.nn.Linear(5, 2 * 4), th.nn.Linear(5, 2 * 4)
    with th.no_grad():
        for head in heads:
            head.weight.zero_()
            head.bias.zero_()
    acts = th.tensor([[0.5, -0.5, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    s = math.log(2) + 0.01
    per_row = [sum(0.5 * (a / s) ** 2 + math.log(s) + 0.5 * math.log(2 * math.pi) for a in row)
               for row in acts.tolist()]
    got = bench.mixture_nll(lstm, heads, th.randn(2, 10, 3, generator=th.Generator().manual_seed(0)), acts, 0.01)
    assert got.item() == pytest.approx(sum(per_row) / 2, rel=1e-6)


def test_a_task_outside_mt10_is_refused_before_any_work():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "learners.py"), "--task", "nope"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert "--task must be one of MT10's" in done.stderr

"""The bc-rnn learner (curteach_teaching.learners.bc_rnn): the mixture's log-density against a hand computation, the
normalisation's Jacobian, windows in and actions out, greedy and sampled acting, determinism, divergence and the
spaces it refuses."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from curteach_teaching.learners.bc_rnn import BCRNNLearner, mixture_log_density  # noqa: E402
from curteach_teaching.learners.dataset_learner import DatasetLearner, check_learner, learner_kind  # noqa: E402
from curteach_teaching.learners.windows import learner_sequences, learner_window  # noqa: E402

OBS = gym.spaces.Box(-8.0, 8.0, (3,), np.float32)
ACTS = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)


def small(seed=0, **options):
    return BCRNNLearner(OBS, ACTS, seed=seed, hidden_size=16, window=4, **options)


def windows(n=6, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 4, 3)).astype(np.float32)


def actions(n=6, seed=1):
    return np.random.default_rng(seed).uniform(-2, 2, size=(n, 2))


def test_the_mixtures_log_density_by_hand():
    logits = torch.tensor([[0.3, -1.2]])
    means = torch.tensor([[[0.1, -0.4], [0.5, 0.9]]])
    stds = torch.tensor([[[0.7, 1.3], [0.2, 0.5]]])
    a = torch.tensor([[0.2, 0.3]])
    weights = [math.exp(0.3) / (math.exp(0.3) + math.exp(-1.2)), math.exp(-1.2) / (math.exp(0.3) + math.exp(-1.2))]
    density = 0.0
    for k in range(2):
        product = 1.0
        for d in range(2):
            mu, sigma, x = float(means[0, k, d]), float(stds[0, k, d]), float(a[0, d])
            product *= math.exp(-0.5 * ((x - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
        density += weights[k] * product
    assert float(mixture_log_density(logits, means, stds, a)[0]) == pytest.approx(math.log(density), rel=1e-5)


def test_the_log_likelihood_is_of_the_action_itself_the_jacobian_added():
    learner = small()
    obs, acts = windows(), actions()
    with torch.no_grad():
        logits, means, stds = learner.mixture(obs)
        normalised = torch.as_tensor(acts / 2.0, dtype=torch.float32)  # the Box [-2, 2]: centre 0, scale 2
        expected = mixture_log_density(logits, means, stds, normalised).double().numpy() - 2 * math.log(2.0)
    np.testing.assert_allclose(learner.log_likelihood(obs, acts), expected, rtol=1e-6)
    # tanh keeps every mean inside the bounds; softplus + min_std keeps every deviation above the floor
    assert float(means.abs().max()) < 1.0 and float(stds.min()) >= 0.1


def test_it_is_a_learner_kind_with_a_window_and_reads_only_windows():
    assert learner_kind("bc-rnn") == ("bc-rnn", BCRNNLearner)
    learner = BCRNNLearner(OBS, ACTS, seed=0, hidden_size=8)
    assert isinstance(learner, DatasetLearner) and learner_window(learner) == 10  # robomimic's rnn.horizon
    with pytest.raises(ValueError, match=r"bc-rnn reads windows \(B, 10, 3\) of observations; got \(5, 3\)"):
        learner.act(np.zeros((5, 3), np.float32))


def test_one_seed_gives_the_same_numbers_and_leaves_the_global_generator_alone():
    state = torch.random.get_rng_state()
    first, second, other = small(seed=3), small(seed=3), small(seed=4)
    assert torch.equal(state, torch.random.get_rng_state())
    obs, acts = windows(), actions()
    losses = [float(learner.train_step(obs, acts, None)) for learner in (first, second, other)]
    assert losses[0] == losses[1] != losses[2]
    np.testing.assert_array_equal(first.log_likelihood(obs, acts), second.log_likelihood(obs, acts))
    np.testing.assert_array_equal(first.act(obs), second.act(obs))
    np.testing.assert_array_equal(first.act(obs), first.act(obs))  # greedy: no draw


def test_greedy_is_the_mean_of_the_most_probable_component():
    learner = small()
    obs = windows()
    with torch.no_grad():
        logits, means, _ = learner.mixture(obs)
    best = logits.argmax(dim=1)
    expected = means[torch.arange(len(obs)), best].double().numpy() * 2.0
    np.testing.assert_allclose(learner.act(obs), expected, rtol=1e-6)


def test_a_rows_sampled_action_comes_from_its_own_stream_by_the_inverse_cdf():
    learner = small()
    obs = windows()
    streams = [np.random.default_rng(100 + b) for b in range(6)]
    batched = learner.act(obs, streams)
    alone = learner.act(obs[2:3], [np.random.default_rng(102)])
    np.testing.assert_allclose(batched[2], alone[0], rtol=1e-6)
    with torch.no_grad():
        logits, means, stds = learner.mixture(obs[2:3])
    stream = np.random.default_rng(102)
    u, z = stream.random(), stream.standard_normal(2)
    cumulative = np.cumsum(torch.softmax(logits.double(), 1).numpy()[0])
    k = int(np.searchsorted(cumulative, u * cumulative[-1], side="right"))
    expected = (means[0, k].double().numpy() + stds[0, k].double().numpy() * z) * 2.0
    np.testing.assert_allclose(alone[0], expected, rtol=1e-6)


def test_weights_weigh_each_windows_loss():
    obs, acts = windows(), actions()
    weighted, plain = small(), small()
    weights = np.array([2.0, 0.0, 1.0, 1.0, 0.0, 2.0])
    loss = float(weighted.train_step(obs, acts, weights))
    nll = -plain.log_likelihood(obs, acts)
    assert loss == pytest.approx(float((weights * nll).mean()), rel=1e-5)


def test_a_diverged_learner_scores_nan():
    learner = small()
    with torch.no_grad():
        next(learner.network.parameters()).fill_(float("nan"))
    assert learner.diverged()
    assert np.isnan(learner.log_likelihood(windows(), actions())).all()


@pytest.mark.parametrize(("observation_space", "action_space", "message"), [
    (gym.spaces.Box(0, 255, (8, 8, 3), np.uint8), ACTS, "bc-rnn takes vector observations; got Box(0, 255, (8, 8, 3)"),
    (gym.spaces.Dict({"state": OBS}), ACTS, "bc-rnn takes vector observations; got Dict("),
    (OBS, gym.spaces.Discrete(3), "bc-rnn learns continuous (1-D Box) actions; got Discrete(3)"),
])
def test_check_refuses_what_it_cannot_learn_in_one_line(observation_space, action_space, message):
    with pytest.raises(ValueError) as error:
        check_learner("bc-rnn", observation_space, action_space)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_one_component_is_the_gaussian_nll_by_hand():
    means, stds = torch.tensor([[[0.3, -0.5]]]), torch.tensor([[[0.4, 1.5]]])
    a = torch.tensor([[-0.1, 0.7]])
    by_hand = sum(-0.5 * ((x - m) / s) ** 2 - math.log(s * math.sqrt(2 * math.pi))
                  for x, m, s in ((-0.1, 0.3, 0.4), (0.7, -0.5, 1.5)))
    for logit in (0.0, 5.0):  # one component's weight is 1 whatever its logit
        assert float(mixture_log_density(torch.tensor([[logit]]), means, stds, a)[0]) == pytest.approx(by_hand,
                                                                                                       rel=1e-6)


def test_the_sequence_loss_is_every_steps_nll_from_a_zero_state():
    learner, check = small(), small()
    assert learner.loss == "sequence" and learner_sequences(learner)
    assert not learner_sequences(small(loss="last"))
    obs = windows()
    acts = np.random.default_rng(2).uniform(-2, 2, size=(6, 4, 2))
    weights = np.random.default_rng(3).uniform(0, 2, size=(6, 4))
    # step j of a window by hand: the LSTM over the window's first j + 1 observations from a zero state, its last
    # output through the heads, the log-density of step j's normalised action minus the Jacobian (2 dims x log 2)
    nll = np.empty((6, 4))
    with torch.no_grad():
        for j in range(4):
            out = check.network.lstm(torch.as_tensor(obs[:, :j + 1]))[0][:, -1]
            logits, means, stds = check._squashed(*check.network.heads(out))
            normalised = torch.as_tensor(acts[:, j] / 2.0, dtype=torch.float32)
            nll[:, j] = -(mixture_log_density(logits, means, stds, normalised).double().numpy() - 2 * math.log(2.0))
    # the last step of the sequence is the per-step score of the whole window
    np.testing.assert_allclose(-nll[:, -1], check.log_likelihood(obs, acts[:, -1]), rtol=1e-5)
    assert float(learner.train_step(obs, acts, weights)) == pytest.approx(float((weights * nll).mean()), rel=1e-5)
    assert float(small().train_step(obs, acts, None)) == pytest.approx(float(nll.mean()), rel=1e-5)
    with pytest.raises(ValueError, match=r"one per step of the loss \(6, 4\); got \(6,\)"):
        small().train_step(obs, acts, np.ones(6))
    with pytest.raises(ValueError, match="bc-rnn's loss is on one of sequence, last"):
        small(loss="all")

"""The diffusion learner: its DDPM loss by hand, a bimodal fit a Gaussian cannot make, determinism, per-episode
streams, its per-step score, weights and the spaces it refuses."""

from __future__ import annotations

import socket

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

from curteach_teaching.learners.diffusion import DiffusionLearner  # noqa: E402

VECTORS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
TORQUE = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
SMALL = dict(hidden_sizes=(32, 32), train_timesteps=20, ddim_steps=5, score_draws=4)


def _learner(seed=0, action_space=TORQUE, learning_rate=1e-3, **options):
    return DiffusionLearner(VECTORS, action_space, seed=seed, device="cpu", batch_size=8,
                            learning_rate=learning_rate, rng=np.random.default_rng(0), **{**SMALL, **options})


def _steps(n, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 3)).astype(np.float32), rng.uniform(-2, 2, (n, 1)).astype(np.float32))


def test_the_ddpm_loss_by_hand():
    learner = _learner()
    obs, acts = _steps(3)
    before = [p.detach().clone() for p in learner.denoiser.parameters()]
    generator = torch.Generator().manual_seed(learner._training_generator.initial_seed())
    loss = learner.train_step(obs, acts, None)
    # the same draws, row by row: a timestep's uniform, then the uniforms of Box-Muller's two factors
    u = torch.rand((3, 3), dtype=torch.float64, generator=generator)
    t = (u[:, 0] * 20).long()
    eps = (torch.sqrt(-2 * torch.log(1 - u[:, 1:2])) * torch.cos(2 * np.pi * u[:, 2:3])).float()
    abar = learner.noise_scheduler.alphas_cumprod[t].float()[:, None]
    clean = torch.as_tensor(acts) / 2.0  # Box(-2, 2) normalised to [-1, 1]
    noisy = torch.sqrt(abar) * clean + torch.sqrt(1 - abar) * eps
    for p, q in zip(learner.denoiser.parameters(), before, strict=True):
        p.data.copy_(q)  # the loss of the weights before the step
    with torch.no_grad():
        predicted = learner.denoiser(noisy, t, torch.as_tensor(obs))
    assert float(loss) == pytest.approx(float(((predicted - eps) ** 2).mean()), rel=1e-5)


def test_it_fits_two_modes_a_gaussian_averages():
    """Actions -1 and +1 for the same state: the best Gaussian is N(0, 1), whose mean 0 is neither mode and whose
    draws lie a median 0.52 from the nearer mode; the diffusion learner's draws land near both modes."""
    learner = _learner(seed=3, learning_rate=3e-3, hidden_sizes=(128, 128), train_timesteps=100, ddim_steps=10)
    obs = np.zeros((256, 3), np.float32)
    acts = np.tile([[-1.0], [1.0]], (128, 1)).astype(np.float32)
    rng = np.random.default_rng(0)
    for _ in range(1000):
        batch = rng.integers(0, 256, 256)
        learner.train_step(obs[batch], acts[batch], None)
    drawn = learner.act(obs[:200], [np.random.default_rng(i) for i in range(200)])[:, 0]
    distance = np.minimum(np.abs(drawn - 1), np.abs(drawn + 1))
    assert np.median(distance) < 0.35
    assert (drawn > 0.5).mean() > 0.25 and (drawn < -0.5).mean() > 0.25
    gaussian_draws = np.random.default_rng(1).normal(size=100_000)
    assert np.median(np.minimum(np.abs(gaussian_draws - 1), np.abs(gaussian_draws + 1))) > 0.5


def test_one_seed_gives_the_same_numbers_and_greedy_is_deterministic():
    obs, acts = _steps(16)
    a, b = _learner(seed=5), _learner(seed=5)
    for learner in (a, b):
        for _ in range(3):
            learner.train_step(obs, acts, None)
    for p, q in zip(a.denoiser.parameters(), b.denoiser.parameters(), strict=True):
        assert torch.equal(p, q)
    assert np.array_equal(a.act(obs), b.act(obs))
    assert np.array_equal(a.act(obs), a.act(obs))
    assert not np.array_equal(a.act(obs), _learner(seed=6).act(obs))
    # building a learner draws nothing from torch's global generator
    state = torch.get_rng_state()
    _learner(seed=7).train_step(obs, acts, None)
    assert torch.equal(state, torch.get_rng_state())


def test_an_episodes_sampled_actions_do_not_depend_on_its_neighbours():
    learner = _learner(seed=2)
    obs, _ = _steps(5)
    together = learner.act(obs, [np.random.default_rng(10 + i) for i in range(5)])
    for i in range(5):
        alone = learner.act(obs[i:i + 1], [np.random.default_rng(10 + i)])
        np.testing.assert_allclose(alone[0], together[i], rtol=0, atol=1e-5)
    assert np.all(np.abs(together) <= 2.0)  # clipped to the Box
    assert not np.allclose(together[0], learner.act(obs[:1], [np.random.default_rng(99)])[0])


def test_the_score_is_deterministic_per_step_and_prefers_the_data():
    learner = _learner(seed=4, learning_rate=3e-3)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(64, 3)).astype(np.float32)
    acts = np.clip(obs[:, :1], -1, 1)  # the action is the first coordinate
    for _ in range(200):
        learner.train_step(obs, acts, None)
    scores = learner.log_likelihood(obs, acts)
    assert scores.dtype == np.float64 and scores.shape == (64,)
    assert np.array_equal(scores, learner.log_likelihood(obs, acts))
    alone = np.concatenate([learner.log_likelihood(obs[i:i + 1], acts[i:i + 1]) for i in range(4)])
    np.testing.assert_allclose(alone, scores[:4], rtol=1e-5)  # the same pairs whatever the batch
    # the chunk a step is scored in changes only the float rounding of a batched product
    np.testing.assert_allclose(learner.log_likelihood(obs, acts, chunk_size=7), scores, rtol=1e-5)
    off = np.clip(acts + 1.5, -2, 2) * np.where(acts > 0.25, -1, 1)  # far from the demonstrated action
    assert scores.mean() > learner.log_likelihood(obs, off).mean() + 0.05


def test_weights_that_average_one_train_on_the_weighted_steps_alone():
    obs, acts = _steps(2)
    weighted, alone = _learner(seed=8), _learner(seed=8)
    loss = weighted.train_step(obs, acts, np.array([2.0, 0.0]))
    assert float(loss) == pytest.approx(float(alone.train_step(obs[:1], acts[:1], None)), rel=1e-6)
    for p, q in zip(weighted.denoiser.parameters(), alone.denoiser.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
    plain, ones = _learner(seed=8), _learner(seed=8)
    assert float(plain.train_step(obs, acts, None)) == pytest.approx(float(ones.train_step(obs, acts, np.ones(2))))


def test_a_diverged_learner_scores_nan():
    learner = _learner()
    obs, acts = _steps(4)
    with torch.no_grad():
        next(learner.denoiser.parameters()).fill_(float("nan"))
    assert learner.diverged()
    assert np.isnan(learner.log_likelihood(obs, acts)).all()


def test_unbounded_actions_are_standardised_by_the_first_batch():
    unbounded = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    learner = _learner(action_space=unbounded)
    acts = np.array([[10.0], [14.0]], np.float32)
    learner.train_step(_steps(2)[0], acts, None)
    assert learner._center.tolist() == [12.0] and learner._scale.tolist() == [2.0]
    learner.train_step(_steps(2)[0], acts * 3, None)
    assert learner._center.tolist() == [12.0]  # fixed after the first batch
    assert np.isfinite(learner.act(_steps(3)[0])).all()


@pytest.mark.parametrize(("observation_space", "action_space", "message"), [
    (VECTORS, gym.spaces.Discrete(4), "diffusion needs Box actions; got Discrete(4)"),
    (VECTORS, gym.spaces.MultiDiscrete([2, 3]), "diffusion needs Box actions; got MultiDiscrete([2 3])"),
    (gym.spaces.Box(0, 255, (8, 8, 3), np.uint8), TORQUE, "diffusion needs vector (1-D Box) observations; got"),
    (gym.spaces.Dict({"x": VECTORS}), TORQUE, "diffusion needs vector (1-D Box) observations; got Dict"),
])
def test_check_refuses_what_it_cannot_learn_in_one_line(observation_space, action_space, message):
    with pytest.raises(ValueError) as raised:
        DiffusionLearner.check(observation_space, action_space)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)
    DiffusionLearner.check(VECTORS, TORQUE)


def test_building_and_acting_opens_no_connection(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the diffusion learner opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    learner = _learner()
    obs, acts = _steps(4)
    learner.train_step(obs, acts, None)
    learner.act(obs)

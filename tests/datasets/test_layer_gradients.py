"""Per-sample gradients from linear layers' inputs and output gradients: the hand formula of a linear-Gaussian
policy, the learners' own networks (BC's SB3 MLP with its log_std, diffusion's denoiser run once per noise pair)
against their full per-sample gradients, and the refusals that send CUPID to the dense projection."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from curteach_teaching.datasets.influence import per_sample_gradients  # noqa: E402
from curteach_teaching.datasets.kronecker_projection import KroneckerProjection  # noqa: E402
from curteach_teaching.datasets.layer_gradients import (  # noqa: E402
    REST_LIMIT,
    kronecker_gradients,
    linear_layers,
)
from curteach_teaching.learners.step_loss import StepLoss, step_loss  # noqa: E402


class _Gaussian(torch.nn.Module):
    """``pi(a | s) = N(W s + b, exp(log_std)^2)`` in float64, its loss ``-log pi`` up to a constant."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray, log_std: np.ndarray):
        super().__init__()
        self.mean = torch.nn.Linear(weight.shape[1], weight.shape[0]).double()
        with torch.no_grad():
            self.mean.weight.copy_(torch.as_tensor(weight))
            self.mean.bias.copy_(torch.as_tensor(bias))
        self.log_std = torch.nn.Parameter(torch.as_tensor(log_std))

    def step(self) -> StepLoss:
        def tensors(obs, acts):
            return torch.as_tensor(obs, dtype=torch.float64), torch.as_tensor(acts, dtype=torch.float64)

        def loss(o, a):
            z = (a - self.mean(o)) / self.log_std.exp()
            return (z**2 / 2 + self.log_std).sum(dim=1)

        return StepLoss(self, tensors, loss)


def test_the_factored_features_of_a_linear_gaussian_policy_are_the_hand_formula():
    rng = np.random.default_rng(0)
    w, b, log_std = rng.normal(size=(2, 3)), rng.normal(size=2), np.array([0.1, -0.3])
    obs, acts = rng.normal(size=(9, 3)), rng.normal(size=(9, 2))
    model = _Gaussian(w, b, log_std)
    gradients, why = kronecker_gradients(model.step(), obs, acts, 7, seed=5)
    assert gradients is not None and why == "1 linear layers, 2 other parameters"
    projection = gradients.projection
    assert projection.side == 2 and projection.dim == 2 * 2 + 2  # 2 x min(4, 2) + min(2, 4)
    sigma = np.exp(log_std)
    residual = (obs @ w.T + b - acts) / sigma**2  # d(-log pi)/d(mean)
    d_log_std = 1.0 - ((acts - obs @ w.T - b) / sigma) ** 2  # d(-log pi)/d(log_std)
    p_out, p_in = (f.numpy() for f in projection.factors("mean"))
    with_one = np.concatenate([obs, np.ones((9, 1))], axis=1)
    expected = np.concatenate([np.einsum("bo,bi->boi", residual @ p_out.T, with_one @ p_in.T).reshape(9, -1),
                               d_log_std @ projection.rest_matrix().numpy().T], axis=1)
    np.testing.assert_allclose(gradients(obs, acts), expected, rtol=1e-10, atol=1e-12)
    # chunked: the same numbers (no coupling between a batch's steps)
    np.testing.assert_allclose(gradients(obs, acts, chunk=4), gradients(obs, acts), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("policy", ["mlp", "diffusion"])
def test_the_learners_networks_take_the_factored_path_and_match_their_full_gradients(policy):
    import gymnasium as gym

    from curteach_teaching.learners.dataset_learner import LearnerFactory

    rng = np.random.default_rng(1)
    obs = rng.uniform(-1, 1, size=(10, 4)).astype(np.float32)
    acts = rng.uniform(-1, 1, size=(10, 2)).astype(np.float32)
    learner = LearnerFactory(policy, gym.spaces.Box(-1, 1, (4,), np.float32),
                             gym.spaces.Box(-1, 1, (2,), np.float32))(0)
    step = step_loss(learner)
    gradients, why = kronecker_gradients(step, obs, acts, 64, seed=0)
    assert gradients is not None, why
    # every step, not only the checked ones: the features are the Kronecker projection of the full gradients
    full, _ = per_sample_gradients(step, obs, acts)
    layers, at, blocks, rest = linear_layers(step.module), 0, {}, []
    for name, p in step.module.named_parameters():
        blocks[name] = full[:, at:at + p.numel()].reshape(10, *p.shape)
        at += p.numel()
        if not any(name.startswith(f"{layer}.") for layer in layers):
            rest.append(blocks[name].reshape(10, -1))
    by_layer = {name: torch.cat([blocks[f"{name}.weight"], blocks[f"{name}.bias"][:, :, None]], dim=2)
                for name in gradients.projection.shapes}
    expected = gradients.projection.project(by_layer, torch.cat(rest, dim=1) if rest else None).numpy()
    got = gradients(obs, acts, chunk=3)
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()
    if policy == "mlp":  # the actor's layers; SB3's value network, which -log pi never runs, is left out
        assert why.endswith("2 other parameters") and not any("value" in name for name in gradients.projection.shapes)
    else:  # the denoiser, run once per fixed noise pair: the pairs' outer products summed
        assert why.endswith("0 other parameters") and learner.score_draws > 1


def test_networks_the_factors_do_not_describe_are_refused():
    rng = np.random.default_rng(2)
    obs, acts = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    model = _Gaussian(rng.normal(size=(2, 3)), np.zeros(2), np.zeros(2))

    def tensors(o, a):
        return torch.as_tensor(o, dtype=torch.float64), torch.as_tensor(a, dtype=torch.float64)

    # the layer's weight also read outside its forward (a tied weight): the hook misses that use, the check fails
    def tied(o, a):
        mean = model.mean(o) + o @ model.mean.weight.T
        return ((a - mean) ** 2).sum(dim=1)

    assert kronecker_gradients(StepLoss(model, tensors, tied), obs, acts, 16, seed=0) == (
        None, "the layers' factors do not reproduce the per-sample gradients")

    # a loss that couples the batch's steps (its mean subtracted): per-sample deltas are not the steps' own
    def coupled(o, a):
        mean = model.mean(o)
        return ((a - mean + mean.mean(dim=0)) ** 2).sum(dim=1)

    assert kronecker_gradients(StepLoss(model, tensors, coupled), obs, acts, 16, seed=0)[0] is None

    # no linear layer, or too many other parameters: not tried
    scale = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    holder = torch.nn.ParameterDict({"scale": scale})
    assert kronecker_gradients(StepLoss(holder, tensors, lambda o, a: (o * scale).sum(dim=1)), obs, acts, 8,
                               seed=0) == (None, "no linear layers")
    model.extra = torch.nn.Parameter(torch.zeros(REST_LIMIT + 1, dtype=torch.float64))
    gradients, why = kronecker_gradients(model.step(), obs, acts, 8, seed=0)
    assert gradients is None and why == f"{REST_LIMIT + 3} parameters outside linear layers (more than {REST_LIMIT})"


def test_the_projection_of_the_factored_path_is_seeded():
    rng = np.random.default_rng(3)
    obs, acts = rng.normal(size=(6, 8)), rng.normal(size=(6, 2))
    step = _Gaussian(rng.normal(size=(2, 8)), rng.normal(size=2), np.zeros(2)).step()
    first, _ = kronecker_gradients(step, obs, acts, 8, seed=1)  # side 3: the input's 9 to 3 by a random factor
    again, _ = kronecker_gradients(step, obs, acts, 8, seed=1)
    other, _ = kronecker_gradients(step, obs, acts, 8, seed=2)
    assert first.projection.side == 3 and first.projection.dim == 8
    np.testing.assert_array_equal(first(obs, acts), again(obs, acts))
    assert not np.allclose(first(obs, acts), other(obs, acts))
    assert isinstance(first.projection, KroneckerProjection)

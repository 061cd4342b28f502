"""The written-out step of stacked Gaussian MLP members (curteach_teaching.learners.batched_gaussian_step)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

th = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from stable_baselines3.common.policies import ActorCriticPolicy  # noqa: E402

from curteach_teaching.learners import batched_members as bm  # noqa: E402
from curteach_teaching.learners.batched_gaussian_step import GaussianMLPStep, step_reason  # noqa: E402
from curteach_teaching.learners.factory import make_policy  # noqa: E402

VECTORS = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
BOX = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
K, B = 3, 7


def sb3_policy(seed: int, activation: type) -> ActorCriticPolicy:
    """SB3's own ``ActorCriticPolicy`` (an unbounded ``log_std``) with ``activation``, 2 x 8 units."""
    th.manual_seed(seed)  # SB3 initialises from torch's global generator; this test's own policies only
    return ActorCriticPolicy(VECTORS, BOX, lambda _: 1e-3, net_arch=[8, 8], activation_fn=activation)


def autograd_loss_and_grads(members: bm.BatchedMembers, x, acts, ent_weight: float) -> tuple[np.ndarray, dict]:
    """Each member's BC loss through :meth:`bm.BatchedMembers.log_prob` and autograd, and ``{name: (K, ...)}`` the
    gradients of their sum."""
    for value in members.params.values():
        value.grad = None
    log_prob, entropy = members.log_prob(x, acts)
    loss = -log_prob.mean(dim=1) - ent_weight * entropy.mean(dim=1)
    loss.sum().backward()
    return loss.detach().double().numpy(), {name: v.grad.clone() for name, v in members.params.items()}


@pytest.mark.parametrize("kind", ["bounded-tanh", "sb3-relu", "sb3-tanh"])
def test_the_written_out_gradients_are_autograds(kind):
    if kind == "bounded-tanh":
        policies = [make_policy("auto", VECTORS, BOX, seed) for seed in range(K)]
    else:
        policies = [sb3_policy(seed, th.nn.ReLU if kind == "sb3-relu" else th.nn.Tanh) for seed in range(K)]
    rng = np.random.default_rng(0)
    with th.no_grad():  # log_std away from 0, and (bounded) one entry past each bound: the clamp passes nothing there
        for policy in policies:
            policy.log_std.copy_(th.tensor(rng.normal(scale=0.5, size=3), dtype=th.float32))
        policies[1].log_std[0] = -6.0
        policies[2].log_std[2] = 2.5
    x = th.tensor(rng.normal(size=(K, B, 5)), dtype=th.float32)
    acts = th.tensor(rng.uniform(-1, 1, size=(K, B, 3)), dtype=th.float32)
    reference = bm.BatchedMembers(policies)
    loss, grads = autograd_loss_and_grads(reference, x, acts, ent_weight=0.01)
    members = bm.BatchedMembers(policies)
    assert step_reason(members) is None
    step = GaussianMLPStep(members, batch_size=B, steps=1, learning_rate=1e-3, ent_weight=0.01)
    before = {name: value.detach().clone() for name, value in members.params.items()}
    step.step(0, x, acts)
    np.testing.assert_allclose(step.losses()[0], loss, rtol=1e-5, atol=1e-6)
    # tanh as 2 sigmoid(2a) - 1: within two float32 steps of 1 of torch's tanh, whose rounding the gradients inherit
    first = "policy.mlp_extractor.policy_net.0"
    a = th.baddbmm(before[f"{first}.bias"].unsqueeze(1), x, before[f"{first}.weight"].transpose(1, 2))
    exact = th.relu(a) if kind == "sb3-relu" else th.tanh(a)
    np.testing.assert_allclose(step.hidden[0].numpy(), exact.numpy(), rtol=0, atol=2.4e-7)
    atol = 1e-7 if kind == "sb3-relu" else 1e-6  # gradients of about 1e-3
    for name, expected in grads.items():
        got = step.g[name].transpose(1, 2) if name.removesuffix(".weight") in step.flipped else step.g[name]
        # rtol 1e-4: a large entry (the head's weight gradients reach about 70) sums 256 rows' products of hidden
        # units that differ from torch's tanh by up to 2.4e-7, in another order (and thread split) than autograd's
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-4, atol=atol, err_msg=name)
        assert np.abs(expected.numpy()).max() > 100 * atol  # the tolerance is small against what is checked
    clamped = (grads["policy.log_std"] == 0).numpy()
    assert clamped[1, 0] == clamped[2, 2] == (kind == "bounded-tanh")
    # the members read the stepped parameters: Adam's first step (its moments bias-corrected to g and g^2) moves
    # each entry by -lr g / (|g| + eps)
    for name, value in members.params.items():
        moved = (value - before[name]).double().numpy()
        g = grads[name].double().numpy()
        np.testing.assert_allclose(moved, -1e-3 * g / (np.abs(g) + 1e-8), rtol=1e-3, atol=1e-9, err_msg=name)


def test_the_loss_is_the_closed_form_on_a_hand_computed_case():
    """One member, one row, one action dimension: mu = b (zero weights), c = log_std = log 2, a = mu + 1:
    L = e^2 / (2 sigma^2) + c + log sqrt(2 pi) - w (1/2 + log sqrt(2 pi) + c), e = 1, sigma = 2; dL/dmu = 1/4,
    dL/dc = 1 - w - e^2 / sigma^2 = 3/4 - w."""
    space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    policy = make_policy("auto", VECTORS, space, 0)
    with th.no_grad():
        for p in policy.parameters():
            p.zero_()
        policy.action_net.bias[0] = 0.25
        policy.log_std[0] = math.log(2.0)
    members = bm.BatchedMembers([policy])
    step = GaussianMLPStep(members, batch_size=1, steps=1, learning_rate=1e-3, ent_weight=0.1)
    step.step(0, th.ones((1, 1, 5)), th.full((1, 1, 1), -0.75))  # e = 0.25 - (-0.75) = 1
    half_log = math.log(math.sqrt(2 * math.pi))
    expected = 1 / 8 + math.log(2) + half_log - 0.1 * (0.5 + half_log + math.log(2))
    assert step.losses()[0, 0] == pytest.approx(expected, rel=1e-6)
    assert float(step.g["policy.action_net.bias"][0, 0]) == pytest.approx(0.25, rel=1e-6)
    assert float(step.g["policy.log_std"][0, 0]) == pytest.approx(0.75 - 0.1, rel=1e-6)


def test_fit_members_takes_the_written_out_step_for_the_default_policy_only():
    assert step_reason(bm.BatchedMembers([make_policy("auto", VECTORS, BOX, 0)])) is None
    categorical = bm.BatchedMembers([make_policy("auto", VECTORS, gym.spaces.Discrete(3), 0)])
    assert "Gaussian" in step_reason(categorical)
    with pytest.raises(ValueError, match="not written out"):
        GaussianMLPStep(categorical, batch_size=4, steps=1, learning_rate=1e-3, ent_weight=0.0)
    elu = bm.BatchedMembers([sb3_policy(0, th.nn.ELU)])
    assert "ELU" in step_reason(elu)

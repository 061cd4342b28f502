"""The navigation learner network (the original's CNN, docs/experiments/nav.md) and its SB3 policy."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from torch import nn
from torch.nn import functional as F

import curteach_envs  # noqa: F401  (registers the environments)
from curteach_teaching.learners.networks import (
    N_PARAMETERS,
    GeneratorDropout,
    NavigationCNN,
    NavigationCNNPolicy,
    ResidualBlock,
    navigation_spaces,
)
from curteach_teaching.learners.seeding import make_generator


def _obs(batch: int, seed: int = 0) -> th.Tensor:
    """Observation-like input: one agent one-hot per row and random 0/1 task planes."""
    rng = np.random.default_rng(seed)
    x = np.zeros((batch, 7, 6, 6), dtype=np.float32)
    x[np.arange(batch), rng.integers(0, 4, batch), rng.integers(0, 6, batch), rng.integers(0, 6, batch)] = 1
    x[:, 4:] = rng.random((batch, 3, 6, 6)) < 0.2
    return th.from_numpy(x)


def _manual_forward(net: NavigationCNN, x: th.Tensor) -> th.Tensor:
    """The original's network written out with functional ops and out-of-place adds (eval mode, no dropout)."""

    def conv(layer, h):
        return F.conv2d(h, layer.weight, layer.bias, padding=1)

    h = F.relu(conv(net.conv0, x))
    for block in (net.block1, net.block2):
        f = F.relu(conv(block.c3, F.relu(conv(block.c2, F.relu(conv(block.c1, h))))))
        h = F.relu(f + h)
    h = F.relu(F.linear(h.reshape(h.shape[0], -1), net.fc1.weight, net.fc1.bias))
    h = F.relu(F.linear(h, net.fc2.weight, net.fc2.bias))
    return F.linear(h, net.head.weight, net.head.bias)


# ---------------------------------------------------------------------------------------------------- shape


def test_parameter_count_is_the_spec_figure():
    net = NavigationCNN(seed=0)
    assert sum(p.numel() for p in net.parameters()) == N_PARAMETERS == 779_971
    policy = NavigationCNNPolicy.for_navigation(seed=0)
    assert sum(p.numel() for p in policy.parameters()) == 779_971
    # 7 convolutions (3x3, padding 1) and 3 linear layers, as in the original
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    linears = [m for m in net.modules() if isinstance(m, nn.Linear)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.padding) for c in convs] == (
        [(7, 32, (3, 3), (1, 1))] + [(32, 32, (3, 3), (1, 1))] * 6)
    assert [(m.in_features, m.out_features) for m in linears] == [(1152, 512), (512, 256), (256, 3)]
    assert net.dropout.p == 0.2


@pytest.mark.parametrize("batch", [1, 5])
def test_forward_shape(batch):
    net = NavigationCNN(seed=1)
    assert net(_obs(batch)).shape == (batch, 3)
    policy = NavigationCNNPolicy.for_navigation(seed=1)
    assert policy.action_logits(_obs(batch)).shape == (batch, 3)
    assert policy.action_logits(_obs(1)[0].numpy()).shape == (1, 3)  # a single (7, 6, 6) observation


def test_forward_rejects_wrong_shapes():
    net = NavigationCNN(seed=0)
    with pytest.raises(ValueError, match=r"shape \(B, 7, 6, 6\)"):
        net(th.zeros(2, 6, 6, 6))
    with pytest.raises(ValueError, match="shape"):
        net(th.zeros(2, 7, 5, 5))


def test_forward_equals_the_manual_network_in_eval_mode():
    net = NavigationCNN(seed=2).eval()
    x = _obs(16)
    with th.no_grad():
        th.testing.assert_close(net(x), _manual_forward(net, x), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------------- residual


def test_residual_adds_really_happen():
    net = NavigationCNN(seed=3).eval()
    x = _obs(8)
    seen = {}

    def hook(module, inputs, output):
        seen[module] = (inputs[0].detach().clone(), output.detach().clone())

    for block in (net.block1, net.block2):
        block.register_forward_hook(hook)
    with th.no_grad():
        net(x)
        for block in (net.block1, net.block2):
            block_in, block_out = seen[block]
            branch = block.branch(block_in)
            assert block_in.abs().sum() > 0 and branch.abs().sum() > 0
            th.testing.assert_close(block_out, F.relu(branch + block_in))  # x + f(x), then the (no-op) ReLU
            assert not th.allclose(block_out, branch)  # the skip contributes
            assert not th.allclose(block_out, block_in)  # and so does the branch


def test_a_block_with_a_zero_branch_is_the_identity():
    block = ResidualBlock(32)
    with th.no_grad():
        block.c3.weight.zero_()
        block.c3.bias.zero_()
    x = F.relu(th.randn(4, 32, 6, 6, generator=th.Generator().manual_seed(0)))
    x_before = x.clone()
    with th.no_grad():
        out = block(x)
    th.testing.assert_close(out, x)  # relu(0 + x) = x for x >= 0
    assert th.equal(x, x_before)  # the add is out of place: the input is untouched


def test_backward_works_through_the_residual_adds():
    # The original's in-place `out += residual` fails here on PyTorch >= 1.10 (docs/deviations.md).
    net = NavigationCNN(seed=4).train()
    loss = F.cross_entropy(net(_obs(8)), th.tensor([0, 1, 2, 0, 1, 2, 0, 1]))
    loss.backward()
    assert all(p.grad is not None and th.isfinite(p.grad).all() for p in net.parameters())
    assert net.block1.c1.weight.grad.abs().sum() > 0


def test_gradients_equal_those_of_the_manual_network():
    net = NavigationCNN(seed=5).eval()  # eval: no dropout, so both graphs compute the same function
    x, y = _obs(6), th.tensor([0, 1, 2, 2, 1, 0])
    F.cross_entropy(net(x), y).backward()
    grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    F.cross_entropy(_manual_forward(net, x), y).backward()
    for got, expected in zip(grads, (p.grad for p in net.parameters()), strict=True):
        th.testing.assert_close(got, expected, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------------- policy API


def test_evaluate_actions_gives_log_softmax_at_the_actions():
    policy = NavigationCNNPolicy.for_navigation(seed=6)
    policy.set_training_mode(False)
    x = _obs(12)
    actions = th.tensor([0, 1, 2] * 4)
    values, log_prob, entropy = policy.evaluate_actions(x, actions)
    with th.no_grad():
        logits = policy.net(x)
    log_softmax = th.log_softmax(logits, dim=1)
    th.testing.assert_close(log_prob, log_softmax[th.arange(12), actions])
    th.testing.assert_close(log_softmax.exp().sum(dim=1), th.ones(12))
    th.testing.assert_close(entropy, -(log_softmax.exp() * log_softmax).sum(dim=1))
    assert values.shape == (12, 1) and th.all(values == 0)
    assert log_prob.requires_grad  # BC differentiates it
    # get_distribution (SB3's Categorical) agrees
    th.testing.assert_close(policy.get_distribution(x).log_prob(actions), log_prob)
    # the value output is zeros everywhere
    assert th.all(policy.predict_values(x) == 0) and policy.predict_values(x).shape == (12, 1)


def test_evaluate_actions_rejects_bad_actions():
    policy = NavigationCNNPolicy.for_navigation(seed=0)
    with pytest.raises(ValueError, match=r"actions must lie in \[0, 2\]"):
        policy.evaluate_actions(_obs(2), th.tensor([0, 3]))
    with pytest.raises(ValueError, match="one action per observation"):
        policy.evaluate_actions(_obs(2), th.tensor([0, 1, 2]))


def test_predict_is_greedy_and_forward_matches_sb3():
    policy = NavigationCNNPolicy.for_navigation(seed=7)
    x = _obs(20)
    actions, _ = policy.predict(x.numpy(), deterministic=True)
    with th.no_grad():
        expected = policy.net.eval()(x).argmax(dim=1).numpy()
    np.testing.assert_array_equal(actions, expected)
    acts, values, log_prob = policy(x, deterministic=True)
    assert acts.shape == (20,) and values.shape == (20, 1) and log_prob.shape == (20,)


def test_policy_rejects_other_spaces():
    obs_space, act_space = navigation_spaces()
    with pytest.raises(ValueError, match="observation_space"):
        NavigationCNNPolicy(gym.spaces.Box(0, 1, (7, 5, 5)), act_space, seed=0)
    with pytest.raises(ValueError, match="action_space"):
        NavigationCNNPolicy(obs_space, gym.spaces.Discrete(4), seed=0)


def test_spaces_are_the_environments():
    env = gym.make("ShortestPathTeach-v0")
    obs_space, act_space = navigation_spaces()
    assert env.observation_space == obs_space and env.action_space == act_space
    assert gym.make("TSPTeach-v0").observation_space == obs_space


def test_state_dict_loads_into_a_fresh_policy(tmp_path):
    # (SB3 2.2.1's policy.save/load is not used: its load calls torch.load with torch >= 2.6's weights_only=True,
    # which refuses the pickled gymnasium spaces of any SB3 policy.)
    policy = NavigationCNNPolicy.for_navigation(seed=8)
    th.save(policy.state_dict(), tmp_path / "policy.pt")
    fresh = NavigationCNNPolicy.for_navigation(seed=99)
    fresh.load_state_dict(th.load(tmp_path / "policy.pt", weights_only=True))
    net = NavigationCNN(seed=98)
    net.load_state_dict(policy.net.state_dict())
    x = _obs(5)
    policy.set_training_mode(False)
    fresh.set_training_mode(False)
    with th.no_grad():
        assert th.equal(fresh.action_logits(x), policy.action_logits(x))
        assert th.equal(net.eval()(x), policy.action_logits(x))


# ---------------------------------------------------------------------------------------------------- dropout


def test_dropout_is_active_in_train_mode_only():
    net = NavigationCNN(seed=9)
    x = _obs(64)
    with th.no_grad():
        net.train()
        a, b = net(x), net(x)
        assert not th.equal(a, b)  # fresh masks each pass
        net.eval()
        c, d = net(x), net(x)
        assert th.equal(c, d)
        th.testing.assert_close(c, _manual_forward(net, x), rtol=1e-5, atol=1e-6)


def test_dropout_masks_are_seeded_and_do_not_touch_the_global_rng():
    x = _obs(32)
    outputs = []
    for _ in range(2):
        net = NavigationCNN(seed=10).train()
        state = th.random.get_rng_state()
        with th.no_grad():
            outputs.append([net(x), net(x)])
        assert th.equal(state, th.random.get_rng_state())
    assert th.equal(outputs[0][0], outputs[1][0]) and th.equal(outputs[0][1], outputs[1][1])
    assert not th.equal(NavigationCNN(seed=11).train()(x), NavigationCNN(seed=12).train()(x))


def test_generator_dropout_statistics_and_state():
    drop = GeneratorDropout(0.2, seed=3).train()
    x = th.ones(200_000)
    y = drop(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.8) < 0.01
    th.testing.assert_close(y[kept], th.full((int(kept.sum()),), 1 / 0.8))
    state = drop.get_rng_state()
    first = drop(th.ones(100))
    drop.set_rng_state(state)
    assert th.equal(drop(th.ones(100)), first)
    assert th.equal(drop.eval()(x), x)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        GeneratorDropout(1.0)


# ---------------------------------------------------------------------------------------------------- seeding


def test_same_seed_same_weights_different_seed_different():
    def weights(net):
        return [p.detach().clone() for p in net.parameters()]

    a, b, c = weights(NavigationCNN(seed=13)), weights(NavigationCNN(seed=13)), weights(NavigationCNN(seed=14))
    assert all(th.equal(x, y) for x, y in zip(a, b, strict=True))
    assert all(not th.equal(x, z) for x, z in zip(a, c, strict=True))
    # a generator works like its seed; policies seed the same way
    d = weights(NavigationCNN(seed=make_generator(13)))
    assert all(th.equal(x, y) for x, y in zip(a, d, strict=True))
    e = weights(NavigationCNNPolicy.for_navigation(seed=13).net)
    assert all(th.equal(x, y) for x, y in zip(a, e, strict=True))
    # no seed: fresh entropy
    assert not th.equal(NavigationCNN().conv0.weight, NavigationCNN().conv0.weight)


def test_construction_does_not_touch_the_global_rng():
    state = th.random.get_rng_state()
    NavigationCNN(seed=15)
    NavigationCNN()
    NavigationCNNPolicy.for_navigation(seed=15)
    assert th.equal(state, th.random.get_rng_state())


def test_initialisation_is_pytorchs_default_rule():
    # The same draws as nn.Conv2d / nn.Linear built in forward order after torch.manual_seed(seed).
    net = NavigationCNN(seed=16)
    with th.random.fork_rng():
        th.manual_seed(16)
        reference = [nn.Conv2d(7, 32, 3, padding=1)] + [nn.Conv2d(32, 32, 3, padding=1) for _ in range(6)]
        reference += [nn.Linear(1152, 512), nn.Linear(512, 256), nn.Linear(256, 3)]
    for ours, theirs in zip(net.layers(), reference, strict=True):
        assert th.equal(ours.weight, theirs.weight) and th.equal(ours.bias, theirs.bias)


def test_bad_seeds_raise():
    for bad in (-1, 1.5, "0", True):
        with pytest.raises(ValueError, match="seed"):
            NavigationCNN(seed=bad)


# ---------------------------------------------------------------------------------------------------- BC


@pytest.fixture(scope="module")
def shortest_path_trajectories():
    from curteach_envs.navigation.generate import generate_dataset
    from curteach_teaching.demonstrations import navigation_trajectories

    dataset = generate_dataset("shortest_path", {"val": 1}, seed=0, workers=1, progress=False)
    return navigation_trajectories(dataset["val"])[:24]


def _mean_nll(policy, transitions) -> float:
    policy.set_training_mode(False)
    with th.no_grad():
        _, log_prob, _ = policy.evaluate_actions(th.as_tensor(transitions.obs), th.as_tensor(transitions.acts))
    return float(-log_prob.mean())


def test_imitation_bc_trains_the_policy(shortest_path_trajectories):
    from imitation.algorithms.bc import BC
    from imitation.data import rollout

    env = gym.make("ShortestPathTeach-v0")
    transitions = rollout.flatten_trajectories(shortest_path_trajectories)
    policy = NavigationCNNPolicy(env.observation_space, env.action_space, seed=17)
    before = _mean_nll(policy, transitions)
    trainer = BC(
        observation_space=env.observation_space,
        action_space=env.action_space,
        rng=np.random.default_rng(0),
        policy=policy,
        demonstrations=transitions,
        batch_size=32,
        optimizer_cls=th.optim.SGD,
        optimizer_kwargs={"lr": 0.05},
        ent_weight=0.0,
    )
    policy.set_training_mode(True)  # imitation's BC does not change the mode itself
    with th.random.fork_rng():
        th.manual_seed(0)  # BC's DataLoader shuffles with torch's global RNG
        trainer.train(n_epochs=8, progress_bar=False, log_interval=10**9)
    after = _mean_nll(policy, transitions)
    assert np.isfinite(after) and after < before - 0.1, (before, after)

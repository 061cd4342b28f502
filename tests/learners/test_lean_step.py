"""lean_step: the optimizer's step body and the actor's forward without PyTorch's per-call wrappers give the same bits
as the wrapped calls (parameters, optimizer state, outputs, gradients), are taken where nothing observes the wrappers,
and give way to the wrapped calls where something does (hooks, a profiler, a replaced forward)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy

from curteach_teaching.learners import lean_step
from curteach_teaching.learners.lean_step import actor_outputs, optimizer_step

OBS = gym.spaces.Box(-np.inf, np.inf, (6,), np.float32)


def _policy(action_space, activation=th.nn.Tanh, seed=0):
    with th.random.fork_rng(devices=[]):
        th.manual_seed(seed)
        return ActorCriticPolicy(OBS, action_space, lambda _: 1e-3, net_arch=dict(pi=[16, 16], vf=[8]),
                                 activation_fn=activation)


def _train(optimizer_factory, lean, steps=25):
    """A small regression trained ``steps`` steps; its parameters and optimizer state after."""
    generator = th.Generator().manual_seed(0)
    net = th.nn.Sequential(th.nn.Linear(6, 16), th.nn.Tanh(), th.nn.Linear(16, 3))
    with th.no_grad():
        for p in net.parameters():
            p.copy_(th.randn(p.shape, generator=generator) * 0.3)
    optimizer = optimizer_factory(net.parameters())
    x, y = th.randn(64, 6, generator=generator), th.randn(64, 3, generator=generator)
    for _ in range(steps):
        loss = ((net(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer_step(optimizer) if lean else optimizer.step()
    return [p.detach().clone() for p in net.parameters()], optimizer.state_dict()


FACTORIES = {
    "adam-foreach": lambda ps: th.optim.Adam(ps, lr=1e-2, foreach=True),
    "adam-loop": lambda ps: th.optim.Adam(ps, lr=1e-2),
    "adam-amsgrad-decay": lambda ps: th.optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=0.1, foreach=True),
    "sgd-momentum": lambda ps: th.optim.SGD(ps, lr=1e-2, momentum=0.9),
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_the_step_body_moves_parameters_and_state_as_the_step_does(name):
    wrapped, wrapped_state = _train(FACTORIES[name], lean=False)
    lean, lean_state = _train(FACTORIES[name], lean=True)
    assert all(th.equal(a, b) for a, b in zip(wrapped, lean, strict=True))
    for key, value in wrapped_state["state"].items():
        for field, tensor in value.items():
            assert th.equal(tensor, lean_state["state"][key][field]), (key, field)
    assert wrapped_state["param_groups"] == lean_state["param_groups"]


class _Labels:
    """Counts the profiler labels opened (``Optimizer.step``'s wrapper opens one per step)."""

    def __init__(self, real):
        self.real, self.names = real, []

    def __call__(self, name, *args, **kwargs):
        self.names.append(name)
        return self.real(name, *args, **kwargs)


def test_the_wrapper_is_skipped_unless_a_hook_or_a_profiler_would_see_it(monkeypatch):
    labels = _Labels(th.autograd.profiler.record_function)
    monkeypatch.setattr(th.autograd.profiler, "record_function", labels)
    _train(FACTORIES["adam-foreach"], lean=True, steps=3)
    assert not [n for n in labels.names if n.startswith("Optimizer.step")]

    seen = []
    net = th.nn.Linear(2, 1)
    optimizer = th.optim.Adam(net.parameters(), lr=0.1, foreach=True)
    handle = optimizer.register_step_pre_hook(lambda opt, args, kwargs: seen.append("pre"))
    net(th.ones(1, 2)).sum().backward()
    optimizer_step(optimizer)
    assert seen == ["pre"]  # the hook ran: the wrapped step was taken
    handle.remove()
    with th.profiler.profile(activities=[th.profiler.ProfilerActivity.CPU]) as profile:
        optimizer_step(optimizer)
    assert any(e.name.startswith("Optimizer.step#Adam.step") for e in profile.events())  # the profile keeps its label
    other = th.optim.RMSprop(net.parameters(), lr=0.1)
    optimizer_step(other)  # another optimizer: its own step, as called
    assert other.state


@pytest.mark.parametrize("space", [gym.spaces.Discrete(4), gym.spaces.Box(-1, 1, (3,), np.float32)],
                         ids=["discrete", "box"])
@pytest.mark.parametrize("activation", [th.nn.Tanh, th.nn.ReLU, th.nn.SiLU], ids=["tanh", "relu", "silu"])
def test_the_actor_outputs_and_their_gradients_are_the_modules(space, activation, monkeypatch):
    policy = _policy(space, activation)
    obs = th.as_tensor(np.random.default_rng(0).normal(size=(32, 6)).astype(np.float32))
    features = super(ActorCriticPolicy, policy).extract_features(obs, policy.pi_features_extractor)
    expected = policy.action_net(policy.mlp_extractor.forward_actor(features))
    expected_grads = th.autograd.grad(expected.square().sum(), list(policy.parameters()), allow_unused=True)

    calls = []
    real_call = th.nn.Module.__call__

    def counted(module, *args, **kwargs):
        calls.append(type(module).__name__)
        return real_call(module, *args, **kwargs)

    monkeypatch.setattr(th.nn.Module, "__call__", counted)
    out = actor_outputs(policy, obs)
    grads = th.autograd.grad(out.square().sum(), list(policy.parameters()), allow_unused=True)
    assert th.equal(out, expected)
    assert all((a is None and b is None) or th.equal(a, b) for a, b in zip(expected_grads, grads, strict=True))
    # plain modules are not called as modules; another activation is
    assert calls == (["SiLU", "SiLU"] if activation is th.nn.SiLU else [])


def test_hooks_a_replaced_forward_and_other_extractors_take_the_module_calls():
    policy = _policy(gym.spaces.Discrete(3))
    obs = th.ones(4, 6)
    expected = actor_outputs(policy, obs)
    seen = []
    handle = policy.action_net.register_forward_hook(lambda m, i, o: seen.append("action_net"))
    assert th.equal(actor_outputs(policy, obs), expected) and seen == ["action_net"]
    handle.remove()
    handle = th.nn.modules.module.register_module_forward_hook(lambda m, i, o: seen.append(type(m).__name__))
    try:
        actor_outputs(policy, obs)
    finally:
        handle.remove()
    assert "FlattenExtractor" in seen and "Linear" in seen
    seen.clear()
    policy.mlp_extractor.forward_actor = lambda features: (seen.append("forward_actor"), th.zeros(len(features), 16))[1]
    assert th.equal(actor_outputs(policy, obs), policy.action_net(th.zeros(4, 16)))
    assert seen == ["forward_actor"]


def test_a_replaced_class_forward_is_respected(monkeypatch):
    policy = _policy(gym.spaces.Discrete(3))
    obs = th.ones(4, 6)
    lean_step._kinds()  # the forwards as first seen
    monkeypatch.setattr(th.nn.Tanh, "forward", lambda self, x: th.zeros_like(x))
    out = actor_outputs(policy, obs)
    assert th.equal(out, policy.action_net.bias.expand(4, 3))  # both hidden layers' outputs zeroed by the new forward

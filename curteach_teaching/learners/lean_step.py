"""A small network's training step without PyTorch's per-call Python wrappers: the same operations on the same tensors,
so the same numbers, for less CPU per step (issue 56).

On an MLP of 2 x 64 units at batches of 256, a step's arithmetic costs little more than the Python around it, and two
of PyTorch's wrappers cost a few percent of the step each:

* ``Optimizer.step``'s wrapper (``Optimizer.profile_hook_step`` and ``_use_grad_for_differentiable``: a profiler label,
  the step hooks, the grad mode, two ``torch._dynamo`` graph breaks), about 30 microseconds of CPU per step of torch's
  Adam here, a fifth of the whole optimizer step. :func:`optimizer_step` calls the optimizer's own ``step`` body
  (``inspect.unwrap``) under ``torch.no_grad()`` instead, which is what the wrapper runs it under for a
  non-differentiable optimizer, where nothing would see the difference: torch's ``Adam`` or ``SGD`` exactly, no step
  hooks (the optimizer's or global ones), not ``differentiable``, its ``step`` not replaced on the instance, and no
  profiler running (a profile keeps the ``Optimizer.step`` label). Anything else takes ``optimizer.step()``.
* ``nn.Module.__call__`` (its hook checks, about 2 microseconds a module): :func:`actor_outputs` runs SB3's actor path
  (``extract_features`` with the policy's features extractor, ``mlp_extractor.forward_actor``, ``action_net``) and
  calls what each plain module's ``forward`` calls (``nn.Linear``: ``F.linear``; ``nn.Tanh``: ``torch.tanh``;
  ``nn.ReLU``: ``F.relu``; ``nn.Flatten``: ``flatten``; ``nn.Sequential``: its modules in order; SB3's
  ``FlattenExtractor`` and ``MlpExtractor.forward_actor`` as written) where the class is exactly that one with its
  ``forward`` as first seen, the instance has no hooks and no ``forward`` of its own, no global module hook is
  registered and no JIT trace is running; any other module is called as a module.

Both are checked to give the same bits as the wrapped calls (``tests/learners/test_lean_step.py``).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

__all__ = ["actor_outputs", "optimizer_step"]


def _profiling() -> bool:
    """Whether torch's autograd profiler (which ``torch.profiler`` drives too) is recording."""
    import torch

    enabled = getattr(getattr(torch._C, "_autograd", None), "_profiler_enabled", None)
    return enabled is None or bool(enabled())


@functools.cache
def _step_body(cls: type) -> Any:
    """The optimizer class's own ``step``, unwrapped from PyTorch's decorators."""
    return inspect.unwrap(cls.step)


def optimizer_step(optimizer: Any) -> None:
    """``optimizer.step()``: for torch's ``Adam`` or ``SGD`` where nothing observes the wrapper (see the module
    docstring) its own step body under ``torch.no_grad()``, the same update of the same tensors; else the step as
    called."""
    import torch
    from torch.optim import optimizer as optim

    cls = type(optimizer)
    if (cls not in (torch.optim.Adam, torch.optim.SGD) or optimizer._optimizer_step_pre_hooks
            or optimizer._optimizer_step_post_hooks or optim._global_optimizer_pre_hooks
            or optim._global_optimizer_post_hooks or optimizer.defaults.get("differentiable", False)
            or "step" in vars(optimizer) or _profiling()):
        optimizer.step()
        return
    with torch.no_grad():
        _step_body(cls)(optimizer)


def _plain(module: Any) -> bool:
    """Whether calling ``module`` is calling its class's ``forward``: no hooks of its own, no ``forward`` of its own."""
    return not (module._forward_hooks or module._forward_pre_hooks or module._backward_hooks
                or module._backward_pre_hooks or "forward" in vars(module))


def _call(module: Any, x: Any) -> Any:
    """``module(x)``, without ``nn.Module.__call__`` where the module is one of the plain kinds above."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    kind = type(module)
    if _kinds().get(kind, False) is kind.forward and _plain(module):
        if kind is nn.Linear:
            return F.linear(x, module.weight, module.bias)
        if kind is nn.Tanh:
            return torch.tanh(x)
        if kind is nn.ReLU:
            return F.relu(x, inplace=module.inplace)
        if kind is nn.Flatten:
            return x.flatten(module.start_dim, module.end_dim)
        for layer in module:  # nn.Sequential
            x = _call(layer, x)
        return x
    return module(x)


@functools.cache
def _kinds() -> dict:
    """The plain module classes and their ``forward`` as first seen (torch imported when first needed): a class
    whose ``forward`` was replaced since is called as a module."""
    from torch import nn

    return {kind: kind.forward for kind in (nn.Linear, nn.Tanh, nn.ReLU, nn.Flatten, nn.Sequential)}


def _unobserved() -> bool:
    """No global module hook registered and no JIT trace running: module calls may be skipped."""
    import torch
    from torch.nn.modules import module as modules

    return not (modules._global_forward_hooks or modules._global_forward_pre_hooks or modules._global_backward_hooks
                or modules._global_backward_pre_hooks or torch._C._get_tracing_state())


def actor_outputs(policy: Any, obs: Any) -> Any:
    """``(B, n)`` the action head's outputs of an SB3 ``ActorCriticPolicy`` at ``obs``, as
    ``policy.action_net(policy.mlp_extractor.forward_actor(features))`` with ``features`` from
    ``BaseModel.extract_features(obs, policy.pi_features_extractor)`` (``ActorCriticPolicy.get_distribution``'s path up
    to the distribution's parameters), with module calls skipped where they are plain (module docstring)."""
    from stable_baselines3.common.policies import ActorCriticPolicy, BaseModel
    from stable_baselines3.common.preprocessing import preprocess_obs
    from stable_baselines3.common.torch_layers import FlattenExtractor, MlpExtractor

    extractor, mlp = policy.pi_features_extractor, policy.mlp_extractor
    extract = super(ActorCriticPolicy, policy).extract_features
    lean = (getattr(extract, "__func__", None) is BaseModel.extract_features and type(extractor) is FlattenExtractor
            and _plain(extractor) and type(mlp) is MlpExtractor and "forward_actor" not in vars(mlp)
            and _unobserved())
    if not lean:
        return policy.action_net(mlp.forward_actor(extract(obs, extractor)))
    # BaseModel.extract_features: the observations preprocessed, then the extractor (FlattenExtractor.forward: its
    # flatten module); MlpExtractor.forward_actor: its policy_net
    features = _call(extractor.flatten, preprocess_obs(obs, policy.observation_space,
                                                       normalize_images=policy.normalize_images))
    return _call(policy.action_net, _call(mlp.policy_net, features))

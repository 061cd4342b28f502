"""Per-sample projected loss gradients of a network of linear layers without forming a gradient: each layer's inputs
and output gradients from one batched backward pass, projected by a
:class:`~curteach_teaching.datasets.kronecker_projection.KroneckerProjection` (LoGra's factored projection).

For a per-step loss ``l_b`` with no coupling between the steps of a batch (no batch statistics; the learner's module
in evaluation mode), the gradient of ``sum_b l_b`` at row ``b`` of a layer's output is ``delta_b = dl_b / dy_b``
exactly, so one backward pass of the summed loss gives every step's ``delta``; with the layer's inputs (caught by a
forward hook) a step's weight-and-bias gradient is ``sum_calls delta_b (x_b, 1)^T``. The parameters outside linear
layers (SB3's ``log_std``; few, at most :data:`REST_LIMIT`) get their per-sample gradients from
:func:`~curteach_teaching.datasets.influence.per_sample_gradients` restricted to them.

:func:`kronecker_gradients` decides whether a learner's network allows this, and checks it: on the first
:data:`CHECK_ROWS` steps the factored features must equal the Kronecker projection of the full per-sample gradients
(``torch.func``) to :data:`TOLERANCE`; a layer run outside its ``forward`` (an attention's output projection), a
weight shared with another module or a loss that couples the steps fails the check, and the caller projects
densely. Linear layers that no gradient reaches (SB3's value network, which the actor's loss never runs) must have
zero gradients in the check and are left out of the features.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from curteach_teaching.datasets.influence import per_sample_gradients
from curteach_teaching.datasets.kronecker_projection import KroneckerProjection

__all__ = ["CHECK_ROWS", "REST_LIMIT", "TOLERANCE", "LayerGradients", "kronecker_gradients", "linear_layers"]

#: the most parameters outside linear layers that are projected densely beside the factored layers
REST_LIMIT = 4096
#: steps on which the factored features are checked against the full gradients' projection
CHECK_ROWS = 4
#: the check's tolerance, relative to the largest checked step's features' norm (float32 rounds at about 1e-7)
TOLERANCE = 1e-4


def linear_layers(module: Any) -> dict:
    """``{name: torch.nn.Linear}`` of ``module``'s linear layers whose parameters are all differentiated."""
    import torch

    return {name: layer for name, layer in module.named_modules() if isinstance(layer, torch.nn.Linear)
            and all(p.requires_grad for p in layer.parameters(recurse=False))}


def _capture(step: Any, obs_t: Any, acts_t: Any, layers: dict) -> dict:
    """``{layer: [(inputs (B, n, d_in + bias), deltas (B, n, d_out)), ...]}`` per call, for the layers of ``layers``
    that a gradient reaches (the others left out).

    Raises:
        ValueError: a call whose rows are not the ``B`` steps.
    """
    import torch

    calls: list = []
    handles = [layer.register_forward_hook(lambda mod, args, output, name=name: calls.append((name, args[0], output)))
               for name, layer in layers.items()]
    try:
        with torch.enable_grad():
            value = step.loss(obs_t, acts_t)
    finally:
        for handle in handles:
            handle.remove()
    rows = value.shape[0]
    outputs = [output for _, _, output in calls]
    deltas = torch.autograd.grad(value.sum(), outputs, allow_unused=True) if outputs else []
    captured: dict = {}
    for (name, inputs, output), delta in zip(calls, deltas, strict=True):
        if delta is None:
            continue
        if inputs.ndim < 2 or inputs.shape[0] != rows or output.shape[0] != rows:
            raise ValueError(f"layer {name} runs on {tuple(inputs.shape)}, not on the batch's {rows} steps")
        layer = layers[name]
        x = inputs.detach().reshape(rows, -1, layer.in_features)
        if layer.bias is not None:
            x = torch.cat([x, torch.ones_like(x[..., :1])], dim=-1)
        captured.setdefault(name, []).append((x, delta.detach().reshape(rows, -1, layer.out_features)))
    return captured


class LayerGradients:
    """``(obs, acts) -> (T, dim)`` float64 the steps' Kronecker-projected loss gradients (see the module docstring).

    Args:
        step: the learner's :class:`~curteach_teaching.learners.step_loss.StepLoss`.
        projection: the layers' :class:`KroneckerProjection`; layers: ``{name: Linear}`` of its layers.
        rest: names of the parameters projected densely; method: how their per-sample gradients are taken.
    """

    def __init__(self, step: Any, projection: KroneckerProjection, layers: dict, rest: list, method: str):
        self.step, self.projection, self.layers, self.rest, self.method = step, projection, layers, rest, method

    def features(self, obs: Any, acts: Any) -> Any:
        """``(B, dim)`` float64 torch features of ``B`` steps."""
        obs_t, acts_t = self.step.tensors(obs, acts)
        was_training = self.step.module.training
        self.step.module.train(False)  # as per_sample_gradients: evaluation mode, no batch coupling
        try:
            captured = _capture(self.step, obs_t, acts_t, self.layers)
        finally:
            self.step.module.train(was_training)
        if set(captured) != set(self.projection.shapes):
            raise ValueError(f"the gradient reached layers {sorted(captured)}, not {sorted(self.projection.shapes)}")
        rest = None
        if self.rest:
            rest, _ = per_sample_gradients(self.step, obs, acts, method=self.method, only=self.rest)
            rest = rest.detach()
        return self.projection.features(captured, rest)

    def __call__(self, obs: Any, acts: Any, *, chunk: int = 2048,
                 rows: Callable[[Any, slice], Any] | None = None) -> np.ndarray:
        """``(T, dim)`` float64 the features of ``T`` steps, ``chunk`` at a time (``rows``: ``(obs, slice) ->
        obs[slice]`` for observations that do not slice as arrays)."""
        take = rows if rows is not None else (lambda o, s: o[s])
        t = len(acts)
        parts = [self.features(take(obs, slice(s, min(t, s + chunk))), acts[s:s + chunk]).numpy()
                 for s in range(0, t, chunk)]
        return np.concatenate(parts) if parts else np.zeros((0, self.projection.dim))


def _full_gradients(step: Any, grads: Any, layers: dict, active: list, rest: list) -> tuple[dict, Any, bool]:
    """``({layer: (B, d_out, d_in + bias)}, (B, P_rest), whether the other layers' gradients are zero)`` from the
    flat per-sample gradients ``grads`` ``(B, P)`` (``named_parameters`` order)."""
    import torch

    rows = grads.shape[0]
    spans, at = {}, 0
    for name, p in step.module.named_parameters():
        if p.requires_grad:
            spans[name] = grads[:, at:at + p.numel()].reshape(rows, *p.shape)
            at += p.numel()
    full = {}
    for name in active:
        weight = spans[f"{name}.weight"]
        bias = spans.get(f"{name}.bias") if layers[name].bias is not None else None
        full[name] = weight if bias is None else torch.cat([weight, bias[:, :, None]], dim=2)
    unused = [spans[f"{name}.{part}"] for name in layers if name not in active
              for part, _ in layers[name].named_parameters(recurse=False)]
    zero = all(not bool(g.any()) for g in unused)
    rest_grads = torch.cat([spans[name].reshape(rows, -1) for name in rest], dim=1) if rest else None
    return full, rest_grads, zero


def kronecker_gradients(step: Any, obs: Any, acts: Any, k: int, *, seed: int, kind: str = "rademacher",
                        rows: Callable[[Any, slice], Any] | None = None) -> tuple[LayerGradients | None, str]:
    """``(the factored gradients, why)`` for ``step``'s network, or ``(None, why not)`` where its network is not made
    of linear layers or fails the check on the first :data:`CHECK_ROWS` of the steps ``obs``, ``acts`` (see the
    module docstring); ``k``: the projection's size budget, ``seed`` its seed."""
    module = step.module
    layers = linear_layers(module)
    if not layers:
        return None, "no linear layers"
    owned = {f"{name}.{part}" for name, layer in layers.items() for part, _ in layer.named_parameters(recurse=False)}
    rest = [name for name, p in module.named_parameters() if p.requires_grad and name not in owned]
    rest_count = sum(int(p.numel()) for name, p in module.named_parameters() if name in rest)
    if rest_count > REST_LIMIT:
        return None, f"{rest_count} parameters outside linear layers (more than {REST_LIMIT})"
    take = rows if rows is not None else (lambda o, s: o[s])
    sample_obs, sample_acts = take(obs, slice(0, CHECK_ROWS)), acts[:CHECK_ROWS]
    try:
        obs_t, acts_t = step.tensors(sample_obs, sample_acts)
        was_training = module.training
        module.train(False)
        try:
            captured = _capture(step, obs_t, acts_t, layers)
        finally:
            module.train(was_training)
        if not captured:
            return None, "no gradient reaches a linear layer"
        active = [name for name in layers if name in captured]
        shapes = {name: (layers[name].out_features, layers[name].in_features + (layers[name].bias is not None))
                  for name in active}
        projection = KroneckerProjection(shapes, rest_count, k, seed=seed, kind=kind)
        dense, method = per_sample_gradients(step, sample_obs, sample_acts)
        dense = dense.detach()
        full, rest_grads, zero = _full_gradients(step, dense, layers, active, rest)
        probe = LayerGradients(step, projection, {name: layers[name] for name in active}, rest, method)
        got, expected = probe.features(sample_obs, sample_acts), projection.project(full, rest_grads)
    except (ValueError, RuntimeError) as error:  # a layer off the batch's rows, or a loss vmap and autograd refuse
        return None, f"the layers' factors cannot be taken ({str(error).splitlines()[0] if str(error) else error!r})"
    scale = float(expected.norm(dim=1).max())  # the largest step's: a near-zero row is held to the same absolute
    if not zero or bool(((got - expected).norm(dim=1) > TOLERANCE * scale).any()):
        return None, "the layers' factors do not reproduce the per-sample gradients"
    return probe, f"{len(active)} linear layers, {rest_count} other parameters"

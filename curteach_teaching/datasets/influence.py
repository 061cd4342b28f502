"""Influence functions in TRAK form: how up-weighting one training step changes a policy's performance (CUPID,
Agia et al., 2025, arXiv 2506.19121).

For a policy trained to minimise ``L(theta) = sum_i l_i(theta)`` over the demonstrated steps, up-weighting step
``z`` by ``eps`` moves the optimum by ``-eps H^{-1} grad l_z`` (``H`` the Hessian of ``L``), so any objective ``J``
of the weights changes at rate ``dJ/deps = -grad J^T H^{-1} grad l_z``. CUPID's objective is the policy's expected
return; its gradient by REINFORCE is ``grad J = E_tau[R(tau) sum_t grad log pi(a_t | s_t)]`` over the policy's own
rollouts, and with ``grad log pi = -grad l`` (``l`` the per-step loss, a negative log-likelihood or for a diffusion
policy its denoising loss) the performance influence of ``z`` is

    ``psi(z) = g^T H^{-1} grad l_z``,   ``g = (1 / E) sum_{rollouts e} R_e sum_{t in e} grad l(s_t, a_t)``,

larger = up-weighting ``z`` raises the return. TRAK's form (Park et al., 2023; what CUPID computes through the
``trak`` package) replaces every gradient by its random projection ``phi = M^T grad l`` to ``k`` numbers
(:class:`~curteach_teaching.datasets.projection.RandomProjection`) and ``H`` by ``Phi^T Phi``, the projected
training gradients' Gram matrix (the empirical Fisher; a Gauss-Newton Hessian), regularised here by
``lambda = damping * trace(Phi^T Phi) / k`` (relative, so scale-free; CUPID's default is no regularisation).

* :func:`per_sample_gradients`: ``(B, P)`` gradients of every step's loss, by ``torch.func`` (``functional_call``
  + ``vmap`` + ``grad``), or a loop of one backward pass per step where ``vmap`` cannot pass through the learner;
* :func:`projected_gradients`: ``(T, k)`` their projections, chunk by chunk (memory ``chunk x P``);
* :func:`trak_inverse`: ``(Phi^T Phi + lambda I)^{-1}``;
* :func:`rollout_weights`: each rollout's ``R_e``; :func:`performance_influence`: ``psi`` of every training step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["METHODS", "performance_influence", "per_sample_gradients", "projected_gradients", "rollout_weights",
           "target_gradient", "trak_inverse"]

#: how per-sample gradients are taken
METHODS = ("auto", "vmap", "loop")


def _parameters(module: Any) -> tuple[dict, dict]:
    """``(parameters, buffers)`` of ``module`` by name, detached (the weights at which gradients are taken)."""
    params = {name: p.detach() for name, p in module.named_parameters() if p.requires_grad}
    buffers = {name: b.detach() for name, b in module.named_buffers()}
    return params, buffers


def _flat(grads: dict, names: Sequence[str], rows: int) -> Any:
    """``(B, P)`` float64 the per-row gradients of ``names``, flattened and joined in that order."""
    import torch

    return torch.cat([grads[name].reshape(rows, -1).to(torch.float64) for name in names], dim=1)


def _vmapped(module: Any, loss: Callable, obs_t: Any, acts_t: Any, only: Sequence[str] | None = None) -> Any:
    import torch
    from torch.func import functional_call, grad, vmap
    from torch.utils._pytree import tree_map

    class Wrapped(torch.nn.Module):  # functional_call swaps the weights of `module` while `loss` runs through it
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, o: Any, a: Any) -> Any:
            return loss(o, a)

    wrapped = Wrapped()
    params, buffers = _parameters(module)
    if only is not None:  # the others stay the module's own (functional_call swaps only those it is given)
        params = {name: params[name] for name in only}
    names = list(params)
    inner = {f"inner.{name}": p for name, p in params.items()}
    inner_buffers = {f"inner.{name}": b for name, b in buffers.items()}

    def one(weights: dict, o: Any, a: Any) -> Any:
        batch = tree_map(lambda x: x.unsqueeze(0), (o, a))
        return functional_call(wrapped, (weights, inner_buffers), batch).sum()

    grads = vmap(grad(one), in_dims=(None, 0, 0))(inner, obs_t, acts_t)
    rows = acts_t.shape[0]
    return _flat({name: grads[f"inner.{name}"] for name in names}, names, rows)


def _looped(module: Any, loss: Callable, obs_t: Any, acts_t: Any, only: Sequence[str] | None = None) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    named = dict(module.named_parameters())
    params = ([p for p in named.values() if p.requires_grad] if only is None else [named[name] for name in only])
    rows = acts_t.shape[0]
    out = []
    for b in range(rows):
        o, a = tree_map(lambda x, b=b: x[b:b + 1], (obs_t, acts_t))
        value = loss(o, a).sum()
        grads = torch.autograd.grad(value, params, allow_unused=True)
        out.append(torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1).to(torch.float64)
                              for g, p in zip(grads, params, strict=True)]))
    return torch.stack(out)


def per_sample_gradients(step: Any, obs: Any, acts: Any, *, method: str = "auto",
                         only: Sequence[str] | None = None) -> tuple[Any, str]:
    """``((B, P) float64, method used)``: the gradient of every step's loss with respect to ``step.module``'s
    parameters (in ``named_parameters`` order, flattened; those named in ``only``, in its order, where given), at
    its current weights.

    Args:
        step: a :class:`~curteach_teaching.learners.step_loss.StepLoss` (``module``, ``tensors``, ``loss``).
        obs: ``(B, ...)`` observations; acts: ``(B, ...)`` actions (NumPy, as the learner takes them).
        method: ``vmap`` (``torch.func``), ``loop`` (one backward pass per step) or ``auto`` (``vmap``, and the
            loop where ``vmap`` raises, as torch's distributions' argument checks make it for a categorical
            policy).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    obs_t, acts_t = step.tensors(obs, acts)
    was_training = step.module.training
    step.module.train(False)  # scored as log_likelihood scores: evaluation mode
    try:
        if method in ("auto", "vmap"):
            try:
                return _vmapped(step.module, step.loss, obs_t, acts_t, only), "vmap"
            except Exception:
                if method == "vmap":
                    raise
        return _looped(step.module, step.loss, obs_t, acts_t, only), "loop"
    finally:
        step.module.train(was_training)


def projected_gradients(step: Any, obs: Any, acts: Any, projection: Any, *, chunk: int = 256,
                        method: str = "auto", rows: Callable[[Any, slice], Any] | None = None) -> tuple[np.ndarray,
                                                                                                      str]:
    """``((T, k) float64, method used)``: ``projection`` of the per-sample gradients of ``T`` steps, ``chunk``
    steps at a time (memory ``chunk x P``).

    Args:
        step: the learner's :class:`~curteach_teaching.learners.step_loss.StepLoss`; obs, acts: ``T`` steps.
        projection: ``(B, P) -> (B, k)`` (a :class:`~curteach_teaching.datasets.projection.RandomProjection`).
        rows: ``(obs, slice) -> obs[slice]`` for observations that do not slice as arrays (a dict of arrays).
    """
    t = len(acts)
    take = rows if rows is not None else (lambda o, s: o[s])
    parts, used = [], method
    for start in range(0, t, chunk):
        part = slice(start, min(t, start + chunk))
        grads, used = per_sample_gradients(step, take(obs, part), acts[part],
                                           method=used if used != "auto" else method)
        parts.append(np.asarray(projection(grads.detach()), dtype=np.float64))
    return (np.concatenate(parts) if parts else np.zeros((0, projection.k))), used


def trak_inverse(features: np.ndarray, damping: float) -> np.ndarray:
    """``(k, k)`` ``(Phi^T Phi + lambda I)^{-1}`` of ``features`` ``Phi`` ``(T, k)``, ``lambda = damping *
    trace(Phi^T Phi) / k`` (``damping >= 0``; 0 with a singular Gram matrix: the pseudo-inverse)."""
    phi = np.asarray(features, dtype=np.float64)
    gram = phi.T @ phi
    k = gram.shape[0]
    regularised = gram + float(damping) * np.trace(gram) / k * np.eye(k)
    if damping > 0:
        return np.linalg.solve(regularised, np.eye(k))
    return np.linalg.pinv(regularised, hermitian=True)


def rollout_weights(success: Sequence | None, returns: Sequence[float], *,
                    centred: bool = False) -> tuple[np.ndarray, str]:
    """``((E,) R_e, which)``: each rollout's weight in the return's gradient: ``+1`` for a success and ``-1`` for a
    failure where ``success`` is given (``which = "success"``), else the return minus the rollouts' mean return
    (``which = "centred return"``; the mean is REINFORCE's baseline, which leaves the gradient's expectation
    unchanged and cancels the part every rollout shares). With ``centred`` the successes are centred too: ``1`` for
    a success and ``0`` for a failure, minus the rollouts' success rate (``which = "centred success"``): with few
    successes, ``+1``/``-1`` lets the many failures' gradients, whose expectation at the policy's own draws is 0,
    outweigh the successes' in ``g``."""
    if success is not None:
        flags = np.asarray(success, dtype=bool)
        if centred:
            rate = flags.astype(np.float64)
            return rate - rate.mean(), "centred success"
        return np.where(flags, 1.0, -1.0), "success"
    values = np.asarray(returns, dtype=np.float64)
    return values - values.mean(), "centred return"


def target_gradient(rollout_features: np.ndarray, episode_of_step: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``(k,)`` ``g = (1 / E) sum_e R_e sum_{t in e} phi_t``: the projected loss gradients of the rollouts' steps
    ``(R, k)``, each weighted by its rollout's ``R_e`` (``episode_of_step`` ``(R,)`` in ``0..E-1``)."""
    weights = np.asarray(weights, dtype=np.float64)
    per_step = weights[np.asarray(episode_of_step, dtype=np.int64)]
    return (per_step[:, None] * np.asarray(rollout_features, dtype=np.float64)).sum(axis=0) / len(weights)


def performance_influence(train_features: np.ndarray, target: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """``(T,)`` ``psi_t = phi_t^T H^{-1} g`` of every training step (``train_features`` ``(T, k)``, ``target``
    ``g`` ``(k,)``, ``inverse`` ``H^{-1}`` ``(k, k)``): larger = up-weighting the step raises the objective whose
    negated gradient ``g`` is (see the module docstring)."""
    return np.asarray(train_features, dtype=np.float64) @ (np.asarray(inverse) @ np.asarray(target))

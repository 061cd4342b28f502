"""The training step of ``K`` stacked Gaussian MLP policies with the gradients written out: BC's loss, one fused Adam.

:func:`~curteach_teaching.learners.batched_members.fit_members` trains the ensemble's members as one batched model.
Through autograd, a step of the default network (SB3's MLP of 2 x 64 ``tanh`` units and a diagonal Gaussian head)
records and replays about thirty graph nodes, allocates every intermediate anew, and steps Adam over seven tensors;
at a few hundred rows per member that bookkeeping cost about as much as the arithmetic. :class:`GaussianMLPStep`
does the same arithmetic by hand, into buffers allocated once:

* forward: ``a_l = b_l + h_{l-1} W_l^T`` (``torch.baddbmm`` on the ``K`` members' stacks), ``h_l = act(a_l)`` in
  place, ``tanh`` as ``2 sigmoid(2 a) - 1`` (within 2.4e-7 of torch's ``tanh``, which took about four times as long
  on this CPU: it was a quarter of the step), the head's mean ``mu = b + h_L W^T``; ``c = clamp(log_std)`` (the
  bounded head; SB3's own takes ``log_std``), ``iv = exp(-2 c)``;
* BC's loss per member (``ent_weight`` ``w``, ``A`` action dimensions, ``B`` rows, ``e = mu - a``):
  ``L = (1 / 2B) sum_{b,a} e^2 iv + sum_a c + A log sqrt(2 pi) - w sum_a (1/2 + log sqrt(2 pi) + c)``: the
  Gaussian's negative log-likelihood averaged over the rows, less ``w`` times its entropy, which depends on ``c``
  alone and so is the same closed form for every row;
* backward: ``dL/dmu = e iv / B``; ``dL/dc_a = 1 - w - (1/B) sum_b e^2 iv`` (zero where the clamp binds, as torch's
  ``clamp`` passes no gradient there); each linear layer's ``dL/dW = g^T h``, ``dL/db = sum_b g``, ``dL/dh = g W``;
  the activation's derivative from its output (``1 - h^2`` for ``tanh``, ``h > 0`` for ``ReLU``);
* the optimizer: the parameters live in one flat tensor (the hidden layers' weights stored as ``(K, in, out)``,
  the head's as ``(K, out, in)``: the layouts whose products ran fastest here) with the gradients in another of
  the same layout, so one fused Adam steps everything with one kernel. Adam is elementwise, so this is the Adam of
  every member's own tensors.

Member ``k`` is the network, loss, batches and optimizer of the autograd step; the numbers agree with it to float
rounding (products summed in another order, ``tanh`` rounded another way), not to the bit. No step reads a value
back to the host: the losses are kept on the device as two per-step sums and assembled at the end.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["GaussianMLPStep", "step_reason"]

#: activations with a derivative written here, by class name
_ACTIVATIONS = ("Tanh", "ReLU")


def _layout(members: Any) -> list[tuple[str, str]] | str:
    """``[(kind, name)]`` the MLP's layers in order (``("linear", prefix)`` or ``("act", class name)``), or the reason
    the step is not written out for ``members``."""
    if not getattr(members, "_mlp", False) or members.kind != "gaussian":
        return "not an MLP with a diagonal Gaussian head"
    layers = []
    for what, layer in members._layers:
        if what == "act":
            name = type(layer).__name__
            if name not in _ACTIVATIONS:
                return f"its activation {name} has no written-out derivative ({', '.join(_ACTIVATIONS)})"
            layers.append(("act", name))
        else:
            layers.append(("linear", layer))
    names = {f"{prefix}.{part}" for what, prefix in layers if what == "linear" for part in ("weight", "bias")}
    if set(members.params) != names | {"policy.log_std"}:
        return "its actor has parameters beyond the linear layers and log_std"
    return layers


def step_reason(members: Any) -> str | None:
    """``None`` where :class:`GaussianMLPStep` trains ``members`` (a ``BatchedMembers``); else one line why not."""
    found = _layout(members)
    return found if isinstance(found, str) else None


class GaussianMLPStep:
    """BC's training step, written out, for the stacked MLP Gaussian members (see the module docstring).

    Takes over ``members.params``: after construction each entry is a view of :attr:`flat` (linear weights as
    transposed views, ``(K, out, in)`` as before), so what the steps train is what ``members`` scores.

    Args:
        members: a ``BatchedMembers`` with :func:`step_reason` ``None``.
        batch_size: rows per member per step (``B``); steps: how many steps will be taken (the losses' rows).
        learning_rate: Adam's; ent_weight: BC's entropy weight ``w``.

    Attributes:
        flat: ``(P,)`` every parameter of every member; grad: ``(P,)`` their gradients, in the same layout.

    Raises:
        ValueError: members the step is not written out for (:func:`step_reason`).
    """

    def __init__(self, members: Any, *, batch_size: int, steps: int, learning_rate: float, ent_weight: float):
        import torch as th

        layers = _layout(members)
        if isinstance(layers, str):
            raise ValueError(f"the step is not written out for these members: {layers}")
        self.layers = layers
        self.bounded = members.bounded
        self.ent_weight = float(ent_weight)
        params = members.params
        K = members.size
        dtype, device = params["policy.log_std"].dtype, members.device
        # hidden layers' weights stored (K, in, out), the head's as SB3 keeps them, (K, out, in): the layouts in which
        # the products ran fastest on CPU (measured: the head's few outputs are the short side of its products)
        head = [prefix for what, prefix in layers if what == "linear"][-1]
        self.flipped = {prefix for what, prefix in layers if what == "linear" and prefix != head}
        stored = {name: value.transpose(1, 2) if name.removesuffix(".weight") in self.flipped else value
                  for name, value in params.items()}
        total = sum(value.numel() for value in stored.values())
        self.flat = th.empty(total, dtype=dtype, device=device).requires_grad_(True)
        self.grad = th.zeros(total, dtype=dtype, device=device)
        data = self.flat.detach()
        self.w, self.g = {}, {}  # name -> view of the parameters / the gradients, in the stored layout
        offset = 0
        for name, value in stored.items():
            n = value.numel()
            self.w[name] = data[offset:offset + n].view(value.shape)
            self.g[name] = self.grad[offset:offset + n].view(value.shape)
            self.w[name].copy_(value.detach())
            offset += n
        for name in params:  # the members now read their parameters from the flat tensor
            flipped = name.removesuffix(".weight") in self.flipped
            params[name] = self.w[name].transpose(1, 2) if flipped else self.w[name]
        self.flat.grad = self.grad  # written in place by every step; Adam reads it there
        self.optimizer = th.optim.Adam([self.flat], lr=learning_rate, fused=True)
        B = batch_size
        self.batch_size = B
        widths = [params[f"{prefix}.weight"].shape[1] for what, prefix in layers if what == "linear"]
        self.hidden = [th.empty((K, B, width), dtype=dtype, device=device) for width in widths[:-1]]
        self.back = [th.empty_like(h) for h in self.hidden]  # dL/dh of each hidden layer's output
        self.back_act = [th.empty_like(h) for h in self.hidden]  # dL/da, through the activation
        A = widths[-1]
        self.actions = A
        self.mean = th.empty((K, B, A), dtype=dtype, device=device)
        self.dmean = th.empty_like(self.mean)
        self.clamped = th.empty((K, A), dtype=dtype, device=device)
        self.keep = th.empty((K, A), dtype=th.bool, device=device)
        self.scale = th.empty((K, A), dtype=dtype, device=device)  # iv / B
        self.square = th.empty((K, A), dtype=dtype, device=device)  # (1/B) sum_b e^2 iv
        #: per step and member: sum_a (1/B) sum_b e^2 iv, and sum_a c (the loss's two varying parts)
        self.square_sums = th.empty((steps, K), dtype=dtype, device=device)
        self.log_std_sums = th.empty((steps, K), dtype=dtype, device=device)

    def step(self, index: int, x: Any, actions: Any) -> None:
        """One BC step of every member on its own batch: ``x`` ``(K, B, F)`` flattened features and ``actions``
        ``(K, B, A)``, both in the parameters' dtype; ``index`` is the step's row in :meth:`losses`."""
        import torch as th

        from curteach_teaching.learners.gaussian import LOG_STD_MAX, LOG_STD_MIN

        B = self.batch_size
        linears = [prefix for what, prefix in self.layers if what == "linear"]
        acts = [name for what, name in self.layers if what == "act"]
        with th.no_grad():
            h = x
            for i, prefix in enumerate(linears):
                out = self.hidden[i] if i < len(self.hidden) else self.mean
                weight = self.w[f"{prefix}.weight"]  # h @ W^T: W^T is the stored (K, in, out) or its transpose
                weight = weight if prefix in self.flipped else weight.transpose(1, 2)
                tanh = i < len(self.hidden) and acts[i] == "Tanh"
                # tanh(a) = 2 sigmoid(2 a) - 1, with 2 a from the product itself (a scale by 2 is exact)
                scale = 2.0 if tanh else 1.0
                th.baddbmm(self.w[f"{prefix}.bias"].unsqueeze(1), h, weight, beta=scale, alpha=scale, out=out)
                if tanh:
                    out.sigmoid_().mul_(2.0).sub_(1.0)
                elif i < len(self.hidden):
                    out.relu_()
                h = out
            log_std = self.w["policy.log_std"]
            if self.bounded:
                th.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX, out=self.clamped)
                th.eq(self.clamped, log_std, out=self.keep)  # where the clamp passes the gradient
                c = self.clamped
            else:
                c = log_std
            th.mul(c, -2.0, out=self.scale)
            self.scale.exp_().div_(B)
            error = self.mean.sub_(actions)  # e = mu - a, in place of the mean (no longer needed)
            th.mul(error, self.scale.unsqueeze(1), out=self.dmean)  # dL/dmu = e iv / B
            th.sum(error.mul_(self.dmean), dim=1, out=self.square)  # (1/B) sum_b e^2 iv
            th.sum(self.square, dim=1, out=self.square_sums[index])
            th.sum(c, dim=1, out=self.log_std_sums[index])
            grad_log_std = self.g["policy.log_std"]
            th.neg(self.square, out=grad_log_std).add_(1.0 - self.ent_weight)
            if self.bounded:
                grad_log_std.mul_(self.keep)
            g = self.dmean
            for i in range(len(linears) - 1, -1, -1):
                prefix = linears[i]
                below = self.hidden[i - 1] if i > 0 else x
                weight, flipped = self.w[f"{prefix}.weight"], prefix in self.flipped
                if flipped:  # dL/dW^T = h^T g, (K, in, out)
                    th.bmm(below.transpose(1, 2), g, out=self.g[f"{prefix}.weight"])
                else:  # dL/dW = g^T h, (K, out, in)
                    th.bmm(g.transpose(1, 2), below, out=self.g[f"{prefix}.weight"])
                th.sum(g, dim=1, out=self.g[f"{prefix}.bias"])
                if i == 0:
                    break
                th.bmm(g, weight.transpose(1, 2) if flipped else weight, out=self.back[i - 1])  # dL/dh = g W
                if acts[i - 1] == "Tanh":
                    th.ops.aten.tanh_backward.grad_input(self.back[i - 1], below, grad_input=self.back_act[i - 1])
                else:
                    th.ops.aten.threshold_backward.grad_input(self.back[i - 1], below, 0,
                                                              grad_input=self.back_act[i - 1])
                g = self.back_act[i - 1]
        self.optimizer.step()

    def losses(self) -> Any:
        """``(steps, K)`` float64 on the host: every member's BC loss at every step, before that step's update."""
        import numpy as np

        half_log_two_pi = math.log(math.sqrt(2 * math.pi))
        square = self.square_sums.double().cpu().numpy()
        log_std = self.log_std_sums.double().cpu().numpy()
        A = self.actions
        entropy = A * (0.5 + half_log_two_pi) + log_std
        return np.asarray(0.5 * square + log_std + A * half_log_two_pi - self.ent_weight * entropy)

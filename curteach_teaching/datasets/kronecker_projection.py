"""A seeded Kronecker-factored random projection of per-sample gradients of linear layers (LoGra: Choe et al., 2024,
"What is your data worth to GPT?"; TRAK's structured projections, Park et al., 2023).

A linear layer ``y = W x + b`` (``W`` ``(d_out, d_in)``) gets, from one sample, the weight-and-bias gradient
``G = delta (x, 1)^T`` ``(d_out, d_in + 1)``: the outer product of the loss's gradient at the layer's output
``delta`` and its input with a 1 appended (the bias's column); summed over the calls where a layer runs more than
once for a sample (the diffusion loss runs its denoiser once per fixed noise pair). Projected by ``P_out (x) P_in``
(``P_out`` ``(k_out, d_out)``, ``P_in`` ``(k_in, d_in + 1)``), ``vec(G)`` becomes ``P_out G P_in^T =
sum_calls (P_out delta) (P_in (x, 1))^T``: ``k_out x k_in`` numbers, computed from the two small projections
without ever forming ``G``. That is :meth:`KroneckerProjection.features`; :meth:`KroneckerProjection.project`
applies the same map to full gradients (a check, and the tests' reference).

Each factor is the transposed ``M`` of a :class:`~curteach_teaching.datasets.projection.RandomProjection` (entries
``+-1 / sqrt(k_f)`` or ``N(0, 1 / k_f)``, so ``E[P^T P] = I``), or the identity where the factor's side ``d`` is at
most ``k_f`` (exact, and cheaper than a random ``d``-to-``k_f`` map). The factors are independent, so
``E[(P_out (x) P_in)^T (P_out (x) P_in)] = E[P_out^T P_out] (x) E[P_in^T P_in] = I``: inner products of gradients are
kept in expectation, as by the dense projection. The parameters outside linear layers (SB3's Gaussian ``log_std``)
are projected densely, their own :class:`RandomProjection` (or the identity where they are few).

**Sizes.** One side ``r`` for all: ``k_out = min(d_out, r)``, ``k_in = min(d_in + 1, r)`` per layer and
``min(P_rest, r^2)`` for the rest, with ``r`` the largest for which the total is at most ``k``
(:func:`factor_side`; at least 1, so that each block has a number).

Seeds: layer ``i``'s output factor from ``SeedSequence([seed, i, 0])``, its input factor ``[seed, i, 1]``, the rest
``[seed, len(layers), 0]``; the projection depends on the seed and the layers' shapes only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from curteach_teaching.datasets.projection import RandomProjection

__all__ = ["KroneckerProjection", "factor_side", "total_size"]


def total_size(shapes: Sequence[tuple[int, int]], rest: int, r: int) -> int:
    """The number of features at side ``r``: ``sum min(d_out, r) min(d_in, r) + min(rest, r^2)`` over ``shapes``
    ``(d_out, d_in)`` (``d_in`` counts the bias's column)."""
    return sum(min(o, r) * min(i, r) for o, i in shapes) + min(int(rest), r * r)


def factor_side(shapes: Sequence[tuple[int, int]], rest: int, k: int) -> int:
    """The largest side ``r >= 1`` whose :func:`total_size` is at most ``k`` (1 where none is)."""
    largest = max([1, *(max(o, i) for o, i in shapes), int(np.ceil(np.sqrt(max(int(rest), 1))))])
    r = 1
    for side in range(1, largest + 1):  # total_size grows with r, so the first side over k ends the search
        if total_size(shapes, rest, side) > k:
            break
        r = side
    return r


def _seed(*entropy: int) -> int:
    return int(np.random.SeedSequence(list(entropy)).generate_state(1)[0])


class KroneckerProjection:
    """The projection of linear layers' per-sample gradients, factor by factor (see the module docstring).

    Args:
        shapes: ``{layer: (d_out, d_in)}`` of the projected linear layers, in a fixed order (``d_in`` counts the
            bias's column where the layer has a bias).
        rest: ``P_rest``, the other parameters' count (projected densely); k: the size budget (>= 1).
        seed: the factors' seed; kind: ``rademacher`` or ``gaussian``.

    Attributes:
        side: ``r``; dim: the number of features (at most ``k`` where ``k`` allows one per block).
    """

    def __init__(self, shapes: Mapping[str, tuple[int, int]], rest: int, k: int, *, seed: int = 0,
                 kind: str = "rademacher"):
        if int(k) < 1 or int(rest) < 0 or not shapes:
            raise ValueError(f"a Kronecker projection needs layers, k >= 1 and rest >= 0; got {len(shapes)} layers, "
                             f"k {k}, rest {rest}")
        self.shapes = {name: (int(o), int(i)) for name, (o, i) in shapes.items()}
        self.rest, self.k, self.seed, self.kind = int(rest), int(k), int(seed), kind
        self.side = factor_side(list(self.shapes.values()), self.rest, self.k)
        self.dim = total_size(list(self.shapes.values()), self.rest, self.side)
        self._factors = {}
        for index, (name, (d_out, d_in)) in enumerate(self.shapes.items()):
            self._factors[name] = (self._factor(d_out, seed, index, 0), self._factor(d_in, seed, index, 1))
        self._rest = self._factor(self.rest, seed, len(self.shapes), 0, size=self.side**2) if self.rest else None

    def _factor(self, d: int, *entropy: int, size: int | None = None) -> Any:
        """``(d, k_f)`` float64 ``P^T`` of one factor: the identity where ``d <= k_f``, else a seeded ``M``."""
        import torch

        k_f = min(d, self.side if size is None else size)
        if k_f == d:
            return torch.eye(d, dtype=torch.float64)
        return RandomProjection(d, k_f, seed=_seed(*entropy), kind=self.kind, block=max(d, 1))._matrix_block(0)

    def factors(self, name: str) -> tuple[Any, Any]:
        """``(P_out (k_out, d_out), P_in (k_in, d_in))`` float64 of layer ``name``."""
        out, inp = self._factors[name]
        return out.T, inp.T

    def rest_matrix(self) -> Any:
        """``(k_rest, P_rest)`` float64, the other parameters' projection (``None`` without any)."""
        return None if self._rest is None else self._rest.T

    def features(self, captured: Mapping[str, Sequence[tuple[Any, Any]]], rest: Any = None) -> Any:
        """``(B, dim)`` float64 features of ``B`` samples from their layers' factors, never forming a gradient.

        Args:
            captured: ``{layer: [(inputs (B, n, d_in), deltas (B, n, d_out)), ...]}``: per call of the layer, each
                sample's ``n`` rows of inputs (the bias's 1 appended) and output gradients; every layer of
                :attr:`shapes`.
            rest: ``(B, P_rest)`` the other parameters' per-sample gradients (``None`` where ``P_rest`` is 0).
        """
        import torch

        blocks = []
        for name in self.shapes:
            out, inp = self._factors[name]
            block = None
            for inputs, deltas in captured[name]:
                term = torch.einsum("bno,bni->boi", deltas.to(torch.float64) @ out, inputs.to(torch.float64) @ inp)
                block = term if block is None else block + term
            blocks.append(block.reshape(block.shape[0], -1))
        if self._rest is not None:
            blocks.append(torch.as_tensor(rest).to(torch.float64) @ self._rest)
        return torch.cat(blocks, dim=1)

    def project(self, gradients: Mapping[str, Any], rest: Any = None) -> Any:
        """``(B, dim)`` float64 the same features from full per-sample gradients: ``{layer: (B, d_out, d_in)}``
        (the weight's gradient with the bias's as its last column) and ``rest`` ``(B, P_rest)``."""
        import torch

        blocks = []
        for name in self.shapes:
            out, inp = self._factors[name]
            g = torch.as_tensor(gradients[name]).to(torch.float64)
            blocks.append((out.T @ g @ inp).reshape(g.shape[0], -1))  # P_out G P_in^T, row-major: (x) order
        if self._rest is not None:
            blocks.append(torch.as_tensor(rest).to(torch.float64) @ self._rest)
        return torch.cat(blocks, dim=1)

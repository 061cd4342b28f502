"""A seeded random projection of long vectors (per-sample gradients) to ``k`` numbers, in bounded memory (TRAK's
random projection; Park et al., 2023).

:class:`RandomProjection` maps ``x`` ``(P,)`` to ``M^T x`` ``(k,)`` with ``M`` a ``(P, k)`` matrix of independent
entries of mean 0 and variance ``1 / k``: Rademacher (``+-1 / sqrt(k)``, the default) or Gaussian
(``N(0, 1 / k)``). Then ``E[(M^T x) . (M^T y)] = x^T E[M M^T] y = x . y``: inner products are kept in
expectation, with variance ``(|x|^2 |y|^2 + (x . y)^2) / k`` for Gaussian entries and that minus
``2 sum_i x_i^2 y_i^2 / k`` for Rademacher ones (:func:`inner_product_variance`), so the error shrinks as
``1 / sqrt(k)``.

``M`` is never held whole: its rows come in blocks of :attr:`RandomProjection.block` rows, block ``j`` drawn by a
``torch.Generator`` seeded from ``SeedSequence([seed, j])`` alone, so ``M`` depends on the seed, ``P`` and ``k``
only (never on how many vectors are projected at once, nor in which order). Blocks are kept in memory up to
``cache_bytes`` and drawn again past it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["KINDS", "RandomProjection", "inner_product_variance"]

#: the entries' distributions
KINDS = ("rademacher", "gaussian")


def inner_product_variance(x: np.ndarray, y: np.ndarray, k: int, kind: str = "rademacher") -> float:
    """The variance of ``(M^T x) . (M^T y)`` over the draws of ``M`` ``(P, k)`` (see the module docstring)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    variance = (x @ x) * (y @ y) + (x @ y) ** 2
    if kind == "rademacher":
        variance -= 2.0 * float(np.sum(x**2 * y**2))
    return float(variance) / k


class RandomProjection:
    """``x -> M^T x`` for a seeded ``(P, k)`` matrix ``M`` (see the module docstring).

    Args:
        dim: ``P``, the vectors' length; k: the projected length (>= 1).
        seed: the matrix's seed; kind: ``rademacher`` or ``gaussian``.
        block: rows of ``M`` per drawn block; cache_bytes: how many bytes of blocks to keep between calls.
    """

    def __init__(self, dim: int, k: int, *, seed: int = 0, kind: str = "rademacher", block: int = 4096,
                 cache_bytes: int = 256 * 2**20):
        if kind not in KINDS:
            raise ValueError(f"projection kind must be one of {', '.join(KINDS)}; got {kind!r}")
        if int(dim) < 1 or int(k) < 1 or int(block) < 1:
            raise ValueError(f"a projection needs dim, k and block >= 1; got {dim}, {k}, {block}")
        self.dim, self.k, self.seed, self.kind, self.block = int(dim), int(k), int(seed), kind, int(block)
        self._keep = max(0, int(cache_bytes)) // (self.block * self.k * 8)  # blocks kept in memory
        self._blocks: dict = {}

    def _matrix_block(self, j: int) -> Any:
        """``(rows, k)`` float64 rows ``j * block ...`` of ``M``."""
        import torch

        if j in self._blocks:
            return self._blocks[j]
        rows = min(self.block, self.dim - j * self.block)
        state = np.random.SeedSequence([self.seed, j]).generate_state(1, dtype=np.uint64)[0]
        generator = torch.Generator().manual_seed(int(state) >> 1)
        if self.kind == "rademacher":
            signs = torch.randint(0, 2, (rows, self.k), generator=generator, dtype=torch.int64)
            block = (2.0 * signs - 1.0).to(torch.float64) / np.sqrt(self.k)
        else:
            block = torch.randn((rows, self.k), generator=generator, dtype=torch.float64) / np.sqrt(self.k)
        if len(self._blocks) < self._keep:
            self._blocks[j] = block
        return block

    def __call__(self, vectors: Any) -> Any:
        """``(B, k)`` float64 ``vectors @ M`` of ``vectors`` ``(B, P)`` (a torch tensor or a NumPy array; the result
        is of the same kind, on the CPU)."""
        import torch

        as_numpy = isinstance(vectors, np.ndarray)
        x = torch.as_tensor(vectors).to("cpu", torch.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"project (B, {self.dim}) vectors; got shape {tuple(x.shape)}")
        out = torch.zeros((x.shape[0], self.k), dtype=torch.float64)
        for j, start in enumerate(range(0, self.dim, self.block)):
            out += x[:, start:start + self.block] @ self._matrix_block(j)
        return out.numpy() if as_numpy else out

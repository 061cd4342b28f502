"""A pool's demonstrations resident on the training device: put there once, batches gathered there by index.

Copying every batch from host memory to a GPU, and converting it on the way, costs more than a small network's
step. :class:`ResidentPool` copies the flattened observations, actions and time steps to the device once (they are
small: the navigation pool's 110k pairs, BabyAI's and Meta-World's pools fit easily); an epoch's batches (host
index arrays planned by the curriculum) go to the device in one copy per epoch, and each batch is gathered there
(``tensor[index]``). On the CPU the tensors share the arrays' memory (``torch.as_tensor``): nothing is copied, and
a batch holds the same values, of the same dtype, as the array's rows (``array[index]``), so every number computed
from it is the same.

:meth:`ResidentPool.gathered` gathers consecutive batches of an epoch in blocks (up to :data:`BLOCK_BYTES` of rows),
two ``index_select`` calls per block instead of two per batch, and hands each batch out as a view of its block: on a
small network those calls cost about as much as a layer. A batch joins a block only where its rows start on a
:data:`ALIGNMENT`-byte boundary of the block, the alignment of a fresh allocation, so every kernel reads it at the
alignment it would read a batch gathered alone (a BLAS may choose its code path by the data's alignment).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["ALIGNMENT", "BLOCK_BYTES", "ResidentPool"]

#: the most bytes of rows :meth:`ResidentPool.gathered` gathers in one block (a batch larger than this is one block)
BLOCK_BYTES = 1 << 22
#: the byte alignment of torch's CPU allocations (c10's ``gAlignment``), which a batch's offset in a block keeps
ALIGNMENT = 64


def _to_device(array: Any, device: Any) -> Any:
    import torch as th

    array = np.ascontiguousarray(array)
    if not array.flags.writeable:  # torch warns about tensors over read-only memory; a copy is made once
        array = array.copy()
    return th.as_tensor(array).to(device)


class ResidentPool:
    """The transitions of a pool as tensors on one device.

    Args:
        obs: ``(T, ...)`` observations (array or imitation ``DictObs`` of arrays).
        acts: ``(T, ...)`` actions.
        time_step: ``(T,)`` int, each transition's position in its demonstration.
        device: the training device (the policy's).

    Attributes:
        device: the ``torch.device``; obs: a tensor or ``{key: tensor}``; acts, time_step: tensors.
    """

    def __init__(self, obs: Any, acts: np.ndarray, time_step: np.ndarray, device: Any):
        import torch as th
        from imitation.data import types

        self.device = th.device(device)
        self.obs = types.map_maybe_dict(lambda x: _to_device(x, self.device), types.maybe_unwrap_dictobs(obs))
        self.acts = _to_device(acts, self.device)
        self.time_step = _to_device(np.asarray(time_step, dtype=np.int64), self.device)
        self._weights: Any = None

    def set_weights(self, weights: np.ndarray | None) -> None:
        """``(T,)`` per-transition loss weights, kept on the device as float32 (as
        :class:`~curteach_teaching.curriculum.loss.WeightedLoss` uses them), or ``None``."""
        self._weights = None if weights is None else _to_device(np.asarray(weights, dtype=np.float32), self.device)

    def indices(self, batches: Sequence[np.ndarray]) -> list:
        """The batches' ``(b_k,)`` host index arrays as int64 tensors on the device, in one copy."""
        import torch as th

        if not batches:
            return []
        return list(th.split(self._flat_index(batches), [len(b) for b in batches]))

    def _flat_index(self, batches: Sequence[np.ndarray]) -> Any:
        """The batches' host index arrays concatenated, as one int64 tensor on the device (one copy)."""
        return _to_device(np.concatenate([np.asarray(b, dtype=np.int64) for b in batches]), self.device)

    def gathered(self, batches: Sequence[np.ndarray]) -> Iterator[tuple[Any, Any, Any]]:
        """``(index, obs, acts)`` of each of the batches' host index arrays in turn, as :meth:`indices` and
        :meth:`batch` give them, the same values, gathered a block of consecutive batches at a time (see the module
        docstring); lazily, so that one block is held at a time."""
        import torch as th

        if not batches:
            return
        sizes = [len(b) for b in batches]
        flat = self._flat_index(batches)
        tensors = [*(self.obs.values() if isinstance(self.obs, dict) else [self.obs]), self.acts]
        row_bytes = [t[0].numel() * t.element_size() if len(t) else 0 for t in tensors]
        cap = max(1, BLOCK_BYTES // max(1, sum(row_bytes)))
        first = start = 0
        while first < len(sizes):
            last, rows = first + 1, sizes[first]
            # the next batch joins while the block stays under the cap and its rows start aligned in every tensor
            while (last < len(sizes) and rows + sizes[last] <= cap
                   and all(rows * width % ALIGNMENT == 0 for width in row_bytes)):
                rows += sizes[last]
                last += 1
            index = flat[start:start + rows]
            parts = [th.split(th.index_select(t, 0, index), sizes[first:last]) for t in tensors]
            for k, batch_index in enumerate(th.split(index, sizes[first:last])):
                if isinstance(self.obs, dict):
                    obs = {key: parts[i][k] for i, key in enumerate(self.obs)}
                else:
                    obs = parts[0][k]
                yield batch_index, obs, parts[-1][k]
            first, start = last, start + rows

    def batch(self, index: Any) -> tuple[Any, Any]:
        """``(obs (b, ...), acts (b, ...))`` of the rows ``index`` (an int64 tensor on the device)."""
        import torch as th

        # index_select: the rows of tensor[index], without advanced indexing's general machinery
        obs = self.obs
        obs = ({key: th.index_select(value, 0, index) for key, value in obs.items()} if isinstance(obs, dict)
               else th.index_select(obs, 0, index))
        return obs, th.index_select(self.acts, 0, index)

    def steps(self, index: Any) -> Any:
        """``(b,)`` the time steps of the rows ``index``."""
        import torch as th

        return th.index_select(self.time_step, 0, index)

    def weights(self, index: Any) -> Any:
        """``(b,)`` float32 loss weights of the rows ``index`` (:meth:`set_weights` first)."""
        if self._weights is None:
            raise RuntimeError("no transition weights were set")
        import torch as th

        return th.index_select(self._weights, 0, index)

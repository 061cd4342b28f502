"""A pool's demonstrations resident on the training device: put there once, batches gathered there by index.

Copying every batch from host memory to a GPU, and converting it on the way, costs more than a small network's
step. :class:`ResidentPool` copies the flattened observations, actions and time steps to the device once (they are
small: the navigation pool's 110k pairs, BabyAI's and Meta-World's pools fit easily); an epoch's batches (host
index arrays planned by the curriculum) go to the device in one copy per epoch, and each batch is gathered there
(``tensor[index]``). On the CPU the tensors share the arrays' memory (``torch.as_tensor``): nothing is copied, and
a batch holds the same values, of the same dtype, as the array's rows (``array[index]``), so every number computed
from it is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ResidentPool"]


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
        flat = _to_device(np.concatenate([np.asarray(b, dtype=np.int64) for b in batches]), self.device)
        return list(th.split(flat, [len(b) for b in batches]))

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

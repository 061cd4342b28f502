"""How many demonstrations an epoch keeps: the pacing schedule of the paper's Algorithm 2.

A schedule is any callable ``(epoch, n_epochs, n_items) -> X_e`` (epoch 1-based); :func:`kept_count` checks what it
returns. :class:`LinearPacing` is the paper's, :class:`FullPacing` keeps everything (what Agn does). Only the use
``order`` reads a schedule (:mod:`~curteach_teaching.curriculum.uses`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from curteach_envs._util import check_positive

__all__ = ["FullPacing", "LinearPacing", "PacingSchedule", "check_pacing", "kept_count"]

#: ``(epoch, n_epochs, n_items) -> X_e``, the number of demonstrations kept in epoch ``epoch`` (1-based) of
#: ``n_epochs``.
PacingSchedule = Callable[[int, int, int], int]


@dataclass(frozen=True)
class LinearPacing:
    """The paper's linear pacing: ``X_e = int(b N + min(1, e / (a E)) (1 - b) N)`` for epoch ``e = 1..E``.

    Args:
        a: the fraction of the ``E`` epochs after which every demonstration is used, in ``(0, inf)`` (default 0.8).
        b: the fraction used from the start, in ``[0, 1]`` (default 0.5).
    """

    a: float = 0.8
    b: float = 0.5

    def __post_init__(self) -> None:
        check_positive("pacing a", self.a)
        if not (np.isfinite(self.b) and 0.0 <= self.b <= 1.0):
            raise ValueError(f"pacing b must be in [0, 1]; got {self.b!r}")

    def __call__(self, epoch: int, n_epochs: int, n_items: int) -> int:
        """``X_e`` (at least 1) of ``n_items`` for ``epoch`` in ``1..n_epochs``."""
        _check_epoch(epoch, n_epochs)
        growth = min(1.0, epoch / (self.a * n_epochs))
        return max(1, int(self.b * n_items + growth * (1.0 - self.b) * n_items))


@dataclass(frozen=True)
class FullPacing:
    """Every demonstration in every epoch (what Agn uses)."""

    def __call__(self, epoch: int, n_epochs: int, n_items: int) -> int:
        """``n_items`` for every ``epoch`` in ``1..n_epochs``."""
        _check_epoch(epoch, n_epochs)
        return n_items


def _check_epoch(epoch: int, n_epochs: int) -> None:
    if not 1 <= epoch <= n_epochs:
        raise ValueError(f"epoch must be in [1, n_epochs = {n_epochs}]; got {epoch}")


def check_pacing(pacing: PacingSchedule | None) -> PacingSchedule | None:
    """``pacing`` itself if it is ``None`` (the default schedule) or callable, else ``ValueError``."""
    if pacing is not None and not callable(pacing):
        raise ValueError(f"pacing must be a callable (epoch, n_epochs, n_items) -> int; got {pacing!r}")
    return pacing


def kept_count(pacing: PacingSchedule, epoch: int, n_epochs: int, n_items: int) -> int:
    """``X_e = pacing(epoch, n_epochs, n_items)``, checked to be an integer in ``[1, n_items]``, else ``ValueError``.

    Args:
        pacing: the schedule.
        epoch, n_epochs: the position in it (epoch 1-based).
        n_items: N.
    """
    keep = pacing(epoch, n_epochs, n_items)
    if isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or not 1 <= keep <= n_items:
        raise ValueError(f"the pacing schedule must return an integer in [1, {n_items}]; got {keep!r}")
    return int(keep)

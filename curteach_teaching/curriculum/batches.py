"""How an epoch's selected demonstrations become optimizer steps: batches of transitions or of whole demonstrations.

A batcher turns the selection ``(X_e,)`` of an epoch into a list of ``(b,)`` arrays of flat transition indices (see
:class:`~curteach_teaching.curriculum.index.DemonstrationIndex`), one per optimizer step, in training order. It
draws its shuffles from the generator it is given, and nothing else, so a run is reproducible from that generator.

* :class:`TransitionBatches` (imitation's way): the selected demonstrations' transitions are shuffled and cut into
  batches of ``batch_size``; with ``remainder="partial"`` the ``r`` left-over transitions form one more, smaller
  batch; with ``"drop"`` they wait for a later epoch's shuffle.
* :class:`DemonstrationBatches` (the original navigation code): the selected demonstrations are permuted and cut
  into consecutive groups of ``demos_per_batch`` whole demonstrations; a batch is the transitions of its group,
  demonstration after demonstration, each in time order. ``"partial"`` keeps the last, smaller group, ``"drop"``
  drops it.

Either way a selection smaller than one batch is one batch of its size. Any object with ``plan`` and ``config``
(:class:`Batcher`) can replace them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.curriculum.index import DemonstrationIndex

__all__ = ["BATCH_UNITS", "REMAINDERS", "Batcher", "DemonstrationBatches", "FixedStepBatches", "TransitionBatches",
           "make_batcher"]

#: What happens to an epoch's last, smaller batch: trained (``"partial"``) or dropped (``"drop"``).
REMAINDERS = ("partial", "drop")
#: What one batch is made of: shuffled transitions (imitation's way) or whole demonstrations (the original's).
BATCH_UNITS = ("transitions", "demonstrations")


class Batcher(Protocol):
    """Cuts an epoch's selection into batches of flat transition indices."""

    def plan(self, index: DemonstrationIndex, selected: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """The batches of one epoch: a list of ``(b,)`` int64 transition indices, in training order.

        Args:
            index: the demonstrations' layout.
            selected: ``(X_e,)`` the demonstrations to train on (X_e >= 1).
            rng: the generator of the epoch's shuffles.
        """

    def config(self) -> dict:
        """``{"batch_unit", "demos_per_batch", "remainder"}``: what a saved run must share with this one."""


def _check_remainder(remainder: str) -> None:
    if remainder not in REMAINDERS:
        raise ValueError(f"remainder must be one of {REMAINDERS}; got {remainder!r}")


@dataclass(frozen=True)
class TransitionBatches:
    """Shuffled transitions in batches of ``batch_size`` (>= 1); ``remainder`` as the module docstring says."""

    batch_size: int
    remainder: str = "partial"

    def __post_init__(self) -> None:
        check_int("batch_size", self.batch_size, 1)
        _check_remainder(self.remainder)

    def plan(self, index: DemonstrationIndex, selected: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """Shuffle the selected demonstrations' transitions with ``rng`` and cut them into batches."""
        transitions = index.transitions(selected)
        transitions = transitions[rng.permutation(transitions.size)]
        size = self.batch_size
        if transitions.size < size:  # smaller than one batch: one (partial) batch of its size
            return [transitions]
        n_full = transitions.size // size
        batches = [transitions[i * size : (i + 1) * size] for i in range(n_full)]
        if self.remainder == "partial" and transitions.size > n_full * size:
            batches.append(transitions[n_full * size :])
        return batches

    def config(self) -> dict:
        """``{"batch_unit": "transitions", "demos_per_batch": None, "remainder": ...}``."""
        return {"batch_unit": "transitions", "demos_per_batch": None, "remainder": self.remainder}


@dataclass(frozen=True)
class DemonstrationBatches:
    """Permuted whole demonstrations in groups of ``demos_per_batch`` (>= 1); ``remainder`` as the module docstring
    says."""

    demos_per_batch: int
    remainder: str = "partial"

    def __post_init__(self) -> None:
        check_int("demos_per_batch", self.demos_per_batch, 1)
        _check_remainder(self.remainder)

    def plan(self, index: DemonstrationIndex, selected: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """Permute the selected demonstrations with ``rng``; one batch per consecutive group of them."""
        order = np.asarray(selected)[rng.permutation(len(selected))]
        k = self.demos_per_batch
        n_demos = order.size if order.size <= k or self.remainder == "partial" else order.size // k * k
        order = order[:n_demos]
        ends = np.cumsum(index.lengths[order])[k - 1 : n_demos - 1 : k]  # transitions before each group boundary
        return np.split(index.transitions(order), ends)

    def config(self) -> dict:
        """``{"batch_unit": "demonstrations", "demos_per_batch": ..., "remainder": ...}``."""
        return {"batch_unit": "demonstrations", "demos_per_batch": self.demos_per_batch, "remainder": self.remainder}


@dataclass(frozen=True)
class FixedStepBatches:
    """Exactly ``steps`` batches of ``batch_size`` shuffled transitions per epoch, whatever the selection's size: an
    equal budget of gradient steps for every curriculum (pacing decides *which* transitions, not how many steps).

    The selected transitions are shuffled and laid end to end, shuffled anew each time they run out, until the
    epoch's ``steps * batch_size`` are drawn: a small selection is seen several times in an epoch, a large one at
    most once per pass.
    """

    batch_size: int
    steps: int

    def __post_init__(self) -> None:
        check_int("batch_size", self.batch_size, 1)
        check_int("steps", self.steps, 1)

    def plan(self, index: DemonstrationIndex, selected: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """``steps`` arrays of ``(batch_size,)`` transition indices from the selected demonstrations."""
        transitions = index.transitions(selected)
        need = self.steps * self.batch_size
        passes = -(-need // transitions.size)
        drawn = np.concatenate([transitions[rng.permutation(transitions.size)] for _ in range(passes)])[:need]
        return np.split(drawn, self.steps)

    def config(self) -> dict:
        """``{"batch_unit": "transitions", "demos_per_batch": None, "remainder": None, "steps_per_epoch": ...}``."""
        return {"batch_unit": "transitions", "demos_per_batch": None, "remainder": None,
                "steps_per_epoch": self.steps}


def make_batcher(batch_unit: str, size: int, remainder: str = "partial") -> TransitionBatches | DemonstrationBatches:
    """:class:`TransitionBatches` of ``size`` transitions or :class:`DemonstrationBatches` of ``size``
    demonstrations, by ``batch_unit`` (one of :data:`BATCH_UNITS`)."""
    if batch_unit not in BATCH_UNITS:
        raise ValueError(f"batch_unit must be one of {BATCH_UNITS}; got {batch_unit!r}")
    if batch_unit == "demonstrations":
        return DemonstrationBatches(size, remainder)
    return TransitionBatches(size, remainder)

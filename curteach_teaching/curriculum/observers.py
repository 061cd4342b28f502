"""The public per-step seam of a curriculum: what each epoch plans and each optimizer step trains on.

A :class:`~curteach_teaching.curriculum.core.Curriculum` tells its observers, in the order they were added,

* ``on_epoch_start(plan)``: the epoch's :class:`EpochPlan` (its selection and every batch it is about to train,
  after any ``max_steps`` cut), before its first step;
* ``on_batch(batch)``: the :class:`BatchInfo` of the batch the trainer has just taken its optimizer step on (the
  same object as in the plan), after the step and before the hooks due at that step;
* ``on_epoch_end(record)``: the epoch's :class:`~curteach_teaching.curriculum.selection.EpochRecord`, once it is
  logged.

An observer is any object with some of these methods (subclass :class:`CurriculumObserver` to get no-op defaults).
It sees the run; it must not change the curriculum's generator or selection. An exception raised by an observer
stops training there (e.g. a divergence check), as one raised by a hook does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.selection import EpochRecord, EpochSelection

__all__ = ["OBSERVER_METHODS", "BatchInfo", "CurriculumObserver", "EpochMetricMean", "EpochPlan", "MetricMean",
           "check_observer"]

#: The methods a curriculum calls on its observers (each optional).
OBSERVER_METHODS = ("on_epoch_start", "on_batch", "on_epoch_end")


@dataclass(frozen=True, eq=False)
class BatchInfo:
    """One batch of a curriculum epoch: one optimizer step.

    Attributes:
        epoch: the curriculum epoch it belongs to (1-based, counted over all ``train`` calls).
        step: the global optimizer step it becomes once trained (1-based; 1 is the run's first step).
        position: its place in the epoch's batches (0-based).
        transitions: ``(b,)`` int64 flat transition indices, in the order the trainer receives them.
        index: the demonstrations' layout (:class:`DemonstrationIndex`) the indices refer to.
        metrics: the trainer's training metrics of this step, ``{name: float}``, filled right after the step for a
            step trainer that reports them (``step_metrics``; BC's and DAgger's: ``loss``, ``neglogp``, ``entropy``,
            ``prob_true_act``, ...); empty before the step and for trainers that report none.
    """

    epoch: int
    step: int
    position: int
    transitions: np.ndarray
    index: DemonstrationIndex = field(repr=False)
    metrics: dict = field(default_factory=dict, repr=False)

    @property
    def size(self) -> int:
        """b, the transitions in the batch."""
        return int(self.transitions.size)

    @cached_property
    def demonstrations(self) -> np.ndarray:
        """``(k,)`` the demonstrations with transitions in the batch, in order of first appearance (for whole-
        demonstration batches: the batch's demonstrations in training order)."""
        return self.index.demonstrations_in(self.transitions)

    @property
    def time_steps(self) -> np.ndarray:
        """``(b,)`` the time step of each transition in its demonstration (0 for its first action)."""
        return self.index.time_step[self.transitions]


@dataclass(frozen=True, eq=False)
class EpochPlan:
    """What one curriculum epoch will train, decided before its first step.

    Attributes:
        epoch: the epoch (1-based); n_epochs: the length of the pacing schedule it is planned in.
        selection: the :class:`~curteach_teaching.curriculum.selection.EpochSelection` (selected demonstrations,
            most preferred first, the preference and the learner difficulty they came from).
        batches: the :class:`BatchInfo` of every step to take, in training order (cut at ``max_steps``).
    """

    epoch: int
    n_epochs: int
    selection: EpochSelection
    batches: tuple[BatchInfo, ...]

    def __iter__(self):
        """The batches, in training order."""
        return iter(self.batches)

    def __len__(self) -> int:
        """The number of optimizer steps planned."""
        return len(self.batches)


class CurriculumObserver:
    """Base class of an observer with no-op methods; override the ones you need (see the module docstring)."""

    def on_epoch_start(self, plan: EpochPlan) -> None:
        """Called with each epoch's plan before its first step."""

    def on_batch(self, batch: BatchInfo) -> None:
        """Called after each optimizer step with the batch it trained on."""

    def on_epoch_end(self, record: EpochRecord) -> None:
        """Called with each epoch's record once it is logged."""


class MetricMean(CurriculumObserver):
    """The mean of one training metric (``batch.metrics[name]``, e.g. ``"loss"``) over the steps since the last
    :meth:`close`.

    Args:
        name: the metric (:attr:`BatchInfo.metrics`).
    """

    def __init__(self, name: str = "loss"):
        self.name = name
        self._values: list[float] = []

    def on_batch(self, batch: BatchInfo) -> None:
        """Keep the step's value of the metric, if it has one."""
        if self.name in batch.metrics:
            self._values.append(float(batch.metrics[self.name]))

    def close(self) -> float:
        """The mean of the values kept since the last call (NaN without values); starts anew."""
        mean = float(np.mean(self._values)) if self._values else float("nan")
        self._values = []
        return mean

    def state_dict(self) -> dict:
        """``{"values": [...]}``: the values not yet closed."""
        return {"values": list(self._values)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self._values = [float(v) for v in state["values"]]


class EpochMetricMean(MetricMean):
    """The mean of one training metric over each epoch's steps (a :class:`MetricMean` closed at every epoch's end).

    One instance may watch several curricula in turn (DAgger's rounds each train a new one): the epochs are counted
    in the order they end.

    Args:
        name: the metric (:attr:`BatchInfo.metrics`).

    Attributes:
        per_epoch: the mean of every epoch ended so far; NaN for an epoch whose steps reported no such metric.
    """

    def __init__(self, name: str = "loss"):
        super().__init__(name)
        self.per_epoch: list[float] = []

    def on_epoch_end(self, record: EpochRecord) -> None:
        """Close the epoch: its mean (NaN without values)."""
        self.per_epoch.append(self.close())


def check_observer(observer: Any) -> Any:
    """``observer`` itself if it has at least one callable of :data:`OBSERVER_METHODS`, else ``ValueError``."""
    if not any(callable(getattr(observer, name, None)) for name in OBSERVER_METHODS):
        raise ValueError(f"an observer needs at least one of the methods {OBSERVER_METHODS}; got {observer!r}")
    return observer

"""One callback type for everything that wants to hear about a curriculum's training (as Stable-Baselines3's
``BaseCallback``): what each epoch plans, each optimizer step trains on, and every N steps.

A :class:`~curteach_teaching.curriculum.core.Curriculum` calls its callbacks, in the order they were added:

* ``on_epoch_start(plan)``: the epoch's :class:`EpochPlan` (its selection and every batch it is about to train,
  after any ``max_steps`` cut), before its first step;
* after every optimizer step ``s`` (``s = 1, 2, ...``, counted across epochs and ``train`` calls), in two phases:
  first ``on_batch(batch)`` of every callback with the :class:`BatchInfo` just trained on (the same object as in the
  plan), then ``on_step(s)`` of every callback whose ``every`` divides ``s`` (e.g. an evaluation every 100 steps, the
  learning-rate schedule of :mod:`~curteach_teaching.curriculum.lr_schedule`); a callback with ``at_start`` also
  gets ``on_step(0)`` before a run's first step (the original evaluates the initial network);
* ``on_epoch_end(record)``: the epoch's :class:`~curteach_teaching.curriculum.selection.EpochRecord`, once logged.

A callback is a :class:`CurriculumCallback` (no-op defaults; override what you need), any object with some of these
methods, an ``(every, fn)`` pair or a callable with an ``every`` attribute (both become :class:`EveryNSteps`). Its
state is saved with the curriculum's (:meth:`~curteach_teaching.curriculum.core.Curriculum.state_dict`) when it has
``state_dict()`` / ``load_state_dict()``, unless it says ``save_with_curriculum = False`` (a callback that saves the
curriculum itself). A callback sees the run; it must not change the curriculum's generator or selection. An
exception it raises stops training there (e.g. a divergence check).

A callback whose ``on_batch`` reads only some of :attr:`BatchInfo.metrics` says which in ``reads_metrics`` (a set of
names; ``None``, the default, means any): a step trainer may leave out the metrics no callback reads and no gradient
needs (BC's ``prob_true_act``, and its entropy and L2 norm at weight 0), which saves their arithmetic at every
step (:func:`metrics_read`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.selection import EpochRecord, EpochSelection
from curteach_teaching.curriculum.step_metrics import StepMetrics

__all__ = ["CALLBACK_METHODS", "AtEpochEnd", "BatchInfo", "CurriculumCallback", "EpochPlan", "EveryNSteps",
           "as_callback", "check_callbacks", "metrics_read", "saved_callbacks"]

#: The methods a curriculum calls on its callbacks (each optional).
CALLBACK_METHODS = ("on_epoch_start", "on_batch", "on_step", "on_epoch_end")


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
            ``prob_true_act``, ...); empty before the step and for trainers that report none. A
            :class:`~curteach_teaching.curriculum.step_metrics.StepMetrics`: values a trainer reports as device
            tensors are read from the device when first read (``metrics.tensor(name)`` takes one without reading).
    """

    epoch: int
    step: int
    position: int
    transitions: np.ndarray
    index: DemonstrationIndex = field(repr=False)
    metrics: dict = field(default_factory=StepMetrics, repr=False)

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


class CurriculumCallback:
    """Base class of a callback with no-op methods; override the ones you need (see the module docstring).

    Attributes:
        every: ``on_step(s)`` runs after global step ``s`` when ``s % every == 0`` (``None``: never).
        at_start: also ``on_step(0)`` before a run's first optimizer step.
        save_with_curriculum: save :meth:`state_dict` with the curriculum's state (when the callback has one).
        reads_metrics: the names of :attr:`BatchInfo.metrics` that :meth:`on_batch` reads (``None``: any of them).
    """

    every: int | None = None
    at_start: bool = False
    save_with_curriculum: bool = True
    reads_metrics: frozenset | None = None

    def on_epoch_start(self, plan: EpochPlan) -> None:
        """Called with each epoch's plan before its first step."""

    def on_batch(self, batch: BatchInfo) -> None:
        """Called after each optimizer step with the batch it trained on."""

    def on_step(self, step: int) -> None:
        """Called after every ``every``-th optimizer step (and at step 0 with ``at_start``)."""

    def on_epoch_end(self, record: EpochRecord) -> None:
        """Called with each epoch's record once it is logged."""


class EveryNSteps(CurriculumCallback):
    """``fn(step)`` after every ``every``-th optimizer step (and at step 0 with ``at_start``); ``fn``'s state, if it
    has ``state_dict()`` / ``load_state_dict()``, is saved with the curriculum's.

    Args:
        every: the period in optimizer steps (>= 1).
        fn: ``(step: int) -> Any``; its return value is ignored.
        at_start: also run ``fn(0)`` before the first optimizer step of a run (e.g. evaluate the initial network).
    """

    def __init__(self, every: int, fn: Callable[[int], Any], at_start: bool = False):
        self.every = check_int("a callback's every", every, 1)
        if not callable(fn):
            raise ValueError(f"a step callback must be callable (step) -> Any; got {fn!r}")
        if not isinstance(at_start, (bool, np.bool_)):
            raise ValueError(f"a callback's at_start must be a bool; got {at_start!r}")
        self.fn = fn
        self.at_start = bool(at_start)

    def on_step(self, step: int) -> None:
        """``fn(step)``."""
        self.fn(step)

    def __getattr__(self, name: str) -> Any:
        # the function's state travels with the curriculum's: state_dict / load_state_dict are the function's
        if name in ("state_dict", "load_state_dict"):
            return getattr(self.fn, name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"EveryNSteps(every={self.every}, fn={self.fn!r}, at_start={self.at_start})"


class AtEpochEnd(CurriculumCallback):
    """``fn(record)`` with each epoch's record once it is logged (e.g. evaluate the policy after every epoch).

    Args:
        fn: ``(record: EpochRecord) -> Any``; its return value is ignored.
    """

    def __init__(self, fn: Callable[[EpochRecord], Any]):
        if not callable(fn):
            raise ValueError(f"an epoch callback must be callable (record) -> Any; got {fn!r}")
        self.fn = fn

    def on_epoch_end(self, record: EpochRecord) -> None:
        """``fn(record)``."""
        self.fn(record)


def as_callback(callback: Any) -> Any:
    """``callback`` as the curriculum calls it: an ``(every, fn)`` pair or a callable with an ``every`` attribute
    (and optionally ``at_start``) becomes an :class:`EveryNSteps`; any object with at least one method of
    :data:`CALLBACK_METHODS` is taken as it is.

    Raises:
        ValueError: anything else, or an ``on_step`` without a valid ``every``.
    """
    if isinstance(callback, tuple) and len(callback) == 2:
        return EveryNSteps(callback[0], callback[1])
    if not any(callable(getattr(callback, name, None)) for name in CALLBACK_METHODS):
        if callable(callback) and hasattr(callback, "every"):
            return EveryNSteps(callback.every, callback, bool(getattr(callback, "at_start", False)))
        raise ValueError(f"a callback needs at least one of the methods {CALLBACK_METHODS}, or is an (every, fn) pair "
                         f"or a callable with an 'every' attribute; got {callback!r}")
    every = getattr(callback, "every", None)
    if every is not None:
        check_int(f"the every of callback {callback!r}", every, 1)
    return callback


def check_callbacks(callbacks: Sequence[Any]) -> list:
    """:func:`as_callback` of each of a sequence, else ``ValueError``."""
    if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, Sequence):
        raise ValueError(f"callbacks must be a sequence of callbacks; got {callbacks!r}")
    return [as_callback(callback) for callback in callbacks]


def metrics_read(callbacks: Sequence[Any]) -> frozenset | None:
    """The names of the step metrics that ``callbacks`` may read: the union of the ``reads_metrics`` of those with an
    ``on_batch`` (a :class:`CurriculumCallback` that keeps the no-op one reads none); ``None`` (any metric) as soon as
    one with an ``on_batch`` does not say."""
    names: set = set()
    for callback in callbacks:
        on_batch = getattr(callback, "on_batch", None)
        if on_batch is None or getattr(type(callback), "on_batch", None) is CurriculumCallback.on_batch:
            continue
        reads = getattr(callback, "reads_metrics", None)
        if reads is None:
            return None
        names.update(reads)
    return frozenset(names)


def saved_callbacks(callbacks: Sequence[Any]) -> list[bool]:
    """For each callback: is its state saved with the curriculum's (it has ``state_dict`` and does not opt out)?"""
    return [callable(getattr(c, "state_dict", None)) and getattr(c, "save_with_curriculum", True) for c in callbacks]

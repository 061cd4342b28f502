"""The trainer-agnostic curriculum over demonstrations (the paper's Algorithm 2): score, select, batch, train, log.

:class:`Curriculum` knows demonstrations only through their layout
(:class:`~curteach_teaching.curriculum.index.DemonstrationIndex`) and a trainer only through a
:class:`StepTrainer`: the learner's difficulty of every demonstration, and one optimizer step per batch of
transitions. At the start of every epoch ``e = 1..E`` it

1. **scores** the learner (:meth:`StepTrainer.learner_difficulty`, only for Cur and Cur-L);
2. **selects** the epoch's demonstrations with its :class:`~curteach_teaching.curriculum.selection.CurriculumSelection`
   (preference by variant, ranking, pacing);
3. **plans** the epoch's batches with its batcher (:mod:`~curteach_teaching.curriculum.batches`) and its generator
   (:meth:`Curriculum.plan_epoch`);
4. **trains** them through the step trainer; after every optimizer step the global step counter
   :attr:`Curriculum.step` (across epochs and ``train`` calls) advances and the callbacks hear of it
   (:mod:`~curteach_teaching.curriculum.callbacks`, the one seam for "tell me during training");
5. **logs** the epoch (:class:`~curteach_teaching.curriculum.selection.EpochRecord`).

An adapter per imitation trainer (e.g. :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC`) builds the step
trainer and the batcher; the selection, the plan, the step count, the callbacks and the saved state are this
class's.

Resuming. :meth:`Curriculum.state_dict` is everything of a run but the trainer's own state (its policy and optimizer,
which the caller saves with torch): the global step, the history, the generator of the batches and the callbacks'
states. A run checkpointed after epoch ``k`` of ``E`` and resumed with :meth:`~Curriculum.load_state_dict` and
``train(E, start_epoch=k + 1)`` on a fresh trainer gives the same result as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.curriculum.batches import Batcher
from curteach_teaching.curriculum.callbacks import BatchInfo, EpochPlan, as_callback, check_callbacks, metrics_read
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.selection import (
    CurriculumSelection,
    EpochRecord,
    EpochSelection,
    PacingSchedule,
    check_variant,
    variant_name,
)
from curteach_teaching.curriculum.state import curriculum_state, load_curriculum_state

__all__ = ["Curriculum", "StepTrainer"]


class StepTrainer(Protocol):
    """What a :class:`Curriculum` needs from a trainer; an adapter per imitation trainer implements it."""

    def learner_difficulty(self) -> np.ndarray:
        """``(N,)`` ``log Psi^L`` of every demonstration under the trainer's current policy (read by Cur, Cur-L)."""

    def train_batches(self, batches: Sequence[np.ndarray], after_step: Callable[[], None]) -> None:
        """Take one optimizer step per batch (``(b,)`` flat transition indices), in order, keeping the policy and
        the optimizer, and call ``after_step()`` right after each step."""

    def around_hooks(self) -> AbstractContextManager:
        """A context the callbacks run in after a step, which restores what they may change in the trainer (e.g. the
        policy's training mode, which an evaluation leaves in evaluation mode)."""

    # Optional: ``step_metrics() -> {name: float}``, the step's training metrics, called after each step, put in its
    # ``BatchInfo.metrics``; ``set_read_metrics(names or None)``, the metrics the callbacks may read
    # (``callbacks.metrics_read``; ``None``: any), told before each pass; ``set_transition_weights(weights (T,) or
    # None)``, each transition's loss weight for the steps to come (``use="weight"`` needs it; ``None``: unweighted).


class Curriculum:
    """A curriculum over N demonstrations that drives any :class:`StepTrainer` epoch by epoch.

    Args:
        step_trainer: the trainer's side (:class:`StepTrainer`).
        index: the demonstrations' layout (:class:`~curteach_teaching.curriculum.index.DemonstrationIndex`).
            ``step_trainer`` and ``index`` are ``None`` while a pool that grows (DAgger's) has no demonstrations yet,
            its selection no items (:meth:`~curteach_teaching.curriculum.selection.CurriculumSelection.growing`);
            :meth:`_set_demonstrations` sets them.
        selection: the :class:`~curteach_teaching.curriculum.selection.CurriculumSelection` over the same N
            demonstrations.
        batcher: cuts each epoch's selection into batches (:class:`~curteach_teaching.curriculum.batches.Batcher`).
        rng: the generator of the batches' shuffles.
        callbacks: hear of the epochs, the batches and every N steps (:mod:`~curteach_teaching.curriculum.callbacks`).
        state_format: the version tag of :meth:`state_dict`; extra_config: adapter settings a saved run must share.

    Attributes:
        step: optimizer steps taken so far, counted across epochs and ``train`` calls (0 before training).
        callbacks: the callbacks, in call order.

    Raises:
        ValueError: a selection of another size than the index, a generator that is not a ``numpy.random.Generator``,
            malformed callbacks.
    """

    def __init__(
        self,
        step_trainer: StepTrainer,
        index: DemonstrationIndex,
        selection: CurriculumSelection,
        batcher: Batcher,
        *,
        rng: np.random.Generator,
        callbacks: Sequence[Any] = (),
        state_format: str = "curteach.Curriculum/1",
        extra_config: dict | None = None,
    ):
        self.selection = selection
        self.step_trainer: StepTrainer | None = None
        self.index: DemonstrationIndex | None = None
        self._step_metrics = None
        if index is not None or selection.n_items:
            self._set_demonstrations(step_trainer, index)
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
        self.batcher = batcher
        self.rng = rng
        self.callbacks: list[Any] = check_callbacks(callbacks)
        self.step = 0
        self._state_format = state_format
        self._extra_config = dict(extra_config or {})
        self._pending: Sequence[BatchInfo] = ()
        self._done = 0

    def _set_demonstrations(self, step_trainer: StepTrainer, index: DemonstrationIndex) -> None:
        """Train from now on through ``step_trainer`` over the demonstrations ``index`` lays out, as many as the
        selection has items. A pool that grows (DAgger's) calls it after growing its selection; the step, the
        generator, the callbacks and the history go on."""
        n_index = 0 if index is None else index.n_demonstrations
        if self.selection.n_items != n_index:
            raise ValueError(f"the selection is over {self.selection.n_items} items, the index over {n_index} "
                             "demonstrations")
        if self.selection.use.name == "weight" and not callable(getattr(step_trainer, "set_transition_weights",
                                                                        None)):
            raise ValueError(f"use='weight' weights each transition's loss, which {type(step_trainer).__name__} "
                             "cannot do; use 'order' or 'select' with this trainer (BC can weight)")
        self.step_trainer = step_trainer
        self._step_metrics = getattr(step_trainer, "step_metrics", None)
        self.index = index

    # ------------------------------------------------- the selection's state
    @property
    def n_demonstrations(self) -> int:
        """N (0 while a pool that grows has none yet)."""
        return self.selection.n_items

    @property
    def variant(self):
        """``"Cur"``, ``"Cur-L"``, ``"Cur-T"``, ``"Agn"`` or a plug-in preference object."""
        return self.selection.variant

    @variant.setter
    def variant(self, value) -> None:
        self.selection.variant = check_variant(value)

    @property
    def teacher_difficulty(self) -> np.ndarray | None:
        """``(N,)`` ``log Psi^E`` per demonstration, or ``None``."""
        return self.selection.teacher_difficulty

    @teacher_difficulty.setter
    def teacher_difficulty(self, value: np.ndarray | None) -> None:
        self.selection.teacher_difficulty = value

    @property
    def pacing(self) -> PacingSchedule:
        """The pacing schedule ``(epoch, n_epochs, n_items) -> X_e``."""
        return self.selection.pacing

    @pacing.setter
    def pacing(self, value: PacingSchedule) -> None:
        self.selection.pacing = value

    @property
    def history(self) -> list[EpochRecord]:
        """The :class:`~curteach_teaching.curriculum.selection.EpochRecord` of every epoch trained so far."""
        return self.selection.history

    @history.setter
    def history(self, value: list[EpochRecord]) -> None:
        self.selection.history = value

    # ------------------------------------------------------ scores, selection
    def learner_difficulty(self) -> np.ndarray:
        """``(N,)`` ``log Psi^L`` of every demonstration under the trainer's current policy."""
        return self.step_trainer.learner_difficulty()

    def preferences(self, learner_difficulty: np.ndarray | None) -> np.ndarray | None:
        """``(N,)`` preference by variant (larger = earlier); ``None`` for Agn."""
        return self.selection.preference(learner_difficulty)

    def select_epoch(self, epoch: int, n_epochs: int) -> EpochSelection:
        """The :class:`~curteach_teaching.curriculum.selection.EpochSelection` of epoch ``epoch`` of ``n_epochs`` (the
        learner
        is scored now if the variant reads its difficulty)."""
        learner = self.learner_difficulty() if self.selection.needs_learner_difficulty else None
        return self.selection.select(epoch, n_epochs, learner)

    def select(self, epoch: int, n_epochs: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """:meth:`select_epoch` as ``(selected (X_e,), preferences (N,) or None, learner difficulty (N,) or None)``."""
        chosen = self.select_epoch(epoch, n_epochs)
        return chosen.selected, chosen.preference, chosen.learner_difficulty

    # ----------------------------------------------------------------- batches
    def epoch_batches(self, selected: np.ndarray) -> list[np.ndarray]:
        """The batches of a selection ``(X_e,)``: one ``(b,)`` array of flat transition indices per optimizer step,
        in training order (the batcher's shuffle draws from :attr:`rng`)."""
        return self.batcher.plan(self.index, selected, self.rng)

    def time_steps(self, index: np.ndarray) -> np.ndarray:
        """``(b,)`` the time step of each transition ``index`` in its demonstration (0 for its first action)."""
        return self.index.time_step[index]

    def plan_epoch(self, epoch: int, n_epochs: int, *, max_steps: int | None = None) -> EpochPlan:
        """Select and batch epoch ``epoch`` of ``n_epochs`` (scoring the learner and drawing the shuffle now).

        Args:
            epoch, n_epochs: the position in the pacing schedule (epoch 1-based).
            max_steps: keep only the batches before the global :attr:`step` reaches it (``None``: all).

        Returns:
            The :class:`~curteach_teaching.curriculum.callbacks.EpochPlan`; train it with :meth:`train_plan`.
        """
        chosen = self.select_epoch(epoch, n_epochs)
        groups = self.epoch_batches(chosen.selected)
        if max_steps is not None:
            groups = groups[: max(0, max_steps - self.step)]
        return EpochPlan(epoch, n_epochs, chosen, self._batch_infos(groups, epoch))

    def _batch_infos(self, groups: Sequence[np.ndarray], epoch: int) -> tuple[BatchInfo, ...]:
        first = self.step
        return tuple(BatchInfo(epoch, first + i + 1, i, group, self.index) for i, group in enumerate(groups))

    # -------------------------------------------------------------------- train
    def train_batches(self, groups: Sequence[np.ndarray]) -> tuple[int, int]:
        """Train one pass over ``groups`` (index arrays from :meth:`epoch_batches`), one optimizer step each, as part
        of the epoch in progress (``len(history) + 1``); the callbacks run after each step.

        Returns:
            ``(transitions trained on, optimizer steps)``.
        """
        return self._train(self._batch_infos(groups, len(self.history) + 1))

    def train_plan(self, plan: EpochPlan) -> EpochRecord:
        """Train a plan of :meth:`plan_epoch` made at the current :attr:`step` and log its epoch.

        Returns:
            Its :class:`~curteach_teaching.curriculum.selection.EpochRecord` (also appended to :attr:`history`).

        Raises:
            ValueError: a plan made at another step.
        """
        if plan.batches and plan.batches[0].step != self.step + 1:
            raise ValueError(f"the plan starts at step {plan.batches[0].step}; the curriculum is at step {self.step}")
        self._notify("on_epoch_start", plan)
        weights = plan.selection.weights
        if weights is not None or self.selection.use.name == "weight":
            self.step_trainer.set_transition_weights(
                None if weights is None else np.asarray(weights, dtype=np.float64)[self.index.demo_of_transition])
        n_transitions, n_batches = self._train(plan.batches)
        record = self.selection.log(plan.selection, n_transitions, n_batches)
        self._notify("on_epoch_end", record)
        return record

    def _train(self, batches: Sequence[BatchInfo]) -> tuple[int, int]:
        if not batches:
            return 0, 0
        self._pending, self._done = batches, 0
        if callable(getattr(self.step_trainer, "set_read_metrics", None)):
            self.step_trainer.set_read_metrics(metrics_read(self.callbacks))
        try:
            self.step_trainer.train_batches([batch.transitions for batch in batches], self._after_step)
            done = self._done
        finally:
            self._pending = ()
        if done != len(batches):
            raise RuntimeError(f"the trainer took {done} optimizer steps for {len(batches)} batches")
        return sum(batch.size for batch in batches), len(batches)

    def _after_step(self) -> None:
        if self._done >= len(self._pending):
            raise RuntimeError(f"the trainer took more optimizer steps than the {len(self._pending)} batches given")
        batch = self._pending[self._done]
        self._done += 1
        self.step += 1
        if self._step_metrics is not None:
            batch.metrics.update(self._step_metrics())
        self._after(self.step, batch)

    def _notify(self, method: str, value: Any) -> None:
        for callback in self.callbacks:
            call = getattr(callback, method, None)
            if call is not None:
                call(value)

    def _after(self, step: int, batch: BatchInfo | None = None) -> None:
        # two phases: every callback's on_batch, then the on_step of those due (a step's watchers see it before an
        # evaluation or a schedule changes anything)
        due = [c.on_step for c in self.callbacks if getattr(c, "every", None) is not None
               and callable(getattr(c, "on_step", None))
               and (getattr(c, "at_start", False) if step == 0 else step % c.every == 0)]
        watchers = [c.on_batch for c in self.callbacks if getattr(c, "on_batch", None) is not None]
        if not due and (batch is None or not watchers):
            return
        with self.step_trainer.around_hooks():
            if batch is not None:
                for on_batch in watchers:
                    on_batch(batch)
            for on_step in due:
                on_step(step)

    def add_callback(self, callback: Any) -> Any:
        """Append a callback (:func:`~curteach_teaching.curriculum.callbacks.as_callback`); returns what the
        curriculum calls."""
        callback = as_callback(callback)
        self.callbacks.append(callback)
        return callback

    def train_epoch(self, epoch: int, n_epochs: int, *, max_steps: int | None = None) -> EpochRecord:
        """One curriculum epoch (``epoch`` of ``n_epochs`` of the pacing schedule): score, select, batch, train, log.

        Args:
            epoch, n_epochs: the position in the pacing schedule (epoch 1-based).
            max_steps: stop once :attr:`step` reaches it (the epoch's later batches are not trained; the record
                counts what was); ``None``: train the whole epoch.

        Returns:
            Its :class:`~curteach_teaching.curriculum.selection.EpochRecord` (also appended to :attr:`history`).
        """
        return self.train_plan(self.plan_epoch(epoch, n_epochs, max_steps=max_steps))

    def train(
        self,
        n_epochs: int,
        *,
        start_epoch: int = 1,
        max_steps: int | None = None,
    ) -> list[EpochRecord]:
        """Run epochs ``e = start_epoch..n_epochs`` of an ``n_epochs``-epoch pacing schedule.

        Callbacks with ``at_start`` get ``on_step(0)`` first if nothing has been trained yet (:attr:`step` is 0).

        Args:
            n_epochs: E, at least 1.
            start_epoch: the first epoch to run, in ``[1, E + 1]`` (``E + 1`` runs nothing); to resume a run saved
                after epoch ``k``, :meth:`load_state_dict` and ``start_epoch = k + 1``.
            max_steps: stop once the global :attr:`step` reaches it (>= 1), mid-epoch if need be; ``None``: no limit.

        Returns:
            The records of these epochs (also appended to :attr:`history`).
        """
        check_int("n_epochs", n_epochs, 1)
        check_int("start_epoch", start_epoch, 1, n_epochs + 1)
        if max_steps is not None:
            check_int("max_steps", max_steps, 1)
        if self.step == 0 and start_epoch <= n_epochs:
            self._after(0)
        records = []
        for epoch in range(start_epoch, n_epochs + 1):
            if max_steps is not None and self.step >= max_steps:
                break
            records.append(self.train_epoch(epoch, n_epochs, max_steps=max_steps))
        return records

    # --------------------------------------------------------------- checkpoints
    def config(self) -> dict:
        """What a saved run must share with this one: the number of demonstrations and transitions, the variant,
        the batcher's configuration and the adapter's settings."""
        return {
            "n_demonstrations": self.n_demonstrations,
            "n_transitions": self.index.n_transitions,
            "variant": variant_name(self.variant),
            **self.selection.use.config(),
            **self.batcher.config(),
            **self._extra_config,
        }

    def state_dict(self) -> dict:
        """Everything of the run but the trainer's policy and optimizer (save those with torch), as plain Python
        values (:func:`~curteach_teaching.curriculum.state.curriculum_state`)."""
        return curriculum_state(self, self._state_format)

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (after the caller has restored the trainer's policy and optimizer;
        :func:`~curteach_teaching.curriculum.state.load_curriculum_state`).

        Raises:
            ValueError: not such a state, a state of another configuration (demonstrations, variant, batches, ...),
                of another generator, or with callback states that the callbacks cannot take.
        """
        load_curriculum_state(self, state, self._state_format)

    # ------------------------------------------------------------------ logging
    def selection_matrix(self) -> np.ndarray:
        """``(epochs so far, N)`` bool: demonstration ``i`` was trained on in epoch ``e`` (for curriculum plots)."""
        return self.selection.selection_matrix()

    def log_table(self) -> dict:
        """The per-epoch log as columns: ``{"epoch": (E,), "fraction": (E,), ...}`` (every scalar field)."""
        return self.selection.log_table()

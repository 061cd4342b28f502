"""The curriculum adapter for a dataset learner
(:class:`~curteach_teaching.learners.dataset_learner.DatasetLearner`): the curriculum decides which demonstrations
each epoch trains on and in which batches, the learner takes the steps.

:func:`learner_curriculum` builds the curriculum of a learner over its demonstrations:

* a learner trained by imitation's ``BC`` that hands its trainer over (a ``bc_trainer`` attribute, as
  :class:`~curteach_teaching.learners.bc_learner.BCLearner`) is stepped by
  :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC`, BC's own step with its arithmetic to the bit;
* any other learner by :class:`LearnerSteps`: each batch is one :meth:`train_step` of the batch's observations and
  actions (and their loss weights, under ``use="weight"``), and the learner's difficulty (Cur, Cur-L) sums its
  per-step log-likelihoods per demonstration, each floored at ``min_log_prob`` as a policy's are. A learner that
  declares a ``window`` of ``W > 1`` steps (a recurrent policy) is handed each step's window ``(B, W, *obs_shape)``
  in both (:mod:`~curteach_teaching.learners.windows`), and its log-likelihoods are asked in chunks of windows; one
  that also declares ``sequence_targets`` trains on the actions of every step of each window, each step with its own
  loss weight (:func:`~curteach_teaching.learners.windows.sequence_batch`).

Batches are transitions: ``batch_size`` shuffled steps, or exactly ``steps_per_epoch`` such batches per epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
from imitation.data import types

from curteach_teaching.curriculum.batches import FixedStepBatches, make_batcher
from curteach_teaching.curriculum.core import Curriculum
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.options import CurriculumOptions, check_demonstrations
from curteach_teaching.curriculum.scores import teacher_difficulty
from curteach_teaching.curriculum.selection import CurriculumSelection
from curteach_teaching.difficulty import index_observations, sum_per_demonstration
from curteach_teaching.learners.windows import (
    episode_windows,
    learner_sequences,
    learner_window,
    sequence_batch,
    step_log_likelihoods,
    windowed,
)

__all__ = ["LearnerSteps", "learner_curriculum"]


class LearnerSteps:
    """The :class:`~curteach_teaching.curriculum.core.StepTrainer` of a dataset learner.

    Args:
        learner: the :class:`~curteach_teaching.learners.dataset_learner.DatasetLearner`.
        transitions: the flattened demonstrations (``obs (T, ...)``, ``acts (T, ...)``), laid out as ``index`` says.
        index: their :class:`~curteach_teaching.curriculum.index.DemonstrationIndex`.
        min_log_prob: the floor of every step of the learner's difficulty.
    """

    def __init__(self, learner: Any, transitions: Any, index: DemonstrationIndex, *, min_log_prob: float):
        self.learner, self.transitions, self.index = learner, transitions, index
        self.min_log_prob = min_log_prob
        self._weights: np.ndarray | None = None
        self._loss: Any = None
        window = learner_window(learner)
        # (T, W) each step's window of flat step indices; None: the learner reads one observation per step
        self._windows = episode_windows(index.lengths, window) if window > 1 else None
        self._sequences = learner_sequences(learner)  # the actions of every step of a window, not the last only

    def learner_difficulty(self) -> np.ndarray:
        """``(N,)`` ``-sum_t log pi(a_t | s_t)`` of every demonstration under the learner now (NaN steps count as
        the floor, as a diverged policy's do)."""
        obs = types.maybe_unwrap_dictobs(self.transitions.obs)
        per_step = step_log_likelihoods(self.learner, obs, self.transitions.acts, self.index.lengths, self._windows)
        return -sum_per_demonstration(per_step, self.index.demo_of_transition, self.index.n_demonstrations,
                                      self.min_log_prob)

    def set_transition_weights(self, weights: np.ndarray | None) -> None:
        """``(T,)`` each transition's loss weight for the steps to come, or ``None`` (unweighted)."""
        self._weights = None if weights is None else np.asarray(weights, dtype=np.float64)

    def train_batches(self, batches: Sequence[np.ndarray], after_step: Callable[[], None]) -> None:
        """One :meth:`train_step` per batch of flat transition indices, ``after_step()`` after each."""
        for batch in batches:
            if self._windows is None:
                obs = types.maybe_unwrap_dictobs(index_observations(self.transitions.obs, batch))
            else:
                obs = windowed(types.maybe_unwrap_dictobs(self.transitions.obs), self._windows[batch])
            if self._sequences:
                acts, weights = sequence_batch(self.transitions.acts, self._weights, self._windows[batch])
            else:
                acts, weights = self.transitions.acts[batch], None if self._weights is None else self._weights[batch]
            self._loss = self.learner.train_step(obs, acts, weights)
            after_step()

    def step_metrics(self) -> dict:
        """``{"loss": the last step's loss}`` (a float or a tensor left on its device)."""
        return {"loss": self._loss}

    def around_hooks(self) -> AbstractContextManager:
        """Nothing to restore: a learner's :meth:`act` and :meth:`log_likelihood` leave its training state as
        they found it (the protocol says so)."""
        return nullcontext()


def learner_curriculum(learner: Any, demonstrations: Sequence[Any], *, batch_size: int,
                       steps_per_epoch: int | None = None, options: CurriculumOptions | None = None,
                       **shared: Any) -> Curriculum:
    """The curriculum that trains ``learner`` on ``demonstrations`` (see the module docstring).

    Args:
        learner: a dataset learner.
        demonstrations: the N imitation ``Trajectory`` demonstrations.
        batch_size: transitions per step (a BC learner's trainer keeps its own, the same number).
        steps_per_epoch: exactly this many steps per epoch (``None``: one pass over each epoch's selection).
        options, shared: the options every adapter shares
            (:class:`~curteach_teaching.curriculum.options.CurriculumOptions`); ``rng`` is needed here unless the
            learner is stepped by BC (whose trainer's generator is the default).

    Raises:
        ValueError: as :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` does.
    """
    bc_trainer = getattr(learner, "bc_trainer", None)
    if bc_trainer is not None:
        from curteach_teaching.curriculum.adapters.bc import CurriculumBC

        return CurriculumBC(bc_trainer, demonstrations, options=options, steps_per_epoch=steps_per_epoch, **shared)
    from imitation.data import rollout

    options = CurriculumOptions.of("learner_curriculum", options, shared)
    if options.rng is None:
        raise ValueError("learner_curriculum needs rng (the generator of the batches' shuffles)")
    demonstrations = check_demonstrations(demonstrations, "learner_curriculum")
    index = DemonstrationIndex.from_trajectories(demonstrations)
    transitions = rollout.flatten_trajectories(demonstrations)
    teacher = None if options.teacher is None else teacher_difficulty(
        options.teacher, transitions.obs, transitions.acts, index, chunk_size=options.difficulty_chunk_size,
        min_log_prob=options.min_log_prob)
    batcher = (make_batcher("transitions", batch_size, "partial") if steps_per_epoch is None
               else FixedStepBatches(batch_size, steps_per_epoch))
    selection = CurriculumSelection(index.n_demonstrations, options.variant, teacher, options.pacing,
                                    use=options.use, sizes=index.lengths)
    return Curriculum(LearnerSteps(learner, transitions, index, min_log_prob=options.min_log_prob), index, selection,
                      batcher, rng=options.rng, callbacks=options.callbacks, state_format="curteach.Learner/1")

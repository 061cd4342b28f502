"""What the adapters of trainers that take their demonstrations as a whole set share (GAIL, AIRL, MCE-IRL).

Such a trainer has no batches to choose: it takes a set of demonstrations through one door
(``set_demonstrations``) and trains on it for a while (a round). Its curriculum is a
:class:`~curteach_teaching.curriculum.core.Curriculum` whose every epoch is one round: the epoch's selection is
handed over whole (:class:`WholeSelection`, one "batch" per epoch, no shuffle), so the core's scores, preference,
ranking, pacing, callbacks, log and saved state apply unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_teaching.curriculum.core import Curriculum, StepTrainer
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.options import CurriculumOptions
from curteach_teaching.curriculum.selection import CurriculumSelection
from curteach_teaching.curriculum.selection_logger import SelectionLogger

__all__ = ["RoundCurriculum", "WholeSelection", "selected_trajectories"]

@dataclass(frozen=True)
class WholeSelection:
    """The batcher of round-based trainers: an epoch's selection is one batch, demonstration after demonstration in
    the selection's order (most preferred first), each in time order; draws nothing from the generator."""

    def plan(self, index: DemonstrationIndex, selected: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """``[(sum of the selected lengths,)]``: the one batch of the epoch."""
        return [index.transitions(np.asarray(selected, dtype=np.int64))]

    def config(self) -> dict:
        """``{"batch_unit": "selection", "demos_per_batch": None, "remainder": None}``."""
        return {"batch_unit": "selection", "demos_per_batch": None, "remainder": None}


def selected_trajectories(demonstrations: Sequence[Any], index: DemonstrationIndex, batch: np.ndarray) -> list:
    """The demonstrations whose transitions form ``batch`` (``(b,)`` flat indices of whole demonstrations), in the
    batch's order."""
    return [demonstrations[i] for i in index.demonstrations_in(batch)]


class RoundCurriculum(Curriculum):
    """Base of the adapters whose every curriculum epoch is one round of a trainer fed a whole set of
    demonstrations (see the module docstring).

    Its state (:meth:`state_dict`) is ``{"curriculum": the core's state, "trainer": the step trainer's}``: the step
    trainer saves what of its trainer can be restored (``state_dict()`` / ``load_state_dict(state)``).

    Args:
        step_trainer: the trainer's side (with ``state_dict`` and ``load_state_dict``).
        index: the demonstrations' layout.
        options: the adapter's :class:`~curteach_teaching.curriculum.options.CurriculumOptions` (the generator is
            kept for the core; a whole selection draws nothing; default ``default_rng(0)``).
        teacher_scores: ``(N,)`` the teacher difficulty of the selection, or ``None``.
        logger: the trainer's imitation logger the selection is recorded in when ``options.log``
            (:class:`~curteach_teaching.curriculum.selection_logger.SelectionLogger`).
        state_format, extra_config: as :class:`~curteach_teaching.curriculum.core.Curriculum`.
    """

    def __init__(self, step_trainer: StepTrainer, index: DemonstrationIndex, *, options: CurriculumOptions,
                 teacher_scores: np.ndarray | None, logger: Any, state_format: str, extra_config: dict | None = None):
        self.options = options
        selection = CurriculumSelection(index.n_demonstrations, options.variant, teacher_scores, options.pacing,
                                        use=options.use, sizes=index.lengths)
        callbacks = list(options.callbacks)
        if options.log and logger is not None:
            callbacks.insert(0, SelectionLogger(logger, index.n_demonstrations, teacher_scores))
        rng = options.rng if options.rng is not None else np.random.default_rng(0)
        super().__init__(step_trainer, index, selection, WholeSelection(), rng=rng, callbacks=callbacks,
                         state_format=state_format, extra_config=extra_config)

    def state_dict(self) -> dict:
        """``{"curriculum": ..., "trainer": ...}`` (see the class docstring)."""
        return {"curriculum": super().state_dict(), "trainer": self.step_trainer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`: the curriculum (checked whole first), then the trainer's parts.

        Raises:
            ValueError: not such a state, or one of another configuration (see the core's ``load_state_dict``).
        """
        if not isinstance(state, dict) or set(state) != {"curriculum", "trainer"}:
            raise ValueError(f"not a {type(self).__name__} state (keys 'curriculum' and 'trainer')")
        super().load_state_dict(state["curriculum"])
        self.step_trainer.load_state_dict(state["trainer"])

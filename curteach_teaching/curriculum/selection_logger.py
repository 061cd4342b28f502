"""Every epoch's selection recorded through imitation's logger, beside the trainer's own statistics (each adapter
adds one for its trainer's logger unless ``log=False``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from curteach_teaching.curriculum.callbacks import CurriculumCallback, EpochPlan

__all__ = ["LOG_PREFIX", "SelectionLogger"]

#: The key prefix of what the adapters record in imitation's logger.
LOG_PREFIX = "curriculum"



class SelectionLogger(CurriculumCallback):
    """Records each epoch's selection through imitation's logger before the trainer trains on it, so that the
    trainer's next ``dump`` writes it beside its own statistics.

    Keys (prefix :data:`LOG_PREFIX`): ``epoch`` (the epochs this logger has seen, counted from 1),
    ``n_selected``, ``fraction``, ``n_steps`` (optimizer steps or rounds planned), ``learner_difficulty_mean`` and
    ``teacher_difficulty_mean`` of the selection (NaN when not scored), ``preference_cutoff`` (the last kept
    demonstration's preference; NaN for Agn), and ``selected`` (the indices, most preferred first, as a
    space-separated string; kept out of stdout and the log file).

    Args:
        logger: an ``imitation.util.logger.HierarchicalLogger`` (e.g. ``trainer.logger``).
        n_demonstrations: N, the demonstrations the selection is over.
        teacher_difficulty: ``(N,)`` ``log Psi^E`` or ``None``.
    """

    def __init__(self, logger: Any, n_demonstrations: int, teacher_difficulty: np.ndarray | None = None):
        if not callable(getattr(logger, "record", None)):
            raise ValueError(f"logger must be an imitation HierarchicalLogger (with record); got {logger!r}")
        self.logger = logger
        self.n_demonstrations = int(n_demonstrations)
        self.teacher_difficulty = teacher_difficulty
        self._epochs = 0

    def on_epoch_start(self, plan: EpochPlan) -> None:
        """Record the plan's selection."""
        self._epochs += 1
        chosen = plan.selection
        selected = np.asarray(chosen.selected)
        nan = float("nan")
        learner, teacher, prefer = chosen.learner_difficulty, self.teacher_difficulty, chosen.preference
        values = {
            "epoch": self._epochs,
            "n_selected": int(selected.size),
            "fraction": selected.size / self.n_demonstrations,
            "n_steps": len(plan),
            "learner_difficulty_mean": float(learner[selected].mean()) if learner is not None else nan,
            "teacher_difficulty_mean": float(teacher[selected].mean()) if teacher is not None else nan,
            "preference_cutoff": float(prefer[selected].min()) if prefer is not None else nan,
        }
        for key, value in values.items():
            self.logger.record(f"{LOG_PREFIX}/{key}", value)
        self.logger.record(f"{LOG_PREFIX}/selected", " ".join(map(str, selected.tolist())),
                           exclude=("stdout", "log"))

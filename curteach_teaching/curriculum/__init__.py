"""Curricula over demonstrations for imitation learning (the paper's Algorithm 2; docs/teaching/curriculum.md).

The trainer-agnostic core, one concept per module:

* :mod:`~curteach_teaching.curriculum.index`: which transitions belong to which demonstration;
* :mod:`~curteach_teaching.curriculum.selection`: scores -> preference -> ranking -> pacing, logged per epoch, with
  :data:`~curteach_teaching.curriculum.selection.CURRICULA` beside it;
* :mod:`~curteach_teaching.curriculum.scores`: the teacher's and the learner's difficulty of each demonstration;
* :mod:`~curteach_teaching.curriculum.batches`: batches of transitions or of whole demonstrations;
* :mod:`~curteach_teaching.curriculum.callbacks`: the one callback type (each epoch's plan, each batch, every N
  steps), with :mod:`~curteach_teaching.curriculum.metrics` (training metrics kept per epoch),
  :mod:`~curteach_teaching.curriculum.lr_schedule` (the original's learning-rate schedule) and
  :mod:`~curteach_teaching.curriculum.selection_logger` (each selection in imitation's logger);
* :mod:`~curteach_teaching.curriculum.core`: :class:`Curriculum`, the loop that drives any :class:`StepTrainer`;
* :mod:`~curteach_teaching.curriculum.options`: the one contract of the adapters (:class:`CurriculumOptions`);
* :mod:`~curteach_teaching.curriculum.policy_steps`: :class:`PolicyStepTrainer`, the half of a step trainer that
  every trainer with an SB3 policy shares; :mod:`~curteach_teaching.curriculum.rounds`: what the round-based
  adapters share;

and one adapter per imitation trainer in :mod:`curteach_teaching.curriculum.adapters`. The names below are imported
on first use, so the NumPy core loads without torch and imitation.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    "curteach_teaching.curriculum.adapters.bc": ("BCStepTrainer", "CurriculumBC", "LOSSES"),
    "curteach_teaching.curriculum.adapters.dagger": ("CurriculumDAgger",),
    "curteach_teaching.curriculum.adapters.adversarial": ("AdversarialStepTrainer", "CurriculumAdversarial"),
    "curteach_teaching.curriculum.adapters.mce_irl": ("CurriculumMCEIRL", "MCEIRLStepTrainer"),
    "curteach_teaching.learners.quiet_logger": ("silent_logger",),
    "curteach_teaching.curriculum.rounds": ("RoundCurriculum", "WholeSelection"),
    "curteach_teaching.curriculum.selection_logger": ("SelectionLogger",),
    "curteach_teaching.curriculum.batches": (
        "BATCH_UNITS",
        "REMAINDERS",
        "Batcher",
        "DemonstrationBatches",
        "FixedStepBatches",
        "TransitionBatches",
        "make_batcher",
    ),
    "curteach_teaching.curriculum.core": ("Curriculum", "StepTrainer"),
    "curteach_teaching.curriculum.options": ("CurriculumOptions",),
    "curteach_teaching.curriculum.policy_steps": ("PolicyStepTrainer", "training_mode_restored"),
    "curteach_teaching.curriculum.lr_schedule": ("StepLRSchedule",),
    "curteach_teaching.curriculum.index": ("DemonstrationIndex",),
    "curteach_teaching.curriculum.loss": ("BCLoss", "MetricsRecorder", "StepMeanLoss", "WeightedLoss"),
    "curteach_teaching.curriculum.uses": ("USES", "Order", "Select", "Weight", "preference_weights"),
    "curteach_teaching.curriculum.callbacks": (
        "AtEpochEnd", "BatchInfo", "CurriculumCallback", "EpochPlan", "EveryNSteps",
    ),
    "curteach_teaching.curriculum.metrics": ("EpochMetricMean", "MetricMean"),
    "curteach_teaching.curriculum.scores": ("policy_difficulty", "teacher_difficulty"),
    "curteach_teaching.curriculum.selection": (
        "CURRICULA",
        "VARIANTS",
        "CurriculumSelection",
        "EpochRecord",
        "EpochSelection",
    ),
    "curteach_teaching.curriculum.pacing": ("FullPacing", "LinearPacing", "PacingSchedule"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

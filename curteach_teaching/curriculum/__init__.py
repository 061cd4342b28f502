"""Curricula over demonstrations for imitation learning (the paper's Algorithm 2; docs/teaching/curriculum.md).

The trainer-agnostic core, one concept per module:

* :mod:`~curteach_teaching.curriculum.index`: which transitions belong to which demonstration;
* :mod:`curteach_teaching.selection`: scores -> preference -> ranking -> pacing, logged per epoch;
* :mod:`~curteach_teaching.curriculum.scores`: the teacher's and the learner's difficulty of each demonstration;
* :mod:`~curteach_teaching.curriculum.batches`: batches of transitions or of whole demonstrations;
* :mod:`~curteach_teaching.curriculum.observers`: the public per-step seam (each epoch's plan, each batch);
* :mod:`~curteach_teaching.curriculum.hooks`: hooks every N steps and the learning-rate schedule;
* :mod:`~curteach_teaching.curriculum.core`: :class:`Curriculum`, the loop that drives any :class:`StepTrainer`;
* :mod:`~curteach_teaching.curriculum.policy_steps`: :class:`PolicyStepTrainer`, the half of a step trainer that
  every trainer with an SB3 policy shares;

and one adapter per imitation trainer: :mod:`~curteach_teaching.curriculum.bc` (:class:`CurriculumBC`, with the
original navigation loss of :mod:`~curteach_teaching.curriculum.loss`), :mod:`~curteach_teaching.curriculum.dagger`
(:class:`CurriculumDAgger`), :mod:`~curteach_teaching.curriculum.adversarial` (:class:`CurriculumAdversarial`, GAIL
and AIRL) and :mod:`~curteach_teaching.curriculum.mce_irl` (:class:`CurriculumMCEIRL`), the last two on the round
machinery of :mod:`~curteach_teaching.curriculum.rounds`. The names below are imported on first use,
so the NumPy core loads without torch and imitation.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr
from curteach_teaching.registry import TRAINERS

_EXPORTS = {
    "curteach_teaching.curriculum.bc": ("BCStepTrainer", "CurriculumBC", "LOSSES", "silent_logger"),
    "curteach_teaching.curriculum.dagger": ("CurriculumDAgger",),
    "curteach_teaching.curriculum.adversarial": ("AdversarialStepTrainer", "CurriculumAdversarial"),
    "curteach_teaching.curriculum.mce_irl": ("CurriculumMCEIRL", "MCEIRLStepTrainer"),
    "curteach_teaching.curriculum.rounds": ("RoundCurriculum", "SelectionLogger", "WholeSelection"),
    "curteach_teaching.curriculum.batches": (
        "BATCH_UNITS",
        "REMAINDERS",
        "Batcher",
        "DemonstrationBatches",
        "TransitionBatches",
        "make_batcher",
    ),
    "curteach_teaching.curriculum.core": ("Curriculum", "StepTrainer"),
    "curteach_teaching.curriculum.policy_steps": ("PolicyStepTrainer", "training_mode_restored"),
    "curteach_teaching.curriculum.hooks": ("StepHook", "StepLRHook"),
    "curteach_teaching.curriculum.index": ("DemonstrationIndex",),
    "curteach_teaching.curriculum.loss": ("MetricsRecorder", "StepMeanLoss"),
    "curteach_teaching.curriculum.observers": (
        "BatchInfo",
        "CurriculumObserver",
        "EpochMetricMean",
        "EpochPlan",
        "MetricMean",
    ),
    "curteach_teaching.curriculum.scores": ("policy_difficulty", "teacher_difficulty"),
    "curteach_teaching.selection": (
        "VARIANTS",
        "CurriculumSelection",
        "EpochRecord",
        "EpochSelection",
        "FullPacing",
        "LinearPacing",
        "PacingSchedule",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def _adapter(attr: str):
    """A loader of the adapter class ``attr``, imported on first use (torch and imitation load then)."""
    return lambda: __getattr__(attr)


# the built-in trainer adapters, by the names experiments and users look them up with
for _name, _attr in (("bc", "CurriculumBC"), ("dagger", "CurriculumDAgger"), ("gail", "CurriculumAdversarial"),
                     ("airl", "CurriculumAdversarial"), ("mce-irl", "CurriculumMCEIRL")):
    if _name not in TRAINERS.names():
        TRAINERS.add(_name, _adapter(_attr))


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""The one score registry: which demonstrations first, plain scores and trained ones alike.

* :mod:`~curteach_teaching.datasets.scores.registry`: :data:`TASK_SCORES` and :func:`task_difficulty`, the one place
  that decides what a name means (``length``, ``return``, ``level``, a field, ``not:FIELD``, ``module:attr``, a
  trained score such as ``ensemble``, and weighted sums of them);
* :mod:`~curteach_teaching.datasets.scores.sums`: the weighted sums (``ensemble+100*not:success``);
* :mod:`~curteach_teaching.datasets.scores.trained`: the trained score's protocol (``settings()`` and ``fit``);
* :mod:`~curteach_teaching.datasets.scores.ensemble`: the first trained score, BC policies on bootstrap halves.

The names below are imported on first use (the ensemble imports torch).
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    "curteach_teaching.datasets.scores.registry": ("TASK_SCORES", "TaskScore", "describe_task_scores", "is_trained",
                                                   "score_names", "score_terms", "task_difficulty", "trained_score",
                                                   "trained_terms"),
    "curteach_teaching.datasets.scores.trained": ("ScoreOption", "TrainedScore"),
    "curteach_teaching.datasets.scores.ensemble": ("EnsembleScore", "EnsembleScores", "EnsembleTeacher"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

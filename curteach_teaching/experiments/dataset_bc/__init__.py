"""The learner-centric experiment on any demonstration dataset (``curteach dataset-bc``).

``experiment`` holds the settings and calls the prepare and fit steps (:mod:`curteach_teaching.datasets.prepare`,
shared with ``rank``); ``run`` performs one run; ``report`` writes the outputs; ``migrate`` upgrades folders written
before each cell had its own settings (the committed ones), ``upgrade_digest`` those of the earlier data digest. The
evaluator is the library's (:mod:`curteach_teaching.rollouts`), the BabyAI bot datasets a dataset source
(:mod:`curteach_teaching.datasets.sources.babyai`). Names are imported on first use (torch loads only then).
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_LAZY = {
    "DatasetBCExperiment": "curteach_teaching.experiments.dataset_bc.experiment",
}
__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY, globals())

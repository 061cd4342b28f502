"""The learner-centric experiment on any demonstration dataset (``curteach dataset-bc``).

``data`` prepares what the runs read, once, in the driver; ``experiment`` holds the settings and the prepare and fit
steps; ``run`` performs one run; ``report`` writes the outputs; ``migrate`` upgrades folders written before each
cell had its own settings (the committed ones), ``upgrade_digest`` those of the earlier data digest. The evaluator is
the library's (:mod:`curteach_teaching.rollouts`), the BabyAI bot datasets a dataset source
(:mod:`curteach_teaching.datasets.sources.babyai`). Names are imported on first use (torch loads only then).
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_LAZY = {
    "DatasetBCData": "curteach_teaching.experiments.dataset_bc.data",
    "pool_digest": "curteach_teaching.experiments.dataset_bc.data",
    "success_defined": "curteach_teaching.experiments.dataset_bc.data",
    "DatasetBCExperiment": "curteach_teaching.experiments.dataset_bc.experiment",
}
__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY, globals())

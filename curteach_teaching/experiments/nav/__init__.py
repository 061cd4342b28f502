"""The paper's learner-centric experiment on the two navigation tasks (``nav``): the data, one run's parts, the
sweep, its report and the picture of a task.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    "curteach_teaching.experiments.nav.experiment": ("NavExperiment",),
    "curteach_teaching.experiments.nav.report": ("NavReport",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

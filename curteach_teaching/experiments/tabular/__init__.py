"""The teacher-centric experiment on any tabular environment (``teach --env ID``).
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    "curteach_teaching.experiments.tabular.experiment": ("EnvTeachingExperiment",),
    "curteach_teaching.experiments.tabular.report": ("TeachReport",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""The theory on the car: the sensitivity to the teaching rate (``car-irl-sensitivity``, ``car-bc-sensitivity``),
Theorem 2 (``car-irl-theorem2``) and the monotonicity of Theorems 1 and 3 (``car-monotonicity``).
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    "curteach_teaching.experiments.theory.sensitivity": ("SensitivityExperiment", "SensitivityReport"),
    "curteach_teaching.experiments.theory.theorem2": ("RealizableExperiment", "Theorem2Report"),
    "curteach_teaching.experiments.theory.monotonicity_experiment": ("MonotonicityExperiment",),
    "curteach_teaching.experiments.theory.monotonicity_report": ("MonotonicityReport",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

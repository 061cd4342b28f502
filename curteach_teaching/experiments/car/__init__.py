"""The paper's teacher-centric experiments on the car: MaxEnt-IRL (``car-irl``, limited observability), BC
(``car-bc``) and imitation's trainers (``car-trainers``), with their run layout, reports and reading.
"""

from __future__ import annotations

from curteach_teaching._lazy import lazy_getattr

_EXPORTS = {
    "curteach_teaching.experiments.car.irl": ("CarIRLExperiment", "original_would_crash", "parse_init",),
    "curteach_teaching.experiments.car.bc": ("CarBCExperiment",),
    "curteach_teaching.experiments.car.report": ("CarReport", "car_summary_rows"),
    "curteach_teaching.experiments.car.trainers": ("CarTrainersExperiment",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)

__getattr__ = lazy_getattr(__name__, _MODULE_OF, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""The training metrics of one optimizer step (:attr:`~curteach_teaching.curriculum.callbacks.BatchInfo.metrics`),
read from the training device only when someone reads them.

A step trainer may report a metric as a 0-d torch tensor on its device (BC's loss, say) instead of a float: turning
it into a float waits for the device (a synchronisation), which on a GPU costs more than the step itself. A
:class:`StepMetrics` keeps such tensors as they are; reading any value (``metrics["loss"]``, ``dict(metrics)``)
turns all of them into floats at once, one synchronisation for the step (on the CPU, where nothing waits, only the
value read). A watcher that only accumulates a metric
(:class:`~curteach_teaching.curriculum.metrics.MetricMean`) takes the tensor itself (:meth:`StepMetrics.tensor`) and
reads many steps' values at once. On the CPU nothing waits, and the floats are the same either way.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

__all__ = ["StepMetrics", "floats_of", "is_tensor"]


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a torch tensor (without importing torch when it is not loaded)."""
    return hasattr(value, "detach") and hasattr(value, "device")


def floats_of(values: list) -> list[float]:
    """Python floats of ``values`` (floats, or 0-d / one-element tensors on any devices), reading every tensor of
    one device with one synchronisation; each float is exactly ``float(value)``."""
    out = [v if not is_tensor(v) else None for v in values]
    pending = [i for i, v in enumerate(out) if v is None]
    if pending:
        import torch as th

        by_device: dict = {}
        for i in pending:
            by_device.setdefault(values[i].device, []).append(i)
        for rows in by_device.values():
            # float64 holds every float32, float16 and bfloat16 exactly: the floats are float(value)'s
            stacked = th.stack([values[i].detach().reshape(()).to(th.float64) for i in rows]).tolist()
            for i, value in zip(rows, stacked):
                out[i] = float(value)
    return out


class StepMetrics(MutableMapping):
    """``{name: float}`` of one step; values set as tensors stay on their device until a value is read.

    Args:
        values: initial ``{name: float or tensor}``.
    """

    def __init__(self, values: Any = None):
        self._floats: dict = {}
        self._tensors: dict = {}
        self._order: dict = {}  # names in the order they were set (dicts keep it)
        if values:
            self.update(values)

    def __setitem__(self, name: str, value: Any) -> None:
        self._order[name] = None
        if is_tensor(value):
            self._floats.pop(name, None)
            self._tensors[name] = value.detach() if value.requires_grad else value
        else:
            self._tensors.pop(name, None)
            self._floats[name] = value

    def __getitem__(self, name: str) -> Any:
        if name in self._tensors:
            value = self._tensors[name]
            if value.device.type == "cpu":  # nothing waits: read this one only (float(value), as floats_of gives)
                self._floats[name] = float(value)
                del self._tensors[name]
            else:
                self._read()
        return self._floats[name]

    def __delitem__(self, name: str) -> None:
        del self._order[name]
        self._floats.pop(name, None)
        self._tensors.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._order

    def __repr__(self) -> str:
        return f"StepMetrics({dict(self.items())!r})"

    def tensor(self, name: str) -> Any:
        """The value of ``name`` without reading it from its device: the tensor as set, or the float (a metric
        already read, or set as a float)."""
        return self._tensors[name] if name in self._tensors else self._floats[name]

    def _read(self) -> None:
        names = list(self._tensors)
        for name, value in zip(names, floats_of([self._tensors[n] for n in names])):
            self._floats[name] = value
        self._tensors.clear()

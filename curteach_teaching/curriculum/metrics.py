"""Training metrics kept over a curriculum's steps: a metric's mean since the last close, and per epoch.

The values stay on the training device until :meth:`MetricMean.close` (or a checkpoint) reads them, all at once: no
synchronisation per step on a GPU (:mod:`~curteach_teaching.curriculum.step_metrics`); the means are the same.
"""

from __future__ import annotations

import numpy as np

from curteach_teaching.curriculum.callbacks import BatchInfo, CurriculumCallback
from curteach_teaching.curriculum.selection import EpochRecord
from curteach_teaching.curriculum.step_metrics import floats_of

__all__ = ["EpochMetricMean", "MetricMean"]


class MetricMean(CurriculumCallback):
    """The mean of one training metric (``batch.metrics[name]``, e.g. ``"loss"``) over the steps since the last
    :meth:`close`.

    Args:
        name: the metric (:attr:`BatchInfo.metrics`).
    """

    def __init__(self, name: str = "loss"):
        self.name = name
        self._values: list = []  # floats, or 0-d tensors not read yet

    @property
    def reads_metrics(self) -> frozenset:
        """The one metric it reads."""
        return frozenset((self.name,))

    def on_batch(self, batch: BatchInfo) -> None:
        """Keep the step's value of the metric, if it has one (a device tensor is kept unread)."""
        metrics = batch.metrics
        if self.name in metrics:
            value = metrics.tensor(self.name) if hasattr(metrics, "tensor") else metrics[self.name]
            self._values.append(value if hasattr(value, "device") else float(value))

    def close(self) -> float:
        """The mean of the values kept since the last call (NaN without values); starts anew."""
        values = floats_of(self._values)
        mean = float(np.mean(values)) if values else float("nan")
        self._values = []
        return mean

    def state_dict(self) -> dict:
        """``{"values": [...]}``: the values not yet closed (as floats)."""
        self._values = floats_of(self._values)
        return {"values": list(self._values)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self._values = [float(v) for v in state["values"]]


class EpochMetricMean(MetricMean):
    """The mean of one training metric over each epoch's steps (a :class:`MetricMean` closed at every epoch's end).

    One instance may watch several curricula in turn (DAgger's rounds each train a new one): the epochs are counted
    in the order they end.

    Args:
        name: the metric (:attr:`BatchInfo.metrics`).

    Attributes:
        per_epoch: the mean of every epoch ended so far; NaN for an epoch whose steps reported no such metric.
    """

    def __init__(self, name: str = "loss"):
        super().__init__(name)
        self.per_epoch: list[float] = []

    def on_epoch_end(self, record: EpochRecord) -> None:
        """Close the epoch: its mean (NaN without values)."""
        self.per_epoch.append(self.close())

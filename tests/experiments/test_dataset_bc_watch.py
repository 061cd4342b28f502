"""dataset-bc's step watcher: the loss of every step kept for the evaluations, and the run stopped at the first step
whose loss is not finite, whether it reads the loss at every step (the CPU) or only at evaluation points and epoch
ends (off the CPU, where a read waits for the device)."""

import numpy as np
import pytest
import torch as th

from curteach_teaching.curriculum.callbacks import BatchInfo, EpochPlan
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.step_metrics import StepMetrics
from curteach_teaching.experiments.dataset_bc.run import _Diverged, _Watch

INDEX = DemonstrationIndex(np.array([1]))


class Points:
    def __init__(self):
        self.kept = []

    def loss_of(self, batch):
        self.kept.append(batch.step)


def watch_steps(watch, losses, epoch_end):
    batches = [BatchInfo(1, step, step - 1, np.array([0]), INDEX,
                         metrics=StepMetrics({"loss": th.tensor(loss, dtype=th.float32)}))
               for step, loss in enumerate(losses, start=1)]
    watch.on_epoch_start(EpochPlan(1, 1, None, tuple(batches[:epoch_end])))
    for batch in batches:
        watch.on_batch(batch)


LOSSES = [1.0, 2.0, float("inf"), float("nan"), 5.0, 6.0, 7.0]


@pytest.mark.parametrize(("every_step", "eval_every", "epoch_end", "stops_after"),
                         [(None, 4, 7, 3), (False, 4, 7, 4), (False, 10, 6, 6)],
                         ids=["cpu-every-step", "at-a-point", "at-the-epoch-end"])
def test_the_watch_stops_at_the_first_non_finite_step(every_step, eval_every, epoch_end, stops_after):
    points = Points()
    watch = _Watch(points, eval_every, every_step=every_step)
    with pytest.raises(_Diverged):
        watch_steps(watch, LOSSES, epoch_end)
    assert watch.diverged_at == 3 and points.kept == list(range(1, stops_after + 1))


def test_a_finite_run_is_not_stopped():
    for every_step in (None, False):
        points = Points()
        watch = _Watch(points, 2, every_step=every_step)
        watch_steps(watch, [1.0, 2.0, 3.0], 3)
        assert watch.diverged_at is None and points.kept == [1, 2, 3]

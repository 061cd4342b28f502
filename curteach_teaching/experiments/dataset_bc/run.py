"""One run of ``dataset-bc``: the prepared data, the learner ``--policy`` names (from
:data:`~curteach_teaching.learners.dataset_learner.DATASET_LEARNERS`; an SB3 policy trained by imitation's ``BC``
through ``CurriculumBC`` by default) on the cell's curriculum, and the seeded evaluations every ``eval_every``
optimizer steps.

A run reads only what the driver prepared (:class:`~curteach_teaching.datasets.prepared.PreparedData`:
the encoded trajectories, the codec, every task score) and the settings; it reads no file and writes none.

A run's :class:`~curteach_teaching.sweeps.results.RunResult` holds, at each evaluation point (``K`` of them, the
first before training):

* ``records["batches"]["return"]``: ``(K,)`` the optimizer steps taken;
* ``curves["return"]``, ``curves["success"]``, ``curves["length"]``: ``(K,)`` the greedy policy's mean return,
  success rate and episode length over every held-out episode of every dataset;
* ``curves["sampled_success"]``: the same success rate with sampled actions (when ``sampled``); for ``Box`` actions
  also ``curves["sampled_return"]``, the mean return with sampled actions (greedy acts with the Gaussian's mean);
* ``curves["success:<dataset>"]`` (and ``sampled_success:<dataset>``): per dataset, when the pool has several;
* ``curves["train:loss"]``: the mean training loss of the steps since the previous point (NaN at the first);
* ``extras["selected_fraction"]``: the fraction of the pool each epoch trained on; ``extras["diverged"]``: the step
  at which the loss stopped being finite (training stopped there; later points repeat the last evaluation);
* ``extras["selection"]``: what each epoch trained on, one entry per epoch: ``None`` (every episode, unweighted),
  ``{"selected": [pool indices]}`` (order, select) or ``{"weights": (N,) loss weights}`` (weight); ``extras["use"]``
  and ``extras["task"]``: the cell's use and task score.

Without an environment (``experiment.holdout``) the points score the held-out demonstrations instead
(:mod:`~curteach_teaching.experiments.dataset_bc.held_out`): ``curves["nll"]`` and ``curves["mse"]`` (``Box``
actions) or ``curves["accuracy"]``, per group ``nll:<dataset>`` with several, and ``train:loss``; the steps are
recorded under each of ``nll`` and ``mse``/``accuracy``.

Held-out reset seeds: per dataset, the integers ``0, 1, 2, ...`` that are not the reset seed of any of its
episodes, the first ``eval_episodes`` of them (BabyAI bot datasets never use seeds below ``2**20``). Every run and
every curriculum is evaluated on the same seeds; sampled actions draw from a generator seeded by the run. Episodes are
rolled out by the library's evaluator (:mod:`curteach_teaching.rollouts`): success where the env reports it at any
step, else a positive reward on the terminating step; ``Box`` actions are clipped to the space when acting.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from curteach_teaching.sweeps.results import RunResult

__all__ = ["group_order", "held_out_seeds", "run_once"]


def held_out_seeds(dataset_seeds: Any, n: int) -> np.ndarray:
    """``(n,)`` the first ``n`` of ``0, 1, 2, ...`` that are not among ``dataset_seeds`` (``None`` seeds ignored)."""
    taken = {int(s) for s in dataset_seeds if s is not None}
    seeds, candidate = [], 0
    while len(seeds) < n:
        if candidate not in taken:
            seeds.append(candidate)
        candidate += 1
    return np.asarray(seeds, dtype=np.int64)


def group_order(pool: Any) -> list[str]:
    """The pool's datasets in the order given (the ladder)."""
    return list(dict.fromkeys(pool.groups))


class _Evaluations:
    """The evaluation points of one run (a curriculum callback every ``eval_every`` steps)."""

    def __init__(self, experiment: Any, pool: Any, codec: Any, learner: Any, sample_seed: int):
        from curteach_teaching.curriculum.metrics import MetricMean

        self.experiment, self.pool, self.codec, self.learner = experiment, pool, codec, learner
        self.groups = group_order(pool)
        groups = np.asarray(pool.groups)
        self.seeds = {g: held_out_seeds(np.asarray(pool.seeds, dtype=object)[groups == g], experiment.eval_episodes)
                      for g in self.groups}
        self.sample_seed = sample_seed
        self.continuous = isinstance(pool.action_space, gym.spaces.Box)
        self.curves: dict[str, list[float]] = {}
        self.batches: list[int] = []
        self.loss = MetricMean("loss")  # the step losses stay on the training device until a point reads them

    def loss_of(self, batch: Any) -> None:
        """Keep a training step's loss for the next point's ``train:loss``."""
        self.loss.on_batch(batch)

    def __call__(self, step: int) -> None:
        from curteach_teaching.rollouts import evaluate_policy

        point: dict[str, float] = {}
        modes = [("", True)] + ([("sampled_", False)] if self.experiment.sampled else [])
        for prefix, greedy in modes:
            outcomes = []
            for group in self.groups:
                result = evaluate_policy(self.learner, lambda g=group: self.codec.wrap_env(self.pool.make_env(g), g),
                                         self.seeds[group], deterministic=greedy,
                                         generator=None if greedy else self.sample_seed + step)
                outcomes.append(result)
                if len(self.groups) > 1:
                    point[f"{prefix}success:{group}"] = result.success_rate
            successes = np.concatenate([r.successes for r in outcomes])
            point[f"{prefix}success"] = float(successes.mean())
            if greedy:
                point["return"] = float(np.concatenate([r.returns for r in outcomes]).mean())
                point["length"] = float(np.concatenate([r.lengths for r in outcomes]).mean())
            elif self.continuous:
                point["sampled_return"] = float(np.concatenate([r.returns for r in outcomes]).mean())
        point["train:loss"] = self.loss.close()
        self.record(step, point)

    def record(self, step: int, point: dict) -> None:
        self.batches.append(int(step))
        for name, value in point.items():
            self.curves.setdefault(name, []).append(value)


def run_once(experiment: Any, data: Any, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
    """Run ``index`` of curriculum ``cell`` on the runner's device (``experiment.device``, placed by
    :func:`~curteach_teaching.sweeps.devices.run_device`; see the module docstring).

    Args:
        experiment: the settings, a :class:`~curteach_teaching.experiments.dataset_bc.experiment.DatasetBCExperiment`
            (read, never called back for data).
        data: the prepared :class:`~curteach_teaching.datasets.prepared.PreparedData` (``N`` episodes,
            with the task score ``cell`` reads).
        cell: one of the experiment's cells; index: the run's number; seed_sequence: all of the run's randomness.
    """
    from curteach_teaching.curriculum.adapters.learner import learner_curriculum
    from curteach_teaching.curriculum.callbacks import CurriculumCallback, EveryNSteps
    from curteach_teaching.curriculum.pacing import LinearPacing
    from curteach_teaching.curriculum.scaled import scaled_curriculum
    from curteach_teaching.learners.dataset_learner import make_learner
    from curteach_teaching.sweeps.devices import run_device

    pool, codec = data, data.codec  # the evaluations read the groups, seeds and environments of the data
    trajectories = list(data.trajectories)
    lengths = data.lengths
    spec = experiment.cell_spec(cell)
    variant = scaled_curriculum(spec.curriculum, lengths, learner=experiment.learner_term, scale=experiment.scale)
    needs_teacher = getattr(variant, "needs_teacher", True) if not isinstance(variant, str) else False
    teacher = np.array(data.task_scores[spec.task], dtype=np.float64) if needs_teacher else None

    net_seed, batch_seed, sample_seed = (int(s.generate_state(1)[0]) for s in seed_sequence.spawn(3))
    device = run_device(experiment.device)  # the runner's: "cuda" -> this worker's GPU
    learner = make_learner(experiment.policy, codec.observation_space, pool.action_space, seed=net_seed,
                           device=device, batch_size=experiment.batch_size, learning_rate=experiment.learning_rate,
                           rng=np.random.default_rng(batch_seed), options=experiment.learner_options)
    steps_per_epoch, epochs = experiment.schedule(int(lengths.sum()))
    if data.split is not None:  # no environment: scored on the held-out demonstrations
        from curteach_teaching.experiments.dataset_bc.held_out import HeldOutEvaluations

        evaluations = HeldOutEvaluations(data, learner)
    else:
        evaluations = _Evaluations(experiment, pool, codec, learner, sample_seed)

    watch = _Watch(evaluations, experiment.eval_every)

    selection: list = []

    class _Record(CurriculumCallback):
        def on_epoch_start(self, plan: Any) -> None:
            chosen = plan.selection
            if chosen.weights is not None:
                selection.append({"weights": np.asarray(chosen.weights, dtype=np.float64).tolist()})
            elif chosen.preference is None:
                selection.append(None)
            else:
                selection.append({"selected": np.sort(chosen.selected).astype(np.int64).tolist()})

    curriculum = learner_curriculum(learner, trajectories, batch_size=experiment.batch_size, variant=variant,
                                    teacher=teacher, pacing=LinearPacing(experiment.pacing_a, experiment.pacing_b),
                                    rng=np.random.default_rng(batch_seed), steps_per_epoch=steps_per_epoch,
                                    log=False, use=experiment.use_of(cell),
                                    callbacks=[watch, _Record(),
                                               EveryNSteps(experiment.eval_every, evaluations, at_start=True)])
    extras: dict[str, Any] = {"steps_per_epoch": steps_per_epoch, "epochs": epochs, "use": spec.use,
                              "task": spec.task}
    try:
        curriculum.train(epochs, max_steps=experiment.max_batches)
    except _Diverged:
        extras["diverged"] = watch.diverged_at
    if not evaluations.batches or evaluations.batches[-1] != curriculum.step and "diverged" not in extras:
        evaluations(curriculum.step)  # the last point, when max_batches is no multiple of eval_every
    extras["selected_fraction"] = [float(r.fraction) for r in curriculum.history]
    extras["selection"] = selection[: len(curriculum.history)]
    extras["groups"] = evaluations.groups
    curves = {name: np.asarray(values, dtype=np.float64) for name, values in evaluations.curves.items()}
    steps = np.asarray(evaluations.batches, dtype=np.int64)
    names = getattr(evaluations, "step_curves", ("return",))
    return RunResult(index=index, seed=0, cell=cell, curves=curves, records={"batches": {n: steps for n in names}},
                     extras=extras)


class _Watch:
    """The run's step watcher: keeps each step's loss for the evaluations and stops the run at the first step whose
    loss is not finite (``diverged_at``). On the CPU it reads every step's loss (nothing waits). Off it, reading the
    loss would wait for the device at every step: the first non-finite step is kept there and read at every
    evaluation point and at each epoch's last step, before anything is recorded there, so the run stops with the
    same record (the step that diverged, the evaluations before it, the epochs finished before it).

    Args:
        evaluations: the run's evaluation points (``loss_of(batch)``).
        eval_every: their period in steps.
        every_step: read the loss at every step (``None``: where the loss is on the CPU).
    """

    reads_metrics = frozenset(("loss",))

    def __init__(self, evaluations: Any, eval_every: int, every_step: bool | None = None):
        self.evaluations = evaluations
        self.eval_every = int(eval_every)
        self.every_step = every_step
        self.diverged_at: int | None = None
        self._first_bad: Any = None  # read at points: the first non-finite step (-1: none), on the loss's device
        self._epoch_end: int | None = None

    def on_epoch_start(self, plan: Any) -> None:
        self._epoch_end = plan.batches[-1].step if plan.batches else None

    def on_batch(self, batch: Any) -> None:
        self.evaluations.loss_of(batch)
        if "loss" not in batch.metrics:
            return
        loss = batch.metrics.tensor("loss")
        every_step = self.every_step
        if every_step is None:
            every_step = not hasattr(loss, "device") or loss.device.type == "cpu"
        if every_step:
            if not np.isfinite(float(loss)):
                self._stop(batch.step)
            return
        import torch as th

        first = self._first_bad if self._first_bad is not None else th.full((), -1, device=loss.device)
        self._first_bad = th.where(th.isfinite(loss).all() | (first >= 0), first, batch.step)
        if (batch.step % self.eval_every == 0 or batch.step == self._epoch_end) and int(self._first_bad) >= 0:
            self._stop(int(self._first_bad))

    def _stop(self, step: int) -> None:
        self.diverged_at = step
        raise _Diverged()


class _Diverged(Exception):
    """Raised from a callback to stop a run whose training loss is no longer finite."""

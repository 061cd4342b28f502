"""One run of the navigation experiment, assembled from public parts (:mod:`~curteach_teaching.experiments.nav.parts`).

:class:`NavRun` trains a curriculum (``CurriculumBC`` over the training demonstrations) and watches it through the
curriculum's callbacks: as one it checks every step for divergence and feeds the
:class:`~curteach_teaching.experiments.nav.parts.FeatureTracker`, and at the end of every epoch it evaluates the
model (:class:`~curteach_teaching.experiments.nav.parts.BestModel`) and saves its checkpoint; an
:class:`~curteach_teaching.curriculum.callbacks.EveryNSteps` callback evaluates it before training and every
``eval_every`` steps. :meth:`NavRun.build` assembles the experiment's run from its settings; a notebook may assemble
one from its own parts::

    policy = NavigationCNNPolicy.for_navigation(seed=0)
    trainer = nav_trainer(policy, learning_rate=0.01, batch_size=32, rng=np.random.default_rng(1), device="cpu")
    curriculum = nav_curriculum(trainer, data, variant="Cur", rng=np.random.default_rng(2))
    run = NavRun(curriculum=curriculum, evaluator=BestModel(policy, data.val, data.test),
                 features=FeatureTracker(data.features, data.feature_names), epochs=3, eval_every=10)
    result = run.run()

Observers added to ``run.curriculum`` after the run was made see every batch and epoch after it does.
"""

from __future__ import annotations

import copy
import io
from typing import Any

import numpy as np

from curteach_teaching.curriculum.callbacks import BatchInfo, CurriculumCallback, EveryNSteps
from curteach_teaching.curriculum.metrics import MetricMean
from curteach_teaching.curriculum.selection import EpochRecord
from curteach_teaching.experiments.nav.parts import (
    BestModel,
    FeatureTracker,
    RunCheckpoint,
    nav_curriculum,
    nav_trainer,
)
from curteach_teaching.names import AGN
from curteach_teaching.sweeps.results import RunResult

__all__ = ["CHECKPOINT_FORMAT", "NavRun"]

#: Format tag of a navigation run's checkpoint.
CHECKPOINT_FORMAT = "curteach-nav-checkpoint-2"


class NavRun(CurriculumCallback):
    """The state of one navigation run: curriculum (with its trainer and policy), evaluation, features, checkpoint.

    Args:
        curriculum: a :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` with batches of whole
            demonstrations
            (its trainer's policy is the model, e.g. a ``NavigationCNNPolicy``).
        evaluator: the :class:`~curteach_teaching.experiments.nav.parts.BestModel` of that policy.
        features: the :class:`~curteach_teaching.experiments.nav.parts.FeatureTracker` of the curriculum's
            demonstrations.
        epochs: the pacing schedule's length E; max_batches: stop after this many optimizer steps (``None``: all).
        eval_every: evaluate every this many optimizer steps (and before the first).
        cell, index: the curriculum's name and the run's index, for the result and the progress bar.
        checkpoint: where to save the run after every epoch (``None``: nowhere).
        progress: show a progress bar (on line ``bar_position`` of the terminal).

    Attributes:
        curve: ``{"batches", "seen", "val", "test", "features", "loss"}`` lists, one entry per evaluation point
            (``loss``: the mean training loss of the steps since the previous point, NaN at the first).
        loss: the :class:`~curteach_teaching.curriculum.metrics.MetricMean` of the step losses, closed at every
            evaluation point.
        per_epoch: ``{"val", "test", "selected_fraction", "batches"}`` lists, one entry per epoch.
        epoch: the last epoch finished; diverged_at: the step training diverged at (``None``).
    """

    save_with_curriculum = False  # its state holds the curriculum's; the checkpoint saves both (state_dict)
    reads_metrics = frozenset(("loss",))  # its MetricMean's

    def __init__(
        self,
        *,
        curriculum: Any,
        evaluator: BestModel,
        features: FeatureTracker,
        epochs: int,
        eval_every: int,
        max_batches: int | None = None,
        cell: str = "",
        index: int = 0,
        checkpoint: RunCheckpoint | None = None,
        progress: bool = False,
        bar_position: int = 1,
    ):
        self.curriculum, self.evaluator, self.features = curriculum, evaluator, features
        self.epochs, self.eval_every, self.max_batches = epochs, eval_every, max_batches
        self.cell, self.index, self.checkpoint = cell, index, checkpoint
        self.progress, self.bar_position = progress, bar_position
        self.policy = curriculum.trainer.policy
        self.curve = {"batches": [], "seen": [], "val": [], "test": [], "features": [], "loss": []}
        self.loss = MetricMean("loss")  # the step losses since the last evaluation point
        self.per_epoch = {"val": [], "test": [], "selected_fraction": [], "batches": []}
        self.epoch = 0
        self.diverged_at: int | None = None
        self._first_bad: Any = None  # off the CPU: the first step with a non-finite parameter (-1: none), on the device
        self._bad_step: int | None = None
        self.bar = None
        curriculum.add_callback(self)
        curriculum.add_callback(EveryNSteps(eval_every, self.evaluate, at_start=True))

    @classmethod
    def build(cls, experiment: Any, cell: str, index: int, seed_sequence: np.random.SeedSequence, *,
              evaluate: Any = None, bar_position: int = 1, device: str | None = None) -> NavRun:
        """Run ``index`` of curriculum ``cell`` of a
        :class:`~curteach_teaching.experiments.nav.experiment.NavExperiment`:
        its network, trainer, curriculum, evaluation and checkpoint, from ``seed_sequence`` (run ``i`` of every
        curriculum draws the same network weights, dropout masks and permutations).

        Args:
            evaluate: ``(policy, split, task_batch) -> mean return`` for :class:`BestModel` (default greedy rollouts).
            bar_position: the progress bar's line.
            device: where it trains (default ``experiment.device``; a process-pool worker passes its GPU,
                ``"cuda:k"``).

        Raises:
            ValueError: the dataset holds the other task.
        """
        from curteach_teaching.experiments.nav.data import prepare
        from curteach_teaching.learners.networks import NavigationCNNPolicy

        data = prepare(experiment.local_dataset(), experiment.dataset_digest)
        if data.kind != experiment.task:
            raise ValueError(f"the dataset holds {data.kind} tasks, not {experiment.task}")
        network_seed, curriculum_seed, trainer_seed = seed_sequence.spawn(3)
        torch_seed = int(network_seed.generate_state(1, np.uint64)[0] >> np.uint64(1))
        device = experiment.device if device is None else device
        policy = NavigationCNNPolicy.for_navigation(seed=torch_seed, device=device)
        trainer = nav_trainer(policy, learning_rate=experiment.learning_rate, batch_size=experiment.demos_per_batch,
                              rng=np.random.default_rng(trainer_seed), device=device,
                              optimizer=experiment.optimizer)
        curriculum = nav_curriculum(
            trainer, data, variant=experiment.curriculum_names()[cell], rng=np.random.default_rng(curriculum_seed),
            teacher_difficulty=experiment.teacher_difficulty, demos_per_batch=experiment.demos_per_batch,
            loss=experiment.loss, pacing_a=experiment.pacing_a, pacing_b=experiment.pacing_b,
            lr_period=experiment.lr_period,
        )
        path = experiment.checkpoint_path(cell, index)
        return cls(
            curriculum=curriculum,
            evaluator=BestModel(policy, data.val, data.test, device=device, evaluate=evaluate),
            features=FeatureTracker(data.features, data.feature_names),
            epochs=experiment.epochs, eval_every=experiment.eval_every, max_batches=experiment.max_batches,
            cell=cell, index=index, checkpoint=None if path is None else RunCheckpoint(path, CHECKPOINT_FORMAT),
            progress=experiment.progress, bar_position=bar_position,
        )

    # -------------------------------------------------------- evaluation, observation
    def evaluate(self, step: int) -> None:
        """The callback every ``eval_every`` steps: consider the model and record an evaluation point."""
        val = self.evaluator.consider(step)
        self._record(step, val)
        if self.bar is not None:
            self.bar.set_postfix(val=f"{val:.3f}", test=f"{self.evaluator.best_test:.3f}", refresh=False)

    def _record(self, step: int, val: float) -> None:
        self.curve["batches"].append(step)
        self.curve["seen"].append(self.features.seen)
        self.curve["val"].append(val)
        self.curve["test"].append(self.evaluator.best_test)
        self.curve["features"].append(self.features.current().tolist())
        self.curve["loss"].append(self.loss.close())

    def on_batch(self, batch: BatchInfo) -> None:
        """After every step: stop on non-finite parameters, then track the batch's features.

        On the CPU the check stops the run at the step that diverged. On a GPU, reading the check would wait for the
        device at every step; the first non-finite step is kept there instead and read at every evaluation point
        and epoch end (before the evaluation), so a diverged run stops there, recording the step that diverged."""
        import torch as th

        finite = th.stack([th.isfinite(p).all() for p in self.policy.parameters()]).all()
        if finite.device.type == "cpu":
            if not bool(finite):
                from curteach_teaching.learners.divergence import LearnerDiverged

                raise LearnerDiverged(f"step {batch.step}: a parameter is not finite")
        else:
            first = self._first_bad if self._first_bad is not None else th.full((), -1, device=finite.device)
            self._first_bad = th.where(finite | (first >= 0), first, batch.step)
            if batch.step % self.eval_every == 0:
                self._check_divergence()
        self.features.on_batch(batch)
        self.loss.on_batch(batch)
        if self.bar is not None:
            self.bar.update()

    def _check_divergence(self) -> None:
        """Off the CPU: read the first non-finite step kept on the device; stop if there is one."""
        if self._first_bad is not None and int(self._first_bad) >= 0:
            from curteach_teaching.learners.divergence import LearnerDiverged

            self._bad_step = int(self._first_bad)
            raise LearnerDiverged(f"step {self._bad_step}: a parameter is not finite")

    def on_epoch_end(self, record: EpochRecord) -> None:
        """After every epoch: consider the model, record the epoch and save the checkpoint."""
        self._check_divergence()
        val = self.evaluator.consider(self.curriculum.step)
        self.per_epoch["val"].append(val)
        self.per_epoch["test"].append(self.evaluator.best_test)
        self.per_epoch["selected_fraction"].append(float(record.fraction))
        self.per_epoch["batches"].append(int(self.curriculum.step))
        self.epoch = record.epoch
        if self.bar is not None:
            self.bar.set_description(f"{self.cell} run {self.index} epoch {record.epoch}/{self.epochs}")
        if self.checkpoint is not None:
            self.checkpoint.save(self.state_dict())

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        """Everything the run needs to resume after its last finished epoch (torch, ``weights_only``)."""
        return {
            "epoch": self.epoch,
            "policy": self.policy.state_dict(),
            "optimizer": self.curriculum.trainer.optimizer.state_dict(),
            "dropout": self.policy.get_rng_state(),
            "curriculum": self.curriculum.state_dict(),
            "features": self.features.state_dict(),
            "best": self.evaluator.state_dict(),
            "curve": copy.deepcopy(self.curve),
            "per_epoch": copy.deepcopy(self.per_epoch),
            "loss_since_eval": self.loss.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        self.policy.load_state_dict(state["policy"])
        self.curriculum.trainer.optimizer.load_state_dict(state["optimizer"])
        self.policy.set_rng_state(state["dropout"])
        self.curriculum.load_state_dict(state["curriculum"])
        self.features.load_state_dict(state["features"])
        self.evaluator.load_state_dict(state["best"])
        self.curve, self.per_epoch = state["curve"], state["per_epoch"]
        # a checkpoint written before the loss was recorded: NaN up to the first evaluation point after resuming
        self.curve.setdefault("loss", [float("nan")] * len(self.curve["batches"]))
        self.loss.load_state_dict(state.get("loss_since_eval", {"values": [float("nan")]}))
        self.epoch = int(state["epoch"])

    def planned_batches(self) -> int:
        """Optimizer steps the run will take: batches per epoch from the pacing schedule, cut at ``max_batches``."""
        curriculum, n = self.curriculum, self.curriculum.n_demonstrations
        kept = [n if curriculum.variant == AGN else curriculum.pacing(e, self.epochs, n)
                for e in range(1, self.epochs + 1)]
        total = sum(-(-k // curriculum.demos_per_batch) for k in kept)
        return total if self.max_batches is None else min(total, self.max_batches)

    # -------------------------------------------------------------------- run
    def run(self) -> RunResult:
        """Train (resuming from the checkpoint if there is one) and return the run's result; the checkpoint is
        removed once the run has ended."""
        from curteach_teaching.learners.divergence import LearnerDiverged

        self.epoch = 0
        start = 1
        if self.checkpoint is not None and self.checkpoint.restore(self.load_state_dict) is not None:
            start = self.epoch + 1
        if self.progress:
            from tqdm import tqdm

            self.bar = tqdm(total=self.planned_batches(), initial=self.curriculum.step, unit="batch", leave=False,
                            desc=f"{self.cell} run {self.index} epoch {self.epoch}/{self.epochs}",
                            position=self.bar_position, dynamic_ncols=True)
        try:
            self.policy.set_training_mode(True)
            self.curriculum.train(self.epochs, start_epoch=start, max_steps=self.max_batches)
            self._check_divergence()
        except LearnerDiverged:
            self._close_diverged()
        finally:
            if self.bar is not None:
                self.bar.close()
        result = self.result()
        if self.checkpoint is not None:
            self.checkpoint.remove()
        return result

    def _close_diverged(self) -> None:
        """Stop at the divergence step; the evaluation points still planned keep the best model's test return, the
        features and demonstrations seen as they were, and a validation return of NaN."""
        self.diverged_at = int(self.curriculum.step) if self._bad_step is None else self._bad_step
        every = self.eval_every
        last = self.curve["batches"][-1] if self.curve["batches"] else -every
        for batches in range((last // every + 1) * every, self.planned_batches() + 1, every):
            self._record(batches, float("nan"))

    def result(self) -> RunResult:
        """The run's :class:`~curteach_teaching.sweeps.results.RunResult` (see the experiment's docstring)."""
        import torch as th

        curve, best = self.curve, self.evaluator
        features = np.array(curve["features"])  # (K, F)
        curves = {"test": np.array(curve["test"]), "val": np.array(curve["val"]),
                  "train:loss": np.array(curve["loss"], dtype=np.float64)}
        for j, name in enumerate(self.features.names):
            curves[f"feature:{name}"] = features[:, j]
        buffer = io.BytesIO()
        th.save(best.best_state, buffer)
        return RunResult(
            index=self.index,
            seed=0,
            curves=curves,
            records={"batches": {"test": np.array(curve["batches"], dtype=np.int64)},
                     "seen": {"test": np.array(curve["seen"], dtype=np.int64)}},
            extras={
                "batches": int(self.curriculum.step),
                "epochs": int(self.epoch),
                "best_val": float(best.best_val),
                "best_test": float(best.best_test),
                "epoch_val": self.per_epoch["val"],
                "epoch_test": self.per_epoch["test"],
                "epoch_batches": self.per_epoch["batches"],
                "selected_fraction": self.per_epoch["selected_fraction"],
                **({} if self.diverged_at is None else {"diverged": self.diverged_at}),
            },
            cell=self.cell,
            artifacts={"model.pt": buffer.getvalue()},
        )

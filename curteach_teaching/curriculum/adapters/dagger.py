"""A curriculum over the aggregated demonstrations of imitation's DAgger (``DAggerTrainer``, ``SimpleDAggerTrainer``).

DAgger alternates rounds of collection (the expert labels the states the learner visits, saved by DAgger's own
collector under ``scratch_dir/demos/round-XXX/``) and a BC step on every demonstration gathered so far.
:class:`CurriculumDAgger` takes the user's trainer as it is and replaces only the BC step's choice of data: each
round's BC step is ``epochs_per_round`` curriculum epochs, as
:class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` trains them, over the aggregated demonstrations (the
adapter's initial ``demonstrations``, then every round's saved ones, read with DAgger's own file helpers in DAgger's
order), on the trainer's ``bc_trainer``, its policy and optimizer kept across rounds.

Pacing runs over the whole training: round ``r`` (0-based) trains the global epochs ``r E + 1 .. r E + E`` of an
``n_rounds * E``-epoch schedule, so the selected fraction grows across rounds while the pool grows. The learner's
difficulty is scored under the BC policy at every epoch; the teacher's, by the teacher policy or callable, is scored
for each round's pool (the pool changes, so fixed scores are refused).

A round is :meth:`CurriculumDAgger.update` (the BC step; the round counter advances as in DAgger's
``extend_and_update``) after the demonstrations of the round are collected, e.g. by :meth:`CurriculumDAgger.collect`
(DAgger's ``create_trajectory_collector`` driven by ``rollout.generate_trajectories`` with the expert, as
``SimpleDAggerTrainer.train`` does) or by the user's own collector.

The curriculum is a :class:`~curteach_teaching.curriculum.core.Curriculum` whose pool grows: each round's
:meth:`~CurriculumDAgger.update` grows its selection to the round's pool
(:meth:`~curteach_teaching.curriculum.selection.CurriculumSelection.grow`; a pool keeps its order, so an earlier
epoch's ``selected`` indices name the same demonstrations) and trains on it through a
:class:`~curteach_teaching.curriculum.adapters.bc.BCStepTrainer` of the round's pool, while the step, the
generator of the batches, the callbacks and the history go on across rounds.

Saved state (:meth:`~curteach_teaching.curriculum.core.Curriculum.state_dict`): the core's
(:mod:`~curteach_teaching.curriculum.state`; the config holds the trainer's round, so a state loads only into a
trainer at the round it was saved at); DAgger saves the rest (``trainer.save_trainer()`` and its demonstration files;
resume with imitation's ``reconstruct_trainer``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from imitation.algorithms.dagger import DAggerTrainer, SimpleDAggerTrainer
from imitation.data import rollout, serialize

from curteach_envs._util import check_int
from curteach_teaching.curriculum.adapters._imitation_compat import dagger_round_paths
from curteach_teaching.curriculum.adapters.bc import BCPool, check_bc_settings
from curteach_teaching.curriculum.batches import make_batcher
from curteach_teaching.curriculum.core import Curriculum
from curteach_teaching.curriculum.options import CurriculumOptions, check_demonstrations, check_trainer
from curteach_teaching.curriculum.selection import CurriculumSelection, variant_name
from curteach_teaching.curriculum.selection_logger import SelectionLogger

__all__ = ["CurriculumDAgger"]

#: Version tag of :meth:`CurriculumDAgger.state_dict` (the core's state; ``/1`` was a format of its own).
STATE_FORMAT = "curteach.CurriculumDAgger/2"


class CurriculumDAgger(Curriculum):
    """Run DAgger's BC steps on a curriculum over the aggregated demonstrations.

    Args:
        trainer: an ``imitation.algorithms.dagger.DAggerTrainer`` (or ``SimpleDAggerTrainer``).
        demonstrations: initial ``Trajectory`` demonstrations kept in memory and ranked with the collected ones
            (default none: only the trainer's saved rounds, e.g. ``SimpleDAggerTrainer``'s ``expert_trajs``).
        n_rounds: the rounds the pacing schedule spans (>= 1); ``update`` refuses a round beyond it.
        epochs_per_round: BC curriculum epochs per round (>= 1; DAgger's own default is 4).
        options: the options every adapter shares (:class:`~curteach_teaching.curriculum.options.CurriculumOptions`;
            or any of them as a keyword). The teacher is, for Cur and Cur-T, an SB3 policy or a callable
            ``(obs, acts) -> log pi^E(a | s)`` (default: the ``expert_policy`` of a ``SimpleDAggerTrainer`` when it
            has ``evaluate_actions``); the pacing runs over the global epochs; the generator defaults to
            ``trainer.bc_trainer.rng``; ``log`` records each epoch's selection in ``trainer.logger``.
        remainder, batch_unit, demos_per_batch, loss: the BC step's, as
            :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` takes them.

    Attributes:
        history: the :class:`~curteach_teaching.curriculum.selection.EpochRecord` of every epoch trained, over all
            rounds (an epoch's ``selected`` index into its round's :meth:`aggregated` list, whose prefix the later
            rounds' lists keep); epoch ``e`` (1-based) is of round ``(e - 1) // epochs_per_round``.
        step: BC optimizer steps taken so far, over all rounds; epoch: global curriculum epochs trained.
        n_demonstrations: the demonstrations of the last round's pool (0 before the first round).

    Raises:
        ValueError: a trainer that is not DAgger (the message lists the supported trainers), fixed teacher scores,
            a missing teacher for Cur or Cur-T, a bad variant, pacing or BC setting, demonstrations that are not
            Trajectories, an unknown option.
    """

    def __init__(
        self,
        trainer: DAggerTrainer,
        demonstrations: Sequence[Any] = (),
        *,
        options: CurriculumOptions | None = None,
        n_rounds: int,
        epochs_per_round: int = DAggerTrainer.DEFAULT_N_EPOCHS,
        remainder: str = "partial",
        batch_unit: str = "transitions",
        demos_per_batch: int | None = None,
        loss: str = "mean",
        **shared: Any,
    ):
        options = CurriculumOptions.of("CurriculumDAgger", options, shared)
        check_trainer(trainer, DAggerTrainer, "CurriculumDAgger")
        self.n_rounds = check_int("n_rounds", n_rounds, 1)
        self.epochs_per_round = check_int("epochs_per_round", epochs_per_round, 1)
        teacher = options.teacher
        if teacher is None and isinstance(trainer, SimpleDAggerTrainer):
            expert = trainer.expert_policy
            teacher = expert if hasattr(expert, "evaluate_actions") else None
        if teacher is not None and not (hasattr(teacher, "evaluate_actions") or callable(teacher)):
            raise ValueError(
                "DAgger's demonstrations grow every round, so fixed per-demonstration scores cannot follow them: give "
                "the teacher as an SB3 policy or a callable (obs, acts) -> log pi^E(a | s); got "
                f"{type(teacher).__name__}"
            )
        if teacher is None and options.variant in ("Cur", "Cur-T"):
            raise ValueError(f"variant {options.variant!r} needs a teacher (an SB3 policy or a callable)")
        bc = trainer.bc_trainer
        demos_per_batch, _ = check_bc_settings(bc, remainder=remainder, batch_unit=batch_unit,
                                               demos_per_batch=demos_per_batch, loss=loss, use=options.use)
        self.trainer = trainer
        self.demonstrations = (check_demonstrations(demonstrations, "the DAgger curriculum")
                               if len(demonstrations) else [])
        self.teacher = teacher
        self.min_log_prob = options.min_log_prob
        self.remainder, self.batch_unit, self.demos_per_batch, self.loss = remainder, batch_unit, demos_per_batch, loss
        self._unit_size = demos_per_batch if batch_unit == "demonstrations" else bc.batch_size
        rng = options.rng if options.rng is not None else bc.rng
        self.options = options = dataclasses.replace(options, teacher=teacher, rng=rng)
        # one logger over all rounds (_use_pool tells it each round's pool), so its epoch count runs over them all;
        # last, so that it records an epoch after the user's callbacks have heard of it
        self.logger = SelectionLogger(trainer.logger, 0) if options.log else None
        callbacks = [*options.callbacks, *([self.logger] if self.logger is not None else [])]
        self._rounds: dict[int, list] = {}
        super().__init__(None, None, CurriculumSelection.growing(options.variant, options.pacing, options.use),
                         make_batcher(batch_unit, self._unit_size, remainder), rng=rng, callbacks=callbacks,
                         state_format=STATE_FORMAT,
                         extra_config={"loss": loss, "n_rounds": self.n_rounds,
                                       "epochs_per_round": self.epochs_per_round,
                                       "n_initial": len(self.demonstrations)})

    @property
    def epoch(self) -> int:
        """Global curriculum epochs trained."""
        return len(self.history)

    # ------------------------------------------------------------ demonstrations
    def _round_demonstrations(self, round_num: int) -> list:
        if round_num not in self._rounds:
            paths = dagger_round_paths(self.trainer, round_num)  # DAgger's own folder and file order
            demos = [traj for path in paths for traj in serialize.load(path)]
            if round_num < self.trainer.round_num:  # a finished round's files no longer change
                self._rounds[round_num] = demos
            return demos
        return self._rounds[round_num]

    def aggregated(self) -> list:
        """The demonstrations of the current round's BC step: the initial ones, then those saved for rounds
        ``0 .. trainer.round_num`` (in DAgger's order)."""
        demos = list(self.demonstrations)
        for round_num in range(self.trainer.round_num + 1):
            demos += self._round_demonstrations(round_num)
        return demos

    def collect(self, expert_policy: Any, *, min_episodes: int = 3, min_timesteps: int = 500) -> list:
        """Collect the current round's demonstrations with DAgger's collector (beta from the trainer's schedule):
        ``expert_policy`` labels every visited state; saved by the collector into the round's folder.

        Returns:
            The trajectories collected (as the collector saw them).
        """
        collector = self.trainer.create_trajectory_collector()
        sample_until = rollout.make_sample_until(min_timesteps=max(min_timesteps, self.trainer.batch_size),
                                                 min_episodes=min_episodes)
        return rollout.generate_trajectories(policy=expert_policy, venv=collector, sample_until=sample_until,
                                             deterministic_policy=True, rng=collector.rng)

    # ------------------------------------------------------------------ training
    def update(self) -> int:
        """The current round's BC step on the curriculum (see the module docstring); advances the round counter.

        Returns:
            The new round number.

        Raises:
            ValueError: no demonstrations yet, or a round beyond ``n_rounds``.
        """
        round_num = self.trainer.round_num
        if round_num >= self.n_rounds:
            raise ValueError(f"the pacing schedule spans n_rounds = {self.n_rounds} rounds; round {round_num} is "
                             "beyond")
        demos = self.aggregated()
        if not demos:
            raise ValueError(f"no demonstrations for round {round_num}: collect some first (collect(expert_policy))")
        self._use_pool(demos)
        total = self.n_rounds * self.epochs_per_round
        for k in range(self.epochs_per_round):
            self.train_epoch(round_num * self.epochs_per_round + k + 1, total)
        self.trainer.round_num += 1
        return self.trainer.round_num

    def _use_pool(self, demonstrations: list) -> None:
        full_batch_size = None if self.batch_unit == "demonstrations" else self._unit_size
        pool = BCPool(self.trainer.bc_trainer, demonstrations, self.options, full_batch_size=full_batch_size,
                      loss=self.loss, adapter="the DAgger curriculum")
        self.selection.grow(pool.index.n_demonstrations, pool.teacher_scores, pool.index.lengths)
        self._set_demonstrations(pool.step_trainer, pool.index)
        if self.logger is not None:
            self.logger.n_demonstrations = pool.index.n_demonstrations
            self.logger.teacher_difficulty = pool.teacher_scores

    def train_round(self, expert_policy: Any, *, min_episodes: int = 3, min_timesteps: int = 500) -> int:
        """:meth:`collect` then :meth:`update`; returns the new round number."""
        self.collect(expert_policy, min_episodes=min_episodes, min_timesteps=min_timesteps)
        return self.update()

    # --------------------------------------------------------------- checkpoints
    def config(self) -> dict:
        """What a saved run must share with this one: the variant, the BC step's batches and loss, the rounds, the
        initial demonstrations' number and the trainer's round (the pool grows, so its size is left out)."""
        return {"variant": variant_name(self.variant), **self.selection.use.config(), **self.batcher.config(),
                **self._extra_config, "round": int(self.trainer.round_num)}

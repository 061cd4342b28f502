"""A curriculum over the aggregated demonstrations of imitation's DAgger (``DAggerTrainer``, ``SimpleDAggerTrainer``).

DAgger alternates rounds of collection (the expert labels the states the learner visits, saved by DAgger's own
collector under ``scratch_dir/demos/round-XXX/``) and a BC step on every demonstration gathered so far.
:class:`CurriculumDAgger` takes the user's trainer as it is and replaces only the BC step's choice of data: each
round's BC step is ``epochs_per_round`` curriculum epochs of a
:class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` over the aggregated demonstrations (the adapter's
initial
``demonstrations``, then every round's saved ones, read with DAgger's own file helpers in DAgger's order), on the
trainer's ``bc_trainer``, its policy and optimizer kept across rounds.

Pacing runs over the whole training: round ``r`` (0-based) trains the global epochs ``r E + 1 .. r E + E`` of an
``n_rounds * E``-epoch schedule, so the selected fraction grows across rounds while the pool grows. The learner's
difficulty is scored under the BC policy at every epoch; the teacher's, by the teacher policy or callable, is scored
for each round's pool (the pool changes, so fixed scores are refused).

A round is :meth:`CurriculumDAgger.update` (the BC step; the round counter advances as in DAgger's
``extend_and_update``) after the demonstrations of the round are collected, e.g. by :meth:`CurriculumDAgger.collect`
(DAgger's ``create_trajectory_collector`` driven by ``rollout.generate_trajectories`` with the expert, as
``SimpleDAggerTrainer.train`` does) or by the user's own collector.

Saved state (:meth:`CurriculumDAgger.state_dict`): the round and step counters, the generator of the batches and the
per-epoch log; DAgger saves the rest (``trainer.save_trainer()`` and its demonstration files; resume with imitation's
``reconstruct_trainer``).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from imitation.algorithms.dagger import DAggerTrainer, SimpleDAggerTrainer
from imitation.data import rollout, serialize

from curteach_envs._util import check_int
from curteach_teaching.curriculum.adapters._imitation_compat import dagger_round_paths
from curteach_teaching.curriculum.adapters.bc import CurriculumBC
from curteach_teaching.curriculum.options import CurriculumOptions, check_demonstrations, check_trainer
from curteach_teaching.curriculum.selection import EpochRecord
from curteach_teaching.curriculum.selection_logger import SelectionLogger

__all__ = ["CurriculumDAgger"]

#: The settings of the BC step a DAgger curriculum passes on to every round's CurriculumBC
BC_SETTINGS = ("remainder", "batch_unit", "demos_per_batch", "loss")

#: Version tag of :meth:`CurriculumDAgger.state_dict`.
STATE_FORMAT = "curteach.CurriculumDAgger/1"


class CurriculumDAgger:
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
            ``trainer.bc_trainer.rng``; the callbacks are given to every round's
            :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC`; ``log`` records each epoch's selection
            in ``trainer.logger``.
        **shared_and_bc: the shared options as keywords, and further
            :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC` settings (``batch_unit``,
            ``demos_per_batch``, ``remainder``, ``loss``).

    Attributes:
        history: ``(round, EpochRecord)`` of every epoch trained (the record's ``selected`` index into that round's
            :meth:`aggregated` list).
        step: BC optimizer steps taken so far; epoch: global curriculum epochs trained.

    Raises:
        ValueError: a trainer that is not DAgger (the message lists the supported trainers), fixed teacher scores,
            a missing teacher for Cur or Cur-T, a bad variant or pacing, demonstrations that are not Trajectories.
    """

    def __init__(
        self,
        trainer: DAggerTrainer,
        demonstrations: Sequence[Any] = (),
        *,
        options: CurriculumOptions | None = None,
        n_rounds: int,
        epochs_per_round: int = DAggerTrainer.DEFAULT_N_EPOCHS,
        **shared_and_bc: Any,
    ):
        shared_names = {f.name for f in dataclasses.fields(CurriculumOptions)}
        options = CurriculumOptions.of("CurriculumDAgger", options,
                                       {k: v for k, v in shared_and_bc.items() if k in shared_names})
        bc_options = {k: v for k, v in shared_and_bc.items() if k not in shared_names}
        unknown = sorted(set(bc_options) - set(BC_SETTINGS))
        if unknown:
            raise ValueError(f"CurriculumDAgger got unknown option(s) {unknown}; the options every adapter shares: "
                             f"{sorted(shared_names)}, and the BC step's: {list(BC_SETTINGS)}")
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
        self.trainer = trainer
        self.demonstrations = (check_demonstrations(demonstrations, "the DAgger curriculum")
                               if len(demonstrations) else [])
        # every round's BC curriculum: the shared options with the resolved teacher and generator; the selection is
        # logged here, once over the rounds, not by each round's adapter
        self.rng = options.rng if options.rng is not None else trainer.bc_trainer.rng
        self.options = dataclasses.replace(options, teacher=teacher, rng=self.rng)
        self.variant = options.variant
        self.teacher = teacher
        self.pacing = options.pacing
        self.min_log_prob = options.min_log_prob
        self.bc_options = bc_options
        self.logger = SelectionLogger(trainer.logger, 1) if options.log else None
        self.history: list[tuple[int, EpochRecord]] = []
        self.step = 0
        self.epoch = 0
        self._rounds: dict[int, list] = {}

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
        curriculum = CurriculumBC(self.trainer.bc_trainer, demos, options=dataclasses.replace(self.options, log=False),
                                  **self.bc_options)
        if self.logger is not None:
            self.logger.n_demonstrations = curriculum.n_demonstrations
            self.logger.teacher_difficulty = curriculum.teacher_difficulty
            curriculum.add_callback(self.logger)
        total = self.n_rounds * self.epochs_per_round
        for k in range(self.epochs_per_round):
            record = curriculum.train_epoch(round_num * self.epochs_per_round + k + 1, total)
            self.history.append((round_num, record))
            self.epoch += 1
        self.step += curriculum.step
        self.trainer.round_num += 1
        return self.trainer.round_num

    def train_round(self, expert_policy: Any, *, min_episodes: int = 3, min_timesteps: int = 500) -> int:
        """:meth:`collect` then :meth:`update`; returns the new round number."""
        self.collect(expert_policy, min_episodes=min_episodes, min_timesteps=min_timesteps)
        return self.update()

    # --------------------------------------------------------------- checkpoints
    def config(self) -> dict:
        """What a saved run must share with this one."""
        return {"n_rounds": self.n_rounds, "epochs_per_round": self.epochs_per_round, "variant": self.variant,
                "n_initial": len(self.demonstrations), **{k: v for k, v in sorted(self.bc_options.items())}}

    def state_dict(self) -> dict:
        """The counters, the batches' generator and the log, as plain Python values (the trainer saves itself)."""
        history = [{"round": r, **dataclasses.asdict(record), "selected": np.asarray(record.selected).tolist()}
                   for r, record in self.history]
        for entry in history:
            entry.update({k: v.item() for k, v in entry.items() if isinstance(v, np.generic)})
        return {"format": STATE_FORMAT, "config": self.config(), "round": int(self.trainer.round_num),
                "step": self.step, "epoch": self.epoch, "rng": copy.deepcopy(self.rng.bit_generator.state),
                "history": history}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (after the trainer itself, e.g. with ``reconstruct_trainer``).

        Raises:
            ValueError: not such a state, one of another configuration, or of another round than the trainer's.
        """
        keys = {"format", "config", "round", "step", "epoch", "rng", "history"}
        if not isinstance(state, dict) or set(state) != keys or state["format"] != STATE_FORMAT:
            raise ValueError(f"not a CurriculumDAgger state ({STATE_FORMAT}, keys {sorted(keys)})")
        if state["config"] != self.config():
            raise ValueError(f"the saved curriculum differs from this one: {state['config']} vs {self.config()}")
        if state["round"] != self.trainer.round_num:
            raise ValueError(f"the state is of round {state['round']}; the trainer is at round "
                             f"{self.trainer.round_num}")
        if state["rng"].get("bit_generator") != type(self.rng.bit_generator).__name__:
            raise ValueError(f"the saved generator state does not fit {type(self.rng.bit_generator).__name__}")
        history = []
        for entry in state["history"]:
            entry = dict(entry)
            round_num = entry.pop("round")
            history.append((round_num, EpochRecord(**{**entry, "selected": np.asarray(entry["selected"])})))
        self.rng.bit_generator.state = copy.deepcopy(state["rng"])
        self.step, self.epoch, self.history = int(state["step"]), int(state["epoch"]), history

"""A curriculum over demonstrations for imitation's adversarial trainers, GAIL and AIRL.

:class:`CurriculumAdversarial` takes the user's ``GAIL`` or ``AIRL`` trainer as it is. Every curriculum epoch is
``rounds_per_epoch`` of the trainer's own rounds (``trainer.train(rounds * gen_train_timesteps)``: generator
updates, then discriminator updates); before them the curriculum

1. scores the learner: ``log Psi^L(xi_i) = -sum_tau log pi(a_tau | s_tau)`` under the **generator's** current
   policy (``trainer.policy``, i.e. ``gen_algo.policy``), for Cur and Cur-L;
2. selects the epoch's demonstrations (preference by variant, ranking, pacing:
   :mod:`curteach_teaching.curriculum.selection`);
3. hands them to the trainer through its own door, ``trainer.set_demonstrations(selected trajectories)``: the
   discriminator's expert batches are drawn from that subset only, until the next epoch replaces it.

So the generator is trained against a discriminator that has seen the demonstrations the curriculum chose; nothing
of imitation's loop is replaced. The selection is recorded through the trainer's logger
(:class:`~curteach_teaching.curriculum.selection_logger.SelectionLogger`) and in :attr:`history`.

Saved state (:meth:`~curteach_teaching.curriculum.rounds.RoundCurriculum.state_dict`): the curriculum's, plus the
generator policy and its optimizer, the discriminator's reward network and optimizer and the trainer's step
counters. The environment's state, the generator's rollout buffer and the replay buffer of generator samples are not
part of it (imitation offers no way to restore them), so a resumed run continues from the same networks and
selection, not bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
from imitation.algorithms.adversarial.common import AdversarialTrainer
from imitation.data import rollout

from curteach_envs._util import check_int
from curteach_teaching.curriculum.adapters._imitation_compat import (
    ADVERSARIAL_STATE_KEYS,
    adversarial_state,
    load_adversarial_state,
    recording_train_disc,
)
from curteach_teaching.curriculum.adapters.starts import starts_matched, tabular_envs
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.options import CurriculumOptions, check_demonstrations, check_trainer
from curteach_teaching.curriculum.policy_steps import PolicyStepTrainer
from curteach_teaching.curriculum.rounds import RoundCurriculum, selected_trajectories
from curteach_teaching.curriculum.scores import teacher_difficulty
from curteach_teaching.difficulty import MIN_LOG_PROB

__all__ = ["AdversarialStepTrainer", "CurriculumAdversarial"]

#: Version tag of :meth:`CurriculumAdversarial.state_dict`'s curriculum part.
STATE_FORMAT = "curteach.CurriculumAdversarial/1"


class AdversarialStepTrainer(PolicyStepTrainer):
    """The :class:`~curteach_teaching.curriculum.core.StepTrainer` of a GAIL or AIRL trainer: one "step" is
    ``set_demonstrations`` on the batch's demonstrations and ``rounds`` rounds of the trainer. The learner is the
    generator (``trainer.policy``): difficulty and hook context as in
    :class:`~curteach_teaching.curriculum.policy_steps.PolicyStepTrainer`.

    Args:
        trainer: the ``AdversarialTrainer``.
        demonstrations: the N trajectories; transitions: their flattening, laid out as ``index`` says.
        rounds: trainer rounds per curriculum epoch (>= 1).
        chunk_size, min_log_prob: of the learner-difficulty passes.
        match_starts: while a batch trains, the generator's episodes start where its demonstrations start
            (:func:`~curteach_teaching.curriculum.adapters.starts.starts_matched`; tabular environments only).
    """

    def __init__(self, trainer: AdversarialTrainer, demonstrations: list, transitions: Any,
                 index: DemonstrationIndex, *, rounds: int = 1, chunk_size: int = 8192,
                 min_log_prob: float = MIN_LOG_PROB, match_starts: bool = False):
        super().__init__(trainer, transitions, index, chunk_size=chunk_size, min_log_prob=min_log_prob)
        self.demonstrations = demonstrations
        self.rounds = rounds
        self.start_envs = tabular_envs(trainer.venv) if match_starts else None
        self._disc_stats: list = []

    def train_batches(self, batches: Sequence[np.ndarray], after_step: Callable[[], None]) -> None:
        """For each batch: the trainer's expert data becomes its demonstrations, then ``rounds`` rounds.

        Raises:
            ValueError: a selection with fewer transitions than the trainer's ``demo_batch_size`` (imitation's data
                loader could not draw one expert batch from it).
        """
        trainer = self.trainer
        for batch in batches:
            if batch.size < trainer.demo_batch_size:
                raise ValueError(
                    f"the curriculum selected {batch.size} transitions, fewer than the trainer's demo_batch_size "
                    f"{trainer.demo_batch_size}; use a pacing that keeps more demonstrations or a smaller "
                    "demo_batch_size"
                )
        try:
            with recording_train_disc(trainer, self._disc_stats_append):
                for batch in batches:
                    chosen = selected_trajectories(self.demonstrations, self.index, batch)
                    trainer.set_demonstrations(chosen)
                    self._disc_stats = []
                    with starts_matched(self.start_envs, chosen) if self.start_envs else nullcontext():
                        trainer.train(total_timesteps=self.rounds * trainer.gen_train_timesteps)
                    after_step()
        finally:
            self._disc_stats = []

    def _disc_stats_append(self, stats: dict) -> None:
        self._disc_stats.append(stats)

    def step_metrics(self) -> dict:
        """``{name: float}``: the means over the step's discriminator updates of what imitation's ``train_disc``
        returned (``disc_loss``, ``disc_acc``, ``disc_entropy``, ...), and ``loss`` = ``disc_loss`` (the
        discriminator's training loss); empty outside a step."""
        stats = self._disc_stats
        if not stats:
            return {}
        names = [k for k, v in stats[0].items() if isinstance(v, (int, float, np.floating))]
        metrics = {name: float(np.mean([float(s[name]) for s in stats])) for name in names}
        if "disc_loss" in metrics:
            metrics["loss"] = metrics["disc_loss"]
        return metrics

    def state_dict(self) -> dict:
        """The generator policy and its optimizer, the discriminator's network and optimizer, the step counters."""
        trainer = self.trainer
        return {
            "policy": trainer.policy.state_dict(),
            "policy_optimizer": trainer.policy.optimizer.state_dict(),
            **adversarial_state(trainer),
            "num_timesteps": int(trainer.gen_algo.num_timesteps),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` into the trainer."""
        keys = {"policy", "policy_optimizer", *ADVERSARIAL_STATE_KEYS, "num_timesteps"}
        if not isinstance(state, dict) or set(state) != keys:
            raise ValueError(f"not an adversarial trainer state (keys {sorted(keys)})")
        trainer = self.trainer
        trainer.policy.load_state_dict(state["policy"])
        trainer.policy.optimizer.load_state_dict(state["policy_optimizer"])
        load_adversarial_state(trainer, state)
        trainer.gen_algo.num_timesteps = state["num_timesteps"]


class CurriculumAdversarial(RoundCurriculum):
    """Train an imitation ``GAIL`` or ``AIRL`` trainer epoch by epoch on a curriculum over demonstrations.

    Args:
        trainer: an ``imitation.algorithms.adversarial`` ``GAIL`` or ``AIRL`` (any ``AdversarialTrainer``), built
            as usual (its constructor's demonstrations are replaced at the first epoch).
        demonstrations: the N ``Trajectory`` demonstrations the curriculum chooses from (with actions the
            generator's policy can evaluate).
        options: the options every adapter shares
            (:class:`~curteach_teaching.curriculum.options.CurriculumOptions`; or any of them as a keyword). A
            callback's step is an epoch.
        rounds_per_epoch: trainer rounds per curriculum epoch (default 1).
        match_starts: the generator's episodes start where the epoch's demonstrations start (default ``False``:
            from the environment's own distribution), as
            :class:`~curteach_teaching.curriculum.adapters.mce_irl.CurriculumMCEIRL`
            does by default; needs a ``DummyVecEnv`` of tabular seals environments observed as state indices.

    Raises:
        ValueError: a trainer that is not GAIL or AIRL (the message lists the supported trainers), demonstrations
            that are not Trajectories, fewer transitions in all than ``trainer.demo_batch_size``, or a bad variant,
            pacing or teacher difficulty.
    """

    def __init__(
        self,
        trainer: AdversarialTrainer,
        demonstrations: Sequence[Any],
        *,
        options: CurriculumOptions | None = None,
        rounds_per_epoch: int = 1,
        match_starts: bool = False,
        **shared: Any,
    ):
        options = CurriculumOptions.of("CurriculumAdversarial", options, shared)
        check_trainer(trainer, AdversarialTrainer, "CurriculumAdversarial")
        demonstrations = check_demonstrations(demonstrations, "the GAIL/AIRL curriculum")
        check_int("rounds_per_epoch", rounds_per_epoch, 1)
        self.min_log_prob = options.min_log_prob
        chunk = options.difficulty_chunk_size
        index = DemonstrationIndex.from_trajectories(demonstrations)
        if index.n_transitions < trainer.demo_batch_size:
            raise ValueError(f"the {index.n_transitions} demonstrated transitions are fewer than the trainer's "
                             f"demo_batch_size {trainer.demo_batch_size}")
        transitions = rollout.flatten_trajectories(demonstrations)
        scores = None if options.teacher is None else teacher_difficulty(
            options.teacher, transitions.obs, transitions.acts, index, chunk_size=chunk,
            min_log_prob=self.min_log_prob)
        self.trainer = trainer
        self.demonstrations = demonstrations
        step_trainer = AdversarialStepTrainer(trainer, demonstrations, transitions, index, rounds=rounds_per_epoch,
                                              chunk_size=chunk, min_log_prob=self.min_log_prob,
                                              match_starts=match_starts)
        config = {"rounds_per_epoch": rounds_per_epoch, "trainer": type(trainer).__name__}
        if match_starts:  # only when on, so that states saved before the option existed still load
            config["match_starts"] = True
        super().__init__(step_trainer, index, options=options, teacher_scores=scores, logger=trainer.logger,
                         state_format=STATE_FORMAT, extra_config=config)

"""A curriculum over demonstrations for imitation's tabular MCE-IRL (``MCEIRL`` on a seals tabular model).

:class:`CurriculumMCEIRL` takes the user's ``MCEIRL`` trainer as it is. Every curriculum epoch (a teaching step)

1. scores the learner: ``log Psi^L(xi_i) = -sum_tau log pi_tau(a_tau | s_tau)`` under the trainer's current
   finite-horizon policy ``trainer.policy.pi`` (``(H, S, A)``, read at each transition's time step; a
   probability of 0 counts as the floor ``min_log_prob``, never as NaN), for Cur and Cur-L;
2. selects the epoch's demonstrations (preference by variant, ranking, pacing);
3. hands them to the trainer through its own door, ``trainer.set_demonstrations(selected trajectories)``: the
   state occupancy the trainer matches is the one of the chosen subset (imitation computes it, discounted by the
   trainer's ``discount``);
4. runs ``trainer.train(max_iter=iterations_per_epoch)``: that many gradient steps of the reward network (fewer if
   imitation's tolerances stop it), after which imitation sets the policy.

Starts (``match_starts``). imitation compares the demonstrations' occupancy with the learner's occupancy from the
environment's initial distribution. A subset of demonstrations starts from only some states, so by default
(``match_starts=True``) the environment's ``initial_state_dist`` is set to the selected demonstrations' empirical
start distribution while the trainer trains on them (and restored after): the learner matches the chosen
demonstrations from where they start, as the paper's IRL learner does. ``False`` leaves the environment alone.

Demonstrations must be imitation ``Trajectory`` objects whose observations are state indices in ``[0, S)``
(imitation's MCE-IRL counts occupancy by state index).

Saved state: the curriculum's, the reward network and its optimizer, and the trainer's policy table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
from imitation.algorithms.mce_irl import MCEIRL
from imitation.data import rollout

from curteach_envs._util import check_int
from curteach_teaching.curriculum.adapters.starts import starts_matched
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.options import CurriculumOptions, check_demonstrations, check_trainer
from curteach_teaching.curriculum.rounds import RoundCurriculum, selected_trajectories
from curteach_teaching.curriculum.scores import teacher_difficulty
from curteach_teaching.difficulty import MIN_LOG_PROB, sum_per_demonstration

__all__ = ["CurriculumMCEIRL", "MCEIRLStepTrainer", "time_dependent_log_probs"]

#: Version tag of :meth:`CurriculumMCEIRL.state_dict`'s curriculum part.
STATE_FORMAT = "curteach.CurriculumMCEIRL/1"


def time_dependent_log_probs(pi: np.ndarray, states: np.ndarray, actions: np.ndarray,
                             time_steps: np.ndarray) -> np.ndarray:
    """``(T,)`` ``log pi[t, s, a]`` of each transition at its time step (the last step's policy beyond the horizon);
    ``-inf`` for a probability of 0 (callers floor it).

    Args:
        pi: ``(H, S, A)`` a finite-horizon policy.
        states, actions, time_steps: ``(T,)`` ints.
    """
    t = np.minimum(np.asarray(time_steps), pi.shape[0] - 1)
    with np.errstate(divide="ignore"):
        return np.log(pi[t, np.asarray(states), np.asarray(actions)])


class MCEIRLStepTrainer:
    """The :class:`~curteach_teaching.curriculum.core.StepTrainer` of an ``MCEIRL`` trainer: one "step" is
    ``set_demonstrations`` on the batch's demonstrations and ``train(max_iter=iterations)``.

    Args:
        trainer: the ``MCEIRL``.
        demonstrations: the N trajectories; states, actions: ``(T,)`` their flattened state indices and actions,
            laid out as ``index`` says.
        iterations: gradient steps per epoch (>= 1).
        match_starts: see the module docstring.
        min_log_prob: the per-step floor of the learner difficulty.
    """

    def __init__(self, trainer: MCEIRL, demonstrations: list, states: np.ndarray, actions: np.ndarray,
                 index: DemonstrationIndex, *, iterations: int, match_starts: bool = True,
                 min_log_prob: float = MIN_LOG_PROB):
        self.trainer = trainer
        self.demonstrations = demonstrations
        self.states = states
        self.actions = actions
        self.index = index
        self.iterations = iterations
        self.match_starts = match_starts
        self.min_log_prob = min_log_prob

    def learner_difficulty(self) -> np.ndarray:
        """``(N,)`` ``log Psi^L`` under the trainer's current policy table."""
        per_step = time_dependent_log_probs(self.trainer.policy.pi, self.states, self.actions, self.index.time_step)
        return -sum_per_demonstration(per_step, self.index.demo_of_transition, self.index.n_demonstrations,
                                      self.min_log_prob)

    def around_hooks(self):
        """Nothing to restore: the policy table has no training mode."""
        return nullcontext()

    def _starts_of(self, chosen: list):
        return starts_matched([self.trainer.env], chosen) if self.match_starts else nullcontext()

    def train_batches(self, batches: Sequence[np.ndarray], after_step: Callable[[], None]) -> None:
        """For each batch: the trainer's demonstrations become its demonstrations, then ``iterations`` steps."""
        for batch in batches:
            chosen = selected_trajectories(self.demonstrations, self.index, batch)
            self.trainer.set_demonstrations(chosen)
            with self._starts_of(chosen):
                self.trainer.train(max_iter=self.iterations)
            after_step()

    def state_dict(self) -> dict:
        """The reward network, its optimizer and the policy table."""
        trainer = self.trainer
        return {"reward_net": trainer.reward_net.state_dict(), "optimizer": trainer.optimizer.state_dict(),
                "pi": np.array(trainer.policy.pi)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` into the trainer."""
        if not isinstance(state, dict) or set(state) != {"reward_net", "optimizer", "pi"}:
            raise ValueError("not an MCE-IRL trainer state (keys 'optimizer', 'pi', 'reward_net')")
        pi = np.asarray(state["pi"], dtype=np.float64)
        if pi.shape != self.trainer.policy.pi.shape:
            raise ValueError(f"the saved policy has shape {pi.shape}; the trainer's {self.trainer.policy.pi.shape}")
        self.trainer.reward_net.load_state_dict(state["reward_net"])
        self.trainer.optimizer.load_state_dict(state["optimizer"])
        self.trainer.policy.set_pi(pi)


class CurriculumMCEIRL(RoundCurriculum):
    """Train an imitation ``MCEIRL`` trainer teaching step by teaching step on a curriculum over demonstrations.

    Args:
        trainer: an ``imitation.algorithms.mce_irl.MCEIRL`` on a seals ``TabularModelPOMDP``.
        demonstrations: the N ``Trajectory`` demonstrations (observations: state indices in ``[0, S)``).
        options: the options every adapter shares
            (:class:`~curteach_teaching.curriculum.options.CurriculumOptions`; or any of them as a keyword); a
            callable teacher receives ``(T,)`` state indices and actions.
        iterations_per_epoch: gradient steps of the reward network per teaching step (default 10).
        match_starts: match the chosen demonstrations from their own starts (default; see the module docstring).

    Raises:
        ValueError: a trainer that is not ``MCEIRL`` (the message lists the supported trainers), demonstrations
            that are not Trajectories of state indices within the trainer's environment, a bad variant, pacing or
            teacher difficulty.
    """

    def __init__(
        self,
        trainer: MCEIRL,
        demonstrations: Sequence[Any],
        *,
        options: CurriculumOptions | None = None,
        iterations_per_epoch: int = 10,
        match_starts: bool = True,
        **shared: Any,
    ):
        options = CurriculumOptions.of("CurriculumMCEIRL", options, shared)
        check_trainer(trainer, MCEIRL, "CurriculumMCEIRL")
        demonstrations = check_demonstrations(demonstrations, "the MCE-IRL curriculum")
        check_int("iterations_per_epoch", iterations_per_epoch, 1)
        if not isinstance(match_starts, bool):
            raise ValueError(f"match_starts must be True or False; got {match_starts!r}")
        self.min_log_prob = options.min_log_prob
        n_states = trainer.env.state_dim
        for i, demo in enumerate(demonstrations):
            obs = np.asarray(demo.obs)
            if obs.ndim != 1 or not np.issubdtype(obs.dtype, np.integer) or obs.min() < 0 or obs.max() >= n_states:
                raise ValueError(
                    f"demonstration {i}: MCE-IRL needs observations that are state indices in [0, {n_states - 1}] "
                    f"(a 1-D integer array); got dtype {obs.dtype} and shape {obs.shape}"
                )
        index = DemonstrationIndex.from_trajectories(demonstrations)
        transitions = rollout.flatten_trajectories(demonstrations)
        states, actions = np.asarray(transitions.obs, dtype=np.int64), np.asarray(transitions.acts, dtype=np.int64)
        scores = None if options.teacher is None else teacher_difficulty(
            options.teacher, states, actions, index, chunk_size=options.difficulty_chunk_size,
            min_log_prob=self.min_log_prob)
        self.trainer = trainer
        self.demonstrations = demonstrations
        step_trainer = MCEIRLStepTrainer(trainer, demonstrations, states, actions, index,
                                         iterations=iterations_per_epoch, match_starts=match_starts,
                                         min_log_prob=self.min_log_prob)
        super().__init__(step_trainer, index, options=options, teacher_scores=scores, logger=trainer.logger,
                         state_format=STATE_FORMAT,
                         extra_config={"iterations_per_epoch": iterations_per_epoch, "match_starts": match_starts})

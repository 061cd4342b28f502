"""A curriculum over demonstrations for any ``imitation.algorithms.bc.BC`` trainer (the paper's Algorithm 3).

Docs: ``docs/teaching/curriculum.md``. :class:`CurriculumBC` is the adapter between the curriculum's selection
(:mod:`curteach_teaching.selection`, plain NumPy) and imitation's ``BC``. At the start of every epoch ``e = 1..E`` it

1. **scores** every demonstration ``xi_i`` by the learner's current difficulty
   ``log Psi^L(xi_i) = -sum_tau log pi^L(a_tau | s_tau)``, read from the trainer's policy in batched, no-grad
   passes (:func:`curteach_teaching.difficulty.demonstration_log_likelihoods`; only for Cur and Cur-L). The teacher
   difficulty ``log Psi^E(xi_i)`` is scored once, in the constructor (from a teacher policy, a callable, given
   per-demonstration scores, or none);
2. **selects** the epoch's demonstrations with :class:`~curteach_teaching.selection.CurriculumSelection`: the
   preference by variant (Cur ``log Psi^L - log Psi^E``, Cur-L ``log Psi^L``, Cur-T ``-log Psi^E``, Agn all), the
   ranking (ties to the lower index) and the pacing (:class:`LinearPacing` ``a = 0.8``, ``b = 0.5`` by default);
3. **batches** the selection (:meth:`CurriculumBC.epoch_batches`): its transitions are shuffled and cut into batches;
4. **trains** one epoch on them (:meth:`CurriculumBC.train_batches`) through ``trainer.set_demonstrations`` and
   ``trainer.train``. The trainer's policy and optimizer persist across epochs;
5. **logs** the epoch (:class:`EpochRecord`: the selected fraction, the selected demonstrations and the statistics of
   their scores), so that a curriculum can be plotted (:meth:`CurriculumBC.selection_matrix`).

Batches. imitation's own loader drops a last incomplete batch and refuses data smaller than one batch. Here the
selected transitions are cut into batches of ``trainer.batch_size`` (as minibatches of ``trainer.minibatch_size``);
with ``remainder="partial"`` (default, as the original navigation code) the ``r`` left-over transitions form one
more, smaller batch, stepped on the mean loss of those ``r``; with ``"drop"`` they wait for a later epoch's shuffle.
A selection smaller than one batch is trained as one batch of its size (``trainer.batch_size`` and
``minibatch_size`` are shrunk for that call and restored). The batches are a fixed list built before
``set_demonstrations``, so imitation's peek at the first element (one extra ``__iter__``) changes nothing.

Extending. Each step of an epoch is one method of :class:`CurriculumBC` (:meth:`~CurriculumBC.learner_difficulty`,
``selection.select``, :meth:`~CurriculumBC.epoch_batches`, :meth:`~CurriculumBC.train_batches`,
``selection.log``, chained by :meth:`~CurriculumBC.train_epoch`), so another batch unit (whole demonstrations),
another loss or a hook every N optimizer steps replaces one step and leaves the selection and its log as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from imitation.algorithms.bc import BC
from imitation.data import rollout, types
from imitation.util import logger as imit_logger
from stable_baselines3.common import logger as sb_logger

from curteach_envs._util import check_int
from curteach_teaching.difficulty import (
    MIN_LOG_PROB,
    demonstration_log_likelihoods,
    index_observations,
    sum_per_demonstration,
)
from curteach_teaching.names import CUR
from curteach_teaching.selection import (
    VARIANTS,
    CurriculumSelection,
    EpochRecord,
    EpochSelection,
    FullPacing,
    LinearPacing,
    PacingSchedule,
    check_pacing,
    check_variant,
    needs_teacher_difficulty,
)

__all__ = [
    "VARIANTS",
    "REMAINDERS",
    "LinearPacing",
    "FullPacing",
    "EpochRecord",
    "CurriculumBC",
    "demonstration_log_likelihoods",
    "silent_logger",
]

REMAINDERS = ("partial", "drop")

TeacherDifficulty = None | np.ndarray | Sequence[float] | Any | Callable[[Any, np.ndarray], np.ndarray]


def silent_logger() -> imit_logger.HierarchicalLogger:
    """An imitation logger with no output: pass it as ``BC(custom_logger=...)`` to stop BC printing a table at the
    first batch of every ``train`` call (which the curriculum makes once per epoch). Writes no files."""
    return imit_logger.HierarchicalLogger(sb_logger.Logger(folder=None, output_formats=[]), format_strs=[])


class CurriculumBC:
    """Train an imitation ``BC`` trainer epoch by epoch on a curriculum over demonstrations.

    Args:
        trainer: an ``imitation.algorithms.bc.BC`` with any SB3 policy, on any Gymnasium env.
        demonstrations: the N ``imitation.data.types.Trajectory`` demonstrations (non-empty, each with >= 1 action).
        variant: ``"Cur"`` (default), ``"Cur-L"``, ``"Cur-T"`` or ``"Agn"``.
        teacher: the teacher difficulty, needed by Cur and Cur-T:

            * a ``(N,)`` array of per-demonstration scores ``log Psi^E(xi_i)`` (larger = harder for the teacher), e.g.
              a task-specific score;
            * an SB3 policy (anything with ``evaluate_actions``): ``log Psi^E = -sum_tau log pi^E(a | s)``;
            * a callable ``(obs (T, ...), acts (T,)) -> (T,)`` returning ``log pi^E(a_tau | s_tau)``, e.g.
              ``lambda obs, acts: log_pi_E[obs, acts]`` for a tabular teacher;
            * ``None`` (only for Cur-L and Agn).
        pacing: ``(epoch, n_epochs, n_items) -> int``; default :class:`LinearPacing` ``(0.8, 0.5)``. Agn ignores it.
        rng: the generator that shuffles each epoch's transitions; default ``trainer.rng``.
        remainder: ``"partial"`` (default) or ``"drop"``, see the module docstring.
        min_log_prob: floor of every per-step log-probability (teacher policy, teacher callable and learner alike),
            so that a probability of 0 gives a finite score (default
            :data:`~curteach_teaching.difficulty.MIN_LOG_PROB`, as the teachers' scores). A NaN from an SB3 policy
            counts as the floor; a NaN from a teacher callable is an error (``ValueError``).

    Attributes:
        selection: the :class:`~curteach_teaching.selection.CurriculumSelection` (variant, teacher difficulty,
            pacing and the log); ``variant``, ``teacher_difficulty``, ``pacing`` and ``history`` read and write it.

    Raises:
        ValueError: empty demonstrations, an unknown variant or remainder, a missing or mis-shaped teacher
            difficulty, actions outside a discrete action space.
    """

    def __init__(
        self,
        trainer: BC,
        demonstrations: Sequence[types.Trajectory],
        *,
        variant: str = CUR,
        teacher: TeacherDifficulty = None,
        pacing: PacingSchedule | None = None,
        rng: np.random.Generator | None = None,
        remainder: str = "partial",
        min_log_prob: float = MIN_LOG_PROB,
    ):
        check_variant(variant)
        if remainder not in REMAINDERS:
            raise ValueError(f"remainder must be one of {REMAINDERS}; got {remainder!r}")
        check_pacing(pacing)
        demonstrations = list(demonstrations)
        if not demonstrations:
            raise ValueError("demonstrations must hold at least one Trajectory; got an empty list")
        for i, demo in enumerate(demonstrations):
            if not isinstance(demo, types.Trajectory):
                raise ValueError(f"demonstration {i} is a {type(demo).__name__}, not an imitation Trajectory")
            if len(demo.acts) < 1:
                raise ValueError(f"demonstration {i} has no actions; every demonstration needs at least one")
        self.trainer = trainer
        self.demonstrations = demonstrations
        self.rng = rng if rng is not None else trainer.rng
        self.remainder = remainder
        self.min_log_prob = float(min_log_prob)

        lengths = np.array([len(demo.acts) for demo in demonstrations])
        self.n_demonstrations = len(demonstrations)
        self._transitions = rollout.flatten_trajectories(demonstrations)
        self._demo_of_transition = np.repeat(np.arange(self.n_demonstrations), lengths)
        self._starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self._lengths = lengths
        space = trainer.action_space
        acts = self._transitions.acts
        if hasattr(space, "n") and acts.size and (acts.min() < 0 or acts.max() >= space.n):
            raise ValueError(
                f"demonstrated actions must lie in [0, {space.n - 1}]; got values in [{acts.min()}, {acts.max()}]"
            )

        if needs_teacher_difficulty(variant) and teacher is None:
            raise ValueError(f"variant {variant!r} needs a teacher difficulty (scores, a policy or a callable)")
        teacher_difficulty = None if teacher is None else self._teacher_difficulty(teacher)
        self.selection = CurriculumSelection(self.n_demonstrations, variant, teacher_difficulty, pacing)

    # ------------------------------------------------- the selection's state
    @property
    def variant(self) -> str:
        """``"Cur"``, ``"Cur-L"``, ``"Cur-T"`` or ``"Agn"``."""
        return self.selection.variant

    @variant.setter
    def variant(self, value: str) -> None:
        self.selection.variant = value

    @property
    def teacher_difficulty(self) -> np.ndarray | None:
        """``(N,)`` ``log Psi^E`` per demonstration, or ``None``."""
        return self.selection.teacher_difficulty

    @teacher_difficulty.setter
    def teacher_difficulty(self, value: np.ndarray | None) -> None:
        self.selection.teacher_difficulty = value

    @property
    def pacing(self) -> PacingSchedule:
        """The pacing schedule ``(epoch, n_epochs, n_items) -> X_e``."""
        return self.selection.pacing

    @pacing.setter
    def pacing(self, value: PacingSchedule) -> None:
        self.selection.pacing = value

    @property
    def history(self) -> list[EpochRecord]:
        """The :class:`EpochRecord` of every epoch trained so far."""
        return self.selection.history

    @history.setter
    def history(self, value: list[EpochRecord]) -> None:
        self.selection.history = value

    # ----------------------------------------------------------------- scores
    def _teacher_difficulty(self, teacher: TeacherDifficulty) -> np.ndarray:
        obs, acts = self._transitions.obs, self._transitions.acts
        N = self.n_demonstrations
        if hasattr(teacher, "evaluate_actions"):
            return -demonstration_log_likelihoods(
                teacher, obs, acts, self._demo_of_transition, N, min_log_prob=self.min_log_prob
            )
        if callable(teacher):
            per_step = np.asarray(teacher(obs, acts), dtype=np.float64).reshape(-1)
            if per_step.shape != (len(acts),):
                raise ValueError(
                    f"the teacher callable must return {len(acts)} log-probabilities; got {per_step.shape}"
                )
            if np.isnan(per_step).any():
                raise ValueError("the teacher callable returned NaN log-probabilities")
            return -sum_per_demonstration(per_step, self._demo_of_transition, N, self.min_log_prob)
        scores = np.asarray(teacher, dtype=np.float64)
        if scores.shape != (N,) or not np.all(np.isfinite(scores)):
            raise ValueError(f"teacher scores must be a finite array of shape ({N},); got shape {scores.shape}")
        return scores.copy()

    def learner_difficulty(self) -> np.ndarray:
        """``(N,)`` ``log Psi^L(xi_i) = -sum_tau log pi^L(a | s)`` under the trainer's current policy (no grad)."""
        obs, acts = self._transitions.obs, self._transitions.acts
        return -demonstration_log_likelihoods(
            self.trainer.policy, obs, acts, self._demo_of_transition, self.n_demonstrations,
            min_log_prob=self.min_log_prob,
        )

    def preferences(self, learner_difficulty: np.ndarray | None) -> np.ndarray | None:
        """``(N,)`` preference by variant (larger = earlier); ``None`` for Agn."""
        return self.selection.preference(learner_difficulty)

    # ---------------------------------------------------------------- selection
    def select(self, epoch: int, n_epochs: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The demonstrations of epoch ``epoch`` of ``n_epochs``, most preferred first (the policy is scored now).

        Returns:
            ``(selected (X_e,), preferences (N,) or None, learner difficulty (N,) or None)``.
        """
        chosen = self._select(epoch, n_epochs)
        return chosen.selected, chosen.preference, chosen.learner_difficulty

    def _select(self, epoch: int, n_epochs: int) -> EpochSelection:
        learner = self.learner_difficulty() if self.selection.needs_learner_difficulty else None
        return self.selection.select(epoch, n_epochs, learner)

    # ---------------------------------------------------------------- batches
    def epoch_batches(self, selected: np.ndarray) -> list[np.ndarray]:
        """The epoch's batches: one array of transition indices per optimizer step, in training order.

        The selected demonstrations' transitions are shuffled (with :attr:`rng`) and cut into batches of
        ``trainer.batch_size``; the left-over transitions form one smaller batch (``remainder="partial"``) or are
        dropped (``"drop"``); a selection smaller than one batch is one batch of its size.

        Args:
            selected: ``(X_e,)`` indices of the demonstrations to train on.

        Returns:
            A list of ``(b,)`` int indices into the flattened transitions of all demonstrations.
        """
        starts, lengths = self._starts[selected], self._lengths[selected]
        index = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)])
        index = index[self.rng.permutation(index.size)]
        batch_size = self.trainer.batch_size
        if index.size < batch_size:  # smaller than one batch: one (partial) batch of its size
            return [index]
        n_full = index.size // batch_size
        groups = [index[i * batch_size : (i + 1) * batch_size] for i in range(n_full)]
        if self.remainder == "partial" and index.size > n_full * batch_size:
            groups.append(index[n_full * batch_size :])
        return groups

    def _batch(self, index: np.ndarray) -> dict:
        return {"obs": index_observations(self._transitions.obs, index), "acts": self._transitions.acts[index]}

    def train_batches(self, groups: list[np.ndarray]) -> tuple[int, int]:
        """Train one pass over ``groups`` (index arrays from :meth:`epoch_batches`), keeping policy and optimizer.

        Groups of ``trainer.batch_size`` go through one ``train`` call as minibatches; a smaller group is one step on
        its mean loss.

        Returns:
            ``(transitions trained on, optimizer steps)``.
        """
        trainer = self.trainer
        batch_size = trainer.batch_size
        full = [g for g in groups if g.size == batch_size]
        partial = [g for g in groups if g.size != batch_size]
        minibatch = trainer.minibatch_size
        n = 0
        if full:
            batches = [self._batch(g[i : i + minibatch]) for g in full for i in range(0, batch_size, minibatch)]
            self._train_once(batches, batch_size, minibatch)
            n += sum(g.size for g in full)
        for group in partial:  # the original's smaller last batch: a step on the mean loss of its transitions
            self._train_once([self._batch(group)], group.size, group.size)
            n += group.size
        return n, len(groups)

    def _train_once(self, batches: list, batch_size: int, minibatch_size: int) -> None:
        trainer = self.trainer
        saved = trainer.batch_size, trainer.minibatch_size
        trainer.batch_size, trainer.minibatch_size = batch_size, minibatch_size
        try:
            # a list: imitation's peek (get_first_iter_element) iterates it once more without consuming anything
            trainer.set_demonstrations(batches)
            trainer.train(n_epochs=1, progress_bar=False, log_interval=10**9)
        finally:
            trainer.batch_size, trainer.minibatch_size = saved

    # -------------------------------------------------------------------- train
    def train_epoch(self, epoch: int, n_epochs: int) -> EpochRecord:
        """One curriculum epoch (``epoch`` of ``n_epochs`` of the pacing schedule): score, select, batch, train, log.

        Returns:
            Its :class:`EpochRecord` (also appended to :attr:`history`).
        """
        chosen = self._select(epoch, n_epochs)
        n_transitions, n_batches = self.train_batches(self.epoch_batches(chosen.selected))
        return self.selection.log(chosen, n_transitions, n_batches)

    def train(self, n_epochs: int, *, on_epoch_end: Callable[[EpochRecord], None] | None = None) -> list[EpochRecord]:
        """Run ``n_epochs`` curriculum epochs (``e = 1..n_epochs`` of the pacing schedule).

        Args:
            n_epochs: E, at least 1.
            on_epoch_end: called with each epoch's :class:`EpochRecord`.

        Returns:
            The records of these epochs (also appended to :attr:`history`).
        """
        check_int("n_epochs", n_epochs, 1)
        records = []
        for epoch in range(1, n_epochs + 1):
            record = self.train_epoch(epoch, n_epochs)
            records.append(record)
            if on_epoch_end is not None:
                on_epoch_end(record)
        return records

    # ------------------------------------------------------------------ logging
    def selection_matrix(self) -> np.ndarray:
        """``(epochs so far, N)`` bool: demonstration ``i`` was trained on in epoch ``e`` (for curriculum plots)."""
        return self.selection.selection_matrix()

    def log_table(self) -> dict:
        """The per-epoch log as columns: ``{"epoch": (E,), "fraction": (E,), ...}`` (every scalar field)."""
        return self.selection.log_table()

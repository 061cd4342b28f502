"""A curriculum over demonstrations for any ``imitation.algorithms.bc.BC`` trainer (the paper's Algorithm 3).

``../shared/spec/teaching.md`` Section 5. At the start of every epoch ``e = 1..E``:

1. every demonstration ``xi_i`` is scored by the learner's current difficulty
   ``log Psi^L(xi_i) = -sum_tau log pi^L(a_tau | s_tau)``, read from the trainer's policy in batched, no-grad
   passes (``policy.evaluate_actions``);
2. it is combined with a teacher difficulty ``log Psi^E(xi_i)`` (from a teacher policy, from given per-demonstration
   scores, or none) into a preference, by variant:

   ======  ===================================  ======================================
   Cur     ``log Psi^L - log Psi^E``             easy for the teacher, hard for the learner
   Cur-L   ``log Psi^L``  (``Psi^E`` constant)   hardest for the learner
   Cur-T   ``-log Psi^E`` (``Psi^L`` constant)   easiest for the teacher
   Agn     none                                  every demonstration, every epoch
   ======  ===================================  ======================================

3. the demonstrations are ranked (ties to the lower index) and the pacing schedule keeps the
   ``X_e = int(b N + min(1, e / (a E)) (1 - b) N)`` most preferred (:class:`LinearPacing`, ``a = 0.8``,
   ``b = 0.5``; any callable ``(epoch, n_epochs, n_items) -> int`` may replace it);
4. their transitions are shuffled, cut into batches and handed to ``trainer.set_demonstrations``, and the trainer
   trains one epoch. Its policy and optimizer persist across epochs.

Every epoch is logged (:class:`EpochRecord`): the selected fraction, the selected demonstrations and the statistics of
their scores, so that a curriculum can be plotted (:meth:`CurriculumBC.selection_matrix`).

Batches. imitation's own loader drops a last incomplete batch and refuses data smaller than one batch. Here the
selected transitions are cut into batches of ``trainer.batch_size`` (as minibatches of ``trainer.minibatch_size``);
with ``remainder="partial"`` (default, as the original navigation code) the ``r`` left-over transitions form one
more, smaller batch, stepped on the mean loss of those ``r``; with ``"drop"`` they wait for a later epoch's shuffle.
A selection smaller than one batch is trained as one batch of its size (``trainer.batch_size`` and
``minibatch_size`` are shrunk for that call and restored). The batches are a fixed list built before
``set_demonstrations``, so imitation's peek at the first element (one extra ``__iter__``) changes nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np
import torch as th
from imitation.algorithms.bc import BC
from imitation.data import rollout, types
from imitation.util import logger as imit_logger
from imitation.util import util
from stable_baselines3.common import logger as sb_logger

from curteach_envs.validation import check_int
from curteach_teaching.difficulty import MIN_LOG_PROB

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

VARIANTS = ("Cur", "Cur-L", "Cur-T", "Agn")
REMAINDERS = ("partial", "drop")

PacingSchedule = Callable[[int, int, int], int]
TeacherDifficulty = Union[None, np.ndarray, Sequence[float], Any, Callable[[Any, np.ndarray], np.ndarray]]


@dataclass(frozen=True)
class LinearPacing:
    """The paper's linear pacing: ``X_e = int(b N + min(1, e / (a E)) (1 - b) N)`` for epoch ``e = 1..E``.

    Args:
        a: the fraction of the ``E`` epochs after which every demonstration is used, in ``(0, inf)`` (default 0.8).
        b: the fraction used from the start, in ``[0, 1]`` (default 0.5).
    """

    a: float = 0.8
    b: float = 0.5

    def __post_init__(self) -> None:
        if not (np.isfinite(self.a) and self.a > 0):
            raise ValueError(f"pacing a must be a finite number > 0; got {self.a!r}")
        if not (np.isfinite(self.b) and 0.0 <= self.b <= 1.0):
            raise ValueError(f"pacing b must be in [0, 1]; got {self.b!r}")

    def __call__(self, epoch: int, n_epochs: int, n_items: int) -> int:
        """``X_e`` (at least 1) of ``n_items`` for ``epoch`` in ``1..n_epochs``."""
        _check_epoch(epoch, n_epochs)
        growth = min(1.0, epoch / (self.a * n_epochs))
        return max(1, int(self.b * n_items + growth * (1.0 - self.b) * n_items))


@dataclass(frozen=True)
class FullPacing:
    """Every demonstration in every epoch (what Agn uses)."""

    def __call__(self, epoch: int, n_epochs: int, n_items: int) -> int:
        _check_epoch(epoch, n_epochs)
        return n_items


def _check_epoch(epoch: int, n_epochs: int) -> None:
    if not 1 <= epoch <= n_epochs:
        raise ValueError(f"epoch must be in [1, n_epochs = {n_epochs}]; got {epoch}")


@dataclass(frozen=True)
class EpochRecord:
    """What one curriculum epoch selected.

    Attributes:
        epoch: the epoch number (1-based, counted over all ``train`` calls).
        n_selected: ``X_e``, the number of demonstrations kept.
        fraction: ``X_e / N``.
        selected: ``(X_e,)`` indices of the kept demonstrations, most preferred first.
        n_transitions: transitions trained on in this epoch (after ``remainder``).
        n_batches: optimizer steps taken.
        learner_difficulty_mean, learner_difficulty_max: mean / max ``log Psi^L`` of the selection (nats).
        learner_difficulty_all_mean: mean ``log Psi^L`` over all ``N`` demonstrations.
        teacher_difficulty_mean: mean ``log Psi^E`` of the selection (NaN when there is no teacher).
        preference_min: the preference of the last demonstration kept (the cut-off; NaN for Agn).
    """

    epoch: int
    n_selected: int
    fraction: float
    selected: np.ndarray
    n_transitions: int
    n_batches: int
    learner_difficulty_mean: float
    learner_difficulty_max: float
    learner_difficulty_all_mean: float
    teacher_difficulty_mean: float
    preference_min: float


def silent_logger() -> imit_logger.HierarchicalLogger:
    """An imitation logger with no output: pass it as ``BC(custom_logger=...)`` to stop BC printing a table at the
    first batch of every ``train`` call (which the curriculum makes once per epoch). Writes no files."""
    return imit_logger.HierarchicalLogger(sb_logger.Logger(folder=None, output_formats=[]), format_strs=[])


def _to_tensor(obs: Any, device: th.device) -> Any:
    return types.map_maybe_dict(lambda x: util.safe_to_tensor(x, device=device), types.maybe_unwrap_dictobs(obs))


def _index_obs(obs: Any, index: np.ndarray) -> Any:
    if isinstance(obs, types.DictObs):
        return types.DictObs({key: value[index] for key, value in obs.items()})
    return obs[index]


def demonstration_log_likelihoods(
    policy: Any,
    obs: Any,
    acts: np.ndarray,
    demo_of_transition: np.ndarray,
    n_demonstrations: int,
    chunk_size: int = 8192,
    min_log_prob: float = MIN_LOG_PROB,
) -> np.ndarray:
    """``sum_tau log pi(a_tau | s_tau)`` per demonstration, from an SB3 policy's ``evaluate_actions``.

    Batched in chunks, without gradients and with the policy in evaluation mode (restored afterwards). Each step's
    log-probability is floored at ``min_log_prob``, so a step of probability 0 gives a finite score (the floor of
    :mod:`curteach_teaching.difficulty`); a NaN from the policy (a diverged network) also counts as the floor.

    Args:
        policy: an SB3 policy (``evaluate_actions(obs, acts) -> (values, log_prob, entropy)``).
        obs: ``(T, ...)`` observations of all transitions (array or ``DictObs``).
        acts: ``(T, ...)`` actions.
        demo_of_transition: ``(T,)`` int, the demonstration each transition belongs to.
        n_demonstrations: N.
        chunk_size: transitions per forward pass.
        min_log_prob: floor of each step's log-probability.

    Returns:
        ``(N,)`` float64 log-likelihoods, finite.
    """
    T = len(acts)
    log_probs = np.empty(T, dtype=np.float64)
    was_training = policy.training
    policy.set_training_mode(False)
    try:
        with th.no_grad():
            for begin in range(0, T, chunk_size):
                index = np.arange(begin, min(T, begin + chunk_size))
                obs_tensor = _to_tensor(_index_obs(obs, index), policy.device)
                acts_tensor = util.safe_to_tensor(acts[index], device=policy.device)
                _, log_prob, _ = policy.evaluate_actions(obs_tensor, acts_tensor)
                log_probs[index] = log_prob.detach().cpu().numpy().astype(np.float64).reshape(-1)
    finally:
        policy.set_training_mode(was_training)
    return _floored_sums(log_probs, demo_of_transition, n_demonstrations, min_log_prob)


def _floored_sums(log_probs: np.ndarray, demo_of_transition: np.ndarray, n_demonstrations: int,
                  min_log_prob: float) -> np.ndarray:
    """``(N,)`` per-demonstration sums of ``(T,)`` per-step log-probabilities, each floored (NaN too)."""
    log_probs = np.maximum(np.where(np.isnan(log_probs), min_log_prob, log_probs), min_log_prob)
    return np.bincount(demo_of_transition, weights=log_probs, minlength=n_demonstrations)


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

    Raises:
        ValueError: empty demonstrations, an unknown variant or remainder, a missing or mis-shaped teacher
            difficulty, actions outside a discrete action space.
    """

    def __init__(
        self,
        trainer: BC,
        demonstrations: Sequence[types.Trajectory],
        *,
        variant: str = "Cur",
        teacher: TeacherDifficulty = None,
        pacing: Optional[PacingSchedule] = None,
        rng: Optional[np.random.Generator] = None,
        remainder: str = "partial",
        min_log_prob: float = MIN_LOG_PROB,
    ):
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}")
        if remainder not in REMAINDERS:
            raise ValueError(f"remainder must be one of {REMAINDERS}; got {remainder!r}")
        if pacing is not None and not callable(pacing):
            raise ValueError(f"pacing must be a callable (epoch, n_epochs, n_items) -> int; got {pacing!r}")
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
        self.variant = variant
        self.pacing: PacingSchedule = pacing if pacing is not None else LinearPacing()
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

        needs_teacher = variant in ("Cur", "Cur-T")
        if needs_teacher and teacher is None:
            raise ValueError(f"variant {variant!r} needs a teacher difficulty (scores, a policy or a callable)")
        self.teacher_difficulty = None if teacher is None else self._teacher_difficulty(teacher)
        self.history: List[EpochRecord] = []

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
                raise ValueError(f"the teacher callable must return {len(acts)} log-probabilities; got {per_step.shape}")
            if np.isnan(per_step).any():
                raise ValueError("the teacher callable returned NaN log-probabilities")
            return -_floored_sums(per_step, self._demo_of_transition, N, self.min_log_prob)
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

    def preferences(self, learner_difficulty: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """``(N,)`` preference by variant (larger = earlier); ``None`` for Agn."""
        if self.variant == "Agn":
            return None
        if self.variant == "Cur":
            return learner_difficulty - self.teacher_difficulty
        if self.variant == "Cur-L":
            return learner_difficulty.copy()
        return -self.teacher_difficulty

    # ---------------------------------------------------------------- selection
    def select(self, epoch: int, n_epochs: int) -> tuple[np.ndarray, Optional[np.ndarray], Optional[np.ndarray]]:
        """The demonstrations of epoch ``epoch`` of ``n_epochs``, most preferred first.

        Returns:
            ``(selected (X_e,), preferences (N,) or None, learner difficulty (N,) or None)``.
        """
        N = self.n_demonstrations
        learner = self.learner_difficulty() if self.variant in ("Cur", "Cur-L") else None
        preference = self.preferences(learner)
        if preference is None:
            return np.arange(N), None, learner
        keep = self.pacing(epoch, n_epochs, N)
        if isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or not 1 <= keep <= N:
            raise ValueError(f"the pacing schedule must return an integer in [1, {N}]; got {keep!r}")
        order = np.argsort(-preference, kind="stable")  # ties keep the lower index first
        return order[: int(keep)], preference, learner

    def _batches(self, selected: np.ndarray) -> tuple[list[dict], int]:
        """Shuffled batches of the selected transitions, and the batch size to train them with."""
        index = np.concatenate([np.arange(s, s + n) for s, n in zip(self._starts[selected], self._lengths[selected])])
        index = index[self.rng.permutation(index.size)]
        batch_size = self.trainer.batch_size
        if index.size < batch_size:  # smaller than one batch: one (partial) batch of its size
            return [index], batch_size
        n_full = index.size // batch_size
        groups = [index[i * batch_size : (i + 1) * batch_size] for i in range(n_full)]
        if self.remainder == "partial" and index.size > n_full * batch_size:
            groups.append(index[n_full * batch_size :])
        return groups, batch_size

    def _batch(self, index: np.ndarray) -> dict:
        return {"obs": _index_obs(self._transitions.obs, index), "acts": self._transitions.acts[index]}

    def _train_groups(self, groups: list, batch_size: int) -> tuple[int, int]:
        """Train one pass over ``groups`` (transition index arrays), keeping policy and optimizer.

        Full groups go through one ``train`` call as minibatches; a smaller group is one step on its mean loss.
        """
        trainer = self.trainer
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
    def train(self, n_epochs: int, *, on_epoch_end: Optional[Callable[[EpochRecord], None]] = None) -> List[EpochRecord]:
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
            selected, preference, learner = self.select(epoch, n_epochs)
            groups, batch_size = self._batches(selected)
            n_transitions, n_batches = self._train_groups(groups, batch_size)
            record = EpochRecord(
                epoch=len(self.history) + 1,
                n_selected=int(selected.size),
                fraction=selected.size / self.n_demonstrations,
                selected=selected,
                n_transitions=int(n_transitions),
                n_batches=int(n_batches),
                learner_difficulty_mean=float(learner[selected].mean()) if learner is not None else float("nan"),
                learner_difficulty_max=float(learner[selected].max()) if learner is not None else float("nan"),
                learner_difficulty_all_mean=float(learner.mean()) if learner is not None else float("nan"),
                teacher_difficulty_mean=(
                    float(self.teacher_difficulty[selected].mean()) if self.teacher_difficulty is not None else float("nan")
                ),
                preference_min=float(preference[selected].min()) if preference is not None else float("nan"),
            )
            self.history.append(record)
            records.append(record)
            if on_epoch_end is not None:
                on_epoch_end(record)
        return records

    # ------------------------------------------------------------------ logging
    def selection_matrix(self) -> np.ndarray:
        """``(epochs so far, N)`` bool: demonstration ``i`` was trained on in epoch ``e`` (for curriculum plots)."""
        matrix = np.zeros((len(self.history), self.n_demonstrations), dtype=bool)
        for row, record in enumerate(self.history):
            matrix[row, record.selected] = True
        return matrix

    def log_table(self) -> dict:
        """The per-epoch log as columns: ``{"epoch": (E,), "fraction": (E,), ...}`` (every scalar field)."""
        fields = [f.name for f in dataclasses.fields(EpochRecord) if f.name != "selected"]
        return {name: np.array([getattr(record, name) for record in self.history]) for name in fields}

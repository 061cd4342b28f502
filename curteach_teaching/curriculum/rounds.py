"""What the adapters of trainers that take their demonstrations as a whole set share (GAIL, AIRL, MCE-IRL).

Such a trainer has no batches to choose: it takes a set of demonstrations through one door
(``set_demonstrations``) and trains on it for a while (a round). Its curriculum is a
:class:`~curteach_teaching.curriculum.core.Curriculum` whose every epoch is one round: the epoch's selection is
handed over whole (:class:`WholeSelection`, one "batch" per epoch, no shuffle), so the core's scores, preference,
ranking, pacing, observers, log and saved state apply unchanged.

:class:`SelectionLogger` records every epoch's selection through imitation's ``HierarchicalLogger`` (every adapter
adds one for its trainer's logger), and :func:`check_trajectories` refuses demonstrations an adapter cannot use.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_teaching.curriculum.core import Curriculum, StepTrainer
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.observers import CurriculumObserver, EpochPlan
from curteach_teaching.curriculum.selection import CurriculumSelection, PacingSchedule, check_pacing, check_variant

__all__ = [
    "LOG_PREFIX",
    "SUPPORTED_TRAINERS",
    "RoundCurriculum",
    "SelectionLogger",
    "WholeSelection",
    "check_trainer",
    "check_trajectories",
    "selected_trajectories",
    "starts_matched",
    "tabular_envs",
]

#: The key prefix of what the adapters record in imitation's logger.
LOG_PREFIX = "curriculum"


@dataclass(frozen=True)
class WholeSelection:
    """The batcher of round-based trainers: an epoch's selection is one batch, demonstration after demonstration in
    the selection's order (most preferred first), each in time order; draws nothing from the generator."""

    def plan(self, index: DemonstrationIndex, selected: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """``[(sum of the selected lengths,)]``: the one batch of the epoch."""
        return [index.transitions(np.asarray(selected, dtype=np.int64))]

    def config(self) -> dict:
        """``{"batch_unit": "selection", "demos_per_batch": None, "remainder": None}``."""
        return {"batch_unit": "selection", "demos_per_batch": None, "remainder": None}


def check_trajectories(demonstrations: Sequence[Any], trainer_name: str) -> list:
    """``demonstrations`` as a non-empty list of imitation ``Trajectory`` objects with at least one action each,
    else ``ValueError`` naming ``trainer_name``'s adapter and what it takes."""
    from imitation.data import types

    if isinstance(demonstrations, (types.TransitionsMinimal, np.ndarray)) or isinstance(demonstrations, dict):
        raise ValueError(
            f"the {trainer_name} curriculum selects whole demonstrations: give a sequence of imitation Trajectory "
            f"objects, not {type(demonstrations).__name__} (transitions or an occupancy measure have no "
            "demonstrations to rank)"
        )
    demonstrations = list(demonstrations)
    if not demonstrations:
        raise ValueError(f"the {trainer_name} curriculum needs at least one demonstration; got none")
    for i, demo in enumerate(demonstrations):
        if not isinstance(demo, types.Trajectory):
            raise ValueError(f"demonstration {i} is a {type(demo).__name__}, not an imitation Trajectory "
                             f"(the {trainer_name} curriculum takes Trajectory objects)")
        if len(demo.acts) < 1:
            raise ValueError(f"demonstration {i} has no actions; every demonstration needs at least one")
    return demonstrations


def selected_trajectories(demonstrations: Sequence[Any], index: DemonstrationIndex, batch: np.ndarray) -> list:
    """The demonstrations whose transitions form ``batch`` (``(b,)`` flat indices of whole demonstrations), in the
    batch's order."""
    return [demonstrations[i] for i in index.demonstrations_in(batch)]


class SelectionLogger(CurriculumObserver):
    """Records each epoch's selection through imitation's logger before the trainer trains on it, so that the
    trainer's next ``dump`` writes it beside its own statistics.

    Keys (prefix :data:`LOG_PREFIX`): ``epoch`` (the epochs this logger has seen, counted from 1),
    ``n_selected``, ``fraction``, ``n_steps`` (optimizer steps or rounds planned), ``learner_difficulty_mean`` and
    ``teacher_difficulty_mean`` of the selection (NaN when not scored), ``preference_cutoff`` (the last kept
    demonstration's preference; NaN for Agn), and ``selected`` (the indices, most preferred first, as a
    space-separated string; kept out of stdout and the log file).

    Args:
        logger: an ``imitation.util.logger.HierarchicalLogger`` (e.g. ``trainer.logger``).
        n_demonstrations: N, the demonstrations the selection is over.
        teacher_difficulty: ``(N,)`` ``log Psi^E`` or ``None``.
    """

    def __init__(self, logger: Any, n_demonstrations: int, teacher_difficulty: np.ndarray | None = None):
        if not callable(getattr(logger, "record", None)):
            raise ValueError(f"logger must be an imitation HierarchicalLogger (with record); got {logger!r}")
        self.logger = logger
        self.n_demonstrations = int(n_demonstrations)
        self.teacher_difficulty = teacher_difficulty
        self._epochs = 0

    def on_epoch_start(self, plan: EpochPlan) -> None:
        """Record the plan's selection."""
        self._epochs += 1
        chosen = plan.selection
        selected = np.asarray(chosen.selected)
        nan = float("nan")
        learner, teacher, prefer = chosen.learner_difficulty, self.teacher_difficulty, chosen.preference
        values = {
            "epoch": self._epochs,
            "n_selected": int(selected.size),
            "fraction": selected.size / self.n_demonstrations,
            "n_steps": len(plan),
            "learner_difficulty_mean": float(learner[selected].mean()) if learner is not None else nan,
            "teacher_difficulty_mean": float(teacher[selected].mean()) if teacher is not None else nan,
            "preference_cutoff": float(prefer[selected].min()) if prefer is not None else nan,
        }
        for key, value in values.items():
            self.logger.record(f"{LOG_PREFIX}/{key}", value)
        self.logger.record(f"{LOG_PREFIX}/selected", " ".join(map(str, selected.tolist())),
                           exclude=("stdout", "log"))


#: What the trainer adapters accept, for the errors of each.
SUPPORTED_TRAINERS = (
    "bc: imitation.algorithms.bc.BC (CurriculumBC); dagger: imitation.algorithms.dagger.DAggerTrainer or "
    "SimpleDAggerTrainer (CurriculumDAgger); gail, airl: imitation.algorithms.adversarial GAIL or AIRL "
    "(CurriculumAdversarial); mce-irl: imitation.algorithms.mce_irl.MCEIRL (CurriculumMCEIRL)"
)


def check_trainer(trainer: Any, expected: type | tuple[type, ...], adapter: str) -> None:
    """``ValueError`` naming every supported trainer unless ``trainer`` is an instance of ``expected``."""
    if not isinstance(trainer, expected):
        raise ValueError(f"{adapter} cannot drive a {type(trainer).__name__}; supported trainers: "
                         f"{SUPPORTED_TRAINERS}")


def tabular_envs(venv: Any) -> list:
    """The base environments of ``venv`` whose episodes start from a settable ``initial_state_dist`` (seals'
    tabular models in a ``DummyVecEnv``), or ``ValueError`` saying what start matching needs."""
    envs = getattr(venv, "envs", None)
    bases = [env.unwrapped for env in envs] if envs else []
    if not bases or not all(hasattr(b, "initial_state_dist") and hasattr(b, "state_dim") for b in bases):
        raise ValueError("match_starts needs a DummyVecEnv of tabular environments with an initial_state_dist and "
                         f"state_dim (seals' tabular models, observed as state indices); got {type(venv).__name__}")
    return bases


@contextmanager
def starts_matched(envs: Sequence[Any], chosen: Sequence[Any]) -> Iterator[None]:
    """A context in which every env of ``envs`` starts its episodes where the ``chosen`` demonstrations start (the
    empirical distribution of their first observations, state indices); their own distributions are put back after.

    Raises:
        ValueError: a first observation that is not a state index of the environments.
    """
    n_states = envs[0].state_dim
    firsts = [np.asarray(demo.obs[0]) for demo in chosen]
    if not all(f.size == 1 and np.issubdtype(f.dtype, np.integer) and 0 <= f.item() < n_states for f in firsts):
        raise ValueError(f"match_starts needs demonstrations whose observations are state indices in [0, {n_states})")
    starts = np.bincount([f.item() for f in firsts], minlength=n_states).astype(np.float64)
    distribution = starts / starts.sum()
    saved = [env.initial_state_dist for env in envs]
    for env in envs:
        env.initial_state_dist = distribution
    try:
        yield
    finally:
        for env, dist in zip(envs, saved, strict=True):
            env.initial_state_dist = dist


class RoundCurriculum(Curriculum):
    """Base of the adapters whose every curriculum epoch is one round of a trainer fed a whole set of
    demonstrations (see the module docstring).

    Its state (:meth:`state_dict`) is ``{"curriculum": the core's state, "trainer": the step trainer's}``: the step
    trainer saves what of its trainer can be restored (``state_dict()`` / ``load_state_dict(state)``).

    Args:
        step_trainer: the trainer's side (with ``state_dict`` and ``load_state_dict``).
        index: the demonstrations' layout.
        variant, teacher_scores, pacing: of the :class:`~curteach_teaching.curriculum.selection.CurriculumSelection`.
        logger: the trainer's imitation logger the selection is recorded in (:class:`SelectionLogger`), or ``None``.
        rng: kept for the core (a whole selection draws nothing); default ``default_rng(0)``.
        hooks, observers, state_format, extra_config: as :class:`~curteach_teaching.curriculum.core.Curriculum`.
    """

    def __init__(self, step_trainer: StepTrainer, index: DemonstrationIndex, *, variant: str,
                 teacher_scores: np.ndarray | None, pacing: PacingSchedule | None, logger: Any,
                 rng: np.random.Generator | None, hooks: Sequence[Any], observers: Sequence[Any], state_format: str,
                 extra_config: dict | None = None):
        check_variant(variant)
        check_pacing(pacing)
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
        selection = CurriculumSelection(index.n_demonstrations, variant, teacher_scores, pacing)
        watchers = list(observers)
        if logger is not None:
            watchers.insert(0, SelectionLogger(logger, index.n_demonstrations, teacher_scores))
        super().__init__(step_trainer, index, selection, WholeSelection(),
                         rng=rng if rng is not None else np.random.default_rng(0), hooks=hooks, observers=watchers,
                         state_format=state_format, extra_config=extra_config)

    def state_dict(self) -> dict:
        """``{"curriculum": ..., "trainer": ...}`` (see the class docstring)."""
        return {"curriculum": super().state_dict(), "trainer": self.step_trainer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`: the curriculum (checked whole first), then the trainer's parts.

        Raises:
            ValueError: not such a state, or one of another configuration (see the core's ``load_state_dict``).
        """
        if not isinstance(state, dict) or set(state) != {"curriculum", "trainer"}:
            raise ValueError(f"not a {type(self).__name__} state (keys 'curriculum' and 'trainer')")
        super().load_state_dict(state["curriculum"])
        self.step_trainer.load_state_dict(state["trainer"])

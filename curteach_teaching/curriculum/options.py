"""The one contract of the trainer adapters: the options every adapter shares, validated once, and the check of the
demonstrations they take.

Every adapter (:mod:`~curteach_teaching.curriculum.adapters`) takes ``(trainer, demonstrations, *, options=None,
<its own settings>, **shared)``: ``options`` a :class:`CurriculumOptions` and ``shared`` any of its fields as keywords
(``CurriculumBC(trainer, demos, variant="Cur-T", teacher=scores)``), which override it. An adapter's own settings
(BC's batches and loss, DAgger's rounds, GAIL's rounds per epoch, ...) stay on its signature.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.curriculum.callbacks import check_callbacks
from curteach_teaching.curriculum.pacing import PacingSchedule, check_pacing
from curteach_teaching.curriculum.scores import TeacherDifficulty, check_min_log_prob
from curteach_teaching.curriculum.selection import check_variant
from curteach_teaching.curriculum.uses import check_use
from curteach_teaching.difficulty import MIN_LOG_PROB
from curteach_teaching.names import CUR

__all__ = ["CurriculumOptions", "SUPPORTED_TRAINERS", "check_demonstrations", "check_trainer"]


@dataclass(frozen=True)
class CurriculumOptions:
    """What every trainer adapter shares.

    Attributes:
        variant: ``"Cur"`` (default), ``"Cur-L"``, ``"Cur-T"``, ``"Agn"``, a preference object or a registered
            curriculum (:func:`~curteach_teaching.curriculum.selection.check_variant`).
        teacher: the teacher difficulty, needed by Cur and Cur-T: ``(N,)`` per-demonstration scores, an SB3 policy or
            a callable ``(obs, acts) -> log pi^E(a | s)``
            (:func:`~curteach_teaching.curriculum.scores.teacher_difficulty`); ``None`` for Cur-L and Agn.
        pacing: ``(epoch, n_epochs, n_items) -> int``; default ``LinearPacing(0.8, 0.5)``. Agn ignores it.
        rng: the generator of the batches' shuffles (``None``: the adapter's default, e.g. ``trainer.rng``).
        min_log_prob: floor of every per-step log-probability (teacher policy, teacher callable and learner alike).
            A NaN from an SB3 policy counts as the floor; a NaN from a teacher callable is an error.
        callbacks: hear of the epochs, the batches and every N steps (:mod:`~curteach_teaching.curriculum.callbacks`).
        log: record each epoch's selection in the trainer's imitation logger (``curriculum/...`` keys).
        difficulty_chunk_size: transitions per no-grad forward pass of the difficulty scores (>= 1).
        use: what each epoch makes of the preference (:mod:`~curteach_teaching.curriculum.uses`): ``"order"``
            (default: Algorithm 2's pacing), ``"select"`` / ``Select(keep)``, ``"weight"`` / ``Weight(temperature)``
            (trainers that can weight a transition's loss: BC).

    Raises:
        ValueError: any field out of its range (the message names it).
    """

    variant: Any = CUR
    teacher: TeacherDifficulty = None
    pacing: PacingSchedule | None = None
    rng: np.random.Generator | None = None
    min_log_prob: float = MIN_LOG_PROB
    callbacks: Sequence[Any] = ()
    log: bool = True
    difficulty_chunk_size: int = 8192
    use: Any = "order"

    def __post_init__(self) -> None:
        check_variant(self.variant)
        object.__setattr__(self, "use", check_use(self.use))
        check_pacing(self.pacing)
        if self.rng is not None and not isinstance(self.rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator; got {type(self.rng).__name__}")
        object.__setattr__(self, "min_log_prob", check_min_log_prob(self.min_log_prob))
        object.__setattr__(self, "callbacks", tuple(check_callbacks(self.callbacks)))
        if not isinstance(self.log, (bool, np.bool_)):
            raise ValueError(f"log must be True or False; got {self.log!r}")
        object.__setattr__(self, "difficulty_chunk_size", check_int("difficulty_chunk_size",
                                                                    self.difficulty_chunk_size, 1))

    @classmethod
    def of(cls, adapter: str, options: CurriculumOptions | None, shared: dict) -> CurriculumOptions:
        """``options`` (default: the defaults) with the keywords ``shared`` put in.

        Raises:
            ValueError: ``options`` is not a :class:`CurriculumOptions`, or a keyword is no option of any adapter
                nor of ``adapter`` (the message lists both).
        """
        if options is not None and not isinstance(options, cls):
            raise ValueError(f"options must be a CurriculumOptions; got {type(options).__name__}")
        fields = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(shared) - set(fields))
        if unknown:
            raise ValueError(f"{adapter} got unknown option(s) {unknown}; the options every adapter shares: {fields}, "
                             f"and {adapter}'s own (see its docstring)")
        base = options if options is not None else cls()
        return dataclasses.replace(base, **shared) if shared else base


def check_demonstrations(demonstrations: Any, adapter: str) -> list:
    """``demonstrations`` as a non-empty list of imitation ``Trajectory`` objects with at least one action each.

    Raises:
        ValueError: naming ``adapter`` and what it takes: transitions or an occupancy measure (no demonstrations to
            rank), an empty sequence, an element that is not a ``Trajectory``, or one without actions.
    """
    from imitation.data import types

    if isinstance(demonstrations, (types.TransitionsMinimal, np.ndarray, dict)):
        raise ValueError(
            f"{adapter} selects whole demonstrations: give a sequence of imitation Trajectory objects, not "
            f"{type(demonstrations).__name__} (transitions or an occupancy measure have no demonstrations to rank)"
        )
    demonstrations = list(demonstrations)
    if not demonstrations:
        raise ValueError(f"{adapter} needs at least one demonstration (an imitation Trajectory); got none")
    for i, demo in enumerate(demonstrations):
        if not isinstance(demo, types.Trajectory):
            raise ValueError(f"demonstration {i} is a {type(demo).__name__}, not an imitation Trajectory "
                             f"({adapter} takes Trajectory objects)")
        if len(demo.acts) < 1:
            raise ValueError(f"demonstration {i} has no actions; every demonstration needs at least one")
    return demonstrations


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

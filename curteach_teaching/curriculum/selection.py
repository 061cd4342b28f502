"""Which demonstrations an epoch trains on: scores -> preference -> ranking -> pacing, logged per epoch.

The selection half of the paper's Algorithm 2 (docs: ``docs/teaching/curriculum.md``), in plain NumPy, for any
trainer. As in Syllabus, the scores are computed elsewhere (the learner's and the teacher's difficulty of each
demonstration, :mod:`curteach_teaching.difficulty`) and this module only transforms them into a selection; the
adapter that feeds the selection to imitation's ``BC`` is :class:`curteach_teaching.curriculum.CurriculumBC`.

At the start of every epoch ``e = 1..E``, given per-demonstration log-difficulties ``log Psi^L(xi_i)`` of the learner
and ``log Psi^E(xi_i)`` of the teacher (both ``(N,)``, larger = harder):

1. the :func:`preference` by variant (larger = trained on earlier):

   ======  ===================================  ======================================
   Cur     ``log Psi^L - log Psi^E``             easy for the teacher, hard for the learner
   Cur-L   ``log Psi^L``  (``Psi^E`` constant)   hardest for the learner
   Cur-T   ``-log Psi^E`` (``Psi^L`` constant)   easiest for the teacher
   Agn     none                                  every demonstration, every epoch
   ======  ===================================  ======================================

2. the :func:`ranking`, most preferred first, ties to the lower index;
3. the pacing schedule keeps the ``X_e`` most preferred (:func:`kept_count`): by default the paper's
   ``X_e = int(b N + min(1, e / (a E)) (1 - b) N)`` (:class:`LinearPacing`, ``a = 0.8``, ``b = 0.5``); any callable
   ``(epoch, n_epochs, n_items) -> int`` may replace it. Agn keeps all ``N`` and never calls the schedule;
4. the trainer trains on the selection and reports what it trained; :meth:`CurriculumSelection.log` records the
   epoch as an :class:`EpochRecord` (selected fraction, indices, score statistics), so that a curriculum can be
   plotted (:meth:`CurriculumSelection.selection_matrix`).

Only Cur and Cur-L read the learner's difficulty (:func:`needs_learner_difficulty`); only Cur and Cur-T need the
teacher's (:func:`needs_teacher_difficulty`), so a trainer computes only what its variant uses.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_teaching.curriculum.pacing import LinearPacing, PacingSchedule, check_pacing, kept_count
from curteach_teaching.curriculum.plugins import checked_preference
from curteach_teaching.curriculum.uses import check_use
from curteach_teaching.names import AGN, CUR, CUR_L, CUR_T, CURRICULUM_VARIANTS
from curteach_teaching.registry import Registry

__all__ = [
    "VARIANTS",
    "CURRICULA",
    "EpochRecord",
    "EpochSelection",
    "CurriculumSelection",
    "check_curricula",
    "check_variant",
    "curriculum_cells",
    "variant_name",
    "needs_learner_difficulty",
    "needs_teacher_difficulty",
    "preference",
    "ranking",
]

#: The curriculum variants, in this order (``CurriculumBC``'s and the notebooks').
VARIANTS = CURRICULUM_VARIANTS
#: Curricula: preferences over (learner difficulty, teacher difficulty) in log space; the built-in variants go by
#: their names (:func:`check_variant`).
CURRICULA = Registry("curriculum", "curteach.curricula")
for _name in VARIANTS:
    CURRICULA.add(_name, lambda name=_name: name)

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


@dataclass(frozen=True)
class EpochSelection:
    """One epoch's selection, before training.

    Attributes:
        selected: ``(X_e,)`` int indices of the kept demonstrations, most preferred first (``arange(N)`` for Agn).
        preference: ``(N,)`` the preference of every demonstration, or ``None`` (Agn).
        learner_difficulty: ``(N,)`` the ``log Psi^L`` it was computed from, or ``None`` (Cur-T, Agn).
        weights: ``(N,)`` each demonstration's loss weight (:class:`~curteach_teaching.curriculum.uses.Weight`), or
            ``None`` (unweighted).
    """

    selected: np.ndarray
    preference: np.ndarray | None
    learner_difficulty: np.ndarray | None
    weights: np.ndarray | None = None


def check_variant(variant):
    """The curriculum ``variant`` names or is: a built-in name of :data:`VARIANTS` (returned as it is), a preference
    object (returned as it is), or the name of a registered curriculum (``module:attr`` or a ``curteach.curricula``
    entry point, loaded; a class is instantiated without arguments).

    A preference object has ``preference(learner_difficulty, teacher_difficulty) -> (N,) | None`` (log space,
    larger = trained on earlier; ``None`` keeps every demonstration, as Agn) and may say ``needs_learner`` /
    ``needs_teacher`` (default ``True``) and ``name``.

    Raises:
        ValueError: an unknown name (the registry's message lists the names and how to register one), or an object
            without a ``preference`` method.
    """
    if isinstance(variant, str):
        if variant in VARIANTS:
            return variant
        name, variant = CURRICULA.load(variant)
        if isinstance(variant, str):  # a built-in registered under another name
            return check_variant(variant)
        if isinstance(variant, type):
            variant = CURRICULA.call(name, variant)  # a constructor that raises is named
    if not callable(getattr(variant, "preference", None)):
        raise ValueError(f"variant must be one of {VARIANTS}, a registered curriculum or an object with "
                         f"preference(learner_difficulty, teacher_difficulty); got {variant!r}")
    return variant


def variant_name(variant) -> str:
    """How a variant is named in records and figures: a built-in's name, else the object's ``name`` attribute, else
    its class name."""
    if isinstance(variant, str):
        return variant
    name = getattr(variant, "name", None)
    return name if isinstance(name, str) and name else type(variant).__name__


def check_curricula(curricula, builtins: tuple) -> tuple:
    """An experiment's curricula as a tuple of distinct specs with distinct names (a plug-in that does not load
    fails here).

    Raises:
        ValueError: none, a spec given twice, or two curricula shown under one name.
    """
    curricula = tuple(curricula)
    if not curricula or len(set(curricula)) != len(curricula):
        raise ValueError(f"curricula must be distinct names from {list(builtins)} or plug-ins; got {list(curricula)}")
    names = [variant_name(check_variant(spec)) for spec in curricula]
    if len(set(names)) != len(names):
        raise ValueError(f"curricula must have distinct names; got {names}")
    return curricula


def curriculum_cells(curricula) -> dict:
    """``cell name -> curriculum spec``: one cell per curriculum, named as it (a plug-in by its ``name``)."""
    return {variant_name(check_variant(spec)): spec for spec in curricula}


def needs_learner_difficulty(variant) -> bool:
    """Whether ``variant``'s preference reads the learner's difficulty (Cur, Cur-L; a plug-in unless it says
    ``needs_learner = False``)."""
    variant = check_variant(variant)
    if isinstance(variant, str):
        return variant in (CUR, CUR_L)
    return bool(getattr(variant, "needs_learner", True))


def needs_teacher_difficulty(variant) -> bool:
    """Whether ``variant``'s preference reads the teacher's difficulty (Cur, Cur-T; a plug-in unless it says
    ``needs_teacher = False``)."""
    variant = check_variant(variant)
    if isinstance(variant, str):
        return variant in (CUR, CUR_T)
    return bool(getattr(variant, "needs_teacher", True))


def preference(variant, learner_difficulty: np.ndarray | None, teacher_difficulty: np.ndarray | None
               ) -> np.ndarray | None:
    """The preference of every demonstration by variant (larger = trained on earlier); a new array.

    Args:
        variant: one of :data:`VARIANTS` or a preference object (:func:`check_variant`).
        learner_difficulty: ``(N,)`` ``log Psi^L`` (read by Cur and Cur-L; may be ``None`` otherwise).
        teacher_difficulty: ``(N,)`` ``log Psi^E`` (read by Cur and Cur-T; may be ``None`` otherwise).

    Returns:
        ``(N,)`` ``log Psi^L - log Psi^E`` (Cur), ``log Psi^L`` (Cur-L), ``-log Psi^E`` (Cur-T); ``None`` for Agn;
        a plug-in's own preference.

    Raises:
        PluginError: a plug-in raised, or its preference is not ``None`` nor a NaN-free array of the difficulties'
            shape (a ``ValueError``).
    """
    variant = check_variant(variant)
    if not isinstance(variant, str):
        return checked_preference(variant, variant_name(variant), learner_difficulty, teacher_difficulty)
    if variant == AGN:
        return None
    if variant == CUR:
        return learner_difficulty - teacher_difficulty
    if variant == CUR_L:
        return learner_difficulty.copy()
    return -teacher_difficulty


def ranking(preference: np.ndarray) -> np.ndarray:
    """``(N,)`` int indices, most preferred first; equal preferences keep the lower index first (a stable sort)."""
    return np.argsort(-preference, kind="stable")


class CurriculumSelection:
    """The curriculum's selection over N demonstrations, epoch by epoch, with its log.

    Args:
        n_items: N, the number of demonstrations (at least 1).
        variant: ``"Cur"`` (default), ``"Cur-L"``, ``"Cur-T"``, ``"Agn"``, a preference object or a registered
            curriculum (:func:`check_variant`).
        teacher_difficulty: ``(N,)`` ``log Psi^E`` per demonstration (no NaN); required by Cur and Cur-T, kept for
            the log otherwise (``None`` allowed for Cur-L and Agn).
        pacing: ``(epoch, n_epochs, n_items) -> int``; default :class:`LinearPacing` ``(0.8, 0.5)``. Agn ignores it,
            and so do the uses other than order.
        use: what an epoch makes of the preference (:mod:`~curteach_teaching.curriculum.uses`): ``"order"``
            (default, Algorithm 2's pacing), ``"select"``, ``"weight"`` or such an object.
        sizes: ``(N,)`` transitions per demonstration, for the weights of ``use="weight"`` (default: all 1).

    Attributes:
        history: the :class:`EpochRecord` of every epoch logged so far.

    Raises:
        ValueError: an unknown variant or use, a pacing that is not callable, a missing or mis-shaped teacher
            difficulty or sizes.
    """

    def __init__(self, n_items: int, variant: str = CUR, teacher_difficulty: np.ndarray | None = None,
                 pacing: PacingSchedule | None = None, use: Any = "order", sizes: np.ndarray | None = None):
        self._start(variant, pacing, use)
        self.grow(n_items, teacher_difficulty, sizes)

    @classmethod
    def growing(cls, variant=CUR, pacing: PacingSchedule | None = None, use: Any = "order") -> CurriculumSelection:
        """A selection over no items yet, for a pool that grows (DAgger's): :meth:`grow` it before :meth:`select`."""
        selection = cls.__new__(cls)
        selection._start(variant, pacing, use)
        return selection

    def _start(self, variant, pacing: PacingSchedule | None, use: Any) -> None:
        self.variant = check_variant(variant)
        self.pacing: PacingSchedule = LinearPacing() if check_pacing(pacing) is None else pacing
        self.use = check_use(use)
        self.history: list[EpochRecord] = []
        self.n_items = 0
        self.teacher_difficulty: np.ndarray | None = None
        self.sizes = np.ones(0)

    def grow(self, n_items: int, teacher_difficulty: np.ndarray | None = None, sizes: np.ndarray | None = None
             ) -> None:
        """Select over ``n_items`` items (N, at least the items so far) from now on, with ``(N,)`` teacher difficulty
        and sizes as the constructor takes them. A pool that grows keeps its order, so the indices in :attr:`history`
        still name the same items; the variant, pacing, use and history go on.

        Raises:
            ValueError: fewer items, a missing or mis-shaped teacher difficulty or sizes.
        """
        least = max(1, self.n_items)
        if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)) or n_items < least:
            raise ValueError(f"n_items must be an integer >= {least}; got {n_items!r}")
        if teacher_difficulty is None:
            if needs_teacher_difficulty(self.variant):
                raise ValueError(f"variant {variant_name(self.variant)!r} needs a teacher difficulty (scores, a "
                                 "policy or a callable)")
        else:
            teacher_difficulty = np.asarray(teacher_difficulty, dtype=np.float64)
            if teacher_difficulty.shape != (n_items,) or np.isnan(teacher_difficulty).any():
                raise ValueError(f"teacher_difficulty must be an array of shape ({n_items},) without NaN; "
                                 f"got shape {teacher_difficulty.shape}")
        sizes = np.ones(n_items) if sizes is None else np.asarray(sizes, dtype=np.float64)
        if sizes.shape != (n_items,) or not (sizes > 0).all():
            raise ValueError(f"sizes must be ({n_items},) positive numbers of transitions; got {sizes.shape}")
        self.n_items = int(n_items)
        self.teacher_difficulty = teacher_difficulty
        self.sizes = sizes

    @property
    def needs_learner_difficulty(self) -> bool:
        """Whether :meth:`select` needs the learner's difficulty (Cur, Cur-L)."""
        return needs_learner_difficulty(self.variant)

    def preference(self, learner_difficulty: np.ndarray | None) -> np.ndarray | None:
        """``(N,)`` preference of every demonstration (:func:`preference`); ``None`` for Agn."""
        return preference(self.variant, learner_difficulty, self.teacher_difficulty)

    def select(self, epoch: int, n_epochs: int, learner_difficulty: np.ndarray | None = None) -> EpochSelection:
        """The demonstrations of epoch ``epoch`` (1-based) of ``n_epochs``, most preferred first.

        Args:
            epoch, n_epochs: the position in the pacing schedule.
            learner_difficulty: ``(N,)`` ``log Psi^L`` under the learner's current policy; needed by Cur and Cur-L
                (:attr:`needs_learner_difficulty`), ignored by the others.

        Returns:
            The :class:`EpochSelection`: ``X_e`` indices, the ``(N,)`` preference and the learner difficulty used.
        """
        learner = learner_difficulty if self.needs_learner_difficulty else None
        if learner is None and self.needs_learner_difficulty:
            raise ValueError(f"variant {variant_name(self.variant)!r} needs the learner's difficulty of the "
                             f"{self.n_items} items")
        if learner is not None and np.shape(learner) != (self.n_items,):
            raise ValueError(f"learner_difficulty must have shape ({self.n_items},); got {np.shape(learner)}")
        prefer = self.preference(learner)
        if prefer is None:
            return EpochSelection(np.arange(self.n_items), None, learner)
        # only Algorithm 2's order reads the pacing schedule; select and weight fix their own share
        keep = kept_count(self.pacing, epoch, n_epochs, self.n_items) if self.use.name == "order" else self.n_items
        selected, weights = self.use.choose(prefer, keep, self.sizes)
        return EpochSelection(selected, prefer, learner, weights)

    def log(self, selection: EpochSelection, n_transitions: int, n_batches: int) -> EpochRecord:
        """Record an epoch the trainer has trained on ``selection``; appended to :attr:`history` and returned.

        Args:
            selection: what :meth:`select` returned for this epoch.
            n_transitions: transitions trained on.
            n_batches: optimizer steps taken.
        """
        selected, prefer, learner = selection.selected, selection.preference, selection.learner_difficulty
        teacher = self.teacher_difficulty
        nan = float("nan")
        record = EpochRecord(
            epoch=len(self.history) + 1,
            n_selected=int(selected.size),
            fraction=selected.size / self.n_items,
            selected=selected,
            n_transitions=int(n_transitions),
            n_batches=int(n_batches),
            learner_difficulty_mean=float(learner[selected].mean()) if learner is not None else nan,
            learner_difficulty_max=float(learner[selected].max()) if learner is not None else nan,
            learner_difficulty_all_mean=float(learner.mean()) if learner is not None else nan,
            teacher_difficulty_mean=float(teacher[selected].mean()) if teacher is not None else nan,
            preference_min=float(prefer[selected].min()) if prefer is not None else nan,
        )
        self.history.append(record)
        return record

    def selection_matrix(self) -> np.ndarray:
        """``(epochs so far, N)`` bool: demonstration ``i`` was trained on in epoch ``e`` (for curriculum plots)."""
        matrix = np.zeros((len(self.history), self.n_items), dtype=bool)
        for row, record in enumerate(self.history):
            matrix[row, record.selected] = True
        return matrix

    def log_table(self) -> dict:
        """The per-epoch log as columns: ``{"epoch": (E,), "fraction": (E,), ...}`` (every scalar field)."""
        fields = [f.name for f in dataclasses.fields(EpochRecord) if f.name != "selected"]
        return {name: np.array([getattr(record, name) for record in self.history]) for name in fields}

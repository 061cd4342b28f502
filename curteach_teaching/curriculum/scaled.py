"""How a task score and the learner's difficulty become one preference on a dataset of any length and units.

The paper's curricula compare two log difficulties: the teacher's ``log Psi^E`` (here a task score: an episode's
length, its return, a field, the ensemble's...) and the learner's ``log Psi^L``, the negative log-likelihood of the
demonstration's actions under the current policy. On a dataset their units differ and the learner's grows with the
episode's length (about 0.69 nats per step for a fresh two-action policy): left as they are, long episodes come
first whatever the teacher says. :class:`ScaledPreference` makes both choices explicit:

* ``learner="per-step"`` (default) divides ``log Psi^L`` by the episode's length (the mean negative log-likelihood
  per step); ``"sum"`` keeps the paper's sum;
* ``scale="standard"`` (default) standardises each term over the pool (``(x - mean) / std``; 0 where every value is
  equal: :func:`~curteach_teaching.standardise.standardise`'s exact rule) before they are combined, so neither term
  wins by its units alone; ``"raw"`` combines them as they are.

The combination is the paper's: Cur prefers ``log Psi^L - log Psi^E`` (hard for the learner, easy for the teacher),
Cur-L ``log Psi^L``, Cur-T ``-log Psi^E``; Agn has no preference.
"""

from __future__ import annotations

import numpy as np

from curteach_teaching.names import AGN, CUR, CUR_L, CUR_T
from curteach_teaching.standardise import standardise

__all__ = ["LEARNER_TERMS", "SCALES", "ScaledPreference", "scaled_curriculum"]

#: How the learner's difficulty of a demonstration is taken: summed over its steps or per step.
LEARNER_TERMS = ("per-step", "sum")
#: How the two terms are put on one scale before they are combined.
SCALES = ("standard", "raw")


class ScaledPreference:
    """A built-in curriculum over a dataset with the scales made explicit (a preference object of
    :func:`~curteach_teaching.curriculum.selection.check_variant`, named as the variant).

    Args:
        variant: ``"Cur"``, ``"Cur-L"`` or ``"Cur-T"`` (Agn needs no preference).
        lengths: ``(N,)`` every demonstration's number of actions (for ``learner="per-step"``).
        learner: one of :data:`LEARNER_TERMS`.
        scale: one of :data:`SCALES`.

    Raises:
        ValueError: another variant, learner term or scale, or lengths that are not positive.
    """

    def __init__(self, variant: str, lengths: np.ndarray, *, learner: str = "per-step", scale: str = "standard"):
        if variant not in (CUR, CUR_L, CUR_T):
            raise ValueError(f"a scaled preference is one of {(CUR, CUR_L, CUR_T)} ({AGN} has none); got {variant!r}")
        if learner not in LEARNER_TERMS:
            raise ValueError(f"learner must be one of {LEARNER_TERMS}; got {learner!r}")
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}; got {scale!r}")
        lengths = np.asarray(lengths, dtype=np.float64)
        if lengths.ndim != 1 or not (lengths > 0).all():
            raise ValueError("lengths must be (N,) positive numbers of actions")
        self.name = variant
        self.lengths = lengths
        self.learner = learner
        self.scale = scale
        self.needs_learner = variant in (CUR, CUR_L)
        self.needs_teacher = variant in (CUR, CUR_T)

    def terms(self, learner_difficulty: np.ndarray | None, teacher_difficulty: np.ndarray | None
              ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The ``(N,)`` learner and teacher terms as they enter the preference (``None`` where not read)."""
        learner = None
        if self.needs_learner:
            learner = np.asarray(learner_difficulty, dtype=np.float64)
            if self.learner == "per-step":
                learner = learner / self.lengths
        teacher = np.asarray(teacher_difficulty, dtype=np.float64) if self.needs_teacher else None
        if self.scale == "standard":
            learner = None if learner is None else standardise(learner, zero="exact")
            teacher = None if teacher is None else standardise(teacher, zero="exact")
        return learner, teacher

    def preference(self, learner_difficulty: np.ndarray | None, teacher_difficulty: np.ndarray | None
                   ) -> np.ndarray:
        """``(N,)`` larger = trained on earlier (see the module docstring)."""
        learner, teacher = self.terms(learner_difficulty, teacher_difficulty)
        if self.name == CUR:
            return learner - teacher
        if self.name == CUR_L:
            return learner
        return -teacher

    def __repr__(self) -> str:
        return f"ScaledPreference({self.name!r}, learner={self.learner!r}, scale={self.scale!r})"


def scaled_curriculum(spec, lengths: np.ndarray, *, learner: str = "per-step", scale: str = "standard"):
    """The curriculum ``spec`` names, as a dataset trains with it: a registered curriculum
    (:data:`~curteach_teaching.curriculum.selection.CURRICULA`: a built-in name, ``module:attr`` or an entry point)
    loaded by :func:`~curteach_teaching.curriculum.selection.check_variant`; a built-in Cur, Cur-L or Cur-T becomes
    its :class:`ScaledPreference` over ``lengths`` (``(N,)`` actions per demonstration), Agn stays ``"Agn"`` and a
    plug-in's preference object is returned as it is (its scales are its own).

    Raises:
        ValueError: an unknown curriculum (the registry's message), or a learner term or scale out of range.
    """
    from curteach_teaching.curriculum.selection import check_variant

    variant = check_variant(spec)
    if isinstance(variant, str) and variant != AGN:
        return ScaledPreference(variant, lengths, learner=learner, scale=scale)
    return variant

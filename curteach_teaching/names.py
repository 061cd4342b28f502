"""The names of the teachers, curriculum variants and BC update rules, defined once.

This module imports nothing, so the command-line parsers (which must not import torch or imitation), the teachers
(NumPy only), the curriculum selection and the experiments can all take their names from here. Every tuple below is
built from the same constants; each keeps the order its users rely on (order of play, the order of curves, plots and
per-teacher seeds).
"""

from __future__ import annotations

__all__ = [
    "ordered_subset",
    "AGN",
    "CUR",
    "CUR_T",
    "CUR_L",
    "OMN",
    "SCOT",
    "BBOX",
    "TEACHER_NAMES",
    "BC_TEACHER_NAMES",
    "CURRICULUM_VARIANTS",
    "BC_UPDATES",
    "MAX_STEPS",
]

#: Agnostic: a uniformly random start (teachers), every demonstration every epoch (curriculum).
AGN = "Agn"
#: Curriculum: easy for the teacher, hard for the learner (``log Psi^L - log Psi^E``).
CUR = "Cur"
#: Teacher difficulty only: easiest for the teacher (``Psi^L`` constant).
CUR_T = "Cur-T"
#: Learner difficulty only: hardest for the learner (``Psi^E`` constant).
CUR_L = "Cur-L"
#: Omniscient (IMT): sees the learner's parameters and update rule.
OMN = "Omn"
#: Scot: a greedy cover of the starts by feature expectations, then uniform.
SCOT = "Scot"
#: Black box: the largest gap in true return.
BBOX = "BBox"

#: The seven teachers of the car MaxEnt-IRL experiments, in the IRL original's order of play.
TEACHER_NAMES = (AGN, OMN, SCOT, CUR, CUR_T, CUR_L, BBOX)
#: The four teachers of the car CrossEnt-BC experiment, in the BC original's order of play.
BC_TEACHER_NAMES = (AGN, CUR, CUR_T, CUR_L)
#: The variants of the curriculum over demonstrations (:mod:`curteach_teaching.curriculum.selection`).
CURRICULUM_VARIANTS = (CUR, CUR_L, CUR_T, AGN)
#: The learner-centric experiments' curricula, in the order of the paper's Figs. 6 and 7 (navigation, datasets).
PAPER_CURRICULA = (AGN, CUR, CUR_L, CUR_T)
#: The car BC learner's update rules (:class:`~curteach_teaching.learners.bc_car.BCCarLearner`).
BC_UPDATES = ("batch", "sequential")

#: teaching steps per car run: a run keeps a curve and the picks of every teacher for each step (about 24 bytes
#: per teacher and step), so a million steps is about 170 MB for seven teachers
MAX_STEPS = 1_000_000


def ordered_subset(what: str, names, allowed: tuple) -> tuple:
    """``names`` as a tuple in the order of ``allowed`` (its order of play), after checking that they are distinct
    members of ``allowed`` and that there is at least one.

    Raises:
        ValueError: ``"{what} must be distinct names from [...]; got [...]"``.
    """
    names = list(names)
    if not names or len(set(names)) != len(names) or any(name not in allowed for name in names):
        raise ValueError(f"{what} must be distinct names from {list(allowed)}; got {names}")
    return tuple(name for name in allowed if name in names)

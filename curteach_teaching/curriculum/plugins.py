"""A plug-in curriculum's preference, checked where it enters the selection.

A user's curriculum (``module:attr``, an entry point, an object passed as ``variant=``) is called deep inside a
trainer's epoch. Its exception there, or a preference of the wrong shape or with NaN, is a
:class:`~curteach_teaching.registry.PluginError` naming the curriculum: one line on the command line, its traceback
in the sweep's ``errors.log``, never mistaken for a bug of the trainer that called it.
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from curteach_teaching.registry import PluginError

__all__ = ["checked_preference"]


def checked_preference(curriculum: Any, name: str, learner_difficulty: np.ndarray | None,
                       teacher_difficulty: np.ndarray | None) -> np.ndarray | None:
    """``curriculum.preference(learner_difficulty, teacher_difficulty)`` as a new ``(N,)`` float array, or ``None``.

    Args:
        curriculum: the plug-in (an object with ``preference``).
        name: the name it is shown under.
        learner_difficulty, teacher_difficulty: ``(N,)`` ``log Psi^L`` and ``log Psi^E``, or ``None``.

    Raises:
        PluginError: the preference raised, or returned something else than ``None`` or a NaN-free ``(N,)``.
    """
    try:
        prefer = curriculum.preference(learner_difficulty, teacher_difficulty)
    except PluginError:
        raise
    except Exception as error:
        raise PluginError(f"curriculum {name!r} raised {type(error).__name__} in preference: {error}",
                          traceback.format_exc()) from error
    if prefer is None:
        return None
    size = next((np.shape(d) for d in (learner_difficulty, teacher_difficulty) if d is not None), None)
    expected = f"it must be None or ({size[0] if size else 'N'},) without NaN"
    try:
        prefer = np.array(prefer, dtype=np.float64)
    except (TypeError, ValueError):
        raise PluginError.here(f"curriculum {name!r} returned {type(prefer).__name__} from preference; "
                               f"{expected}") from None
    if prefer.shape != (size or prefer.shape) or prefer.ndim != 1 or np.isnan(prefer).any():
        raise PluginError.here(f"curriculum {name!r} returned a preference of shape {prefer.shape} (or with "
                               f"NaN); {expected}")
    return prefer

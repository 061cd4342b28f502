"""A boolean label per episode, read from a dataset's fields: which demonstrations are bad (or good).

``dataset-bc --bad-field`` reads the field that marks bad data for its selection-quality table, and
``rank --compare --label`` reads one to measure each score against it; both read it here, the same way: a boolean
metadata field of every episode (a robomimic filter key such as ``worse``, a Minari field such as ``noisy``), a flag
recorded per step (its value at the last step: ``success``), or ``not:FIELD``, the field's negation (``not:success``
marks the failed episodes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from curteach_teaching.datasets.scores.registry import NEGATION, last_step_flags  # as task scores read fields

__all__ = ["DEFAULT_BAD_FIELD", "bad_episodes"]

#: the field of bad episodes read when none is named (the BabyAI bot's datasets mark their noisy episodes with it)
DEFAULT_BAD_FIELD = "noisy"


def _is_flag(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def bad_episodes(pool: Any, field: str | None, *, what: str = "bad_field") -> np.ndarray | None:
    """``(N,)`` bool, True where ``field`` marks an episode of ``pool`` (``N`` episodes): a boolean metadata field,
    else a per-step flag at the last step, or ``not:FIELD`` for the negation (True where the field is False).
    ``field=None`` (nothing named) reads :data:`DEFAULT_BAD_FIELD` where every episode holds it as True or False,
    and gives ``None`` otherwise (there is then no label to measure against).

    ``what`` is the setting's name the errors begin with (``bad_field must ...``; ``label`` for ``rank --label``),
    so that a command names its own flag.

    Raises:
        ValueError: a named ``field`` missing from an episode, or not True or False in one (an integer such as
            ``seed`` says nothing of an episode's quality), naming the first such episode; ``not:`` with no field.
    """
    if field is None:
        if not all(_is_flag(meta.get(DEFAULT_BAD_FIELD)) for meta in pool.metadata):
            return None
        field = DEFAULT_BAD_FIELD
    if not isinstance(field, str) or not field:
        raise ValueError(f"{what} must name a boolean metadata field; got {field!r}")
    if field.startswith(NEGATION):
        inner = field[len(NEGATION):]
        if not inner:
            raise ValueError(f"{what} {field!r} names no field after {NEGATION!r} (e.g. not:success)")
        flags = bad_episodes(pool, inner, what=what)
        return None if flags is None else ~flags
    per_step = last_step_flags(pool.metadata, pool.infos, field)  # recorded per step only: the last step's value
    if per_step is not None:
        return per_step
    flags = np.zeros(len(pool.metadata), dtype=bool)
    for i, meta in enumerate(pool.metadata):
        where = f"episode {i} of the pool (id {pool.episode_ids[i]} of {pool.groups[i]})"
        if field not in meta:
            names = sorted({str(key) for each in pool.metadata for key in each})
            raise ValueError(f"{what} must be a boolean metadata field of every episode; {field!r} is not in that of "
                             f"{where} (fields: {', '.join(names) or 'none'})")
        if not _is_flag(meta[field]):
            raise ValueError(f"{what} must be a boolean metadata field (True or False in every episode); {field!r} "
                             f"is {meta[field]!r} in {where}")
        flags[i] = bool(meta[field])
    return flags

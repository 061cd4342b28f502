"""A task-specific score per demonstration, for the paper's learner-centric experiment (Section 6).

The score says how hard a demonstration's task is, before any learner sees it: ``length`` (actions), ``return``
(undiscounted), a named per-episode field, or a user's function of the pool. Turning a score into a log difficulty
is the curriculum's business; this module only produces finite numbers, one per episode.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np

from curteach_teaching.datasets.pool import EpisodePool

__all__ = ["task_scores", "score_fields", "BUILT_IN_SCORES"]

#: Scores every pool has (``return`` needs rewards).
BUILT_IN_SCORES = ("length", "return")


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def _info_value(info, key: str):
    """An info's value at the episode's last step (the first axis is time), or ``None`` when it is not a number."""
    if key not in info or isinstance(info[key], dict):
        return None
    array = np.asarray(info[key])
    value = array[-1] if array.ndim == 1 and array.size else None
    return value if value is not None and _is_number(value.item() if hasattr(value, "item") else value) else None


def score_fields(pool: EpisodePool) -> tuple:
    """The names :func:`task_scores` accepts for ``pool``: the built-ins, then every per-episode metadata key with a
    number in every episode, then every info key with a number at every episode's last step."""
    names = list(BUILT_IN_SCORES if pool.has_rewards else ("length",))
    if len(pool):
        common = set.intersection(*(set(k for k, v in m.items() if _is_number(v)) for m in pool.metadata))
        common -= {"id", "seed"}  # Minari's bookkeeping, not a property of the task
        names += sorted(common - set(names))
        infos = set.intersection(*(set(k for k in info if _info_value(info, k) is not None) for info in pool.infos))
        names += sorted(infos - set(names))
    return tuple(names)


def _load(spec: str) -> Callable:
    module_name, _, attr = spec.partition(":")
    try:
        target = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except Exception as error:
        raise ValueError(f"cannot load task score {spec!r}: {type(error).__name__}: {error}") from None
    if not callable(target):
        raise ValueError(f"task score {spec!r} is not callable; it must take the pool and return an (N,) array")
    return target


def _field(pool: EpisodePool, name: str) -> np.ndarray:
    in_metadata = [name in m for m in pool.metadata]
    if any(in_metadata):
        values = []
        for i, meta in enumerate(pool.metadata):
            if name not in meta or not _is_number(meta[name]):
                raise ValueError(f"task score field {name!r} is missing or not a number in the metadata of episode "
                                 f"{int(pool.episode_ids[i])} of {pool.groups[i]!r}: got {meta.get(name)!r}")
            values.append(float(meta[name]))
        return np.array(values, dtype=np.float64)
    if len(pool) and all(name in info for info in pool.infos):
        values = []
        for i, info in enumerate(pool.infos):
            value = _info_value(info, name)
            if value is None:
                raise ValueError(f"info {name!r} of episode {int(pool.episode_ids[i])} of {pool.groups[i]!r} has no "
                                 "number at the last step")
            values.append(float(value))
        return np.array(values, dtype=np.float64)
    raise ValueError(f"no task score field {name!r}; available: {', '.join(score_fields(pool))} "
                     "(or module:attr for your own function)")


def task_scores(pool: EpisodePool, score: str | Callable[[EpisodePool], np.ndarray]) -> np.ndarray:
    """One finite task score per demonstration of ``pool``.

    Args:
        pool: ``N`` episodes.
        score: ``"length"`` (actions per episode), ``"return"`` (sum of rewards), the name of a per-episode field,
            ``"module:attr"`` naming a function, or the function itself, called as ``f(pool)`` and returning ``N``
            numbers. A field is looked up first in the episode metadata (``pool.metadata[i][name]``, a number in
            every episode: custom keys stored with the dataset, or Minari's ``total_steps``), then in the step infos
            (``pool.infos[i][name][-1]``, the value after the episode's last step, such as a ``success`` flag).

    Returns:
        ``(N,)`` float64 scores, in the pool's order.

    Raises:
        ValueError (one line): an unknown field (listing the available ones), a function that cannot be loaded or
        returns the wrong shape, or a score that is NaN or infinite (naming the episode).
    """
    if callable(score):
        name, values = getattr(score, "__name__", "callable"), score(pool)
    elif not isinstance(score, str) or not score:
        raise ValueError(f"score must be 'length', 'return', a field name, 'module:attr' or a callable; got {score!r}")
    elif score == "length":
        name, values = score, pool.lengths
    elif score == "return":
        if not pool.has_rewards:
            raise ValueError("task score 'return' needs rewards; this pool has none")
        name, values = score, pool.returns
    elif ":" in score:
        name, values = score, _load(score)(pool)
    else:
        name, values = score, _field(pool, score)
    try:
        scores = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"task score {name!r} must give numbers; got {type(values).__name__}") from None
    if scores.shape != (len(pool),):
        raise ValueError(f"task score {name!r} must give one number per episode, shape ({len(pool)},); got "
                         f"{scores.shape}")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"task score {name!r} is {scores[i]} for episode {int(pool.episode_ids[i])} of "
                         f"{pool.groups[i]!r} (position {i}); scores must be finite"
                         + (f" ({bad.size} episodes in all)" if bad.size > 1 else ""))
    return scores

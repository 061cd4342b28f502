"""A run's result as logged scalars: ``(step, tag, value)`` rows, read from any
:class:`~curteach_teaching.sweeps.results.RunResult` without knowing its experiment.

The rules (an experiment that follows the run-file layout logs without code of its own):

* **Curves** -> ``curves/<name>`` (the car's ``curves/Cur`` is Cur's expected reward, navigation's ``curves/test``
  the test return); a curve named ``group:name`` -> ``group/name`` (navigation's ``feature/<name>``: the mean
  feature of the demonstrations the curriculum selected); a name that has a ``/`` already is kept as it is.
* **The step axis** of a curve of length ``L`` is the record :data:`STEP_RECORDS` (``steps`` or ``batches``) of that
  curve, or the one such record of length ``L`` (navigation's ``records["batches"]["test"]``, the optimizer steps at
  each evaluation, shared by all its curves); else ``0 .. L - 1`` (the car's teaching steps).
* **Records** -> ``<record>/<curve>``. A record one shorter than its curve holds what happened at each step ``t``
  (the car's picks): its value ``t`` is logged at the step of curve point ``t + 1``, the point it produced. A record
  whose name ends in ``types`` is categorical (the car's task types of the picks): it is logged as
  ``<record>_share/<curve>/<value>``, the share of each value among the last :data:`SHARE_WINDOW` steps' picks (the
  values: all those this run's record holds, for every curve alike).
* **Extras** -> ``extras/<key>``: a number at the run's last step; a dict of numbers flattened
  (``extras/diverged/Cur``); a list of numbers as a series on the axis of the list of the same length whose name ends
  in ``batches`` or ``steps`` (navigation's ``epoch_batches``), else ``0 ..``; anything else (None, text, lists of
  dicts) is left out.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from curteach_teaching.sweeps.results import RunResult

__all__ = ["SHARE_WINDOW", "STEP_RECORDS", "run_scalars", "tag_of_curve", "window_shares"]

#: Records that give their curve's step axis instead of being logged.
STEP_RECORDS = ("steps", "batches")
#: Steps over which a categorical record's shares are taken (a trailing window, so a curriculum's shift shows).
SHARE_WINDOW = 20


def tag_of_curve(name: str) -> str:
    """The tag of a curve (see the module docstring): ``curves/Cur``, ``feature/goal_distance``, ``irl/eta=0.1/x``."""
    if "/" in name:
        return name
    if ":" in name:
        group, _, rest = name.partition(":")
        return f"{group}/{rest}"
    return f"curves/{name}"


def window_shares(values: np.ndarray, categories: np.ndarray, window: int = SHARE_WINDOW) -> np.ndarray:
    """The share of each category among the last ``window`` values, after each value.

    Args:
        values: ``(T,)`` categorical values.
        categories: ``(C,)`` the categories counted.
        window: trailing window length (>= 1); the first ``window - 1`` shares are over the values so far.

    Returns:
        ``(T, C)``: row ``t`` is the share of each category among ``values[max(0, t - window + 1) : t + 1]``.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1; got {window}")
    hits = (np.asarray(values)[:, None] == np.asarray(categories)[None, :]).astype(np.int64)  # (T, C)
    counts = np.cumsum(hits, axis=0)
    counts[window:] -= counts[:-window]
    seen = np.minimum(np.arange(1, len(hits) + 1), window)  # (T,)
    return counts / seen[:, None]


def _is_number(value) -> bool:
    return isinstance(value, (Real, np.number)) and not isinstance(value, np.complexfloating)


def _numeric_list(value) -> bool:
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(_is_number(v) for v in value)


def _axis_record(result: RunResult, curve: str, length: int) -> np.ndarray | None:
    for name in STEP_RECORDS:
        per_curve = result.records.get(name, {})
        if curve in per_curve and len(per_curve[curve]) == length:
            return np.asarray(per_curve[curve])
        shared = [np.asarray(v) for v in per_curve.values() if len(v) == length]
        if len(shared) == 1:
            return shared[0]
    return None


def run_scalars(result: RunResult) -> list:
    """The run's scalars (see the module docstring).

    Returns:
        ``[(step, tag, value), ...]``: ``step`` an int, ``value`` a float (NaN kept), sorted by step, then in the
        order curves, records, extras.
    """
    rows = []
    axes = {}
    for name, values in result.curves.items():
        values = np.asarray(values, dtype=np.float64)
        axis = _axis_record(result, name, len(values))
        axes[name] = np.arange(len(values)) if axis is None else axis
        rows += [(int(s), tag_of_curve(name), float(v)) for s, v in zip(axes[name], values, strict=True)]
    for record, per_curve in result.records.items():
        if record in STEP_RECORDS:
            continue
        categories = None
        if record.endswith("types"):
            categories = np.unique(np.concatenate([np.asarray(v).ravel() for v in per_curve.values()]))
        for curve, values in per_curve.items():
            values = np.asarray(values)
            axis = axes.get(curve, np.arange(len(values) + 1))
            if len(axis) == len(values) + 1:  # what step t did, shown where it took the curve: point t + 1
                steps = axis[1:]
            elif len(axis) == len(values):
                steps = axis
            else:
                steps = np.arange(len(values))
            if categories is None:
                rows += [(int(s), f"{record}/{curve}", float(v)) for s, v in zip(steps, values, strict=True)]
                continue
            shares = window_shares(values, categories)
            for j, category in enumerate(categories):
                tag = f"{record}_share/{curve}/{category}"
                rows += [(int(s), tag, float(v)) for s, v in zip(steps, shares[:, j], strict=True)]
    last = max((int(axis[-1]) for axis in axes.values() if len(axis)), default=0)
    rows += _extras_rows(result.extras, "extras", last)
    return sorted(rows, key=lambda row: row[0])  # stable: within a step, the order above


def _extras_rows(extras: dict, prefix: str, last: int) -> list:
    rows = []
    lists = {key: value for key, value in extras.items() if _numeric_list(value)}
    axes = {len(value): np.asarray(value) for key, value in lists.items() if str(key).endswith(("batches", "steps"))}
    for key, value in extras.items():
        tag = f"{prefix}/{key}"
        if _is_number(value):
            rows.append((last, tag, float(value)))
        elif isinstance(value, dict):
            rows += _extras_rows(value, tag, last)
        elif key in lists:
            axis = axes.get(len(value))
            is_axis = str(key).endswith(("batches", "steps"))
            if is_axis and sum(len(other) == len(value) for other in lists.values()) > 1:
                continue  # the x axis of its siblings, not a series of its own
            steps = np.arange(len(value)) if axis is None or is_axis else axis
            rows += [(int(s), tag, float(v)) for s, v in zip(steps, value, strict=True)]
    return rows

"""What every run of ``dataset-bc`` trained on: ``selection.csv``, and how much of it was bad data.

``selection.csv`` has one row per cell, run, epoch and episode of the pool::

    curriculum, run, epoch, dataset, episode_id, weight

``weight`` is 1 or 0 for order and select (trained on in that epoch or not; Agn: always 1) and the loss weight for
weight (:func:`~curteach_teaching.curriculum.uses.preference_weights`, mean 1 over the pool's transitions).
``dataset`` is the episode's source dataset, since episode ids repeat across datasets.

With a boolean metadata field marking bad episodes (read by
:func:`~curteach_teaching.datasets.labels.bad_episodes`: ``noisy`` in the BabyAI bot's datasets; ``not:success``, the
failed ones, where episodes record their success),
:func:`selection_quality` says per cell how much of the bad data each use kept: the share of bad episodes among
those dropped (select: in the last epoch; order: in the first, the most selective one) and, for weight, the share
of the loss weight, per transition, that bad episodes carry against their share of transitions.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from curteach_envs._util import atomic_write

__all__ = ["epoch_weights", "selection_quality", "write_selection_csv"]


def epoch_weights(entry: Any, n: int) -> np.ndarray:
    """``(N,)`` the weight of every episode in one epoch's ``extras["selection"]`` entry (see the module
    docstring)."""
    if entry is None:
        return np.ones(n)
    if "weights" in entry:
        return np.asarray(entry["weights"], dtype=np.float64)
    weights = np.zeros(n)
    weights[np.asarray(entry["selected"], dtype=np.int64)] = 1.0
    return weights


def write_selection_csv(sweep: Any, pool: Any, path: Path) -> bool:
    """Write ``selection.csv`` for every run that recorded its selection; ``False`` (nothing written) when none
    did (runs of older versions)."""
    n = len(pool)
    groups = list(pool.groups)
    ids = np.asarray(pool.episode_ids).tolist()
    recorded = [(cell, r) for cell, results in sweep.cells.items() for r in results if "selection" in r.extras]
    if not recorded:
        return False

    def write(stream) -> None:
        writer = csv.writer(stream)
        writer.writerow(["curriculum", "run", "epoch", "dataset", "episode_id", "weight"])
        for cell, result in recorded:
            for epoch, entry in enumerate(result.extras["selection"], start=1):
                weights = epoch_weights(entry, n)
                # loss weights exactly as floats; a selection's 1 and 0 as integers
                text = map(repr, weights.tolist()) if entry is not None and "weights" in entry else map(
                    str, weights.astype(np.int64).tolist())
                writer.writerows(zip([cell] * n, [result.index] * n, [epoch] * n, groups, ids, text))

    atomic_write(path, write, newline="")
    return True


def selection_quality(sweep: Any, pool: Any, bad: np.ndarray) -> dict:
    """Per cell: what the use did with the bad episodes (mean over runs; see the module docstring).

    Returns:
        ``{"bad_share": share of bad episodes in the pool, "cells": {cell: {...}}}`` where a cell that dropped
        episodes has ``dropped`` (episodes), ``dropped_bad_share`` (bad among the dropped), ``kept_bad_share`` and
        ``kept_bad_transition_share`` (the bad episodes' share of the kept transitions: a few long bad episodes
        weigh more than their count), and a weighting cell has ``bad_weight_share`` (the loss weight on bad
        transitions over all weight) beside ``bad_transition_share``; with several datasets in the pool, each cell
        also has ``by_dataset``, the same figures within each dataset. A share of nothing (no episode dropped) is NaN.
    """
    lengths = np.asarray(pool.lengths, dtype=np.float64)
    groups = np.asarray(pool.groups, dtype=object)
    names = list(dict.fromkeys(pool.groups))
    out: dict = {"bad_share": float(bad.mean()), "cells": {}}
    for cell, results in sweep.cells.items():
        rows = []
        for result in results:
            selection = result.extras.get("selection") or []
            if not selection or all(entry is None for entry in selection):
                continue
            use = result.extras.get("use")
            last = selection[-1] if use == "select" else selection[0]
            weights = epoch_weights(last, len(pool))
            weighted = last is not None and "weights" in last
            row = _quality(weights, bad, lengths, weighted)
            if len(names) > 1:
                row["by_dataset"] = {name: _quality(weights[mask], bad[mask], lengths[mask], weighted)
                                     for name in names for mask in [groups == name]}
            rows.append(row)
        if rows:
            out["cells"][cell] = _mean_rows(rows)
    return out


def _share(part: np.ndarray, whole: np.ndarray) -> float:
    """``sum(part) / sum(whole)``, NaN for a whole of nothing."""
    total = float(whole.sum())
    return float(part.sum()) / total if total > 0 else float("nan")


def _mean(flags: np.ndarray) -> float:
    """The share of True among ``flags``, NaN for none."""
    return float(flags.mean()) if flags.size else float("nan")


def _quality(weights: np.ndarray, bad: np.ndarray, lengths: np.ndarray, weighted: bool) -> dict:
    """One run's figures for the episodes given (``(n,)`` each): see :func:`selection_quality`."""
    if weighted:
        return {"bad_weight_share": _share((weights * lengths)[bad], weights * lengths),
                "bad_transition_share": _share(lengths[bad], lengths)}
    kept = weights > 0
    dropped = ~kept
    return {"dropped": int(dropped.sum()), "dropped_bad_share": _mean(bad[dropped]), "kept_bad_share": _mean(bad[kept]),
            "kept_bad_transition_share": _share(lengths[kept & bad], lengths[kept])}


def _mean_rows(rows: list) -> dict:
    """The runs' mean of every figure, ``by_dataset`` dataset by dataset."""
    out = {key: float(np.mean([row[key] for row in rows])) for key in rows[0] if key != "by_dataset"}
    if "by_dataset" in rows[0]:
        out["by_dataset"] = {name: _mean_rows([row["by_dataset"][name] for row in rows])
                             for name in rows[0]["by_dataset"]}
    return out

"""Rank a pool's demonstrations by a difficulty score, keep the most preferred share, and say how much of the ranking
episode length alone explains (the length-only control).

Curation scores often measure length more than quality: an audit of robot-data curation (arXiv 2606.10229) found
that 5 of 7 metrics mostly measure episode length. So every ranking comes with the Spearman rank correlation of its
score with the episode lengths, and with the share of the kept episodes that a length-only ranking (shortest first)
would have kept too. Both are plain statistics of the two columns, computed here without any learner.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.pool import EpisodePool

__all__ = ["Ranking", "average_ranks", "episode_groups", "group_order", "length_control", "plot_scores",
           "rank_episodes", "rank_within_groups", "spearman", "write_scores_csv"]


def average_ranks(values: np.ndarray) -> np.ndarray:
    """``(N,)`` float64 ranks ``1..N`` of ``values`` in ascending order, tied values sharing their mean rank."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size, dtype=np.float64)
    sorted_values = values[order]
    start = 0
    while start < values.size:
        stop = start + 1
        while stop < values.size and sorted_values[stop] == sorted_values[start]:
            stop += 1
        ranks[order[start:stop]] = (start + 1 + stop) / 2  # the mean of ranks start+1 .. stop
        start = stop
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation: Pearson's correlation of the average ranks of ``x`` and ``y`` (``(N,)`` each);
    ``None`` when either is constant or ``N < 2`` (no ranking to correlate)."""
    rx, ry = average_ranks(np.asarray(x)), average_ranks(np.asarray(y))
    if rx.size != ry.size:
        raise ValueError(f"spearman needs two columns of one length; got {rx.size} and {ry.size}")
    if rx.size < 2:
        return None
    dx, dy = rx - rx.mean(), ry - ry.mean()
    denominator = np.sqrt(np.sum(dx * dx) * np.sum(dy * dy))
    return None if denominator == 0 else float(np.sum(dx * dy) / denominator)


@dataclass(frozen=True)
class Ranking:
    """A ranking of ``N`` episodes by difficulty, lowest first.

    Attributes:
        difficulty: ``(N,)`` float64, larger = less preferred.
        order: ``(N,)`` int64, the positions in the pool from most to least preferred (ties to the lower position).
        rank: ``(N,)`` int64, each episode's place in ``order``, 1-based.
        kept: ``(N,)`` bool, the ``n_kept`` most preferred.
    """

    difficulty: np.ndarray
    order: np.ndarray
    rank: np.ndarray
    kept: np.ndarray

    @property
    def n_kept(self) -> int:
        """How many episodes are kept."""
        return int(self.kept.sum())

    def ties_at_cut(self) -> dict | None:
        """``{"score", "episodes", "kept"}`` when the cut falls inside a run of equal scores: the score, how many
        episodes hold it, and how many of them are kept (the lower positions in the pool: a choice the score does not
        make); ``None`` when every episode is kept or the cut falls between two scores."""
        if self.n_kept in (0, self.kept.size):
            return None
        last_kept = self.difficulty[self.order[self.n_kept - 1]]
        if self.difficulty[self.order[self.n_kept]] != last_kept:
            return None
        tied = self.difficulty == last_kept
        return {"score": float(last_kept), "episodes": int(tied.sum()), "kept": int((tied & self.kept).sum())}


def rank_episodes(difficulty: Sequence[float], keep: float) -> Ranking:
    """Rank by ``difficulty`` (``(N,)``, finite) and keep the ``max(1, round(keep N))`` most preferred (halves round
    up), the rule of dataset-bc's ``select`` (``curriculum.uses.Select``).

    Raises:
        ValueError: ``keep`` outside ``(0, 1]``, no episodes, or a difficulty that is not finite.
    """
    if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not (0.0 < keep <= 1.0):
        raise ValueError(f"keep must be a fraction in (0, 1]; got {keep!r}")
    values = np.asarray(difficulty, dtype=np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("no episodes to rank")
    if not np.isfinite(values).all():
        raise ValueError("every difficulty must be finite")
    order = np.argsort(values, kind="stable")
    rank = np.empty(values.size, dtype=np.int64)
    rank[order] = np.arange(1, values.size + 1)
    kept = np.zeros(values.size, dtype=bool)
    kept[order[: max(1, min(values.size, math.floor(keep * values.size + 0.5)))]] = True
    return Ranking(values, order.astype(np.int64), rank, kept)


def rank_within_groups(difficulty: Sequence[float], groups: Sequence[str], keep: float) -> Ranking:
    """:func:`rank_episodes` with the cut made within each group: group ``g`` of ``n_g`` episodes keeps its
    ``max(1, round(keep n_g))`` most preferred, so that no task is dropped whole because its demonstrations score
    harder than another task's (an ensemble's likelihood is not comparable across tasks). The order and the ranks are
    the whole pool's. ``difficulty`` and ``groups`` are ``(N,)``."""
    whole = rank_episodes(difficulty, keep)
    labels = np.asarray(list(groups), dtype=object)
    if labels.shape != whole.difficulty.shape:
        raise ValueError(f"groups must give one group per episode ({whole.difficulty.size}); got {labels.size}")
    kept = np.zeros_like(whole.kept)
    for group in dict.fromkeys(labels.tolist()):  # a loop over the few groups, not over episodes
        members = np.flatnonzero(labels == group)
        kept[members[rank_episodes(whole.difficulty[members], keep).kept]] = True
    return Ranking(whole.difficulty, whole.order, whole.rank, kept)


def length_control(ranking: Ranking, lengths: Sequence[int], groups: Sequence[str] | None = None) -> dict:
    """``{"spearman_length": rho or None, "kept_by_length_too": share or None}``: the rank correlation of the
    difficulty with the episode lengths, and the share of the kept episodes that keeping the same number of shortest
    episodes (ties to the lower position; with ``groups``, the same number of each group's shortest, as a cut within
    groups keeps) would keep (``None`` when nothing is dropped, or when every episode has the same length: a
    length-only rule would then choose by position alone)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    rho = spearman(ranking.difficulty, lengths)
    share = None
    if ranking.n_kept < lengths.size and np.unique(lengths).size > 1:
        by_length = np.zeros(lengths.size, dtype=bool)
        labels = np.zeros(lengths.size, dtype=object) if groups is None else np.asarray(list(groups), dtype=object)
        for group in dict.fromkeys(labels.tolist()):
            members = np.flatnonzero(labels == group)
            n = int(ranking.kept[members].sum())
            by_length[members[np.argsort(lengths[members], kind="stable")[:n]]] = True
        share = float(np.sum(by_length & ranking.kept) / ranking.n_kept)
    return {"spearman_length": rho, "kept_by_length_too": share}


def episode_groups(pool: EpisodePool, group_field: str | None) -> list[str] | None:
    """Each episode's group for the summary and the plot: ``group_field``'s metadata value (one field), or the first
    of several comma-separated boolean fields that is true (``"none"`` where none is), or the pool's groups when
    ``group_field`` is ``None`` and there are several; else ``None``.

    Raises:
        ValueError: a field missing from an episode's metadata, or a listed field that is not boolean.
    """
    if group_field is None:
        return list(pool.groups) if len(pool.group_names) > 1 else None
    fields = [f.strip() for f in group_field.split(",") if f.strip()]
    if not fields:
        raise ValueError("--group-field must name a metadata field")
    groups = []
    for i, meta in enumerate(pool.metadata):
        missing = [f for f in fields if f not in meta]
        if missing:
            available = ", ".join(sorted(k for k, v in meta.items() if isinstance(v, (bool, int, str))))
            raise ValueError(f"episode {int(pool.episode_ids[i])} has no metadata field {missing[0]!r}; fields: "
                             f"{available}")
        if len(fields) == 1:
            groups.append(str(meta[fields[0]]))
            continue
        if any(not isinstance(meta[f], (bool, np.bool_)) for f in fields):
            raise ValueError(f"several --group-field names must each be a boolean field (a filter key); "
                             f"{', '.join(fields)} are not all boolean")
        groups.append(next((f for f in fields if meta[f]), "none"))
    return groups


def group_order(groups: Sequence[str], group_field: str | None) -> list[str]:
    """The distinct ``groups`` in the order of several ``group_field`` names (then ``"none"``), else sorted."""
    fields = [f.strip() for f in (group_field or "").split(",") if f.strip()]
    present = set(groups)
    if len(fields) > 1:
        return [g for g in [*fields, "none"] if g in present]
    return sorted(present)


def write_scores_csv(path: Path, pool: EpisodePool, ranking: Ranking, groups: Sequence[str] | None,
                     names: Sequence[str], *, with_kept: bool = True) -> Path:
    """``episode_id, name, group, length, score, rank, kept`` per episode, in the pool's order (``score`` the
    difficulty, ``kept`` 0/1, left out without ``with_kept``: a ranking that keeps no share; ``group`` the plot's
    group, else the pool's)."""
    groups = list(groups) if groups is not None else list(pool.groups)
    columns = ["episode_id", "name", "group", "length", "score", "rank", "kept"][: 7 if with_kept else 6]
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        for i in range(len(pool)):
            writer.writerow([int(pool.episode_ids[i]), names[i], groups[i], int(pool.lengths[i]),
                             repr(float(ranking.difficulty[i])), int(ranking.rank[i]),
                             int(ranking.kept[i])][: len(columns)])
    return path


def plot_scores(path: Path, ranking: Ranking, groups: Sequence[str], order: Sequence[str], title: str = "",
                xlabel: str = "", cut_within: bool = False) -> Path:
    """A strip plot of the difficulty by group (``order`` left to right; kept filled, dropped hollow) with the keep
    threshold, the last kept score: one line across the plot for a cut over the whole pool, or, with ``cut_within``
    (the cut was made within each of these groups, :func:`rank_within_groups`), a short line over each group that
    drops any, at its own last kept score. ``xlabel`` names what the groups are (a field such as ``worse``: its ticks
    are True and False)."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(order)
    groups = np.asarray(groups)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 2), 3.6))
    jitter = np.random.default_rng(0).uniform(-0.15, 0.15, size=groups.size)  # only spreads the points
    for j, name in enumerate(names):
        members = groups == name
        for kept, style in ((True, dict(color="tab:blue")), (False, dict(facecolors="none", edgecolors="tab:red"))):
            chosen = members & (ranking.kept == kept)
            ax.scatter(j + jitter[chosen], ranking.difficulty[chosen], s=18, label=None, **style)
    if cut_within:
        for j, name in enumerate(names):
            members = groups == name
            kept = members & ranking.kept
            if kept.any() and kept.sum() < members.sum():  # this group's own cut: its last kept score
                ax.hlines(ranking.difficulty[kept].max(), j - 0.3, j + 0.3, color="gray", linestyle=":", linewidth=1)
    elif ranking.n_kept < ranking.difficulty.size:
        threshold = ranking.difficulty[ranking.order[ranking.n_kept - 1]]
        ax.axhline(threshold, color="gray", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(names)))
    # a LeRobot task is a sentence: wrapped onto lines, so that neighbouring labels do not run into each other
    labels = [textwrap.fill(str(name), 18) for name in names]
    ax.set_xticklabels(labels, rotation=20 if len(names) > 4 else 0, fontsize=8 if max(map(len, labels)) > 18 else None)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel("score (difficulty; lower = kept first)")
    ax.set_title(title, fontsize=9)
    ax.scatter([], [], color="tab:blue", s=18, label="kept")
    ax.scatter([], [], facecolors="none", edgecolors="tab:red", s=18, label="dropped")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

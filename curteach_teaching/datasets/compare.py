"""Scores side by side (``curteach rank --compare``): how well each ranks a boolean label, how much of it is
episode length, and what it knows beyond length.

An audit of robot-data curation (arXiv 2606.10229) found that most curation scores mostly measure episode length,
and on robomimic's multi-human data the worse operators are also the slowest, so a score can look good against the
label by ranking length alone. So each score is given, beside its AUROC against the label, its Spearman correlation
with length, the share of its kept set that length's own cut keeps too (both
:func:`~curteach_teaching.datasets.curation.length_control`), and its **rank residual on length**: the part of its
ranks that a straight line in length's ranks does not explain, measured against the label again. A score that is
length in disguise has a residual of zero, and a residual AUROC of 0.5.

Plain arrays in, plain numbers out; no learner, no format. The command (:mod:`~curteach_teaching.commands.
rank_compare`) fits the scores and writes the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from curteach_teaching.datasets.curation import (
    average_ranks,
    length_control,
    rank_episodes,
    rank_within_groups,
    spearman,
)

__all__ = ["auroc", "compare_scores", "plot_compare", "rank_residual"]


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """The area under the ROC curve of ``scores`` (``(N,)``, larger = predicted True) for ``labels`` (``(N,)``
    bool): the chance that an episode labelled True scores higher than one labelled False, a tie counting half (the
    Mann-Whitney U over ``n_true * n_false``, from average ranks). 0.5 is chance; a label that marks the *good*
    episodes (``better``) reads below 0.5 for a score that drops bad ones first. ``None`` when either class is
    empty."""
    values = np.asarray(scores, dtype=np.float64).reshape(-1)
    truth = np.asarray(labels, dtype=bool).reshape(-1)
    if values.shape != truth.shape:
        raise ValueError(f"auroc needs one label per score; got {values.size} scores and {truth.size} labels")
    n_true = int(truth.sum())
    n_false = truth.size - n_true
    if n_true == 0 or n_false == 0:
        return None
    # the rank sum of the True episodes, less its least possible value, counts the (True, False) pairs ordered
    # right, a tied pair as half (average ranks)
    u = float(average_ranks(values)[truth].sum()) - n_true * (n_true + 1) / 2
    return u / (n_true * n_false)


def rank_residual(scores: Sequence[float], lengths: Sequence[float]) -> np.ndarray:
    """``(N,)`` float64: the average ranks of ``scores`` (``(N,)``) less their least-squares line in the average
    ranks of ``lengths`` (``(N,)``): what the score orders that length does not. A score ranked as length ranks
    (length itself, or any increasing function of it) gives zeros; with constant ``lengths`` it is the score's
    ranks less their mean. Its Spearman correlation with length is near 0 (not exactly: the line removes the
    linear part of the ranks, and the residual is ranked again)."""
    ranks = average_ranks(np.asarray(scores, dtype=np.float64).reshape(-1))
    by_length = average_ranks(np.asarray(lengths, dtype=np.float64).reshape(-1))
    if ranks.shape != by_length.shape:
        raise ValueError(f"rank_residual needs one length per score; got {ranks.size} scores and {by_length.size} "
                         "lengths")
    centred = by_length - by_length.mean()
    spread = float(np.sum(centred * centred))
    slope = 0.0 if spread == 0 else float(np.sum(centred * (ranks - ranks.mean()))) / spread
    return ranks - ranks.mean() - slope * centred


def compare_scores(values: Mapping[str, Sequence[float]], lengths: Sequence[int], keep: float, *,
                   label: Sequence[bool] | None = None, groups: Sequence[str] | None = None,
                   seconds: Mapping[str, float] | None = None) -> dict[str, dict]:
    """One row per score of ``values`` (``name -> (N,)`` difficulties, larger = dropped first), in its order.

    Args:
        values: the scores, one value per episode each.
        lengths: ``(N,)`` the episodes' lengths.
        keep: the share each score keeps (:func:`~curteach_teaching.datasets.curation.rank_episodes`' rule).
        label: ``(N,)`` bool, or ``None``: no AUROC (its keys are then ``None``).
        groups: ``(N,)`` group names: each score's cut, and length's, is made within each group; ``None``: over
            the whole pool.
        seconds: ``name -> fit time``, recorded as given (``None`` where missing).

    Returns:
        ``{name: {"auroc", "spearman_length", "kept_overlap_length", "seconds", "residual_auroc",
        "residual_spearman_length"}}``: ``auroc`` of the score for the label; ``spearman_length`` and
        ``kept_overlap_length`` (the share of its kept episodes that length's cut at the same ``keep`` keeps too;
        ``None`` when nothing is dropped or every length is equal) from
        :func:`~curteach_teaching.datasets.curation.length_control`; the same AUROC and Spearman of its
        :func:`rank_residual` (a constant residual has a Spearman of ``None``).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    truth = None if label is None else np.asarray(label, dtype=bool)
    rows = {}
    for name, column in values.items():
        column = np.asarray(column, dtype=np.float64)
        ranking = rank_episodes(column, keep) if groups is None else rank_within_groups(column, groups, keep)
        control = length_control(ranking, lengths, groups)
        residual = rank_residual(column, lengths)
        rows[name] = {"auroc": None if truth is None else auroc(column, truth),
                      "spearman_length": control["spearman_length"],
                      "kept_overlap_length": control["kept_by_length_too"],
                      "seconds": None if seconds is None or name not in seconds else float(seconds[name]),
                      "residual_auroc": None if truth is None else auroc(residual, truth),
                      "residual_spearman_length": spearman(residual, lengths)}
    return rows


def plot_compare(path: Path, values: Mapping[str, Sequence[float]], lengths: Sequence[int],
                 label: Sequence[bool] | None = None, label_name: str = "", title: str = "") -> Path:
    """One panel per score of ``values`` (``name -> (N,)``): its average ranks against the average ranks of
    ``lengths`` (``(N,)``; ranks, so that every panel has one scale), each episode a point coloured by ``label``
    (``(N,)`` bool, named ``label_name``; one colour without it), with the score's Spearman correlation with length
    in the panel's title. Written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(values)
    x = average_ranks(np.asarray(lengths, dtype=np.float64))
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 3.2 * rows), squeeze=False)
    truth = None if label is None else np.asarray(label, dtype=bool)
    for ax, name in zip(axes.flat, names):
        y = average_ranks(np.asarray(values[name], dtype=np.float64))
        if truth is None:
            ax.scatter(x, y, s=12, color="tab:blue")
        else:
            for flag, colour in ((False, "tab:blue"), (True, "tab:red")):
                chosen = truth == flag
                ax.scatter(x[chosen], y[chosen], s=12, color=colour, alpha=0.8,
                           label=f"{label_name} {'true' if flag else 'false'} ({int(chosen.sum())})")
        rho = spearman(values[name], lengths)
        ax.set_title(f"{name}: Spearman with length " + ("undefined" if rho is None else f"{rho:+.2f}"), fontsize=9)
        ax.set_xlabel("rank of episode length", fontsize=8)
        ax.set_ylabel(f"rank of {name} (larger = dropped first)", fontsize=8)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)  # the grid's unused cells
    if truth is not None:
        axes.flat[0].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

"""One small panel per dataset of a pool: a curve per cell against optimizer steps (e.g. the success rate on each
Meta-World task), where one overall curve would hide which tasks a curriculum helps."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from curteach_envs._util import counted

__all__ = ["plot_groups_against_batches"]


def plot_groups_against_batches(panels: dict, path: Path, *, title: str = "", ylabel: str = "",
                                columns: int = 5) -> Path:
    """Mean +- SEM curves per group, one panel per group, every cell in every panel with the same style.

    Args:
        panels: group name -> {cell -> ``(batches (K,), mean (K,), sem (K,), n)``}, the panels in this order.
        path: output image file.
        title: the figure's title; ylabel: the panels' y label.
        columns: panels per row (at most).

    Returns:
        ``path``.
    """
    from curteach_teaching.plots import _pyplot, _save, curve_styles

    if not panels:
        raise ValueError("panels must name at least one group")
    plt = _pyplot()
    columns = max(1, min(columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.6 * columns + 1.6, 2.2 * rows + 0.8), sharex=True,
                             sharey=True, squeeze=False)
    cells = list(next(iter(panels.values())))
    styles = curve_styles(cells)
    n_values = set()
    for ax, (group, curves) in zip(axes.flat, panels.items()):
        for cell in cells:
            batches, mean, sem, n = curves[cell]
            batches, mean = np.asarray(batches, dtype=float), np.asarray(mean, dtype=float)
            sem = np.nan_to_num(np.asarray(sem, dtype=float))
            (line,) = ax.plot(batches, mean, label=cell, markersize=3, markevery=max(1, len(batches) // 4),
                              **styles[cell])
            ax.fill_between(batches, mean - sem, mean + sem, color=line.get_color(), alpha=0.15, linewidth=0)
            n_values.add(n)
        ax.set_title(group, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("Training batches", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel, fontsize=8)
    runs = counted(n_values.pop(), "run") if len(n_values) == 1 else "runs"
    band = f"line: mean; band: ±1 SEM over {runs}"
    fig.suptitle(f"{title}\n{band}" if title else band, fontsize=9)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    # below the panels, in a strip the layout leaves free: at the top it ran over a long title
    legend_rows = math.ceil(len(cells) / 6)
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=min(len(cells), 6), frameon=False)
    strip = (0.08 + 0.17 * legend_rows) / fig.get_figheight()
    return _save(plt, fig, path, rect=(0, strip, 1, 1))

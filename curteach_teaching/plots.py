"""Figures: learning curves (mean +- SEM over runs) and curriculum heat maps (task type x time).

Styles follow the original's plots (Cur forestgreen solid, Cur-T dodgerblue dash-dot, ...); every other curve of a
figure gets a colour and a line style of its own from :func:`curve_styles`, for any number of curves. Matplotlib runs
with the non-interactive Agg backend.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from itertools import chain, count
from pathlib import Path

import numpy as np

from curteach_envs._util import counted

__all__ = [
    "TEACHER_STYLES",
    "curve_styles",
    "plot_learning_curves",
    "plot_curriculum_heatmap",
    "plot_curves_against_batches",
    "plot_curriculum_features",
]

TEACHER_STYLES = {
    "Cur": dict(color="forestgreen", linestyle="-"),
    "Cur-T": dict(color="dodgerblue", linestyle="-."),
    "Cur-L": dict(color="mediumpurple", linestyle="--", marker="^"),
    "Scot": dict(color="dimgray", linestyle="-.", marker="v"),
    "Agn": dict(color="orangered", linestyle=":"),
    "Omn": dict(color="gold", linestyle="--", marker="s"),
    "BBox": dict(color="firebrick", linestyle="--"),
}

#: colours for curves without a style of their own, first these (away from the paper's), then the paper's colours
#: that the figure does not use
_MORE_COLOURS = ("darkorange", "teal", "deeppink", "saddlebrown", "navy", "olive", "darkviolet")
#: line styles cycled with them: solid, dashed, dash-dot, dotted, dash-dot-dot
_DASHES = ("-", "--", "-.", ":", (0, (3, 1, 1, 1, 1, 1)))


def _hue_colour(k: int) -> str:
    """The ``k``-th generated colour (hues by the golden ratio, so no two are equal): for figures with more
    curves than the named colours times the line styles."""
    red, green, blue = colorsys.hsv_to_rgb((0.1 + k * 0.6180339887498949) % 1.0, 0.85, 0.75)
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


def curve_styles(names: Sequence[str], styles: dict | None = None) -> dict[str, dict]:
    """A line style for every curve of one figure, no two with the same (colour, line style), for any number of names.

    The paper's names (:data:`TEACHER_STYLES`) and those in ``styles`` keep their style. Every other name, in order,
    takes the first colour no curve of the figure has (the colours of ``_MORE_COLOURS``, then the paper's unused
    ones) and the next line style of a cycle that no curve has yet (while one is left), so that curves differ in both
    while colours last; after that, the first (colour, line style) pair still free, then generated colours. The same
    names in the same order always get the same styles, so the figures of one sweep agree.

    Args:
        names: the curves, in legend order (repeats are ignored).
        styles: name -> matplotlib line properties (``color``, ``linestyle``, ...) that win over the defaults.

    Returns:
        name -> a dict of line properties with at least ``color`` and ``linestyle``.
    """
    fixed = {**TEACHER_STYLES, **(styles or {})}
    names = list(dict.fromkeys(names))
    chosen = {name: dict(fixed[name]) for name in names if name in fixed}
    for style in chosen.values():
        style.setdefault("linestyle", "-")
    taken = {(style.get("color"), str(style["linestyle"])) for style in chosen.values()}
    palette = [*_MORE_COLOURS, *(style["color"] for style in TEACHER_STYLES.values())]
    position = 0  # among the names without a style of their own
    for name in names:
        if name in chosen:
            continue
        colours = {colour for colour, _ in taken}
        dashes = [_DASHES[(position + j) % len(_DASHES)] for j in range(len(_DASHES))]
        free = next((colour for colour in palette if colour not in colours), None)
        if free is not None:  # a line style no curve has yet, while there is one
            in_use = {dash for _, dash in taken}
            colour, dash = free, next((d for d in dashes if str(d) not in in_use), dashes[0])
        else:
            pairs = ((c, d) for c in chain(palette, map(_hue_colour, count())) for d in dashes)
            colour, dash = next((c, d) for c, d in pairs if (c, str(d)) not in taken)
        chosen[name] = {"color": colour, "linestyle": dash}
        taken.add((colour, str(dash)))
        position += 1
    return {name: chosen[name] for name in names}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curves(
    rows: Sequence[dict],
    path: Path,
    teachers: Sequence[str] | None = None,
    spacing: int = 10,
    reference: float | None = None,
    title: str = "",
    ylabel: str = "Expected reward",
    log_y: bool = False,
    styles: dict | None = None,
) -> Path:
    """Mean +- SEM learning curves from summary rows of one subset (``log_y``: a logarithmic y-axis).

    Args:
        rows: dicts with ``teacher, t, mean, sem`` (one subset of a summary table,
            :func:`~curteach_teaching.sweeps.reports.summarize`).
        path: output image file.
        teachers: which teachers, in legend order (default: all, in order of appearance).
        spacing: markers every ``spacing`` steps (the original plotted every 10th point).
        reference: a horizontal line (e.g. the mean expert value), or ``None``.
        title, ylabel: labels.
        styles: matplotlib line styles by name, over :func:`curve_styles`' (which gives every other name its own).
    """
    plt = _pyplot()
    teachers = list(dict.fromkeys(r["teacher"] for r in rows)) if teachers is None else list(teachers)
    styles = curve_styles(teachers, styles)
    fig, ax = plt.subplots(figsize=(7.6, 4.4))
    for name in teachers:
        mine = sorted((r for r in rows if r["teacher"] == name), key=lambda r: r["t"])
        if not mine:
            continue
        t = np.array([r["t"] for r in mine])
        mean = np.array([r["mean"] for r in mine])
        sem = np.nan_to_num(np.array([r["sem"] for r in mine]))
        style = dict(styles.get(name, {}))
        (line,) = ax.plot(t, mean, label=name, markevery=max(1, spacing), markersize=4, **style)
        ax.fill_between(t, mean - sem, mean + sem, color=line.get_color(), alpha=0.18, linewidth=0)
    if reference is not None and np.isfinite(reference):
        ax.axhline(reference, color="black", linewidth=0.8, linestyle=(0, (1, 3)), label="teacher (expert)")
    ax.set_xlabel("Time t")
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    counts = {r.get("n") for r in rows if r.get("n") is not None}
    runs = counted(counts.pop(), "run") if len(counts) == 1 else "runs"
    band = f"line: mean; band: ±1 SEM over {runs}"
    ax.set_title(f"{title}\n{band}" if title else band, fontsize=9)
    # outside the axes, so that no curve hides behind it
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return _save(plt, fig, path)


def _save(plt, fig, path, rect: tuple | None = None) -> Path:
    """Write ``fig`` to ``path`` (creating its folder) and close it; ``rect``: the part of the figure, as
    ``(left, bottom, right, top)`` fractions, that the axes are laid out in (the rest kept for a figure legend)."""
    fig.tight_layout(**({} if rect is None else {"rect": rect}))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_curriculum_heatmap(
    pick_types: np.ndarray, path: Path, n_types: int = 8, title: str = "", type_prefix: str = "T"
) -> Path:
    """Heat map of the task type picked at each step: the fraction of runs (rows) that picked it.

    Args:
        pick_types: ``(R, T)`` int task types picked by one teacher in ``R`` runs (one run gives the original's
            binary picture).
        path: output image file.
        n_types: number of task types (rows of the picture).
        title: figure title.
    """
    plt = _pyplot()
    pick_types = np.atleast_2d(np.asarray(pick_types, dtype=np.int64))
    R, T = pick_types.shape
    fraction = np.zeros((n_types, T))
    for k in range(n_types):
        fraction[k] = (pick_types == k).mean(axis=0)
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    mesh = ax.pcolormesh(np.arange(T + 1), np.arange(n_types + 1), fraction, cmap="Greys", vmin=0, vmax=1)
    ax.set_yticks(np.arange(n_types) + 0.5)
    ax.set_yticklabels([f"{type_prefix}{k}" for k in range(n_types)])
    ax.set_xlabel("Time t")
    ax.set_ylabel("Task picked")
    fig.colorbar(mesh, ax=ax, label="fraction of runs")
    if title:
        ax.set_title(title, fontsize=9)
    return _save(plt, fig, path)


def plot_curves_against_batches(
    curves: dict,
    path: Path,
    window: tuple | None = None,
    title: str = "",
    ylabel: str = "Expected reward (test, best-on-validation model)",
    spacing: int = 5,
) -> Path:
    """Mean +- SEM curves against the number of training batches, one per curriculum.

    Args:
        curves: curriculum -> ``(batches (K,), mean (K,), sem (K,), n)``.
        path: output image file.
        window: ``(first, last)`` batches to mark as shaded bounds (e.g. the range the paper plots), or ``None``.
        title, ylabel: labels.
        spacing: markers every ``spacing`` points.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.6, 4.4))
    n_values = set()
    styles = curve_styles(list(curves))
    for name, (batches, mean, sem, n) in curves.items():
        batches, mean = np.asarray(batches, dtype=float), np.asarray(mean, dtype=float)
        sem = np.nan_to_num(np.asarray(sem, dtype=float))
        style = styles[name]
        (line,) = ax.plot(batches, mean, label=f"{name} (n = {n})", markevery=max(1, spacing), markersize=4, **style)
        ax.fill_between(batches, mean - sem, mean + sem, color=line.get_color(), alpha=0.18, linewidth=0)
        n_values.add(n)
    ax.set_xlim(0, max_batches := max(float(np.max(c[0])) for c in curves.values()) or 1.0)
    note = ""
    if window is not None:
        lo, hi = window
        if max_batches > lo:  # shade what the paper does not show, within the data
            inside = [(np.asarray(m, float) - np.nan_to_num(np.asarray(e, float)),
                       np.asarray(m, float) + np.nan_to_num(np.asarray(e, float)), np.asarray(b) >= lo)
                      for b, m, e, _ in curves.values()]
            low = min(float(np.min(a[k])) for a, _, k in inside if k.any())
            high = max(float(np.max(z[k])) for _, z, k in inside if k.any())
            pad = 0.05 * (high - low or 1.0)
            ax.set_ylim(low - pad, high + pad)  # scaled to the window; the untrained start may fall below
            ax.axvspan(0, lo, color="0.92", zorder=0)
            if hi < max_batches:
                ax.axvspan(hi, max_batches, color="0.92", zorder=0)
            ax.axvline(lo, color="0.5", linewidth=0.8, linestyle=":",
                       label=f"paper's window ({lo:,}-{hi:,} batches)")
            if hi < max_batches:
                ax.axvline(hi, color="0.5", linewidth=0.8, linestyle=":")
        else:
            note = f" (the paper plots batches {lo:,}-{hi:,}, beyond these runs)"
    ax.set_xlabel("Training batches")
    ax.set_ylabel(ylabel)
    runs = counted(n_values.pop(), "run") if len(n_values) == 1 else "runs"
    band = f"line: mean; band: ±1 SEM over {runs}{note}"
    ax.set_title(f"{title}\n{band}" if title else band, fontsize=9)
    # outside the axes, as in the car figures, so that no curve hides behind it
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return _save(plt, fig, path)


def plot_curriculum_features(features: dict, path: Path, title: str = "") -> Path:
    """The features of the demonstrations a curriculum trained on, against demonstrations seen.

    Args:
        features: feature name -> ``(seen (K,), mean (K,), sem (K,))``: the feature normalised to [0, 1] over the
            training set, a moving average over the last 100 batches, averaged over runs.
        path: output image file.
        title: figure title.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for name, (seen, mean, sem) in features.items():
        seen, mean = np.asarray(seen, dtype=float), np.asarray(mean, dtype=float)
        sem = np.nan_to_num(np.asarray(sem, dtype=float))
        (line,) = ax.plot(seen, mean, label=name)
        ax.fill_between(seen, mean - sem, mean + sem, color=line.get_color(), alpha=0.18, linewidth=0)
    ax.set_xlabel("Demonstrations seen")
    ax.set_ylabel("feature, normalised to [0, 1]\n(mean of the last 100 batches)")
    ax.set_ylim(-0.02, 1.02)
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return _save(plt, fig, path)


def plot_road(env, path: Path, title: str = "", cell: int = 16) -> Path:
    """The whole road of a ``CarTeachEnv``: task types as columns, instances as rows, each task's start at its
    bottom, a colour legend, and the expert's path from every start (the first optimal action where several tie).

    Args:
        env: a ``CarTeachEnv`` (its ``road``, ``picture()`` and ``tabular()``).
        path: output image file.
        title: the figure's title.
        cell: pixels per road cell.
    """
    from matplotlib.patches import Patch

    from curteach_envs.render import CAR_COLORS, car_cell_centre
    from curteach_teaching.planning import hard_value_iteration

    plt = _pyplot()
    picture = env.picture(cell=cell)
    n_instances, n_types, road_length = env.road.shape[:3]
    mdp = env.tabular()
    policy = hard_value_iteration(mdp).policy
    n_road_states = 2 * road_length * n_instances * n_types
    fig, ax = plt.subplots(figsize=(9.5, 8.5))
    ax.imshow(picture)
    transitions = mdp.transitions.tocsr()
    for start in mdp.start_states:  # the road's transitions are deterministic
        states, state = [int(start)], int(start)
        for _ in range(road_length):
            row = transitions[state * mdp.n_actions + int(np.argmax(policy[state]))]
            state = int(row.indices[np.argmax(row.data)])
            if state >= n_road_states:
                break
            states.append(state)
        xs, ys = zip(*(car_cell_centre(s, n_types, road_length, cell) for s in states), strict=True)
        ax.plot(xs, ys, color="black", linewidth=1.2, alpha=0.8)
        ax.plot(xs[0], ys[0], marker="o", color="black", markersize=3)
    gap = max(2, cell // 2)
    ax.set_xticks([gap + k * (2 * cell + gap) + cell for k in range(n_types)], [f"T{k}" for k in range(n_types)])
    ax.set_yticks([gap + j * (road_length * cell + gap) + road_length * cell / 2 for j in range(n_instances)],
                  [f"instance {j}" for j in range(n_instances)])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xlabel("task type")
    names = {"empty": "road", "stone": "stone", "grass": "grass", "car": "car", "ped": "pedestrian",
             "HOV": "HOV lane", "police": "police (corner square)", "car-in-f": "car ahead (top stripe)",
             "ped-in-f": "pedestrian ahead (top stripe)"}
    handles = [Patch(facecolor=np.array(CAR_COLORS[key]) / 255, edgecolor="0.6", label=label)
               for key, label in names.items()]
    handles.append(plt.Line2D([], [], color="black", marker="o", markersize=3, label="expert's path from the start"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.set_title(title or "the road: each task starts at its bottom row", fontsize=9)
    return _save(plt, fig, path)



def plot_against_rate(
    table: dict,
    teachers: Sequence[str],
    path: Path,
    kind: str = "final",
    xlabel: str = "rate",
    title: str = "",
    crash_flag: bool = True,
) -> Path:
    """Per teacher, a quantity against the learner's rate (log x-axis), one panel per projection radius.

    Args:
        table: cell -> ``{"rate", "radius", "runs", "final_mean", "final_sem", "flagged_share",
            "diverged_share"}`` (:class:`~curteach_teaching.experiments.theory.sensitivity.SensitivityReport`).
        teachers: the teachers, in legend order.
        path: output image file.
        kind: ``"final"`` (final expected reward, mean ± SEM over all runs) or ``"stability"`` (the share of runs
            the original would have crashed, if ``crash_flag``, and per teacher the share whose learner diverged).
        xlabel, title: labels.
    """
    if kind not in ("final", "stability"):
        raise ValueError(f"kind must be 'final' or 'stability'; got {kind!r}")
    plt = _pyplot()
    radii = list(dict.fromkeys(entry["radius"] for entry in table.values()))
    styles = curve_styles(teachers)
    fig, axes = plt.subplots(1, len(radii), figsize=(4.2 * len(radii) + 2.2, 4.0), squeeze=False, sharey=True)
    for ax, radius in zip(axes[0], radii, strict=True):
        entries = sorted((e for e in table.values() if e["radius"] == radius), key=lambda e: e["rate"])
        rates = np.array([e["rate"] for e in entries])
        runs = sorted({e["runs"] for e in entries})
        for name in teachers:
            style = styles[name]
            if kind == "final":
                mean = np.array([e["final_mean"][name] for e in entries], dtype=float)
                sem = np.nan_to_num(np.array([e["final_sem"][name] for e in entries], dtype=float))
                (line,) = ax.plot(rates, mean, label=name, markersize=4, **style)
                ax.fill_between(rates, mean - sem, mean + sem, color=line.get_color(), alpha=0.15, linewidth=0)
            else:
                share = np.array([e["diverged_share"][name] for e in entries], dtype=float)
                ax.plot(rates, share, label=f"{name}: learner diverged", markersize=4, **style)
        if kind == "stability" and crash_flag:
            flagged = np.array([e["flagged_share"] for e in entries], dtype=float)
            ax.plot(rates, flagged, color="black", linewidth=2.0, marker="o", markersize=4,
                    label="the original would have crashed")
        ax.set_xscale("log")
        ax.set_xticks(rates, [f"{r:g}" for r in rates])
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
        n = counted(runs[0], "run") if len(runs) == 1 else f"{runs[0]}-{runs[-1]} runs"
        panel = "" if len(radii) == 1 else ("no projection; " if radius is None else f"projection radius {radius:g}; ")
        what = "mean ± 1 SEM" if kind == "final" else "share"
        ax.set_title(f"{panel}{what} over {n}", fontsize=8)
    axes[0][0].set_ylabel("final expected reward (all runs)" if kind == "final" else "share of runs")
    if kind == "stability":
        axes[0][0].set_ylim(-0.03, 1.03)
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    if title:
        fig.suptitle(title, fontsize=9)
    return _save(plt, fig, path)


def plot_steps_to_gap(steps: dict, fractions: Sequence[float], horizon: int, path: Path, title: str = "") -> Path:
    """Survival-style curves of the paper's teaching objective: per teacher, the share of runs whose gap
    ``|V^E - V^L_t|`` has reached each fraction of its initial value by step ``t``; one panel per fraction.

    Args:
        steps: teacher -> per run, the steps to each fraction (``None``: never), as
            :func:`~curteach_teaching.experiments.car.report.steps_to_gap` gives them.
        fractions: the fractions, in the order of each run's list.
        horizon: the run length T (the x-axis ends there).
        path: output image file.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(fractions), figsize=(3.6 * len(fractions) + 2.0, 3.6), squeeze=False,
                             sharey=True)
    t = np.arange(horizon + 1)
    n_runs = {len(runs) for runs in steps.values()}
    styles = curve_styles(list(steps))
    for k, (ax, fraction) in enumerate(zip(axes[0], fractions, strict=True)):
        for name, runs in steps.items():
            hits = np.array([np.inf if run[k] is None else run[k] for run in runs], dtype=float)
            share = (hits[None, :] <= t[:, None]).mean(axis=1) if hits.size else np.zeros_like(t, dtype=float)
            style = {key: v for key, v in styles[name].items() if key != "marker"}
            ax.step(t, share, where="post", label=name, **style)
        ax.set_title(f"gap within {fraction:.0%} of the initial gap", fontsize=8)
        ax.set_xlabel("Time t")
        ax.set_ylim(-0.03, 1.03)
    axes[0][0].set_ylabel("share of runs that got there by t")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    runs = counted(n_runs.pop(), "run") if len(n_runs) == 1 else "runs"
    fig.suptitle(f"{title}\nsteps until |V^E - V^L_t| <= fraction x |V^E - V^L_0| (all {runs})".strip(), fontsize=9)
    return _save(plt, fig, path)


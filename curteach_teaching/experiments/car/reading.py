"""The reading of ``make demo``'s car runs: the paper's teaching rate against a smaller one, on the same roads.

At the paper's ``eta = 0.17`` some MaxEnt-IRL runs are ones the original code would have crashed on (the learner's
soft policy underflows to probability 0), and in those Cur falls far behind; over all runs it can then end below
Agn although it is ahead in the runs the original would have finished, the only ones the paper could report. At a
smaller rate no run crashes and Cur leads over all runs (docs/experiments/sensitivity.md measures this over 20 roads
per rate). :func:`car_reading` says this in a few lines from two finished ``curteach car-irl`` folders (same seed,
so run ``i`` is on the same road in both), and :func:`plot_car_reading` draws it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curteach_envs._util import counted

__all__ = ["SweepFinals", "car_reading", "load_sweep_finals", "plot_car_reading"]


@dataclass(frozen=True)
class SweepFinals:
    """The final expected reward of every teacher and run of one car-irl sweep, and the runs' crash flags.

    Attributes:
        teaching_rate: the sweep's ``eta``.
        final: teacher -> ``(R,)`` final expected reward of runs ``0..R-1``.
        crash_steps: ``(R,)`` the step at which the original code would have crashed in each run (``None``: it
            would have finished).
        label: how the sweep is named in the reading (e.g. its folder).
        pairing: the sweep's seed and settings other than the rate (two sweeps with the same pairing teach on the
            same roads); ``""``: unknown.
    """

    teaching_rate: float
    final: dict
    crash_steps: tuple
    label: str = ""
    pairing: str = ""

    def __post_init__(self):
        runs = len(self.crash_steps)
        if runs == 0:
            raise ValueError("a sweep reading needs at least one run")
        for name, values in self.final.items():
            if np.shape(values) != (runs,):
                raise ValueError(f"teacher {name!r} has {np.size(values)} final values for {counted(runs, 'run')}")

    @property
    def runs(self) -> int:
        """Number of runs ``R``."""
        return len(self.crash_steps)

    @property
    def finished(self) -> np.ndarray:
        """``(R,)`` bool: the runs the original code would have finished."""
        return np.array([step is None for step in self.crash_steps])


def load_sweep_finals(folder: str | Path) -> SweepFinals:
    """Read a finished ``curteach car-irl`` output folder (``sweep.json`` and every run file of ``report.json``).

    Raises:
        ValueError: the folder is not a finished car-irl sweep, or a run file is missing or invalid.
    """
    from curteach_teaching.sweeps.results import fingerprint, load_run, run_path

    folder = Path(folder)
    try:
        sweep = json.loads((folder / "sweep.json").read_text())
        report = json.loads((folder / "report.json").read_text())
        settings, runs = sweep["settings"], int(report["runs"])
        rate = float(settings["teaching_rate"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{str(folder)!r} is not a finished car-irl sweep ({type(error).__name__}: {error})") from None
    if settings.get("experiment") != "car-irl" or settings.get("observability") is not None:
        raise ValueError(f"{str(folder)!r} holds a {settings.get('experiment')!r} sweep, not curteach car-irl")
    results = []
    for index in range(runs):
        result, reason = load_run(run_path(folder, index), fingerprint(settings), index)
        if result is None:
            raise ValueError(f"run {index} of {str(folder)!r} cannot be read: {reason}")
        results.append(result)
    final = {name: np.array([r.curves[name][-1] for r in results]) for name in settings["teachers"]}
    pairing = json.dumps({"seed": sweep.get("seed"), **{k: v for k, v in settings.items() if k != "teaching_rate"}},
                         sort_keys=True)
    return SweepFinals(rate, final, tuple(r.extras.get("crash_step") for r in results), str(folder), pairing)


def _mean(values: np.ndarray) -> str:
    return f"{np.mean(values):.2f}" if values.size else "n/a"


def _compare(sweep: SweepFinals, mask: np.ndarray, cur: str, base: str) -> str:
    """``"Cur 2.30, Agn 1.83 (Cur ahead on 4 of 4 roads)"`` over the runs of ``mask``."""
    mine, theirs = sweep.final[cur][mask], sweep.final[base][mask]
    ahead = int(np.sum(mine > theirs))
    return f"{cur} {_mean(mine)}, {base} {_mean(theirs)} ({cur} ahead on {ahead} of {mask.sum()} roads)"


def car_reading(paper: SweepFinals, smaller: SweepFinals, cur: str = "Cur", base: str = "Agn") -> list[str]:
    """A few lines that read the paper's rate against a smaller one (see the module docstring).

    Every statement is computed from the two sweeps: which teacher leads over all runs at each rate, how many runs
    the original would have crashed (and at which steps), and the means over the runs it would have finished.

    Args:
        paper: the sweep at the paper's rate (or any larger rate).
        smaller: the same runs at a smaller rate.
        cur, base: the two teachers compared.

    Raises:
        ValueError: a teacher missing from a sweep, ``smaller`` not at a smaller rate, or sweeps that differ in more
            than the rate (their runs are not on the same roads).
    """
    if paper.pairing != smaller.pairing:
        raise ValueError("the two sweeps differ in more than the teaching rate (seed, --init or other settings), so "
                         "their runs are not on the same roads")
    for sweep in (paper, smaller):
        missing = [name for name in (cur, base) if name not in sweep.final]
        if missing:
            raise ValueError(f"the sweep at eta = {sweep.teaching_rate:g} has no teacher {', '.join(missing)}")
    if not smaller.teaching_rate < paper.teaching_rate:
        raise ValueError(f"the second sweep's rate ({smaller.teaching_rate:g}) must be below the first's "
                         f"({paper.teaching_rate:g})")
    every = np.ones(paper.runs, dtype=bool)
    runs = f"{paper.runs} run{'s' if paper.runs != 1 else ''}"
    lines = [f"Reading ({cur} against {base}, final expected reward, {runs} at eta = {paper.teaching_rate:g} and "
             f"{smaller.runs} at eta = {smaller.teaching_rate:g}, the same roads):"]
    leads = np.mean(paper.final[cur]) > np.mean(paper.final[base])
    lines.append(f"* eta = {paper.teaching_rate:g}, all runs: {_compare(paper, every, cur, base)}: "
                 f"{cur} {'leads' if leads else 'does not lead'} over all runs.")
    flagged = ~paper.finished
    if flagged.any():
        steps = ", ".join(str(s) for s in paper.crash_steps if s is not None)
        text = (f"* The original code would have crashed in {flagged.sum()} of these {paper.runs} runs (at steps "
                f"{steps}: the learner's policy underflows to probability 0)")
        if paper.finished.any():
            kept = _compare(paper, paper.finished, cur, base)
            text += f" and reported only the other {paper.finished.sum()}: {kept}."
        else:
            text += " and reported none of them."
        lines.append(text)
    else:
        lines.append("* The original code would have finished every run at this rate.")
    every = np.ones(smaller.runs, dtype=bool)
    leads_smaller = np.mean(smaller.final[cur]) > np.mean(smaller.final[base])
    crashed = int((~smaller.finished).sum())
    lines.append(f"* eta = {smaller.teaching_rate:g}, all runs ({crashed or 'none'} would have crashed the original): "
                 f"{_compare(smaller, every, cur, base)}: {cur} {'leads' if leads_smaller else 'does not lead'} "
                 "over all runs.")
    if leads_smaller and not leads:
        lines.append(f"  The paper's theorems assume a small enough step; here {cur} leads over "
                     f"all runs at eta = {smaller.teaching_rate:g}, not at {paper.teaching_rate:g}. Over 20 roads "
                     "per rate: docs/experiments/sensitivity.md.")
    return lines


def plot_car_reading(paper: SweepFinals, smaller: SweepFinals, path: str | Path,
                     teachers: Sequence[str] = ("Cur", "Agn")) -> Path:
    """Bars of the mean final expected reward (± SEM) per teacher for three groups of runs (the paper's rate, all
    runs; the paper's rate, the runs the original would have finished; the smaller rate, all runs), with each run as
    a dot (a cross: a run the original would have crashed)."""
    from curteach_teaching.plots import _pyplot, _save, curve_styles

    plt = _pyplot()
    groups = [
        (f"eta = {paper.teaching_rate:g}\nall runs", paper, np.ones(paper.runs, dtype=bool)),
        (f"eta = {paper.teaching_rate:g}\nruns the original\nwould finish", paper, paper.finished),
        (f"eta = {smaller.teaching_rate:g}\nall runs", smaller, np.ones(smaller.runs, dtype=bool)),
    ]
    fig, ax = plt.subplots(figsize=(7.6, 4.4))
    width = 0.8 / len(teachers)
    colours = {name: style["color"] for name, style in curve_styles(teachers).items()}
    for j, name in enumerate(teachers):
        color = colours[name]
        for g, (_, sweep, mask) in enumerate(groups):
            values = sweep.final[name][mask]
            x = g + (j - (len(teachers) - 1) / 2) * width
            if values.size == 0:
                continue
            sem = np.std(values, ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
            ax.bar(x, np.mean(values), width * 0.9, yerr=sem, color=color, alpha=0.55, capsize=3,
                   label=name if g == 0 else None)
            crashed = ~sweep.finished[mask]
            ax.scatter(np.full(values.size, x)[~crashed], values[~crashed], s=14, color="black", zorder=3)
            ax.scatter(np.full(values.size, x)[crashed], values[crashed], s=24, color="black", marker="x", zorder=3)
    ax.axhline(0, color="0.6", linewidth=0.6)
    ax.set_xticks(range(len(groups)), [label for label, _, _ in groups], fontsize=8)
    ax.set_ylabel("final expected reward")
    ax.set_title("MaxEnt-IRL on the car: bar = mean ± SEM; dot = one run, x = one the original would have crashed",
                 fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return _save(plt, fig, path)

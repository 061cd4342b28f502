"""Outputs of a :class:`~curteach_teaching.experiments.theory.monotonicity_experiment.MonotonicityExperiment` sweep.

``summary.csv`` holds every statistic of every run against the checkpoint (column ``curve``: ``LEVEL/eta=RATE/STAT``;
``t`` is the checkpoint's index, ``report.json``'s ``checkpoints`` gives its teaching step). ``report.json`` adds,
per learner, level and rate, the mean of each statistic per checkpoint over the runs where it is defined, and how
often the theorems' signs held. Figures: ``decrease_vs_difficulty.png`` (every demonstration of run 0 at one
checkpoint), ``correlations_over_training.png`` (rank correlations) and ``slopes_over_training.png`` (the fitted
partial slopes, which the theorems predict to be -1 and +1).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curteach_envs._util import counted
from curteach_teaching.experiments.theory.monotonicity import LEVELS, STATISTICS, stored_decrease
from curteach_teaching.sweeps.reports import Report

__all__ = ["MonotonicityReport"]

#: the signs Theorems 1 and 3 predict, checked per run and checkpoint
PREDICTIONS = {"slope_E": -1, "slope_L": 1, "spearman_E": -1, "spearman_L": 1, "spearman_ratio": 1}
LEARNER_TITLES = {"irl": "MaxEnt-IRL", "bc": "CrossEnt-BC"}


class MonotonicityReport(Report):
    """The report (see the module docstring)."""

    label = "curve"
    metric_name = "statistic"

    def __init__(self, experiment, title: str = ""):
        super().__init__(experiment, curves=experiment.curve_names(), title=title)

    def _shown_rate(self) -> float:
        rates = self.experiment.rates
        return self.experiment.teaching_rate if self.experiment.teaching_rate in rates else rates[len(rates) // 2]

    def report_data(self, sweep, rows: list) -> dict:
        """``checkpoints`` and ``monotonicity``: per learner, level and rate, each statistic's mean per checkpoint
        over the runs where it is defined (``mean``, ``n``), and ``signs``: per prediction of :data:`PREDICTIONS`,
        the share of (run, checkpoint) pairs where it held; per level the Lemma's ``lemma_pearson`` and
        ``lemma_residual_sd`` means."""
        data = {}
        for cell, results in sweep.cells.items():
            per_level = {}
            for level in LEVELS:
                entry = {}
                for rate in self.experiment.rates:
                    prefix = f"{level}/eta={rate:g}/"
                    stats = {}
                    for stat in STATISTICS:
                        stack = np.array([r.curves[prefix + stat] for r in results])  # (R, C)
                        defined = np.isfinite(stack)
                        with np.errstate(invalid="ignore"):
                            mean = np.nansum(stack, axis=0) / np.maximum(defined.sum(axis=0), 1)
                        stats[stat] = {"mean": np.where(defined.any(axis=0), mean, np.nan).tolist(),
                                       "n": defined.sum(axis=0).tolist()}
                    signs = {}
                    for stat, sign in PREDICTIONS.items():
                        values = np.array([r.curves[prefix + stat] for r in results]).ravel()
                        values = values[np.isfinite(values)]
                        signs[f"{stat} {'<' if sign < 0 else '>'} 0"] = float(np.mean(sign * values > 0))
                    entry[f"eta={rate:g}"] = {"statistics": stats, "signs": signs}
                for name in ("lemma_pearson", "lemma_residual_sd"):
                    stack = np.array([r.curves[f"{level}/{name}"] for r in results])
                    entry[name] = np.nanmean(stack, axis=0).tolist()
                per_level[level] = entry
            data[cell] = per_level
        return {"checkpoints": list(self.experiment.checkpoints), "monotonicity": data}

    def figures(self, sweep, rows: list, out_dir: Path, extras: dict) -> list:
        """The scatter of run 0 and the statistics over training."""
        names = ["decrease_vs_difficulty.png", "correlations_over_training.png", "slopes_over_training.png"]
        self._scatter(sweep, out_dir / names[0])
        self._over_training(sweep, out_dir / names[1], ("spearman_E", "spearman_L", "spearman_ratio"),
                            "Spearman correlation with the one-step decrease", (-1.05, 1.05))
        self._over_training(sweep, out_dir / names[2], ("slope_E", "slope_L"),
                            "fitted slope of decrease / (2 eta) (theory: -1 and +1)", None)
        return names

    def _scatter(self, sweep, path: Path) -> None:
        from curteach_teaching.plots import _pyplot

        plt = _pyplot()
        rate = self._shown_rate()
        checkpoints = self.experiment.checkpoints
        middle = len(checkpoints) // 2
        cells = list(sweep.cells)
        fig, axes = plt.subplots(len(cells), 3, figsize=(13, 3.8 * len(cells)), squeeze=False)
        for row, cell in zip(axes, cells):
            values = sweep.cells[cell][0].extras["candidates"][middle]["demonstrations"]
            log_e, log_l = np.array(values["log_psi_E"]), np.array(values["log_psi_L"])
            progress, squared = np.array(values["progress"]), np.array(values["gradient_norm2"])
            decrease = stored_decrease(progress, squared, rate)
            ratio = np.where(squared == 0, 0.0, rate * squared / (2.0 * np.maximum(np.abs(progress), 1e-300)))
            inside = ratio <= self.experiment.inside_ratio
            cur = values["cur"]
            y = decrease / (2.0 * rate)
            for ax, x, xlabel in zip(row, (log_e, log_l, log_l - log_e),
                                     ("log Psi^E (teacher)", "log Psi^L (learner)", "log Psi^L / Psi^E (Cur's score)")):
                ax.scatter(x[inside], y[inside], s=9, alpha=0.6, label="inside the step-size condition")
                ax.scatter(x[~inside], y[~inside], s=9, alpha=0.6, marker="x", label="outside")
                ax.scatter([x[cur]], [y[cur]], s=120, marker="*", color="black", label="Cur's pick", zorder=3)
                ax.set_xlabel(xlabel)
                ax.grid(alpha=0.3)
            row[0].set_ylabel(f"{LEARNER_TITLES[cell]}: decrease / (2 eta)")
            row[0].legend(fontsize=7)
        step = checkpoints[middle]
        fig.suptitle(f"{self.title}: one-step decrease of ||theta* - theta||^2 per demonstration, run 0, step {step}, "
                     f"eta = {rate:g}".strip(": "), fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    def _over_training(self, sweep, path: Path, stats: tuple, ylabel: str, ylim) -> None:
        from curteach_teaching.plots import _pyplot

        plt = _pyplot()
        steps = np.array(self.experiment.checkpoints)
        cells = list(sweep.cells)
        rates = self.experiment.rates
        fig, axes = plt.subplots(len(cells), len(LEVELS), figsize=(6 * len(LEVELS), 3.6 * len(cells)), squeeze=False)
        styles = ("-", "--", ":")
        for row, cell in zip(axes, cells):
            results = sweep.cells[cell]
            for ax, level in zip(row, LEVELS):
                for i, stat in enumerate(stats):
                    for j, rate in enumerate(rates):
                        stack = np.array([r.curves[f"{level}/eta={rate:g}/{stat}"] for r in results])
                        n = np.isfinite(stack).sum(axis=0)
                        with np.errstate(invalid="ignore", divide="ignore"):
                            mean = np.nanmean(stack, axis=0) if stack.size else stack
                            sem = np.nanstd(stack, axis=0, ddof=1) / np.sqrt(n)
                        x = np.arange(steps.size)
                        line = ax.plot(x, mean, styles[j % 3], color=f"C{i}", marker="o", ms=3,
                                       label=f"{stat}, eta={rate:g}")[0]
                        ax.fill_between(x, mean - sem, mean + sem, color=line.get_color(), alpha=0.12)
                ax.axhline(0.0, color="grey", lw=0.8)
                ax.set_xticks(np.arange(steps.size), [str(s) for s in steps])
                ax.set_xlabel("teaching step (Agn's learner)")
                ax.set_title(f"{LEARNER_TITLES[cell]}, candidates: {level}", fontsize=9)
                if ylim:
                    ax.set_ylim(*ylim)
                ax.grid(alpha=0.3)
            row[0].set_ylabel(ylabel, fontsize=8)
        axes[0][-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
        n_runs = len(next(iter(sweep.cells.values())))
        fig.suptitle(f"{self.title} (line: mean; band: ±1 SEM over {counted(n_runs, 'run')})", fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    def print_summary(self, sweep, report: dict, out_dir: Path) -> None:
        """Per learner, level and rate: the statistics averaged over runs and checkpoints, and the signs held."""
        for cell, levels in report["monotonicity"].items():
            for level in LEVELS:
                for rate_name, entry in levels[level].items():
                    if not rate_name.startswith("eta="):
                        continue
                    stats = entry["statistics"]

                    def average(stat, stats=stats):
                        values = np.array(stats[stat]["mean"], dtype=np.float64)
                        return np.nanmean(values) if np.isfinite(values).any() else float("nan")

                    print(f"{LEARNER_TITLES[cell]:11s} {level:14s} {rate_name:10s} Spearman(decrease, log Psi^E) "
                          f"{average('spearman_E'):+.2f}, (.., log Psi^L) {average('spearman_L'):+.2f}, "
                          f"(.., ratio) {average('spearman_ratio'):+.2f}; slopes {average('slope_E'):+.2f} / "
                          f"{average('slope_L'):+.2f}; Cur's pick beats {average('cur_percentile'):.0%}; inside "
                          f"{average('share_inside'):.0%}")


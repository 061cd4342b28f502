"""The navigation experiment's outputs: ``summary.csv``, ``report.json``, ``test_reward.png``,
``curriculum_features.png``.

A navigation run (one curriculum = one cell) is a :class:`~curteach_teaching.sweeps.results.RunResult` with

* ``curves["test"]``: ``(K,)`` the test return of the best-on-validation model so far, at each evaluation;
* ``curves["val"]``: ``(K,)`` the current model's validation return at each evaluation;
* ``curves["train:loss"]``: ``(K,)`` the mean training loss (the loss BC stepped on) of the optimizer steps since the
  previous evaluation, NaN at the first (before training) and after a divergence (runs saved before the loss was
  recorded, such as the committed paper runs, lack it; nothing reads it but the experiment logging);
* ``curves["feature:<name>"]``: ``(K,)`` the mean of a demonstration feature (normalised to [0, 1]) over the
  last 100 training batches, at each evaluation (the appendix's curriculum visualisations);
* ``records["batches"]["test"]``, ``records["seen"]["test"]``: ``(K,)`` the optimizer steps and the demonstrations
  trained on at each evaluation (0 at the first, before training);
* ``artifacts["model.pt"]``: the best model's ``state_dict`` (``torch.save``);
* ``extras["diverged"]`` (only if the network diverged): the optimizer step at which training stopped; the curves
  go on to the planned end with the best model's test return (``curves["val"]`` is NaN there).

``summary.csv`` has the columns ``curriculum, batches, mean, sem, n`` (the test return of the best-on-validation
model, over runs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curteach_envs._util import counted
from curteach_teaching.sweeps.reports import Report, mean_sem, stack_runs, write_summary

__all__ = ["NavReport", "REPORT_BATCHES"]

#: Batch counts reported in ``report.json`` and printed (where a run reached them), besides the last evaluation.
REPORT_BATCHES = (0, 1000, 2000, 3000, 6000, 11000)


def _stack(results: list, curve: str) -> tuple[np.ndarray, np.ndarray]:
    """``(K,)`` batches and ``(R, K)`` values of ``curve`` over one cell's runs (:func:`stack_runs`)."""
    return stack_runs(results, curve, "test")


class NavReport(Report):
    """The learner-centric experiment's report (see the module docstring).

    Args:
        experiment: the :class:`~curteach_teaching.experiments.nav.experiment.NavExperiment`.
        window: the batches the paper plots, marked on ``test_reward.png``.
        title: the figures' title prefix.
    """

    label = "curriculum"
    metric_name = "test return"

    def __init__(self, experiment, window: tuple | None = None, title: str = ""):
        super().__init__(experiment, curves=["test"], title=title)
        self.window = window

    def summary_rows(self, sweep) -> list:
        """One row per curriculum and evaluation: ``curriculum, batches, mean, sem, n``."""
        rows = []
        for cell, results in sweep.cells.items():
            batches, stack = _stack(results, "test")
            mean, sem = mean_sem(stack)
            for b, m, s in zip(batches, mean, sem, strict=True):
                rows.append({"curriculum": cell, "batches": int(b), "mean": float(m), "sem": float(s),
                             "n": len(results)})
        return rows

    def write_summary(self, rows: list, path: Path) -> None:
        """``summary.csv`` with the columns ``curriculum, batches, mean, sem, n`` (floats exact)."""
        write_summary(rows, path, columns=["curriculum", "batches", "mean", "sem", "n"])

    def final(self, rows: list, sweep) -> dict:
        """Per curriculum: the test return at :data:`REPORT_BATCHES` reached and at the last evaluation."""
        final = {}
        for cell in sweep.cells:
            mine = [r for r in rows if r["curriculum"] == cell]
            chosen = [r for r in mine if r["batches"] in REPORT_BATCHES] + mine[-1:]
            final[cell] = {str(r["batches"]): {"mean": r["mean"], "sem": r["sem"], "n": r["n"]} for r in chosen}
        return final

    def report_data(self, sweep, rows: list) -> dict:
        """The paper's window and the per-epoch selected fractions (mean over runs) per curriculum."""
        selected = {}
        for cell, results in sweep.cells.items():
            fractions = [r.extras.get("selected_fraction", []) for r in results]
            length = min(len(f) for f in fractions)
            selected[cell] = np.mean([f[:length] for f in fractions], axis=0).tolist() if length else []
        diverged = {cell: {str(r.index): r.extras["diverged"] for r in results if "diverged" in r.extras}
                    for cell, results in sweep.cells.items()}
        return {
            "paper_window": list(self.window) if self.window else None,
            "selected_fraction": selected,
            "diverged_runs": {cell: runs for cell, runs in diverged.items() if runs},
        }

    def figures(self, sweep, rows: list, out_dir: Path, extras: dict) -> list:
        """``test_reward.png`` (every curriculum) and ``curriculum_features.png`` (Cur, else the first)."""
        from curteach_teaching.plots import plot_curriculum_features, plot_curves_against_batches

        curves = {}
        for cell in sweep.cells:
            mine = [r for r in rows if r["curriculum"] == cell]
            curves[cell] = ([r["batches"] for r in mine], [r["mean"] for r in mine], [r["sem"] for r in mine],
                            mine[0]["n"])
        plot_curves_against_batches(curves, out_dir / "test_reward.png", window=self.window, title=self.title)
        chosen = "Cur" if "Cur" in sweep.cells else next(iter(sweep.cells))
        results = sweep.cells[chosen]
        features = {}
        for name in results[0].curves:
            if name.startswith("feature:"):
                _, stack = _stack(results, name)
                # x positions from a run that trained to the end (a diverged run's count stops growing)
                source = next((r for r in results if "diverged" not in r.extras), results[0])
                seen = np.asarray(source.records["seen"]["test"][: stack.shape[1]])
                mean, sem = mean_sem(stack)
                features[name.split(":", 1)[1]] = (seen[1:], mean[1:], sem[1:])  # index 0: before training
        plot_curriculum_features(
            features, out_dir / "curriculum_features.png",
            title=f"{self.title}\nwhat {chosen} trained on (mean of {counted(len(results), 'run')})",
        )
        return ["test_reward.png", "curriculum_features.png"]

    def print_summary(self, sweep, report: dict, out_dir: Path) -> None:
        """The test return per curriculum at a few batch counts."""
        for cell, points in report["final"].items():
            text = ", ".join(f"{b}: {v['mean']:.3f}" for b, v in points.items())
            n = len(sweep.cells[cell])
            print(f"test return of the best-on-validation model, {cell} (n={n}), by batches: {text}")
        for cell, runs in report.get("diverged_runs", {}).items():
            where = ", ".join(f"run {index} at batch {step}" for index, step in runs.items())
            print(f"diverged (training stopped; the best model so far stands for the later batches): {cell} {where}")
